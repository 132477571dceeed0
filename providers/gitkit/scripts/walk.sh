# walk.sh HELPER PATH...: read.sh's answers with the listing instead of its
# digest, for the provider to sort and hash (tree_digest's value, without
# the probe, sed, sort, sha256sum and subshells on the node: a read runs
# on every plan). One block per PATH, in order:
#   absent | other symlink | other file      as read.sh
#   walk, the raw lines of GNU find -printf and sha256sum (tree_digest's
#   one walk, before its sed), then "#end STATUS" (not after the last
#   path's walk: its status is the command's)
# A name or symlink target holding a newline prints "#newline" and stops
# the walk: that tree, other tools (busybox: no -printf, no --tag) and any
# error take read.sh instead (the provider runs it then).
# The last tree's find runs in the shell's place (exec): its status is the
# command's, and no "#end" follows it.
# With the node helper at HELPER, the lines before this script (helperArgv)
# exec its walk subcommand instead, which prints the same (in another
# order) in one process: internal/nodehelper/walk.go.
w='find . \( \( -name "*$nl*" -o -lname "*$nl*" \) -printf "#newline\n" -quit \) -o \( -type d -printf "d %p\n" \) \
	-o \( -type l -printf "l %p -> %l\n" \) \
	-o \( -type f -perm -100 -exec sha256sum --tag {} + \) \
	-o \( -type f -exec sha256sum {} + \) -o -printf "o %p\n"'
nl='
'
while [ $# -gt 0 ]; do
	p=$1
	shift
	if [ -L "$p" ]; then
		echo "other symlink"
	elif [ ! -e "$p" ]; then
		echo absent
	elif [ ! -d "$p" ]; then
		echo "other file"
	else
		echo walk
		if cd -- "$p"; then
			[ $# -gt 0 ] || eval "exec $w"
			eval "$w"
			echo "#end $?"
			cd /
		else
			echo "#end 1"
		fi
	fi
done

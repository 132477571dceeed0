# read.sh PATH...: one line per PATH, in order:
#   absent            nothing is there
#   dir HEX           a directory; HEX is its tree_digest
#   other KIND        something that is not a directory (file, symlink)
#   error MESSAGE     the tree could not be read (e.g. permission denied)
err=$(mktemp) || exit 1
trap 'rm -f "$err"' EXIT
for p in "$@"; do
	if [ -L "$p" ]; then
		echo "other symlink"
	elif [ ! -e "$p" ]; then
		echo absent
	elif [ ! -d "$p" ]; then
		echo "other file"
	else
		d=$(tree_digest "$p" 2>"$err")
		if [ -s "$err" ]; then
			printf 'error %s\n' "$(head -n 1 "$err")"
			: >"$err"
		else
			echo "dir $d"
		fi
	fi
done

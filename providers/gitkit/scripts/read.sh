# read.sh PATH...: one line per PATH, in order:
#   absent            nothing is there
#   dir HEX           a directory; HEX is its tree_digest
#   other KIND        something that is not a directory (file, symlink)
#   error MESSAGE     the tree could not be read (e.g. permission denied)
nl='
'
for p in "$@"; do
	if [ -L "$p" ]; then
		echo "other symlink"
	elif [ ! -e "$p" ]; then
		echo absent
	elif [ ! -d "$p" ]; then
		echo "other file"
	else
		# stderr comes first: the digest is printed only once sort has
		# read all, after every find ended. Anything but the digest
		# alone is an error, its first line the message.
		d=$(tree_digest "$p" 2>&1)
		case $d in
		*[!0-9a-f]* | "") printf 'error %s\n' "${d%%"$nl"*}" ;;
		*) echo "dir $d" ;;
		esac
	fi
done

# remove.sh PATH: rename PATH to a temporary sibling, then delete that, so
# PATH is either whole or gone. Exit 77: parent not writable (retry with sudo).
path=$1
if [ ! -e "$path" ] && [ ! -L "$path" ]; then
	exit 0
fi
parent=$(dirname "$path")
base=$(basename "$path")
if [ ! -w "$parent" ] || [ ! -x "$parent" ]; then
	echo "gitkit: $parent is not writable by $(id -un)" >&2
	exit 77
fi
tmp=$(mktemp -d "$parent/.$base.sparkform-tmp-XXXXXX") || exit 1
mv "$path" "$tmp/old" || { rmdir "$tmp"; exit 1; }
rm -rf "$tmp"

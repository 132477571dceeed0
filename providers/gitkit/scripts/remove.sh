# remove.sh PATH [MADE...]: rename PATH to a temporary sibling, then delete
# that, so PATH is either whole or gone. Then remove each MADE folder (the
# ancestors of PATH a create made, deepest first) with rmdir, so only while
# it is empty: the first one that holds something else is reported as
# "kept: DIR" and it and the ones above it stay. "removed" says PATH is
# gone (and was, if it was, removed whole). Exit 77: a folder to
# change is not writable (retry with sudo); a rerun skips what is done.
path=$1
shift
writable() { [ -w "$1" ] && [ -x "$1" ]; }
if [ -e "$path" ] || [ -L "$path" ]; then
	parent=$(dirname "$path")
	base=$(basename "$path")
	if ! writable "$parent"; then
		printf 'gitkit: %s is not writable by %s\n' "$parent" "$(id -un)" >&2
		exit 77
	fi
	tmp=$(mktemp -d "$parent/.$base.sparkform-tmp-XXXXXX") || exit 1
	mv "$path" "$tmp/old" || { rmdir "$tmp"; exit 1; }
	rm -rf "$tmp" || exit 1
fi
# Temporary trees of a stage that was killed outright before its cleanup
# (named by stage.sh, so ours); they would keep a made folder non-empty.
parent=$(dirname "$path")
base=$(basename "$path")
if writable "$parent"; then rm -rf "$parent/.$base.sparkform-tmp-"*; fi
echo removed
for d in "$@"; do
	if [ -L "$d" ] || [ ! -d "$d" ]; then
		continue # gone, or replaced by something that is not ours
	fi
	if rmdir "$d" 2>/dev/null; then
		continue
	fi
	if [ -n "$(ls -A "$d" 2>/dev/null)" ]; then
		printf 'kept: %s\n' "$d"
		exit 0
	fi
	up=$(dirname "$d")
	if ! writable "$up"; then
		printf 'gitkit: %s is not writable by %s\n' "$up" "$(id -un)" >&2
		exit 77
	fi
	printf 'gitkit: cannot remove %s\n' "$d" >&2
	exit 1
done

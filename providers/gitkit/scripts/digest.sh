# gitkit common prelude: sourced (concatenated) before every gitkit script.
# Keep it POSIX sh and busybox-compatible: no GNU-only flags.
LC_ALL=C
export LC_ALL

# tree_digest DIR prints the sha256 (hex) of a canonical listing of DIR:
# every entry's relative path and kind, the content hash and exec bit of
# regular files, and the target of symlinks. Files are hashed in bulk
# (find -exec ... +), not one process per file. Every process counts: a
# read runs this on every plan (no mktemp, cut or head where the shell
# can do it).
tree_digest() (
	cd "$1" || exit 1
	{
		find . -type d -print | sed 's/^/d /'
		find . -type l -print | while IFS= read -r f; do
			printf 'l %s -> %s\n' "$f" "$(readlink "$f")"
		done
		find . -type f -perm -100 -exec sha256sum {} + | sed 's/^/x /'
		find . -type f ! -perm -100 -exec sha256sum {} + | sed 's/^/f /'
		find . ! -type d ! -type l ! -type f -print | sed 's/^/o /'
	} | sort | sha256sum | { read -r h _ && echo "$h"; }
)

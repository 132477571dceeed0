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
#
# With GNU find and sha256sum (checked by the first find, which also looks
# for a newline in any name or symlink target) the listing is one walk:
# -printf writes the folder, symlink and other lines, and executables are
# hashed with --tag so that sed can tell them from the other files. A
# newline, or other tools (busybox), take the walk of one find per kind,
# whose lines (one per line of a name: each gets the kind's prefix) the
# one walk would not reproduce. Both give the same listing.
tree_digest() (
	cd "$1" || exit 1
	if [ "$(find . -path . -exec sha256sum --tag /dev/null ';' -o \( -name '*
*' -o -lname '*
*' \) -printf 'newline\n' -quit 2>/dev/null)" = "SHA256 (/dev/null) = e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" ]; then
		find . \( -type d -printf 'd %p\n' \) -o \( -type l -printf 'l %p -> %l\n' \) \
			-o \( -type f -perm -100 -exec sha256sum --tag {} + \) \
			-o \( -type f -exec sha256sum {} + \) -o -printf 'o %p\n' |
			sed -e '/^[dlo] /b' -e 's/^\(\\\{0,1\}\)SHA256 (\(.*\)) = \([0-9a-f]\{64\}\)$/x \1\3  \2/' -e t -e 's/^/f /'
	else
		find . -type d -print | sed 's/^/d /'
		find . -type l -print | while IFS= read -r f; do
			printf 'l %s -> %s\n' "$f" "$(readlink "$f")"
		done
		find . -type f -perm -100 -exec sha256sum {} + | sed 's/^/x /'
		find . -type f ! -perm -100 -exec sha256sum {} + | sed 's/^/f /'
		find . ! -type d ! -type l ! -type f -print | sed 's/^/o /'
	fi | sort | sha256sum | { read -r h _ && echo "$h"; }
)

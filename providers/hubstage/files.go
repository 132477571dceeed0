package hubstage

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/sparkform/sparkform/providers/internal/restore"
	"github.com/sparkform/sparkform/providers/node"
)

// records holds the manifest files' restore records on the nodes, keyed
// by manifest_path: "created yes" when no file was there before sparkform's
// first write, the folders that write made ("made DIR", deepest first) and
// every content hash written there ("sha256 HEX"). They are written before
// the file and its folders, so a write whose reply is lost (a killed CLI or
// plugin, a dropped link) cannot leave either behind, nor can a replacement
// that finds its own earlier file there take it for someone else's.
var records = restore.Store{Kind: TypeManifest}

// writeScript ($3 record name, $4 its key line, $5 path, $6 wanted sha256,
// $7 the sha256 private data says this resource wrote, "" none) writes
// stdin to the path atomically (a temp sibling, then mv) when the file is
// missing, or holds content this resource wrote (its record or private
// data says so), or is what we want already (then nothing is written). It
// prints "wrote", "same" (the file is ours), "same-foreign" (an identical
// file we did not create: destroy leaves it) or "foreign SHA".
const writeScript = `set -u
rec=$(sf_rcat "$1" "$2" "$3")
has() { printf '%s\n' "$rec" | grep -qxF -- "$1"; }
p=$5 want=$6 owned=$7
if [ -e "$p" ] || [ -L "$p" ]; then
  if [ -L "$p" ] || [ ! -f "$p" ]; then printf '%s exists and is not a regular file\n' "$p" >&2; exit 3; fi
  s=$(sha256sum < "$p") || exit 1
  s=${s%% *}
  if [ "$s" = "$want" ]; then
    cat > /dev/null
    if has "created yes" || [ "$s" = "$owned" ]; then echo same; else echo same-foreign; fi
    exit 0
  fi
  if ! has "sha256 $s" && { [ -z "$owned" ] || [ "$s" != "$owned" ]; }; then cat > /dev/null; echo "foreign $s"; exit 0; fi
  sf_rcreate "$1" "$2" "$3" "$4" || exit 1
else
  # Nothing there: the file, and the folders for it, are ours. Say so on
  # the node before making any of them.
  d=${p%/*}
  made=
  while [ -n "$d" ] && [ ! -e "$d" ] && [ ! -L "$d" ]; do
    made="${made}made $d
"
    d=${d%/*}
  done
  if ! has "created yes"; then
    { sf_rcreate "$1" "$2" "$3" "$4" && sf_rappend "$1" "$2" "$3" "created yes
$made"; } || exit 1
  elif [ -n "$made" ]; then
    sf_rappend "$1" "$2" "$3" "$made" || exit 1
  fi
fi
has "sha256 $want" || sf_rappend "$1" "$2" "$3" "sha256 $want
" || exit 1
d=${p%/*}
[ -n "$d" ] || d=/
mkdir -p "$d" || exit 1
# A run killed before its rename (SIGKILL, or a shell that skips its EXIT
# trap on a signal) leaves its temporary file: the temporary names carry
# the target's name, so this run removes what an earlier one left.
rm -f "$d/.sparkform-manifest.${p##*/}."* || exit 1
t=$(mktemp "$d/.sparkform-manifest.${p##*/}.XXXXXX") || exit 1
trap 'rm -f "$t"' EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 141' PIPE
cat > "$t" || exit 1
s=$(sha256sum < "$t") || exit 1
s=${s%% *}
if [ "$s" != "$want" ]; then printf 'short write to %s (sha256 %s, want %s)\n' "$t" "$s" "$want" >&2; exit 1; fi
chmod 0644 "$t" && mv -f "$t" "$p" || exit 1
trap - EXIT
echo wrote
`

// removeScript ($3 record name, $5 path, $6 the sha256 private data says
// this resource wrote, "" none) removes the path if this resource created
// it or wrote it and it still holds content it wrote; then the folders
// made for it while empty, then the record. It prints "gone", "removed",
// "notours" (a file this resource neither created nor wrote: left alone),
// "kept SHA" (changed since: left in place) or "kept not-a-file".
const removeScript = `set -u
rec=$(sf_rcat "$1" "$2" "$3")
has() { printf '%s\n' "$rec" | grep -qxF -- "$1"; }
p=$5 owned=$6
if [ ! -e "$p" ] && [ ! -L "$p" ]; then
  echo gone
elif [ -z "$owned" ] && ! has "created yes"; then
  echo notours
elif [ -L "$p" ] || [ ! -f "$p" ]; then
  echo "kept not-a-file"
else
  s=$(sha256sum < "$p") || exit 1
  s=${s%% *}
  if [ "$s" = "$owned" ] || { has "created yes" && has "sha256 $s"; }; then
    rm -f "$p" || exit 1
    echo removed
  else
    echo "kept $s"
  fi
fi
rm -f "${p%/*}/.sparkform-manifest.${p##*/}."* 2>/dev/null
printf '%s\n' "$rec" | sed -n 's/^made //p' | while IFS= read -r d; do
  case $p in "$d"/*) ;; *) continue ;; esac
  rmdir "$d" 2>/dev/null || break
done
sf_rrm "$1" "$2" "$3"
`

// writeManifest writes content to p on the node (one command). It reports
// whether the file is this resource's to remove on destroy: it wrote it,
// or created it earlier (a lost reply, a replacement). An identical file
// that was there before is not.
func writeManifest(ctx context.Context, conn node.Conn, become bool, p string, content []byte, want, owned string) (bool, error) {
	argv := []string{"sh", "-c", restore.Prelude + "\n" + writeScript, "sh", "", records.Kind, records.Name(p), "key " + p + "\n", p, want, owned}
	res, err := conn.Run(ctx, node.Cmd{Argv: argv, Become: become, Stdin: bytes.NewReader(content)})
	if err != nil {
		return false, fmt.Errorf("writing %s on %s: %w", p, conn.Name(), err)
	}
	out := strings.TrimSpace(string(res.Stdout))
	switch {
	case out == "wrote", out == "same":
		return true, nil
	case out == "same-foreign":
		return false, nil
	case strings.HasPrefix(out, "foreign "):
		return false, fmt.Errorf("%w: %s already exists on %s with other content (sha256 %s); remove it or choose another manifest_path",
			ErrForeignManifest, p, conn.Name(), strings.TrimPrefix(out, "foreign "))
	}
	return false, fmt.Errorf("writing %s on %s: unexpected output %q", p, conn.Name(), out)
}

// removeManifest removes p if this resource created or wrote it and it
// still holds what was written (owned: the sha256 private data names, ""
// none), the folders made for it while empty, and its restore record.
// kept explains why a file was left in place ("" when removed or already
// gone).
func removeManifest(ctx context.Context, conn node.Conn, become bool, p, owned string) (kept string, err error) {
	argv := []string{"sh", "-c", restore.Prelude + "\n" + removeScript, "sh", "", records.Kind, records.Name(p), "", p, owned}
	res, err := conn.Run(ctx, node.Cmd{Argv: argv, Become: become})
	if err != nil {
		return "", fmt.Errorf("removing %s on %s: %w", p, conn.Name(), err)
	}
	out := strings.TrimSpace(string(res.Stdout))
	switch {
	case out == "removed", out == "gone", out == "notours":
		return "", nil
	case strings.HasPrefix(out, "kept "):
		return fmt.Sprintf("%s on %s was changed after this resource wrote it (now %s); it was left in place", p, conn.Name(), strings.TrimPrefix(out, "kept ")), nil
	}
	return "", fmt.Errorf("removing %s on %s: unexpected output %q", p, conn.Name(), out)
}

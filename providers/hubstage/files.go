package hubstage

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/sparkform/sparkform/providers/node"
)

// writeScript writes stdin to $1 atomically (a temp sibling, then mv) when
// the file is missing, was last written by us (its sha256 is $3), or is
// what we want already ($2: then nothing is written). It prints "wrote",
// "same", or "foreign SHA" for a file someone else wrote.
const writeScript = `set -u
p=$1 want=$2 owned=$3
if [ -e "$p" ] || [ -L "$p" ]; then
  if [ -L "$p" ] || [ ! -f "$p" ]; then printf '%s exists and is not a regular file\n' "$p" >&2; exit 3; fi
  s=$(sha256sum < "$p") || exit 1
  s=${s%% *}
  if [ "$s" = "$want" ]; then cat > /dev/null; echo same; exit 0; fi
  if [ -z "$owned" ] || [ "$s" != "$owned" ]; then cat > /dev/null; echo "foreign $s"; exit 0; fi
fi
d=${p%/*}
[ -n "$d" ] || d=/
mkdir -p "$d" || exit 1
t=$(mktemp "$d/.sparkform-manifest.XXXXXX") || exit 1
trap 'rm -f "$t"' EXIT
cat > "$t" || exit 1
s=$(sha256sum < "$t") || exit 1
s=${s%% *}
if [ "$s" != "$want" ]; then printf 'short write to %s (sha256 %s, want %s)\n' "$t" "$s" "$want" >&2; exit 1; fi
chmod 0644 "$t" && mv -f "$t" "$p" || exit 1
trap - EXIT
echo wrote
`

// removeScript removes $1 if its sha256 is still $2. It prints "gone",
// "removed" or "kept SHA".
const removeScript = `set -u
p=$1 owned=$2
if [ ! -e "$p" ] && [ ! -L "$p" ]; then echo gone; exit 0; fi
if [ -L "$p" ] || [ ! -f "$p" ]; then echo "kept not-a-file"; exit 0; fi
s=$(sha256sum < "$p") || exit 1
s=${s%% *}
if [ "$s" = "$owned" ]; then rm -f "$p" && echo removed; else echo "kept $s"; fi
`

// writeManifest writes content to p on the node (one command). It reports
// whether this call wrote the file (false: identical content was there).
func writeManifest(ctx context.Context, conn node.Conn, become bool, p string, content []byte, want, owned string) (bool, error) {
	res, err := conn.Run(ctx, node.Cmd{Argv: []string{"sh", "-c", writeScript, "sh", p, want, owned}, Become: become, Stdin: bytes.NewReader(content)})
	if err != nil {
		return false, fmt.Errorf("writing %s on %s: %w", p, conn.Name(), err)
	}
	out := strings.TrimSpace(string(res.Stdout))
	switch {
	case out == "wrote":
		return true, nil
	case out == "same":
		return false, nil
	case strings.HasPrefix(out, "foreign "):
		return false, fmt.Errorf("%w: %s already exists on %s with other content (sha256 %s); remove it or choose another manifest_path",
			ErrForeignManifest, p, conn.Name(), strings.TrimPrefix(out, "foreign "))
	}
	return false, fmt.Errorf("writing %s on %s: unexpected output %q", p, conn.Name(), out)
}

// removeManifest removes p if it still holds what we wrote (sha256
// owned). kept explains why a file was left in place ("" when removed or
// already gone).
func removeManifest(ctx context.Context, conn node.Conn, become bool, p, owned string) (kept string, err error) {
	res, err := conn.Run(ctx, node.Cmd{Argv: []string{"sh", "-c", removeScript, "sh", p, owned}, Become: become})
	if err != nil {
		return "", fmt.Errorf("removing %s on %s: %w", p, conn.Name(), err)
	}
	out := strings.TrimSpace(string(res.Stdout))
	switch {
	case out == "removed", out == "gone":
		return "", nil
	case strings.HasPrefix(out, "kept "):
		return fmt.Sprintf("%s on %s was changed after this resource wrote it (now %s); it was left in place", p, conn.Name(), strings.TrimPrefix(out, "kept ")), nil
	}
	return "", fmt.Errorf("removing %s on %s: unexpected output %q", p, conn.Name(), out)
}

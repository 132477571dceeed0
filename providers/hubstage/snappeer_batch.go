package hubstage

import "strings"

// Many small files in one stream. A source whose transfer has a batch
// fetch (snapBatcher: the direct copy's `tar` request over its shared
// connection) gives the receiver its argv as "T WORD" job lines; before
// the per-blob fetches, the receiver (sf_batch) asks it once for every
// small blob that is neither present nor partial, extracts the tar as
// blobs/ETAG.incomplete files (never a blob's name), verifies them in bulk
// (one sha256sum; one git hash-object when git is there) and renames the
// ones whose content is their address. The rest (a cut stream, a wrong
// byte, a node without GNU tar) is left to the per-blob fetch, which
// resumes or refetches it: the batch only saves forks and logins.

// snapBatcher is a transfer with a batch fetch.
type snapBatcher interface {
	// NodeFetchBatch returns the argv the receiver runs ON the
	// destination with the etags on its stdin, one a line; its stdout is
	// a GNU tar of those blobs, each entry named by its etag.
	NodeFetchBatch() (argv []string, ok bool)
}

// batchJobs renders a batch argv as receiver job lines ("T WORD"); none
// when tr has no batch or a word cannot be a job line.
func batchJobs(tr snapTransfer) []byte {
	b, ok := tr.(snapBatcher)
	if !ok {
		return nil
	}
	argv, ok := b.NodeFetchBatch()
	if !ok {
		return nil
	}
	var out strings.Builder
	for _, w := range argv {
		if strings.ContainsAny(w, "\t\n") {
			return nil
		}
		out.WriteString("T\t" + w + "\n")
	}
	return []byte(out.String())
}

// snapBatchFuncs defines sf_batch for the receiver script (it uses the
// receiver's $tmp, $rd and $tab). It prints "D ETAG SIZE" for each blob it
// made present and takes those off $tmp/jobs.
const snapBatchFuncs = `sf_batch() {
  set --
  while IFS="$tab" read -r _t _w; do [ "$_t" = T ] && set -- "$@" "$_w"; done < "$tmp/jobs"
  [ $# -gt 0 ] || return 0
  tar --version 2>/dev/null | grep -q 'GNU tar' || return 0
  : > "$tmp/batch" || return 0
  while IFS="$tab" read -r _t _e _sz _p; do
    [ "$_t" = B ] && [ "$_sz" -lt 16777216 ] || continue # 16 MiB
    [ -e "$rd/blobs/$_e" ] || [ -e "$rd/blobs/$_e.incomplete" ] || printf '%s\t%s\n' "$_e" "$_sz" >> "$tmp/batch"
  done < "$tmp/jobs"
  [ -s "$tmp/batch" ] || return 0
  cut -f1 "$tmp/batch" | "$@" 2>>"$tmp/err.batch" |
    ( cd "$rd/blobs" && tar -x -k --no-same-owner --no-same-permissions --transform='s/$/.incomplete/' -f - ) 2>>"$tmp/err.batch"
  # Content addresses in bulk: sha256 of the LFS blobs, git's blob sha1
  # of the others (with git: one process; without: one pipeline each).
  ( cd "$rd/blobs" || exit 0
    awk -F "$tab" 'length($1) == 64 { print $1 ".incomplete" }' "$tmp/batch" | xargs -r sha256sum 2>/dev/null |
      awk '{ sub(/\.incomplete$/, "", $2); print $2 "\t" $1 }'
    awk -F "$tab" 'length($1) == 40 { print $1 }' "$tmp/batch" | while IFS= read -r _e; do
      [ -f "$_e.incomplete" ] && printf '%s\n' "$_e"
    done > "$tmp/batch40"
    if [ -s "$tmp/batch40" ]; then
      if command -v git >/dev/null 2>&1; then
        sed 's/$/.incomplete/' "$tmp/batch40" | git hash-object --no-filters --stdin-paths 2>/dev/null | paste "$tmp/batch40" -
      else
        while IFS= read -r _e; do
          [ -f "$_e.incomplete" ] || continue
          _h=$( { printf 'blob %s\000' "$(stat -c %s "$_e.incomplete")"; cat "$_e.incomplete"; } | sha1sum)
          printf '%s\t%s\n' "$_e" "${_h%% *}"
        done < "$tmp/batch40"
      fi
    fi ) > "$tmp/batchsums"
  awk -F "$tab" '$1 == $2 { print $1 }' "$tmp/batchsums" > "$tmp/batchok"
  [ -s "$tmp/batchok" ] || return 0
  awk -F "$tab" 'NR == FNR { ok[$1] = 1; next } ($1 in ok) { print $1 "\t" $2 }' "$tmp/batchok" "$tmp/batch" > "$tmp/batchdone"
  : > "$tmp/batchmoved"
  while IFS="$tab" read -r _e _sz; do
    mv -f "$rd/blobs/$_e.incomplete" "$rd/blobs/$_e" && printf 'D\t%s\t%s\n' "$_e" "$_sz" && printf '%s\n' "$_e" >> "$tmp/batchmoved"
  done < "$tmp/batchdone"
  awk -F "$tab" 'NR == FNR { d[$1] = 1; next } !($1 == "B" && ($2 in d))' "$tmp/batchmoved" "$tmp/jobs" > "$tmp/jobs.b" &&
    mv -f "$tmp/jobs.b" "$tmp/jobs"
}
`

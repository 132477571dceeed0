package hubstage

// The node-side scripts of hubstage_snapshot. Each is a fixed POSIX sh
// script (GNU coreutils/findutils or busybox; curl for the hub) whose only
// inputs are its arguments and stdin: no user value is ever spliced into
// shell text.

// snapRecords are the snapshots' restore records on the nodes (package
// providers/internal/restore), keyed by snapKey. Lines:
//
//	owner ADDR      the address of an instance that wrote (a create
//	                whose reply was lost finds its record by it)
//	made DIR        a folder this resource made (removed while empty)
//	blob ETAG       a blob that was not in blobs/ when this resource
//	                started it (its .incomplete included); written BEFORE
//	                the .incomplete is created
//	link PATH       a snapshot link this resource wrote (PATH relative to
//	                snapshots/<commit>)
//	ref REV PRIOR   refs/REV held PRIOR ("-": no file) before this resource
//	                first wrote it; written before the ref
const snapRecordKind = "hubsnapshot"

// snapKey is the record key of one snapshot on a node.
func snapKey(hubDir, repoDir, commit string) string {
	return hubDir + "/" + repoDir + "@" + commit
}

// snapObserveScript observes instances in one command. Arguments: the
// record base and kind, then groups of five: hub_dir, repo folder,
// commit ("" when unknown: the ref is read), revision ("" when pinned),
// verify ("size" or "full"). Output, tab-separated, per instance:
//
//	I n
//	V free        available bytes on hub_dir's filesystem (or its nearest
//	              existing parent)
//	R content     refs/<revision> as found ("-" missing)
//	b ETAG SIZE   a complete blob (links followed)
//	p ETAG SIZE   a blob's .incomplete
//	l PATH TARGET a link in snapshots/<commit>
//	o PATH TYPE   something else there (f file, d folder ...): PATH is not
//	              a link; folders are listed too and ignored
//	h ETAG HASH   (verify=full) the blob's content address recomputed
//	r LINE        the record, one line per record line
//	Z
const snapObserveScript = `set -u
base=$1 kind=$2; shift 2
gnu=; if find / -maxdepth 0 -printf '' 2>/dev/null; then gnu=1; fi
i=0
while [ $# -ge 5 ]; do
  hub=$1 repo=$2 c=$3 rev=$4 verify=$5; shift 5
  printf 'I\t%d\n' "$i"; i=$((i+1))
  rd=$hub/$repo
  d=$hub; while [ ! -d "$d" ] && [ -n "$d" ]; do d=${d%/*}; done; [ -n "$d" ] || d=/
  free=$(df -P -k "$d" 2>/dev/null | awk 'NR==2 {print $4}')
  printf 'V\t%s\n' "${free:-0}"
  if [ -n "$rev" ]; then
    if [ -f "$rd/refs/$rev" ]; then IFS= read -r r < "$rd/refs/$rev" || :; printf 'R\t%s\n' "$r"
      [ -n "$c" ] || c=$r
    else printf 'R\t-\n'; fi
  fi
  if [ -d "$rd/blobs" ]; then
    if [ -n "$gnu" ]; then
      find -L "$rd/blobs" -mindepth 1 -maxdepth 1 -type f -printf '%f\t%s\n' 2>/dev/null | awk -F '\t' '{ if ($1 ~ /\.incomplete$/) { sub(/\.incomplete$/, "", $1); print "p\t" $1 "\t" $2 } else print "b\t" $1 "\t" $2 }'
    else
      (cd "$rd/blobs" && find -L . -mindepth 1 -maxdepth 1 -type f -exec stat -L -c '%n	%s' {} + 2>/dev/null) | sed 's|^\./||' | awk -F '\t' '{ if ($1 ~ /\.incomplete$/) { sub(/\.incomplete$/, "", $1); print "p\t" $1 "\t" $2 } else print "b\t" $1 "\t" $2 }'
    fi
  fi
  sd=$rd/snapshots/$c
  if [ -n "$c" ] && [ -d "$sd" ]; then
    if [ -n "$gnu" ]; then
      (cd "$sd" && find . -mindepth 1 \( -type l -printf 'l\t%P\t%l\n' \) -o \( ! -type d -printf 'o\t%P\t%y\n' \))
    else
      # (busybox find drops -exec + actions inside parentheses)
      (cd "$sd" && find . -mindepth 1 -type l -exec sh -c 'for f do printf "l\t%s\t%s\n" "${f#./}" "$(readlink "$f")"; done' sh {} + \
        -o ! -type d -exec sh -c 'for f do printf "o\t%s\tf\n" "${f#./}"; done' sh {} +)
    fi
    if [ "$verify" = full ]; then
      if [ -n "$gnu" ]; then
        (cd "$sd" && find . -mindepth 1 -type l -printf '%l\n')
      else
        (cd "$sd" && find . -mindepth 1 -type l -exec sh -c 'for f do readlink "$f"; done' sh {} +)
      fi 2>/dev/null | sed 's|.*/||' | sort -u | while IFS= read -r e; do
        b=$rd/blobs/$e
        [ -f "$b" ] || continue
        case ${#e} in
        64) h=$(sha256sum < "$b") ;;
        40) h=$( { printf 'blob %s\000' "$(wc -c < "$b" | tr -d ' ')"; cat "$b"; } | sha1sum) ;;
        *) continue ;;
        esac
        printf 'h\t%s\t%s\n' "$e" "${h%% *}"
      done
    fi
  fi
  if [ -n "$c" ]; then
    key="$hub/$repo@$c"
    n=$(printf '%s\000%s' "$kind" "$key" | sha256sum | cut -c1-32)
    sf_rcat "$base" "$kind" "$n" | sed -n '2,$p' | while IFS= read -r l; do printf 'r\t%s\n' "$l"; done
  fi
  printf 'Z\n'
done
`

// snapReceiveScript makes one snapshot present. Arguments:
//
//	$1 base  $2 kind  $3 record name  $4 record key line
//	$5 hub_dir  $6 repo folder  $7 commit  $8 revision ("" pinned)
//	$9 parallel  then: mode ("fetch": blobs come from the fetch argv that
//	follows; "prep": record and folders only; "finish": links and ref
//	only; "put": ETAG SIZE follow, the bytes on stdin from the
//	.incomplete's current size on), the owner (the instance address,
//	recorded as "owner ADDR"), then the fetch argv (fetch mode).
//
// stdin (prep/fetch/finish): the first line is given to every fetch run
// on its stdin (a secret: held in a shell variable and fed through the
// printf builtin, so it is never in a command line); then jobs, one per
// line, tab-separated:
//
//	B ETAG SIZE URLPATH   a blob to make present
//	L TARGET PATH         a link to write at snapshots/<commit>/PATH
//	X ETAG                a blob whose content is not its address
//	                      (verify=full): removed before the fetch
//
// Order: record (folders, blobs) before anything is made; blobs fetched
// in parallel into blobs/ETAG.incomplete (resumed from its size),
// hashed as they stream, renamed only when size and content address
// match; then links; then the ref, last. Output lines:
//
//	P BYTES        bytes in .incomplete files now (progress)
//	D ETAG SIZE    a blob is complete
//	E ETAG MSG     a blob failed
//	OK             everything is in place
const snapReceiveScript = `set -u
base=$1 kind=$2 rn=$3 keyl=$4 hub=$5 repo=$6 commit=$7 rev=$8 par=$9
shift 9
mode=$1 owner=$2; shift 2
retries=5
tab=$(printf '\t')
rd=$hub/$repo
sd=$rd/snapshots/$commit
rec=$(sf_rcat "$base" "$kind" "$rn")
has() { printf '%s\n' "$rec" | grep -qxF -- "$1"; }
# mk DIR: record each missing folder of DIR (deepest last), then make it.
mk() {
  [ -d "$1" ] && return 0
  _m= _d=$1
  while [ -n "$_d" ] && [ ! -d "$_d" ]; do
    has "made $_d" || _m="made $_d
$_m"
    _d=${_d%/*}
  done
  if [ -n "$_m" ]; then sf_rappend "$base" "$kind" "$rn" "$_m" || return 1; rec="$rec
$_m"; fi
  mkdir -p "$1"
}
size() { if [ -f "$1" ]; then stat -L -c %s "$1"; else echo -1; fi; }
# hashed ETAG SIZE: reads content on stdin, prints its content address.
hashed() {
  case ${#1} in
  64) _h=$(sha256sum) ;;
  *) _h=$( { printf 'blob %s\000' "$2"; cat; } | sha1sum) ;;
  esac
  printf '%s\n' "${_h%% *}"
}
if [ "$mode" = put ]; then
  e=$1 sz=$2 b=$rd/blobs/$1 inc=$rd/blobs/$1.incomplete
  h=$( { cat "$inc" 2>/dev/null; tee -a "$inc"; } | hashed "$e" "$sz")
  if [ "$(size "$inc")" != "$sz" ]; then echo "E $e short: $(size "$inc") of $sz bytes"; exit 0; fi
  if [ "$h" != "$e" ]; then rm -f "$inc"; echo "E $e content address mismatch (got $h)"; exit 0; fi
  mv -f "$inc" "$b" && echo "D $e $sz"
  exit 0
fi
IFS= read -r sec || sec=
tmp=$(mktemp -d "${TMPDIR:-/tmp}/sparkform-snap.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
# Cancelled (sshd signals only this shell; a dropped link hangs it up):
# the workers and their curls go too, so that none writes on after. The
# command runs in a process group of its own (sshd's session, the local
# transport's group), which kill 0 signals.
stop() { trap - HUP INT TERM EXIT; rm -rf "$tmp"; kill 0 2>/dev/null; exit "$1"; }
trap 'stop 129' HUP
trap 'stop 130' INT
trap 'stop 143' TERM
cat > "$tmp/jobs" || exit 1
sf_rcreate "$base" "$kind" "$rn" "$keyl" || exit 1
rec=$(sf_rcat "$base" "$kind" "$rn")
if ! has "owner $owner"; then
  sf_rappend "$base" "$kind" "$rn" "owner $owner
" || exit 1
  rec="$rec
owner $owner"
fi
if [ "$mode" != finish ]; then
  mk "$rd/blobs" || exit 1
  new=
  while IFS="$tab" read -r t e sz p; do
    [ "$t" = B ] || continue
    [ -f "$rd/blobs/$e" ] || has "blob $e" || new="${new}blob $e
"
  done < "$tmp/jobs"
  if [ -n "$new" ]; then sf_rappend "$base" "$kind" "$rn" "$new" || exit 1; fi
  # X ETAG: a blob whose content does not match its name (verify=full):
  # removed so that it is fetched again.
  while IFS="$tab" read -r t e sz p; do
    [ "$t" = X ] || continue
    rm -f "$rd/blobs/$e" || exit 1
  done < "$tmp/jobs"
fi
if [ "$mode" = fetch ]; then
  lock=; if command -v flock >/dev/null 2>&1; then lock=1; fi
  # fetch1 ETAG SIZE URLPATH FETCH-ARGV...: resumes, verifies, renames.
  fetch1() {
    e=$1 sz=$2 p=$3; shift 3
    b=$rd/blobs/$e inc=$rd/blobs/$e.incomplete
    n=0
    while :; do
      if [ "$(size "$b")" = "$sz" ]; then rm -f "$inc"; echo "D	$e	$sz"; return 0; fi
      : >> "$inc" || { echo "E	$e	cannot write $inc"; : > "$tmp/failed"; return 1; }
      off=$(size "$inc")
      if [ "$off" -gt "$sz" ]; then rm -f "$inc"; off=0; fi
      if [ "$off" -lt "$sz" ]; then
        h=$( { cat "$inc" 2>/dev/null; printf '%s\n' "$sec" | "$@" "$e" "$off" "$p" 2>>"$tmp/err.$e" | tee -a "$inc"; } | hashed "$e" "$sz")
      else
        h=$(hashed "$e" "$sz" < "$inc")
      fi
      now=$(size "$inc")
      if [ "$now" = "$sz" ]; then
        if [ "$h" = "$e" ]; then mv -f "$inc" "$b" && { echo "D	$e	$sz"; return 0; }; fi
        rm -f "$inc"
        printf 'content address mismatch (got %s)\n' "$h" >> "$tmp/err.$e"
      elif [ "$now" -gt "$sz" ]; then
        rm -f "$inc"
        printf 'the source sent %s bytes for a %s-byte file\n' "$now" "$sz" >> "$tmp/err.$e"
      else
        printf 'got %s of %s bytes\n' "$now" "$sz" >> "$tmp/err.$e"
      fi
      n=$((n+1))
      if [ $n -gt $retries ]; then
        m=$(tail -n 3 "$tmp/err.$e" 2>/dev/null | tr '\t\n' '  ')
        echo "E	$e	$m"; : > "$tmp/failed"; return 1
      fi
      sleep 1
    done
  }
  one() {
    if [ -n "$lock" ]; then
      # Two snapshots sharing this blob on one node: one fetches it, the
      # other waits and then finds it complete.
      ( flock 9; fetch1 "$@"; r=$?; [ -s "$rd/blobs/$1.incomplete" ] || { [ -f "$rd/blobs/$1" ] && rm -f "$rd/blobs/$1.incomplete"; }; exit $r ) 9>>"$rd/blobs/$1.incomplete"
    else
      fetch1 "$@"
    fi
  }
  ( while [ ! -e "$tmp/done" ]; do
      set -- "$rd"/blobs/*.incomplete
      if [ -e "$1" ]; then printf 'P\t%s\n' "$(stat -L -c %s "$@" 2>/dev/null | awk '{ s += $1 } END { print s + 0 }')"; fi
      sleep 1
    done ) &
  mkfifo "$tmp/sem" || exit 1
  exec 3<>"$tmp/sem"
  i=0; while [ $i -lt "$par" ]; do echo >&3; i=$((i+1)); done
  while IFS="$tab" read -r t e sz p; do
    [ "$t" = B ] || continue
    read -r _ <&3
    ( one "$e" "$sz" "$p" "$@"; echo >&3 ) &
  done < "$tmp/jobs"
  while [ $i -gt 0 ]; do read -r _ <&3; i=$((i-1)); done
  : > "$tmp/done"
  wait
  [ ! -e "$tmp/failed" ] || exit 2
fi
[ "$mode" = prep ] && { echo OK; exit 0; }
if [ "$mode" = finish ]; then
  while IFS="$tab" read -r t e sz p; do
    [ "$t" = B ] || continue
    [ "$(size "$rd/blobs/$e")" = "$sz" ] || { echo "E	$e	not complete"; exit 2; }
  done < "$tmp/jobs"
fi
mk "$sd" || exit 1
new=
while IFS="$tab" read -r t tg p; do
  [ "$t" = L ] || continue
  has "link $p" || new="${new}link $p
"
done < "$tmp/jobs"
if [ -n "$new" ]; then sf_rappend "$base" "$kind" "$rn" "$new" || exit 1; fi
while IFS="$tab" read -r t tg p; do
  [ "$t" = L ] || continue
  l=$sd/$p
  mk "${l%/*}" || exit 1
  if [ -L "$l" ]; then rm -f "$l" || exit 1; fi
  ln -s "$tg" "$l" || exit 1
done < "$tmp/jobs"
if [ -n "$rev" ]; then
  rf=$rd/refs/$rev
  cur=-
  if [ -f "$rf" ]; then IFS= read -r cur < "$rf" || :; [ -n "$cur" ] || cur=-; fi
  if [ "$cur" != "$commit" ]; then
    if ! printf '%s\n' "$rec" | awk -v r="$rev" '$1 == "ref" && $2 == r { f = 1 } END { exit !f }'; then
      # The ref holds a commit another sparkform snapshot wrote there (a
      # moved ref): what was there before that one is the prior to keep.
      prior=$cur
      if [ "$cur" != - ]; then
        n=$(printf '%s\000%s' "$kind" "$hub/$repo@$cur" | sha256sum | cut -c1-32)
        p0=$(sf_rcat "$base" "$kind" "$n" | awk -v r="$rev" '$1 == "ref" && $2 == r { print $3; exit }')
        [ -z "$p0" ] || prior=$p0
      fi
      sf_rappend "$base" "$kind" "$rn" "ref $rev $prior
" || exit 1
    fi
    mk "${rf%/*}" || exit 1
    printf '%s' "$commit" > "$rf.sparkform-tmp" && mv -f "$rf.sparkform-tmp" "$rf" || exit 1
  fi
fi
echo OK
`

// snapDestroyScript gives the node back. Arguments: $1 base $2 kind
// $3 record name $4 hub_dir $5 repo folder $6 commit. It removes the
// links the record names (only links), restores refs that still hold the
// commit, removes each recorded blob (and its .incomplete) that no link
// in snapshots/ points to any more, or hands it over to the record of the
// snapshot that links to it (when that snapshot has one; otherwise the
// blob is left to its other user), removes the recorded folders while
// empty, then the record. Output: "KEPT ETAG COMMIT" per blob kept,
// "GIVEN ETAG COMMIT" per blob handed over, then "OK".
const snapDestroyScript = `set -u
base=$1 kind=$2 rn=$3 hub=$4 repo=$5 commit=$6
rd=$hub/$repo
sd=$rd/snapshots/$commit
rec=$(sf_rcat "$base" "$kind" "$rn" | sed -n '2,$p')
[ -n "$rec" ] || { echo OK; exit 0; }
printf '%s\n' "$rec" | sed -n 's/^link //p' | while IFS= read -r p; do
  [ -L "$sd/$p" ] && rm -f "$sd/$p"
done
printf '%s\n' "$rec" | sed -n 's/^ref //p' | while read -r r prior; do
  rf=$rd/refs/$r
  [ -f "$rf" ] || continue
  IFS= read -r cur < "$rf" || :
  [ "$cur" = "$commit" ] || continue
  if [ "$prior" = - ]; then rm -f "$rf"; else printf '%s' "$prior" > "$rf.sparkform-tmp" && mv -f "$rf.sparkform-tmp" "$rf"; fi
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/sparkform-snap.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
if [ -d "$rd/snapshots" ]; then
  if find / -maxdepth 0 -printf '' 2>/dev/null; then
    (cd "$rd/snapshots" && find . -mindepth 2 -type l -printf '%P\t%l\n') > "$tmp/links"
  else
    (cd "$rd/snapshots" && find . -mindepth 2 -type l -exec sh -c 'for f do printf "%s\t%s\n" "${f#./}" "$(readlink "$f")"; done' sh {} +) > "$tmp/links"
  fi
else
  : > "$tmp/links"
fi
printf '%s\n' "$rec" | sed -n 's/^blob //p' | sort -u | while IFS= read -r e; do
  users=$(grep "/blobs/$e\$" "$tmp/links" | sed 's|/.*||' | sort -u)
  if [ -z "$users" ]; then rm -f "$rd/blobs/$e" "$rd/blobs/$e.incomplete"; continue; fi
  rm -f "$rd/blobs/$e.incomplete"
  given=
  for c in $users; do
    n=$(printf '%s\000%s' "$kind" "$hub/$repo@$c" | sha256sum | cut -c1-32)
    orec=$(sf_rcat "$base" "$kind" "$n")
    [ -n "$orec" ] || continue
    if ! printf '%s\n' "$orec" | grep -qxF "blob $e"; then sf_rappend "$base" "$kind" "$n" "blob $e
" || exit 1; fi
    given=$c; break
  done
  if [ -n "$given" ]; then printf 'GIVEN %s %s\n' "$e" "$given"; else printf 'KEPT %s %s\n' "$e" "$(printf '%s' "$users" | head -n 1)"; fi
done
printf '%s\n' "$rec" | sed -n 's/^made //p' | awk '{ print length($0) "\t" $0 }' | sort -rn | cut -f2- | while IFS= read -r d; do
  rmdir "$d" 2>/dev/null
done
# Folders still in use (another snapshot of the repo is in them) go to
# that snapshot's record, so that the last destroy removes them.
left=$(printf '%s\n' "$rec" | sed -n 's/^made //p' | while IFS= read -r d; do [ -d "$d" ] && printf 'made %s\n' "$d"; done)
if [ -n "$left" ] && [ -d "$rd/snapshots" ]; then
  for c in $(ls "$rd/snapshots"); do
    [ "$c" != "$commit" ] || continue
    n=$(printf '%s\000%s' "$kind" "$hub/$repo@$c" | sha256sum | cut -c1-32)
    orec=$(sf_rcat "$base" "$kind" "$n")
    [ -n "$orec" ] || continue
    add=$(printf '%s\n' "$left" | while IFS= read -r l; do printf '%s\n' "$orec" | grep -qxF -- "$l" || printf '%s\n' "$l"; done)
    if [ -n "$add" ]; then sf_rappend "$base" "$kind" "$n" "$add
" || exit 1; fi
    break
  done
fi
sf_rrm "$base" "$kind" "$rn" || exit 1
echo OK
`

package hubstage

import "github.com/sparkform/sparkform/providers/node"

// The node-side scripts of hubstage_snapshot. Each is a fixed POSIX sh
// script (GNU coreutils/findutils or busybox; curl for the hub) whose only
// inputs are its arguments and stdin: no user value is ever spliced into
// shell text (a transfer's batch argv reaches the receiver quoted by
// node.QuoteArgv, which it evals).

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
// record base and kind, then groups of six: hub_dir, repo folder,
// commit ("" when unknown: the ref is read), revision ("" when pinned),
// verify ("size" or "full"), the record's name when the commit is known
// ("": the script computes it, two processes). Output, tab-separated, per
// instance:
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
ossl=; case " $* " in *" full "*) if command -v openssl >/dev/null 2>&1 && openssl dgst -sha256 -r < /dev/null > /dev/null 2>&1; then ossl=1; fi ;; esac
i=0
while [ $# -ge 6 ]; do
  hub=$1 repo=$2 c=$3 rev=$4 verify=$5 n=$6; shift 6
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
        64) if [ -n "$ossl" ]; then h=$(openssl dgst -sha256 -r < "$b"); else h=$(sha256sum < "$b"); fi ;;
        40) h=$( { printf 'blob %s\000' "$(wc -c < "$b" | tr -d ' ')"; cat "$b"; } | sha1sum) ;;
        *) continue ;;
        esac
        printf 'h\t%s\t%s\n' "$e" "${h%% *}"
      done
    fi
  fi
  if [ -n "$c" ]; then
    [ -n "$n" ] || n=$(printf '%s\000%s' "$kind" "$hub/$repo@$c" | sha256sum | cut -c1-32)
    # (awk, not a read loop: dash reads a line a byte at a time, and the
    # record holds a line per blob and per link: 0.2 s of node CPU for
    # 1,000 files.)
    sf_rcat "$base" "$kind" "$n" | awk 'NR > 1 { print "r\t" $0 }'
  fi
  printf 'Z\n'
done
`

// snapLockFuncs serialise, on one node, the record and folder work of
// hub snapshots (not their transfers): a destroy hands blobs and folders
// over to other snapshots' records and removes folders that became empty,
// a create records the folders it makes. Two at once (a model and its
// drafter destroyed in one run) each saw the other's snapshot still
// there, and the hub folder was left. The lock is an flock on the root
// folder's descriptor: nothing to create, nothing left behind. Without
// flock (busybox without it) there is no lock.
const snapLockFuncs = `sf_hlock() { if command -v flock >/dev/null 2>&1; then exec 7</ && flock 7; fi; }
sf_hunlock() { exec 7<&-; }
`

// snapReceiveScript makes one snapshot present. Arguments:
//
//	$1 base  $2 kind  $3 record name  $4 record key line
//	$5 hub_dir  $6 repo folder  $7 commit  $8 revision ("" pinned)
//	$9 parallel  then: mode ("fetch": blobs come from the fetch argv that
//	follows; "prep": record and folders only; "finish": links and ref
//	only; "put": ETAG SIZE follow, the bytes on stdin from the
//	.incomplete's current size on; "puts": many blobs framed on stdin,
//	see below), the owner (the instance address,
//	recorded as "owner ADDR"), the batch kind ("" none, "files" or "tar":
//	see snapBatcher, snapTarBatcher) and the batch argv quoted as one
//	string, the node helper's path ("" none: node.HelperPath) and the
//	arguments of its hubfetch after PARALLEL, quoted as one string (""
//	when the transfer has none: snapHelperFetcher), then the fetch argv
//	(fetch mode).
//
// stdin (prep/fetch/finish): the first line is given to every fetch run
// on its stdin (a secret: held in a shell variable and fed through the
// printf builtin, so it is never in a command line); then the length in
// bytes of the jobs, one line; then the jobs, one per
// line, tab-separated, up to a line "END"; then (fetch, finish) a tar
// holding every link to write (one tar process writes them all):
//
//	B ETAG SIZE URLPATH   a blob to make present, streamed on its own
//	S ETAG SIZE URLPATH   a small blob, fetched in one batch with the
//	                      others when the transfer can, in
//	                      blobs/.sparkform-incoming.<commit>/ETAG
//	M DIR                 a folder under snapshots/<commit> the links need
//	L TARGET PATH         a link (in the tar) at snapshots/<commit>/PATH
//	X ETAG                a blob whose content is not its address
//	                      (verify=full): removed before the fetch
//
// stdin (puts: the relay and the push, many blobs in one command): frames
// "ETAG SIZE OFFSET LEN" (one line, spaces) then LEN bytes, which go on
// the .incomplete from OFFSET (its size now: anything else is refused
// for that blob, the bytes skipped); "END" ends. Each blob is hashed
// once whole (the big ones while the next ones arrive) and renamed when
// it matches. It needs a head that reads no byte past -c (GNU's); prep
// says "C puts" where there is one, and the relay sends one "put" per
// blob elsewhere.
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
var snapReceiveScript = snapLockFuncs + `set -u
base=$1 kind=$2 rn=$3 keyl=$4 hub=$5 repo=$6 commit=$7 rev=$8 par=$9
shift 9
mode=$1 owner=$2 bkind=$3 bcmd=$4 hp=$5 hf=$6; shift 6
` + node.HelperShell("hp") + `[ -n "$hf" ] || hp=
retries=5
tab=$(printf '\t')
nl='
'
rd=$hub/$repo
sd=$rd/snapshots/$commit
# Small blobs in flight (one folder per commit: two snapshots fetching at
# once keep apart).
inbox=$rd/blobs/.sparkform-incoming.$commit
gnu=; if find / -maxdepth 0 -printf '' 2>/dev/null; then gnu=1; fi
rec=$(sf_rcat "$base" "$kind" "$rn")
# has LINE: whether the record holds LINE (no process: a node is often
# busy, and a fork per file is what makes 1,000 small files slow).
# mkall TEXT DIR...: records each missing folder of the DIRs ("made"
# lines) with TEXT (record lines, each ending in a newline) in one
# fsync'ed append, then makes them with one mkdir.
mkall() {
  _mt=$1 _mn=; shift
  for _mx do
    _md=$_mx
    while [ -n "$_md" ] && [ ! -d "$_md" ]; do
      _mn=1
      case "$nl$_mt" in *"${nl}made $_md$nl"*) break ;; esac
      has "made $_md" || _mt="${_mt}made $_md$nl"
      _md=${_md%/*}
    done
  done
  if [ -n "$_mt" ]; then sf_rappend "$base" "$kind" "$rn" "$_mt" || return 1; rec="$rec$nl$_mt"; fi
  [ -z "$_mn" ] || mkdir -p "$@"
}
# mk DIR: record each missing folder of DIR, then make it.
mk() { mkall "" "$1"; }
# mksnap TEXT: mkall TEXT with the snapshot's folders: blobs/, the
# snapshot's and the folders its links need (M jobs), refs/ for a
# revision.
mksnap() {
  _st=$1
  set -- "$rd/blobs" "$sd"
  [ -z "$rev" ] || set -- "$@" "$rd/refs"
  if grep "^M$tab" "$tmp/jobs" > "$tmp/mdirs"; then
    while IFS="$tab" read -r _sk _sp; do set -- "$@" "$sd/$_sp"; done < "$tmp/mdirs"
  fi
  mkall "$_st" "$@"
}
size() { if [ -f "$1" ]; then stat -L -c %s "$1"; else echo -1; fi; }
# openssl hashes several times faster than coreutils where the CPU has
# SHA instructions (x86 SHA-NI, ARMv8): used when it is there.
ossl=; if command -v openssl >/dev/null 2>&1 && openssl dgst -sha256 -r < /dev/null > /dev/null 2>&1; then ossl=1; fi
sha256() { if [ -n "$ossl" ]; then openssl dgst -sha256 -r; else sha256sum; fi; }
sha1() { if [ -n "$ossl" ]; then openssl dgst -sha1 -r; else sha1sum; fi; }
# hashed ETAG SIZE: reads content on stdin, prints its content address.
hashed() {
  case ${#1} in
  64) _h=$(sha256) ;;
  *) _h=$( { printf 'blob %s\000' "$2"; cat; } | sha1) ;;
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
if [ "$mode" = puts ]; then
  # done1 ETAG SIZE: the complete .incomplete verified and renamed.
  done1() {
    _inc=$rd/blobs/$1.incomplete
    _h=$(hashed "$1" "$2" < "$_inc")
    if [ "$_h" = "$1" ]; then mv -f "$_inc" "$rd/blobs/$1" && echo "D	$1	$2"
    else rm -f "$_inc"; echo "E	$1	content address mismatch (got $_h)"; fi
  }
  while IFS=' ' read -r e sz off n; do
    [ "$e" != END ] || break
    case $e$sz$off$n in *[!0-9a-f]*|'') echo "E	-	bad frame"; exit 2 ;; esac
    inc=$rd/blobs/$e.incomplete
    cur=0; [ ! -s "$inc" ] || cur=$(size "$inc")
    if [ "$cur" != "$off" ]; then
      if [ "$off" = 0 ]; then : > "$inc"; else
        head -c "$n" > /dev/null
        echo "E	$e	the partial file has $cur bytes, not $off"; continue
      fi
    fi
    head -c "$n" >> "$inc"
    now=$(size "$inc")
    if [ "$now" != "$sz" ]; then echo "E	$e	got $now of $sz bytes"; [ "$now" -lt "$sz" ] || rm -f "$inc"; continue; fi
    # A big blob is hashed while the next ones arrive.
    if [ "$sz" -ge 1048576 ]; then done1 "$e" "$sz" & else done1 "$e" "$sz"; fi
  done
  wait
  exit 0
fi
IFS= read -r sec || sec=
IFS= read -r jlen || jlen=
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
# Until the transfer's own heartbeat (the monitor below) takes over, or
# the script ends, a line "H" every quarter second: a receiver that waits
# for the node's snapshot lock (sf_hlock) or does its record work on a
# busy node sees its connection gone within that (sparkform killed before
# the transfer began: sshd sends no signal to a command without a tty)
# and stops, instead of taking the lock later and working on for nobody.
( trap '' PIPE
  while [ -d "$tmp" ]; do
    printf 'H\n' || { kill -TERM 0; exit 1; }
    sleep 0.25 > /dev/null 2>&1 || sleep 1 > /dev/null 2>&1
  done ) &
hb=$!
trap 'kill "$hb" 2>/dev/null; rm -rf "$tmp"' EXIT
# The jobs ($jlen bytes) end at a line "END"; a tar of the links follows
# (read by tar below, in one process however many links there are). The
# shell reads a line from a pipe a byte at a time, a read(2) each (200,000
# for 1,000 files); the helper reads exactly the jobs' bytes in a few.
rc=125
if [ -n "$hp" ]; then "$hp" take "$jlen" > "$tmp/jobs"; rc=$?; fi
case $rc in
0) ;;
125) while IFS= read -r l; do [ "$l" = END ] && break; printf '%s\n' "$l"; done > "$tmp/jobs" || exit 1 ;;
*) exit 1 ;;
esac
sf_hlock
sf_rcreate "$base" "$kind" "$rn" "$keyl" || exit 1
rec=$(sf_rcat "$base" "$kind" "$rn")
if ! has "owner $owner"; then
  sf_rappend "$base" "$kind" "$rn" "owner $owner
" || exit 1
  rec="$rec
owner $owner"
fi
if [ "$mode" != finish ]; then
  # Recorded in one append before any of it is made: the blobs not there
  # and not yet recorded, the links and the folders of the snapshot (one
  # awk against the record: a pattern match per blob over a growing
  # record costs seconds for 1,000 files; one fsync'ed append, not one
  # per folder). The folders are made now, so that the node helper's
  # fetch writes each link as its blob completes.
  printf '%s\n' "$rec" > "$tmp/rec"
  # (The names in blobs/ from one ls: a test per blob in a read loop is a
  # read(2) per byte of its name.)
  (cd "$rd/blobs" && ls -A) > "$tmp/have" 2>/dev/null || : > "$tmp/have"
  awk -F '\t' 'FILENAME == ARGV[1] { if ($0 ~ /^blob /) r[substr($0, 6)] = 1; else if ($0 ~ /^link /) l[substr($0, 6)] = 1; next }
    FILENAME == ARGV[2] { h[$0] = 1; next }
    ($1 == "B" || $1 == "S") && !($2 in r) && !($2 in h) { print "blob " $2 }
    $1 == "L" && !($3 in l) { print "link " $3 }' "$tmp/rec" "$tmp/have" "$tmp/jobs" > "$tmp/new"
  new=; [ ! -s "$tmp/new" ] || new="$(cat "$tmp/new")$nl"
  mksnap "$new" || exit 1
  # X ETAG: a blob whose content does not match its name (verify=full):
  # removed so that it is fetched again.
  # (dash reads a line a byte at a time: a file of 2,000 job lines costs
  # more than the grep that finds none.)
  if grep -q "^X$tab" "$tmp/jobs"; then
    while IFS="$tab" read -r t e sz p; do
      [ "$t" = X ] || continue
      rm -f "$rd/blobs/$e" || exit 1
    done < "$tmp/jobs"
  fi
fi
# verify_small: the inbox files of $tmp/small ("ETAG SIZE URLPATH") that
# are whole and hash to their name are renamed into blobs/ (one mv for
# all) and reported; $tmp/small keeps the others.
verify_small() {
  (cd "$inbox" && if [ -n "$gnu" ]; then find . -maxdepth 1 -type f -printf '%f\t%s\n'
    else set -- *; [ -e "$1" ] && stat -c "%n$tab%s" -- "$@"; fi) > "$tmp/have" 2>/dev/null
  : > "$tmp/sized"; : > "$tmp/rest"; : > "$tmp/over"
  awk -F '\t' -v sized="$tmp/sized" -v rest="$tmp/rest" -v over="$tmp/over" '
    FILENAME == ARGV[1] { have[$1] = $2; next }
    ($1 in have) && have[$1] == $2 { print $1 "\t" $2 > sized; next }
    ($1 in have) && have[$1] > $2 { print $1 > over }
    { print > rest }' "$tmp/have" "$tmp/small"
  if [ -s "$tmp/over" ]; then (cd "$inbox" && xargs rm -f < "$tmp/over"); fi
  : > "$tmp/sums"
  grep -E '^[0-9a-f]{64}	' "$tmp/sized" | cut -f1 > "$tmp/s256"
  if [ -s "$tmp/s256" ]; then
    if [ -n "$ossl" ]; then (cd "$inbox" && xargs openssl dgst -sha256 -r < "$tmp/s256"); else (cd "$inbox" && xargs sha256sum < "$tmp/s256"); fi |
      awk '{ n = $2; sub(/^\*/, "", n); print n "\t" $1 }' >> "$tmp/sums"
  fi
  grep -E '^[0-9a-f]{40}	' "$tmp/sized" > "$tmp/s1"
  if [ -s "$tmp/s1" ]; then
    if command -v git >/dev/null 2>&1; then
      cut -f1 "$tmp/s1" > "$tmp/s1n"
      (cd "$inbox" && git hash-object --no-filters --stdin-paths < "$tmp/s1n") > "$tmp/s1h" 2>/dev/null || : > "$tmp/s1h"
      paste "$tmp/s1n" "$tmp/s1h" >> "$tmp/sums"
    else
      while IFS="$tab" read -r e sz; do
        h=$( { printf 'blob %s\000' "$sz"; cat "$inbox/$e"; } | sha1)
        printf '%s\t%s\n' "$e" "${h%% *}"
      done < "$tmp/s1" >> "$tmp/sums"
    fi
  fi
  : > "$tmp/good"; : > "$tmp/bad"
  awk -F '\t' -v good="$tmp/good" -v bad="$tmp/bad" '$1 == $2 { print $1 > good; next } { print $1 > bad }' "$tmp/sums"
  if [ -s "$tmp/bad" ]; then (cd "$inbox" && xargs rm -f < "$tmp/bad"); fi
  if [ -s "$tmp/good" ]; then
    # tar run by root keeps the archive's modes, the source's (0600 where
    # its user's umask is 077): a blob gets this node's mode, 0666 less
    # the umask, as the hub client gives it, so that the login user (a
    # direct copy from this node, a server that does not run as root)
    # reads what a root receiver wrote.
    if [ "$bkind" = tar ]; then
      (cd "$inbox" && xargs chmod "$(printf '%o' $((0666 & ~0$(umask))))" < "$tmp/good") || return 1
    fi
    (cd "$inbox" && xargs sh -c 'mv -f "$@" ..' sh < "$tmp/good") || return 1
    # What an earlier one-by-one attempt left for these is stale now.
    sed 's/$/.incomplete/' "$tmp/good" | (cd "$rd/blobs" && xargs rm -f)
    awk -F '\t' 'FILENAME == ARGV[1] { g[$1] = 1; next } ($1 in g) { print "D\t" $1 "\t" $2 }' "$tmp/good" "$tmp/small"
  fi
  awk -F '\t' 'FILENAME == ARGV[1] { g[$1] = 1; next } !($1 in g) && !seen[$1]++' "$tmp/good" "$tmp/small" > "$tmp/small.next"
  mv -f "$tmp/small.next" "$tmp/small"
}
sf_hunlock
if [ "$mode" = fetch ] && [ -n "$hp" ]; then
  # The node helper's hubfetch does the job loop below in one process:
  # every blob, $par at once over reused connections, each byte written
  # and hashed once, the same P (its heartbeat too), D and E lines; it
  # writes each blob's links once the blob is complete (-links: the
  # folders are made above), which the links step below then finds. The
  # secret reaches it on stdin from the printf builtin (never in argv).
  # 125: a helper without hubfetch: the shell's loop.
  kill "$hb" 2>/dev/null
  hfetch() { "$hp" hubfetch -links "$sd" "$rd/blobs" "$inbox" "$par" "$@"; }
  { printf '%s\n' "$sec"; cat "$tmp/jobs"; } | eval "hfetch $hf"
  rc=$?
  case $rc in
  0) ;;
  2) exit 2 ;;
  125) hp= ;;
  *) stop "$rc" ;;
  esac
fi
if [ "$mode" = fetch ] && [ -z "$hp" ]; then
  # Progress: the bytes in flight, every second, until "done" (or the
  # temp folder is gone: an exit on an error must not leave it running,
  # holding stdout open). Its sleep keeps no stdout.
  # It is also the heartbeat: when the connection is gone (sparkform
  # killed, the link cut: sshd sends no signal to a command without a
  # tty), its line cannot be written, and it takes the whole receiver
  # down (workers and curls: kill 0), so that no writer is left on an
  # .incomplete for the next apply to meet.
  # The line goes out every quarter second (a builtin write: the link's
  # loss is seen within that, under load too), its sum every second.
  kill "$hb" 2>/dev/null
  ( trap '' PIPE
    i=0 pl=0
    while [ -d "$tmp" ] && [ ! -e "$tmp/done" ]; do
      if [ $((i % 4)) = 0 ]; then
        set -- "$rd"/blobs/*.incomplete "$inbox"/*
        pl=$(stat -L -c %s "$@" 2>/dev/null | awk '{ s += $1 } END { print s + 0 }')
      fi
      i=$((i+1))
      printf 'P\t%s\n' "$pl" || { kill -TERM 0; exit 1; }
      sleep 0.25 > /dev/null 2>&1 || sleep 1 > /dev/null 2>&1
    done ) &
  mon=$!
  lock=; if command -v flock >/dev/null 2>&1; then lock=1; fi
  # fetch1 ETAG SIZE URLPATH FETCH-ARGV...: resumes, verifies, renames.
  # The fetch writes straight into the .incomplete (no tee, no pipe: each
  # byte is copied once, as curl -o does); the whole file is hashed once it
  # has its size, before it is renamed. A fork costs a millisecond on a busy
  # node: builtins where a test does (no stat for an empty .incomplete).
  fetch1() {
    e=$1 sz=$2 p=$3; shift 3
    b=$rd/blobs/$e inc=$rd/blobs/$e.incomplete
    # A small blob the batch left: resume from its bytes (with this
    # node's mode, not the archive's: see verify_small).
    if [ -f "$inbox/$e" ] && [ ! -s "$inc" ]; then
      mv -f "$inbox/$e" "$inc"
      [ "$bkind" != tar ] || chmod "$(printf '%o' $((0666 & ~0$(umask))))" "$inc"
    fi
    n=0
    while :; do
      if [ -f "$b" ] && [ "$(size "$b")" = "$sz" ]; then rm -f "$inc"; echo "D	$e	$sz"; return 0; fi
      : >> "$inc" || { echo "E	$e	cannot write $inc"; : > "$tmp/failed"; return 1; }
      off=0; [ ! -s "$inc" ] || off=$(size "$inc")
      if [ "$off" -gt "$sz" ]; then : > "$inc"; off=0; fi
      now=$off
      if [ "$off" -lt "$sz" ]; then
        printf '%s\n' "$sec" | "$@" "$e" "$off" "$p" >> "$inc" 2>>"$tmp/err.$e"
        now=0; [ ! -s "$inc" ] || now=$(size "$inc")
      fi
      if [ "$now" = "$sz" ]; then
        h=$(hashed "$e" "$sz" < "$inc")
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
      ( flock 9; fetch1 "$@"; r=$?; [ ! -e "$rd/blobs/$1.incomplete" ] || [ -s "$rd/blobs/$1.incomplete" ] || { [ -f "$rd/blobs/$1" ] && rm -f "$rd/blobs/$1.incomplete"; }; exit $r ) 9>>"$rd/blobs/$1.incomplete"
    else
      fetch1 "$@"
    fi
  }
  # bigloop JOBS SEM FETCH-ARGV...: the B blobs of JOBS, at most $par at
  # once.
  bigloop() {
    _jf=$1 _sem=$2; shift 2
    grep "^B$tab" "$_jf" > "$_jf.B" || return 0
    mkfifo "$_sem" || return 1
    exec 3<>"$_sem"
    i=0; while [ $i -lt "$par" ]; do echo >&3; i=$((i+1)); done
    while IFS="$tab" read -r t e sz p; do
      [ "$t" = B ] || continue
      read -r _ <&3
      ( one "$e" "$sz" "$p" "$@"; echo >&3 ) &
    done < "$_jf.B"
    while [ $i -gt 0 ]; do read -r _ <&3; i=$((i-1)); done
  }
  # The large blobs stream while the small ones go in their batch.
  ( bigloop "$tmp/jobs" "$tmp/sem1" "$@" ) &
  big=$!
  # Small blobs (S): one run of the batch command for all of them (curl
  # -Z, or a tar over one ssh connection), written in blobs/.sparkform-incoming
  # (resumed there), verified in a few processes, then renamed with one mv.
  # What is left goes one by one below.
  if [ -n "$bkind" ]; then
    awk -F '\t' '$1 == "S" { print $2 "\t" $3 "\t" $4 }' "$tmp/jobs" > "$tmp/small"
  else
    : > "$tmp/small"
  fi
  if [ -s "$tmp/small" ]; then
    # An inbox left by an interrupted run may hold whole blobs: those are
    # verified and kept before the batch asks for the rest (a Range from
    # a whole file's end is a request for nothing).
    resumed=; [ -d "$inbox" ] && resumed=1
    mk "$inbox" || stop 1
    awk -F '\t' '$2 == 0 { print $1 }' "$tmp/small" | while IFS= read -r e; do : >> "$inbox/$e"; done
    if [ -n "$resumed" ]; then verify_small || stop 1; fi
    n=0
    while [ -s "$tmp/small" ] && [ $n -lt 3 ]; do
      n=$((n+1))
      cut -f1,3 "$tmp/small" > "$tmp/req"
      # bcmd is an argv quoted by the provider (node.QuoteArgv).
      if [ "$bkind" = tar ]; then
        (cd "$inbox" && cut -f1 "$tmp/req" | eval "$bcmd" | tar -x -o -f -) > /dev/null 2>> "$tmp/err.batch"
      else
        (cd "$inbox" && { printf '%s\n' "$sec"; cat "$tmp/req"; } | eval "$bcmd") > /dev/null 2>> "$tmp/err.batch"
      fi
      verify_small || stop 1
    done
    awk -F '\t' '{ print "B\t" $1 "\t" $2 "\t" $3 }' "$tmp/small" > "$tmp/jobs2"
    [ -s "$tmp/small" ] || rmdir "$inbox" 2>/dev/null
  fi
  wait "$big"
  # What the batch left, one by one.
  if [ -s "$tmp/jobs2" ]; then bigloop "$tmp/jobs2" "$tmp/sem2" "$@" || stop 1; fi
  : > "$tmp/done"
  kill "$mon" 2>/dev/null
  wait
  [ ! -e "$tmp/failed" ] || exit 2
fi
if [ "$mode" = prep ]; then
  case $(head --version 2>/dev/null) in *GNU*) printf 'C\tputs\n' ;; esac
  echo OK; exit 0
fi
if [ "$mode" = finish ]; then
  while IFS="$tab" read -r t e sz p; do
    case $t in B|S) ;; *) continue ;; esac
    [ "$(size "$rd/blobs/$e")" = "$sz" ] || { echo "E	$e	not complete"; exit 2; }
  done < "$tmp/jobs"
fi
sf_hlock
rec=$(sf_rcat "$base" "$kind" "$rn") # a destroy meanwhile may have handed something over
# (Recorded and made before the transfer unless this is finish mode:
# then the links and folders are recorded and made here.)
printf '%s\n' "$rec" > "$tmp/rec"
awk -F '\t' 'FILENAME == ARGV[1] { if ($0 ~ /^link /) r[substr($0, 6)] = 1; next }
  $1 == "L" && !($3 in r) { print "link " $3 }' "$tmp/rec" "$tmp/jobs" > "$tmp/new"
new=; [ ! -s "$tmp/new" ] || new="$(cat "$tmp/new")$nl"
mksnap "$new" || exit 1
if grep -q "^L$tab" "$tmp/jobs"; then
  # tar replaces a wrong link and keeps no owner from the archive. GNU
  # tar makes a placeholder file for each link whose target holds ".."
  # and swaps it at the end (twice the work for 1,000 links); -P skips
  # that: the archive is the provider's own, its names clean relative
  # paths (checkListing) and its targets built there.
  tp=; case $(tar --version 2>/dev/null) in *GNU*) tp=-P ;; esac
  # The helper writes them from the job lines in one process (no
  # placeholder, no archive to parse); the tar on stdin is then read to
  # its end and dropped.
  if [ -n "$hp" ] && "$hp" links "$sd" < "$tmp/jobs" > "$tmp/links"; then
    cat > /dev/null
  else
    tar -x -v -o $tp -C "$sd" -f - > "$tmp/links" || exit 1
  fi
  # A tar cut short at an entry's end (stdin lost with the connection: a
  # killed sparkform) ends with status 0, GNU's and busybox's alike: every
  # link must be there before the ref is written.
  want=$(grep -c "^L$tab" "$tmp/jobs") got=$(wc -l < "$tmp/links")
  [ $((got)) -eq $((want)) ] || { echo "E	-	$got of $want links written"; exit 2; }
fi
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
// $3 record name $4 hub_dir $5 repo folder $6 commit. It restores refs
// that still hold the commit (first: a create writes them last), removes
// the links the record names (only links), removes each recorded blob (and its .incomplete) that no link
// in snapshots/ points to any more, or hands it over to the record of the
// snapshot that links to it (when that snapshot has one; otherwise the
// blob is left to its other user), removes the recorded folders while
// empty, then the record. Output: "KEPT ETAG COMMIT" per blob kept,
// "GIVEN ETAG COMMIT" per blob handed over, then "OK".
const snapDestroyScript = snapLockFuncs + `set -u
base=$1 kind=$2 rn=$3 hub=$4 repo=$5 commit=$6
rd=$hub/$repo
sd=$rd/snapshots/$commit
sf_hlock
rec=$(sf_rcat "$base" "$kind" "$rn" | sed -n '2,$p')
[ -n "$rec" ] || { echo OK; exit 0; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/sparkform-snap.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
gnu=; if find / -maxdepth 0 -printf '' 2>/dev/null; then gnu=1; fi
# The refs first (a create writes them last): a destroy killed half way
# never leaves a ref naming a snapshot whose links are going.
printf '%s\n' "$rec" | sed -n 's/^ref //p' | while read -r r prior; do
  rf=$rd/refs/$r
  [ -f "$rf" ] || continue
  IFS= read -r cur < "$rf" || :
  [ "$cur" = "$commit" ] || continue
  if [ "$prior" = - ]; then rm -f "$rf"; else printf '%s' "$prior" > "$rf.sparkform-tmp" && mv -f "$rf.sparkform-tmp" "$rf"; fi
done
# The links this resource wrote that are links still (a file someone put
# in one's place is left): a few processes, whatever their number.
printf '%s\n' "$rec" | sed -n 's/^link //p' > "$tmp/ours"
if [ -s "$tmp/ours" ] && [ -d "$sd" ]; then
  (cd "$sd" && find . -type l) | sed 's|^\./||' > "$tmp/islink"
  awk 'FILENAME == ARGV[1] { l[$0] = 1; next } ($0 in l)' "$tmp/islink" "$tmp/ours" | tr '\n' '\000' | (cd "$sd" && xargs -0 -r rm -f)
fi
# Every link left under snapshots/: COMMIT/PATH and its target.
if [ -d "$rd/snapshots" ]; then
  if [ -n "$gnu" ]; then
    (cd "$rd/snapshots" && find . -mindepth 2 -type l -printf '%P\t%l\n') > "$tmp/links"
  else
    (cd "$rd/snapshots" && find . -mindepth 2 -type l -exec sh -c 'for f do printf "%s\t%s\n" "${f#./}" "$(readlink "$f")"; done' sh {} +) > "$tmp/links"
  fi
else
  : > "$tmp/links"
fi
printf '%s\n' "$rec" | sed -n 's/^blob //p' | sort -u > "$tmp/blobs"
: > "$tmp/used"; : > "$tmp/free"
awk -F '\t' -v used="$tmp/used" -v free="$tmp/free" '
  FILENAME == ARGV[1] { n = split($2, a, "/"); split($1, c, "/"); if (a[n - 1] == "blobs" && !(a[n] in u)) u[a[n]] = c[1]; next }
  $0 == "" { next }
  ($0 in u) { print $0 "\t" u[$0] > used; next }
  { print $0 > free }' "$tmp/links" "$tmp/blobs"
# Blobs no snapshot links to: gone, with what was in flight for them.
awk -v c="$commit" '{ print $0; print $0 ".incomplete"; print ".sparkform-incoming." c "/" $0 }' "$tmp/free" | (cd "$rd/blobs" 2>/dev/null && xargs -r rm -f)
# Blobs another snapshot links to: handed over to its record, or left to it.
awk -F '\t' -v c="$commit" '{ print $1 ".incomplete"; print ".sparkform-incoming." c "/" $1 }' "$tmp/used" | (cd "$rd/blobs" 2>/dev/null && xargs -r rm -f)
for c in $(cut -f2 "$tmp/used" | sort -u); do
  n=$(printf '%s\000%s' "$kind" "$hub/$repo@$c" | sha256sum | cut -c1-32)
  orec=$(sf_rcat "$base" "$kind" "$n")
  awk -F '\t' -v c="$c" '$2 == c { print $1 }' "$tmp/used" > "$tmp/of"
  if [ -z "$orec" ] || [ "$c" = "$commit" ]; then
    sed "s/^/KEPT /; s/\$/ $c/" "$tmp/of"
    continue
  fi
  add=$(printf '%s\n' "$orec" | awk 'FILENAME == ARGV[1] { if ($1 == "blob") h[$2] = 1; next } !($0 in h) { print "blob " $0 }' - "$tmp/of")
  if [ -n "$add" ]; then sf_rappend "$base" "$kind" "$n" "$add
" || exit 1; fi
  sed "s/^/GIVEN /; s/\$/ $c/" "$tmp/of"
done
printf '%s\n' "$rec" | sed -n 's/^made //p' | awk '{ print length($0) "\t" $0 }' | sort -rn | cut -f2- | while IFS= read -r d; do
  rmdir "$d" 2>/dev/null
done
# Folders still in use (another snapshot of the repo is in them) go to
# that snapshot's record, so that the last destroy removes them.
left=$(printf '%s\n' "$rec" | sed -n 's/^made //p' | while IFS= read -r d; do [ -d "$d" ] && printf 'made %s\n' "$d"; done)
# Snapshots of this repo first, then of any repo in the hub (hub_dir
# itself may be shared by two repos' snapshots).
if [ -n "$left" ]; then
  for sdir in "$rd"/snapshots/* "$hub"/*--*/snapshots/*; do
    [ -d "$sdir" ] || continue
    c=${sdir##*/} r=${sdir%/snapshots/*}; r=${r##*/}
    [ "$r/$c" != "$repo/$commit" ] || continue
    n=$(printf '%s\000%s' "$kind" "$hub/$r@$c" | sha256sum | cut -c1-32)
    orec=$(sf_rcat "$base" "$kind" "$n")
    [ -n "$orec" ] || continue
    # The same repo's snapshot takes every folder; another repo's only
    # those that hold it (hub_dir and above).
    same=; [ "$r" != "$repo" ] || same=1
    add=$(printf '%s\n' "$left" | while IFS= read -r l; do
      if [ -z "$same" ]; then case $sdir/ in "${l#made }"/*) ;; *) continue ;; esac; fi
      printf '%s\n' "$orec" | grep -qxF -- "$l" || printf '%s\n' "$l"
    done)
    if [ -n "$add" ]; then sf_rappend "$base" "$kind" "$n" "$add
" || exit 1; fi
    left=$(printf '%s\n' "$left" | while IFS= read -r l; do
      [ -z "$same" ] || continue
      case $sdir/ in "${l#made }"/*) ;; *) printf '%s\n' "$l" ;; esac
    done)
    [ -n "$left" ] || break
  done
fi
sf_rrm "$base" "$kind" "$rn" || exit 1
echo OK
`

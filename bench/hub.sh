#!/usr/bin/env bash
# bench/hub.sh — hubstage_snapshot figures (issue 29), on this machine, in
# one run, against the test hub (internal/hubtest/cmd/hubserve: a fake
# huggingface.co on loopback with a CDN redirect) and two real sshd nodes
# (internal/testbed):
#
#   1. hub -> node: a snapshot of LFS_TOTAL (2GiB) in LFS_COUNT (40) LFS
#      files plus SMALL (1,000) small files, fetched by `sparkform apply`
#      (hubstage_snapshot, parallel 8), against the floor: ONE curl process
#      fetching the same URLs one after another (connection reuse, no
#      parallelism), into the same filesystem. Target: wall <= 1.1x.
#   2. node -> node: the same snapshot copied from node 0 to node 1 by
#      hubstage_snapshot (source_node, transfer "direct"), against the
#      floor `rsync -a` over ssh between the same two nodes. Targets: wall
#      <= 1x, 0 bytes through sparkform (relayed_bytes).
#   3. peak RSS: a snapshot of one BIG (4GiB) file from the hub; the largest
#      resident set of any sparkform process (the CLI and its plugins, as
#      wait4 reports it) <= 100 MiB.
#   4. no-op plan of a present snapshot of SMALL (1,000) files: the CPU
#      of the node that holds it (its sshd listener's reaped children:
#      sshd, sudo, sh, curl, find) <= 0.3 s; both nodes' (the config
#      declares node 1 too: its node check) printed beside it.
#
# Prints median [min-max] over RUNS runs and one PASS/FAIL line per target
# (a FAIL is a finding: the script still exits 0). Removes everything it
# made on any exit (KEEP=1 keeps the scratch dir).
#
# Env: BIN (sparkform; built when unset), RUNS (default 3), LFS_TOTAL,
#      LFS_COUNT, SMALL, BIG, WORK (scratch dir), PARTS (default "1 2 3 4"),
#      BASE_BIN (another sparkform, e.g. the base commit's: part 1 also
#      applies it in each run, right after BIN, so both meet the same load),
#      NODE_HELPER ("build", the default: cmd/sparkform-node of this tree is
#      built and installed where BIN looks for it on the bed's nodes, for
#      BIN's runs only; "-": BIN runs the receiver's shell loop),
#      HUBFS (where every hub folder and both floors' outputs live, one
#      filesystem for all: "journal", the default, a fresh ext4 with
#      mkfs.ext4's defaults, journal included, as a DGX Spark's root is,
#      loop-mounted in WORK (HUBFS_SIZE, default 16G, sparse); "root": the
#      bed's folders on this machine's own filesystem, as it is. The
#      filesystem matters: on an ext4 WITHOUT a journal every new inode
#      scans past the inodes deleted in the last 5 s (300 s while their
#      table block is dirty), so a bench that deletes and re-creates
#      thousands of files a minute pays ~0.5 ms per new file there; see
#      bench/README.md).
set -euo pipefail
BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd) # before any cd
ROOT=${ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
RUNS=${RUNS:-3}
LFS_TOTAL=${LFS_TOTAL:-2GiB}
LFS_COUNT=${LFS_COUNT:-40}
SMALL=${SMALL:-1000}
BIG=${BIG:-4GiB}
PARTS=${PARTS:-1 2 3 4}
KEEP=${KEEP:-0}
NODE_HELPER=${NODE_HELPER:-build}
HUBFS=${HUBFS:-journal}
HUBFS_SIZE=${HUBFS_SIZE:-16G}
MNT=
HELPER_FILE=
OWNWORK=0
if [[ -z ${WORK:-} ]]; then WORK=$(mktemp -d /tmp/sparkform-bench-hub.XXXXXX); OWNWORK=1; fi

need() { command -v "$1" >/dev/null 2>&1 || { echo "bench/hub: $1 not found: $2" >&2; exit 1; }; }
need curl "apt-get install curl (the floor, and the nodes fetch with it)"
need rsync "apt-get install rsync (the node-to-node floor)"
need ssh "apt-get install openssh-client"
need python3 "install python3 (it reads the hub's counters)"
[[ -x /usr/bin/time ]] || { echo "bench/hub: GNU time not found at /usr/bin/time (apt-get install time)" >&2; exit 1; }
[[ $(id -u) = 0 ]] || { echo "bench/hub: run as root (the test bed creates a user and starts sshd)" >&2; exit 1; }

PIDS=()
CFGS=()
cleanup_hub() {
  local rc=$? c p
  set +e
  for c in "${CFGS[@]}"; do
    [[ -d $c/.sparkform ]] && (cd "$c" && "$BIN" destroy -auto-approve -no-color >"$c/destroy.log" 2>&1)
  done
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  if [[ -n $MNT ]]; then umount "$MNT" || umount -l "$MNT"; rm -f "$WORK/hubfs.img"; fi
  [[ -z $HELPER_FILE ]] || rm -f "$HELPER_FILE"
  if [[ $OWNWORK = 1 ]]; then
    if [[ $KEEP = 1 ]]; then echo "bench/hub: work dir kept: $WORK" >&2; else rm -rf "$WORK"; fi
  fi
  return $rc
}
trap cleanup_hub EXIT
trap 'exit 130' INT TERM

chmod 755 "$WORK"
if [[ -z ${BIN:-} ]]; then BIN=$WORK/sparkform; (cd "$ROOT" && go build -o "$BIN" ./cmd/sparkform); fi
(cd "$ROOT" && go build -o "$WORK/sparkform-testbed" ./internal/testbed/cmd/sparkform-testbed &&
  go build -o "$WORK/hubserve" ./internal/hubtest/cmd/hubserve)
"$WORK/sparkform-testbed" -n 2 -dir "$WORK/bed" -env-file "$WORK/bed.env" >/dev/null 2>"$WORK/testbed.log" &
BEDPID=$!
PIDS+=("$BEDPID")

# hubserve NAME ARGS...: a hub in the background; its exports in $WORK/NAME.env.
hubserve() {
  local name=$1
  shift
  "$WORK/hubserve" -urls "$WORK/$name.urls" -env-file "$WORK/$name.env" "$@" >/dev/null 2>"$WORK/$name.log" &
  PIDS+=("$!")
  for _ in $(seq 1 1200); do [[ -s $WORK/$name.env ]] && return 0; sleep 0.1; done
  echo "bench/hub: hubserve $name did not start:" >&2; cat "$WORK/$name.log" >&2; exit 1
}
for _ in $(seq 1 300); do [[ -s $WORK/bed.env ]] && break; sleep 0.1; done
[[ -s $WORK/bed.env ]] || { echo "bench/hub: test bed did not start:" >&2; cat "$WORK/testbed.log" >&2; exit 1; }
# shellcheck disable=SC1091
source "$WORK/bed.env"
# The node helper: built from this tree under an id of its own and put
# where BIN looks for it on a become node of the bed (the bed's
# SPARKFORM_NODE_HELPER_DIR/root, else /var/lib/sparkform/bin), so no run
# pays its upload; BASE_BIN's runs turn it off.
if [[ $NODE_HELPER = build ]]; then
  (cd "$ROOT" && CGO_ENABLED=0 go build -trimpath -o "$WORK/sparkform-node" ./cmd/sparkform-node)
  HID=bench$(sha256sum <"$WORK/sparkform-node" | cut -c1-12)
  HDIR=/var/lib/sparkform/bin
  [[ -z ${SPARKFORM_NODE_HELPER_DIR:-} ]] || HDIR=$SPARKFORM_NODE_HELPER_DIR/root
  mkdir -p "$HDIR"
  HELPER_FILE=$HDIR/sparkform-node-$HID
  install -m 0755 "$WORK/sparkform-node" "$HELPER_FILE"
  export SPARKFORM_NODE_HELPER=$HID
else
  export SPARKFORM_NODE_HELPER=-
fi

# cfg NAME HCL: a config folder with the nodes and HCL.
cfg() {
  local d=$WORK/cfg-$1
  mkdir -p "$d"
  cat >"$d/main.sf.hcl" <<HCL
node "n" {
  for_each      = { n0 = { host = "$SF_NODE0_HOST", port = $SF_NODE0_PORT }, n1 = { host = "$SF_NODE1_HOST", port = $SF_NODE1_PORT } }
  host          = each.value.host
  port          = each.value.port
  user          = "$SF_NODE_USER"
  identity_file = "$SF_IDENTITY_FILE"
  known_hosts   = "$SF_KNOWN_HOSTS"
  become        = true
}
$2
HCL
  CFGS+=("$d")
  echo "$d"
}
# timed OUT CMD...: wall, cpu (user+sys of the tree) and peak RSS KiB appended to OUT.
timed() {
  local out=$1
  shift
  /usr/bin/time -f '%e %U %S %M' -o "$WORK/t" "$@" >"$WORK/cmd.log" 2>&1 || {
    echo "bench/hub: $* failed:" >&2; tail -30 "$WORK/cmd.log" >&2; exit 1; }
  awk '{printf "%.3f %.3f %d\n", $1, $2 + $3, $4}' "$WORK/t" >>"$out"
}
stat2() { sort -g -k"$2","$2" "$1" | awk -v c="$2" '{v[NR]=$c} END {
  m = (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2; printf "%.2f [%.2f-%.2f]", m, v[1], v[NR] }'; }
med() { sort -g -k"$2","$2" "$1" | awk -v c="$2" '{v[NR]=$c} END {printf "%.4f", (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }
TARGETS=()
target() { # LABEL VALUE OP LIMIT
  local ok
  ok=$(awk -v v="$2" -v l="$4" -v op="$3" 'BEGIN {print ((op == "<=" && v <= l) || (op == "==" && v == l)) ? "PASS" : "FAIL"}')
  TARGETS+=("$(printf '  %-58s %12s %s %-8s %s' "$1" "$2" "$3" "$4" "$ok")")
}
# relayed CFG: output relayed (relayed_bytes of the copy) in CFG.
relayed() { (cd "$1" && "$BIN" output -raw relayed); }
# D0 and D1: node 0's and node 1's folders for the hub caches and the
# floors' outputs, on the filesystem HUBFS says.
case $HUBFS in
root)
  D0=$SF_NODE0_ROOT D1=$SF_NODE1_ROOT
  ;;
journal)
  need mkfs.ext4 "apt-get install e2fsprogs (HUBFS=journal; or HUBFS=root)"
  truncate -s "$HUBFS_SIZE" "$WORK/hubfs.img"
  mkfs.ext4 -q -F "$WORK/hubfs.img"
  mkdir -p "$WORK/hubfs"
  mount -o loop "$WORK/hubfs.img" "$WORK/hubfs" || {
    echo "bench/hub: cannot loop-mount an ext4 image here (HUBFS=journal); HUBFS=root uses this machine's filesystem" >&2; exit 1; }
  MNT=$WORK/hubfs
  D0=$MNT/node0 D1=$MNT/node1
  install -d -m 0755 -o "$(stat -c %u "$SF_NODE0_ROOT")" -g "$(stat -c %g "$SF_NODE0_ROOT")" "$D0"
  install -d -m 0755 -o "$(stat -c %u "$SF_NODE1_ROOT")" -g "$(stat -c %g "$SF_NODE1_ROOT")" "$D1"
  ;;
*)
  echo "bench/hub: HUBFS is journal or root, not $HUBFS" >&2; exit 1
  ;;
esac
fsline() { # DIR: the filesystem DIR is on, and whether ext4 there has a journal
  local dev opts
  dev=$(df --output=source "$1" | tail -1)
  opts=/proc/fs/ext4/${dev#/dev/}/options
  if [[ -r $opts ]]; then
    if grep -q '^journal_checksum$\|^data=' "$opts"; then echo "ext4 with a journal ($dev)"; else echo "ext4 without a journal ($dev)"; fi
  else
    echo "$(df --output=fstype "$1" | tail -1) ($dev)"
  fi
}
echo "hub folders and the floors' outputs: HUBFS=$HUBFS, $(fsline "$D0")"
H0=$D0/hub
H1=$D1/hub
# The nodes' CPU: what the sshd listeners of the bed (children of the
# test bed) reaped, utime+stime of their children, in ticks.
# shellcheck source=bench/nodecpu.sh
source "$BENCH_DIR/nodecpu.sh"
listeners=$(pgrep -P "$BEDPID" -x sshd | tr '\n' ' ' || true)

snapshot_hcl() { # NAME NODE HUB_DIR [EXTRA]
  cat <<HCL
resource "hubstage_snapshot" "$1" {
  node    = node.n["$2"]
  hub_dir = "$3"
  repo_id = "$HUBTEST_REPO"
  ${4:-}
}
HCL
}

if [[ " $PARTS " = *" 1 "* || " $PARTS " = *" 2 "* ]]; then
  hubserve big -lfs-total "$LFS_TOTAL" -lfs-count "$LFS_COUNT" -small-count "$SMALL"
  # shellcheck disable=SC1091
  source "$WORK/big.env"
  echo "snapshot: $HUBTEST_FILES files, $HUBTEST_BYTES bytes ($LFS_COUNT LFS files of $LFS_TOTAL in all, $SMALL small)"
  C1=$(cfg hub "$(snapshot_hcl m n0 "$H0")")
  : >"$WORK/curl.times"
  : >"$WORK/sf-hub.times"
  : >"$WORK/base-hub.times"
  : >"$WORK/sf-hub.node"
  : >"$WORK/base-hub.node"
  # The floor's curl config: every URL with its output file, in order.
  awk -v d="$D0/curl" '{printf "url = \"%s\"\noutput = \"%s/f%05d\"\n", $0, d, NR}' "$WORK/big.urls" >"$WORK/curl.cfg"
  for ((r = 1; r <= RUNS; r++)); do
    rm -rf "$D0/curl" && mkdir -p "$D0/curl"
    sync
    timed "$WORK/curl.times" curl -sSfL --config "$WORK/curl.cfg"
    rm -rf "$D0/curl"
    sync
    n0=$(reaped $listeners)
    (cd "$C1" && HF_ENDPOINT=$HF_ENDPOINT timed "$WORK/sf-hub.times" "$BIN" apply -auto-approve -no-color)
    awk -v n=$(($(reaped $listeners) - n0)) -v t="$TCK" 'BEGIN {printf "%.3f\n", n / t}' >>"$WORK/sf-hub.node"
    if [[ -n ${BASE_BIN:-} ]]; then
      (cd "$C1" && HF_ENDPOINT=$HF_ENDPOINT "$BIN" destroy -auto-approve -no-color >/dev/null)
      sync
      n0=$(reaped $listeners)
      (cd "$C1" && HF_ENDPOINT=$HF_ENDPOINT SPARKFORM_NODE_HELPER=- timed "$WORK/base-hub.times" "$BASE_BIN" apply -auto-approve -no-color)
      awk -v n=$(($(reaped $listeners) - n0)) -v t="$TCK" 'BEGIN {printf "%.3f\n", n / t}' >>"$WORK/base-hub.node"
      (cd "$C1" && HF_ENDPOINT=$HF_ENDPOINT "$BASE_BIN" destroy -auto-approve -no-color >/dev/null)
      [[ $r != "$RUNS" ]] || (cd "$C1" && HF_ENDPOINT=$HF_ENDPOINT "$BIN" apply -auto-approve -no-color >/dev/null)
    else
      [[ $r = "$RUNS" ]] || (cd "$C1" && HF_ENDPOINT=$HF_ENDPOINT "$BIN" destroy -auto-approve -no-color >/dev/null)
    fi
  done
  echo "1. hub -> node over loopback ($RUNS runs, median [min-max])"
  echo "   curl, sequential (floor)   wall s $(stat2 "$WORK/curl.times" 1)   cpu s $(stat2 "$WORK/curl.times" 2)"
  echo "   sparkform apply            wall s $(stat2 "$WORK/sf-hub.times" 1)   cpu s $(stat2 "$WORK/sf-hub.times" 2)   peak RSS MiB $(awk '{printf "%.1f\n", $3/1024}' "$WORK/sf-hub.times" | sort -g | tail -1)   node cpu s $(stat2 "$WORK/sf-hub.node" 1)"
  if [[ -n ${BASE_BIN:-} ]]; then
    echo "   BASE_BIN apply             wall s $(stat2 "$WORK/base-hub.times" 1)   ratio to curl $(awk -v a="$(med "$WORK/base-hub.times" 1)" -v b="$(med "$WORK/curl.times" 1)" 'BEGIN {printf "%.2f", a / b}')   node cpu s $(stat2 "$WORK/base-hub.node" 1)"
  fi
  ratio=$(awk -v a="$(med "$WORK/sf-hub.times" 1)" -v b="$(med "$WORK/curl.times" 1)" 'BEGIN {printf "%.2f", a / b}')
  target "hub: sparkform wall / sequential curl wall" "$ratio" "<=" 1.1
fi

if [[ " $PARTS " = *" 2 "* ]]; then
  # Node 0 holds the snapshot (part 1's last apply); node 1 copies it.
  C2=$(cfg peer "$(snapshot_hcl p n1 "$H1" "revision = \"$HUBTEST_COMMIT\"
  source_node = node.n[\"n0\"]
  source_hub_dir = \"$H0\"
  transfer = \"direct\"")
output \"relayed\" {
  value = hubstage_snapshot.p.relayed_bytes
}")
  : >"$WORK/rsync.times"
  : >"$WORK/sf-peer.times"
  SSHCMD="ssh -i $SF_IDENTITY_FILE -p $SF_NODE0_PORT -o UserKnownHostsFile=$SF_KNOWN_HOSTS -o StrictHostKeyChecking=yes -o BatchMode=yes"
  REPODIR=models--${HUBTEST_REPO//\//--}
  for ((r = 1; r <= RUNS; r++)); do
    rm -rf "$D1/rsync" && mkdir -p "$D1/rsync"
    sync
    timed "$WORK/rsync.times" rsync -a -e "$SSHCMD" "$SF_NODE_USER@$SF_NODE0_HOST:$H0/$REPODIR/" "$D1/rsync/$REPODIR/"
    rm -rf "$D1/rsync"
    sync
    (cd "$C2" && timed "$WORK/sf-peer.times" "$BIN" apply -auto-approve -no-color)
    RELAYED=$(relayed "$C2")
    [[ $r = "$RUNS" ]] || (cd "$C2" && "$BIN" destroy -auto-approve -no-color >/dev/null)
  done
  echo "2. node 0 -> node 1 ($RUNS runs, median [min-max])"
  echo "   rsync -a over ssh (floor)  wall s $(stat2 "$WORK/rsync.times" 1)   cpu s $(stat2 "$WORK/rsync.times" 2) (this machine's rsync + ssh client)"
  echo "   sparkform apply (direct)   wall s $(stat2 "$WORK/sf-peer.times" 1)   cpu s $(stat2 "$WORK/sf-peer.times" 2)   relayed_bytes $RELAYED"
  ratio=$(awk -v a="$(med "$WORK/sf-peer.times" 1)" -v b="$(med "$WORK/rsync.times" 1)" 'BEGIN {printf "%.2f", a / b}')
  target "node to node: sparkform wall / rsync -a wall" "$ratio" "<=" 1
  target "node to node: bytes through sparkform (relayed_bytes)" "$RELAYED" "==" 0
  (cd "$C2" && "$BIN" destroy -auto-approve -no-color >/dev/null)
fi
if [[ -n ${C1:-} ]]; then (cd "$C1" && HF_ENDPOINT=$HF_ENDPOINT "$BIN" destroy -auto-approve -no-color >/dev/null); fi

if [[ " $PARTS " = *" 3 "* ]]; then
  hubserve one -lfs-count 0 -small-count 0 -file "model.safetensors:$BIG:lfs" -file config.json:700 -seed 3
  # shellcheck disable=SC1091
  source "$WORK/one.env"
  C3=$(cfg rss "$(snapshot_hcl big n0 "$H0")")
  : >"$WORK/sf-rss.times"
  # The node helper runs under sshd, not under BIN: its peak RSS sampled.
  ( hwm=0
    while [[ ! -e $WORK/rss.stop ]]; do
      for p in $(pgrep '^sparkform-node' || true); do
        v=$(awk '/^VmHWM:/ { print $2 }' "/proc/$p/status" 2>/dev/null) || continue
        [[ -z $v || $v -le $hwm ]] || hwm=$v
      done
      echo "$hwm" >"$WORK/helper.hwm"
      sleep 0.2
    done ) &
  SAMPLER=$!
  (cd "$C3" && HF_ENDPOINT=$HF_ENDPOINT timed "$WORK/sf-rss.times" "$BIN" apply -auto-approve -no-color)
  : >"$WORK/rss.stop"
  wait "$SAMPLER"
  (cd "$C3" && HF_ENDPOINT=$HF_ENDPOINT "$BIN" destroy -auto-approve -no-color >/dev/null)
  rss=$(awk '{printf "%.1f", $3/1024}' "$WORK/sf-rss.times")
  echo "3. one $BIG file from the hub: wall s $(stat2 "$WORK/sf-rss.times" 1), peak RSS of any sparkform process $rss MiB, of the node helper $(awk '{printf "%.1f", $1/1024}' "$WORK/helper.hwm") MiB"
  target "peak RSS MiB of any sparkform process, $BIG file" "$rss" "<=" 100
fi

if [[ " $PARTS " = *" 4 "* ]]; then
  hubserve small -lfs-count 0 -small-count "$SMALL" -seed 4
  # shellcheck disable=SC1091
  source "$WORK/small.env"
  C4=$(cfg noop "$(snapshot_hcl s n0 "$H0")")
  (cd "$C4" && HF_ENDPOINT=$HF_ENDPOINT "$BIN" apply -auto-approve -no-color >"$WORK/noop-apply.log" 2>&1) || {
    echo "bench/hub: apply of the $SMALL-file snapshot failed:" >&2; tail -20 "$WORK/noop-apply.log" >&2; exit 1; }
  # The node's CPU: what the sshd listeners (children of the test bed)
  # reaped during the plan, utime+stime of their children, in ticks.
  # The target is the snapshot's node's (node 0's listener); the config
  # also declares node 1 (parts 2 and 3), whose node check (a login and
  # the held shell's sudo) is in the both-nodes figure.
  listener0=
  for l in $listeners; do tr '\0' ' ' <"/proc/$l/cmdline" | grep -q "/node0/" && listener0=$l; done
  [[ -n $listener0 ]] || { echo "bench/hub: node 0's sshd listener not found" >&2; exit 1; }
  : >"$WORK/noop.times"
  for ((r = 1; r <= RUNS + 2; r++)); do
    n0=$(reaped $listeners)
    s0=$(reaped "$listener0")
    (cd "$C4" && HF_ENDPOINT=$HF_ENDPOINT /usr/bin/time -f '%e %U %S' -o "$WORK/t" "$BIN" plan -detailed-exitcode -no-color >"$WORK/plan.log" 2>&1) || {
      echo "bench/hub: the no-op plan failed or has changes:" >&2; tail -30 "$WORK/plan.log" >&2; exit 1; }
    nodeidle $listeners
    n1=$(reaped $listeners)
    s1=$(reaped "$listener0")
    awk -v n=$((n1 - n0)) -v s=$((s1 - s0)) -v t="$TCK" '{printf "%.3f %.3f %.3f %.3f\n", $1, $2 + $3, s / t, n / t}' "$WORK/t" >>"$WORK/noop.times"
  done
  (cd "$C4" && HF_ENDPOINT=$HF_ENDPOINT "$BIN" destroy -auto-approve -no-color >/dev/null)
  echo "4. no-op plan of a present $SMALL-file snapshot ($((RUNS + 2)) runs): wall s $(stat2 "$WORK/noop.times" 1), sparkform cpu s $(stat2 "$WORK/noop.times" 2), snapshot's node cpu s $(stat2 "$WORK/noop.times" 3), both nodes' cpu s $(stat2 "$WORK/noop.times" 4)"
  target "no-op plan, $SMALL files: the snapshot's node's CPU s" "$(med "$WORK/noop.times" 3)" "<=" 0.3
fi

echo "issue 29 targets:"
printf '%s\n' "${TARGETS[@]}"

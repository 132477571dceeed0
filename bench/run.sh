#!/usr/bin/env bash
# bench/run.sh — end-to-end figures for sparkform (issue 7).
#
# Part 1: N sparkform_data instances in chains of 10 on a local node
#         (10 resource blocks, count = N/10, block i takes input from block i-1)
#         apply from empty, no-op plan, destroy: wall s, CPU s (user+sys of
#         sparkform and its plugin children, from GNU time / wait4 rusage),
#         peak RSS (largest single process of the tree, as wait4 reports it).
#         Medians over RUNS runs with [min-max], then the N_small -> N_large ratio.
# Part 2: two sshd test nodes (internal/testbed) with the seed-shaped
#         resources (module on a simulated kernel, kit, two manifests of
#         1,000 files, container); no-op plan over SSH, SSH_RUNS (default 5)
#         runs, and the refresh counters (see bench/ssh.sh, bench/README.md).
#
# Usage: bench/run.sh [-n "1000 10000"] [-r 3] [-b] [-k] [-s]  (-s skips part 2,
#        -k keeps the work dir, -b uses the single-instance-blocks shape: N
#        resource blocks without count, in chains of 10, as generated configs
#        have them).  Env: SPARKFORM_BIN to use a built binary,
#        SSH_RUNS for part 2's number of no-op plans (default 5).
set -euo pipefail

NS="1000 10000"
RUNS=3
KEEP=0
SKIP_SSH=0
SHAPE=count
while getopts "n:r:bks" opt; do
  case $opt in
    n) NS=$OPTARG ;;
    r) RUNS=$OPTARG ;;
    b) SHAPE=blocks ;;
    k) KEEP=1 ;;
    s) SKIP_SSH=1 ;;
    *) echo "usage: $0 [-n \"1000 10000\"] [-r RUNS] [-b] [-k] [-s]" >&2; exit 2 ;;
  esac
done

ROOT=$(cd "$(dirname "$0")/.." && pwd)
TIME=/usr/bin/time
if [[ ! -x $TIME ]]; then
  echo "bench: GNU time not found at $TIME (apt-get install time)" >&2
  exit 1
fi

WORK=$(mktemp -d /tmp/sparkform-bench.XXXXXX)
cleanup() { if [[ $KEEP = 0 ]]; then rm -rf "$WORK"; else echo "work dir kept: $WORK"; fi; }
trap cleanup EXIT

BIN=${SPARKFORM_BIN:-}
if [[ -z $BIN ]]; then
  BIN=$WORK/sparkform
  (cd "$ROOT" && go build -tags kmodsim -o "$BIN" ./cmd/sparkform)
fi
export BIN WORK ROOT RUNS

# gen N: the chain-of-10 config.
gen() {
  local n=$1 per=$(( $1 / 10 )) i
  printf 'node "local" {\n  transport = "local"\n}\n\n'
  printf 'resource "sparkform_data" "r0" {\n  count = %d\n  node  = node.local\n  input = "seed-${count.index}"\n}\n' "$per"
  for i in 1 2 3 4 5 6 7 8 9; do
    printf '\nresource "sparkform_data" "r%d" {\n  count = %d\n  node  = node.local\n  input = sparkform_data.r%d[count.index].id\n}\n' "$i" "$per" $((i - 1))
  done
}

# gen_blocks N: the same chains of 10, one single-instance block each.
gen_blocks() {
  local chains=$(( $1 / 10 )) c i
  printf 'node "local" {\n  transport = "local"\n}\n'
  for ((c = 0; c < chains; c++)); do
    printf '\nresource "sparkform_data" "c%d_0" {\n  node  = node.local\n  input = "seed-%d"\n}\n' "$c" "$c"
    for ((i = 1; i < 10; i++)); do
      printf '\nresource "sparkform_data" "c%d_%d" {\n  node  = node.local\n  input = sparkform_data.c%d_%d.id\n}\n' "$c" "$i" "$c" $((i - 1))
    done
  done
}

# measure OUT CMD...: runs CMD under GNU time, appends "wall cpu rss_mib" to OUT.
measure() {
  local out=$1; shift
  local tf=$WORK/time.$$
  if ! "$TIME" -f '%e %U %S %M' -o "$tf" "$@" >"$WORK/last.log" 2>&1; then
    echo "bench: command failed: $*" >&2
    tail -20 "$WORK/last.log" >&2
    exit 1
  fi
  awk '{printf "%.3f %.3f %.1f\n", $1, $2 + $3, $4 / 1024}' "$tf" >>"$out"
}

# stat FILE COL: "median [min-max]" of column COL.
stat() {
  sort -g -k"$2","$2" "$1" | awk -v c="$2" '{v[NR]=$c} END {
    m = (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2
    printf "%.2f [%.2f-%.2f]", m, v[1], v[NR] }'
}
median() {
  sort -g -k"$2","$2" "$1" | awk -v c="$2" '{v[NR]=$c} END {
    print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2 }'
}

echo "sparkform bench: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?') $(go version | awk '{print $3}') $(nproc) cpus, shape $SHAPE, $RUNS runs, medians [min-max]"
printf '%-7s %-8s %-22s %-22s %-22s\n' N phase "wall s" "cpu s (user+sys)" "peak RSS MiB"
for n in $NS; do
  d=$WORK/n$n
  mkdir -p "$d"
  if [[ $SHAPE = blocks ]]; then gen_blocks "$n" >"$d/main.sf.hcl"; else gen "$n" >"$d/main.sf.hcl"; fi
  : >"$WORK/apply.$n"; : >"$WORK/plan.$n"; : >"$WORK/destroy.$n"
  for ((r = 1; r <= RUNS; r++)); do
    rm -rf "$d/.sparkform"
    (cd "$d" && measure "$WORK/apply.$n" "$BIN" apply -auto-approve -no-color)
    (cd "$d" && measure "$WORK/plan.$n" "$BIN" plan -detailed-exitcode -no-color) || true
    if ! grep -q 'No changes' "$WORK/last.log"; then
      echo "bench: the plan after apply is not a no-op (N=$n):" >&2; tail -20 "$WORK/last.log" >&2; exit 1
    fi
    (cd "$d" && measure "$WORK/destroy.$n" "$BIN" destroy -auto-approve -no-color)
  done
  for ph in apply plan destroy; do
    printf '%-7s %-8s %-22s %-22s %-22s\n' "$n" "$ph" "$(stat "$WORK/$ph.$n" 1)" "$(stat "$WORK/$ph.$n" 2)" "$(stat "$WORK/$ph.$n" 3)"
  done
done

set -- $NS
if [[ $# -ge 2 ]]; then
  lo=$1; hi=${!#}
  echo
  echo "cost ratio N=$lo -> N=$hi (medians of CPU s; wall s):"
  for ph in apply plan destroy; do
    awk -v a="$(median "$WORK/$ph.$lo" 2)" -v b="$(median "$WORK/$ph.$hi" 2)" \
        -v c="$(median "$WORK/$ph.$lo" 1)" -v d="$(median "$WORK/$ph.$hi" 1)" -v p="$ph" \
        'BEGIN {printf "  %-8s cpu %.1fx  wall %.1fx\n", p, b / a, d / c}'
  done
fi

if [[ $SKIP_SSH = 0 ]]; then
  echo
  RUNS=${SSH_RUNS:-5} "$ROOT/bench/ssh.sh"
fi

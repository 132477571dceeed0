#!/usr/bin/env bash
# bench/etcd.sh — state backends side by side (issue 15): N sparkform_data
# instances (chains of 10, as bench/run.sh) applied from empty and then a
# no-op plan, with state in the local bbolt file and in a three-member etcd
# cluster on loopback (three etcd processes, fsync on, default settings).
# Prints wall s, CPU s of sparkform and its plugins (GNU time), and for etcd
# the range requests the no-op plan cost the cluster
# (etcd_debugging_mvcc_range_total summed over the members).
#
# Usage: bench/etcd.sh [-n "1000 10000"] [-r RUNS] [-k]
# Env: BIN (a built sparkform), ETCD_BIN (default: etcd on PATH).
set -euo pipefail

NS="10000"
RUNS=1
KEEP=0
while getopts "n:r:k" opt; do
  case $opt in
    n) NS=$OPTARG ;;
    r) RUNS=$OPTARG ;;
    k) KEEP=1 ;;
    *) echo "usage: $0 [-n \"1000 10000\"] [-r RUNS] [-k]" >&2; exit 2 ;;
  esac
done
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TIME=/usr/bin/time
ETCD=${ETCD_BIN:-$(command -v etcd || true)}
[[ -x $TIME ]] || { echo "bench: GNU time not found at $TIME (apt-get install time)" >&2; exit 1; }
[[ -n $ETCD ]] || { echo "bench: no etcd server (apt-get install etcd-server, or set ETCD_BIN)" >&2; exit 1; }

WORK=${WORK_ETCD:-$(mktemp -d /tmp/sparkform-bench-etcd.XXXXXX)}
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [[ $KEEP = 0 ]]; then rm -rf "$WORK"; else echo "work dir kept: $WORK"; fi
}
trap cleanup EXIT INT TERM

BIN=${BIN:-}
if [[ -z $BIN ]]; then
  BIN=$WORK/sparkform
  (cd "$ROOT" && go build -o "$BIN" ./cmd/sparkform)
fi

# free_port: a port nobody listens on now.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }

# Three members on loopback.
declare -a CLIENT PEER METRICS
initial=""
for i in 0 1 2; do
  CLIENT[i]=http://127.0.0.1:$(free_port); PEER[i]=http://127.0.0.1:$(free_port); METRICS[i]=http://127.0.0.1:$(free_port)
  initial+="${initial:+,}m$i=${PEER[i]}"
done
for i in 0 1 2; do
  "$ETCD" --name "m$i" --data-dir "$WORK/m$i" \
    --listen-client-urls "${CLIENT[i]}" --advertise-client-urls "${CLIENT[i]}" \
    --listen-peer-urls "${PEER[i]}" --initial-advertise-peer-urls "${PEER[i]}" \
    --listen-metrics-urls "${METRICS[i]}" --initial-cluster "$initial" \
    --initial-cluster-state new --initial-cluster-token bench \
    --logger zap --log-level warn >"$WORK/m$i.log" 2>&1 &
  PIDS+=($!)
done
ENDPOINTS="${CLIENT[0]},${CLIENT[1]},${CLIENT[2]}"
for _ in $(seq 1 100); do
  ok=0
  for i in 0 1 2; do
    m=$(curl -sf "${METRICS[i]}/metrics" || true)
    grep -q '^etcd_server_has_leader 1' <<<"$m" && ok=$((ok + 1))
  done
  [[ $ok = 3 ]] && break
  sleep 0.2
done
[[ $ok = 3 ]] || { echo "bench: etcd cluster did not come up" >&2; tail -n 20 "$WORK"/m*.log >&2; exit 1; }

ranges() {
  local sum=0 v i
  for i in 0 1 2; do
    v=$(curl -sf "${METRICS[i]}/metrics" | awk '$1 == "etcd_debugging_mvcc_range_total" {print $2}')
    sum=$(awk -v a="$sum" -v b="$v" 'BEGIN {printf "%d", a + b}')
  done
  echo "$sum"
}

gen() {
  local n=$1 per=$(( $1 / 10 )) i
  printf 'node "local" {\n  transport = "local"\n}\n\n'
  printf 'resource "sparkform_data" "r0" {\n  count = %d\n  node  = node.local\n  input = "seed-${count.index}"\n}\n' "$per"
  for i in 1 2 3 4 5 6 7 8 9; do
    printf '\nresource "sparkform_data" "r%d" {\n  count = %d\n  node  = node.local\n  input = sparkform_data.r%d[count.index].id\n}\n' "$i" "$per" $((i - 1))
  done
}

measure() { # CMD...: prints "wall cpu"
  local tf=$WORK/time.$$
  if ! "$TIME" -f '%e %U %S' -o "$tf" "$@" >"$WORK/last.log" 2>&1; then
    echo "bench: command failed: $*" >&2; tail -20 "$WORK/last.log" >&2; exit 1
  fi
  awk '{printf "%.2f %.2f\n", $1, $2 + $3}' "$tf"
}

echo "sparkform state backends: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?') $(nproc) cpus, etcd $("$ETCD" --version | awk 'NR==1 {print $3}') x3 on loopback, $RUNS run(s)"
printf '%-7s %-6s %-10s %-12s %-12s %s\n' N backend phase "wall s" "cpu s" "range requests"
for n in $NS; do
  for ((r = 1; r <= RUNS; r++)); do
    for be in bbolt etcd; do
      d=$WORK/$be-$n-$r
      mkdir -p "$d"
      gen "$n" >"$d/main.sf.hcl"
      extra=()
      if [[ $be = etcd ]]; then
        printf 'sparkform {\n  backend "etcd" {\n    endpoints = ["%s"]\n    prefix = "bench/%s-%s"\n  }\n}\n' \
          "${ENDPOINTS//,/\",\"}" "$n" "$r" >>"$d/main.sf.hcl"
      fi
      read -r w c < <(cd "$d" && measure "$BIN" apply -auto-approve -no-color)
      printf '%-7s %-6s %-10s %-12s %-12s %s\n' "$n" "$be" apply "$w" "$c" -
      before=$(ranges)
      read -r w c < <(cd "$d" && measure "$BIN" plan -no-color)
      grep -q 'No changes' "$WORK/last.log" || { echo "bench: the plan after apply is not a no-op" >&2; tail -20 "$WORK/last.log" >&2; exit 1; }
      rr=-
      [[ $be = etcd ]] && rr=$(( $(ranges) - before ))
      printf '%-7s %-6s %-10s %-12s %-12s %s\n' "$n" "$be" no-op-plan "$w" "$c" "$rr"
    done
  done
done

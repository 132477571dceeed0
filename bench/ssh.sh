#!/usr/bin/env bash
# bench/ssh.sh — no-op plan over SSH on two real sshd nodes (internal/testbed),
# seed-shaped resources per node: a gitkit_checkout of a pinned commit's
# subdir and two hubstage_manifest of 1,000 files each (model + drafter).
# Prints the median [min-max] wall time of RUNS no-op plans, and the
# refresh counters from `plan -json`.
#
# Not yet covered (say so in reports): kmod_module via internal/kernelsim
# and docker_container need their own fixtures (a simulated sysfs on each
# node, a FROM-scratch image); add them here when those fixtures exist.
#
# Env: BIN (sparkform binary), RUNS (default 3), WORK (scratch dir), ROOT (repo).
set -euo pipefail
ROOT=${ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
RUNS=${RUNS:-3}
OWNWORK=0
if [[ -z ${WORK:-} ]]; then WORK=$(mktemp -d /tmp/sparkform-bench-ssh.XXXXXX); OWNWORK=1; fi
if [[ -z ${BIN:-} ]]; then BIN=$WORK/sparkform; (cd "$ROOT" && go build -o "$BIN" ./cmd/sparkform); fi
FILES=${FILES:-1000}

S=$WORK/ssh
rm -rf "$S"; mkdir -p "$S/cfg"
(cd "$ROOT" && go build -o "$S/sparkform-testbed" ./internal/testbed/cmd/sparkform-testbed)
"$S/sparkform-testbed" -n 2 -dir "$S/bed" -env-file "$S/env" >/dev/null 2>"$S/testbed.log" &
BEDPID=$!
cleanup_ssh() {
  kill "$BEDPID" 2>/dev/null || true
  wait "$BEDPID" 2>/dev/null || true
  if [[ $OWNWORK = 1 ]]; then rm -rf "$WORK"; fi
}
trap cleanup_ssh EXIT
for _ in $(seq 1 300); do [[ -s $S/env ]] && break; sleep 0.1; done
if [[ ! -s $S/env ]]; then echo "bench/ssh: test bed did not start:" >&2; cat "$S/testbed.log" >&2; exit 1; fi
# shellcheck disable=SC1090
source "$S/env"

# A kit repo with release/runtime at one commit.
SRC=$S/kit-src
REPO=$S/kit.git
git init -q -b main "$SRC"
mkdir -p "$SRC/release/runtime/serving" "$SRC/release/runtime/aot"
echo 'print("serve")' >"$SRC/release/runtime/serving/serve.py"
echo 'mode: conservative' >"$SRC/release/runtime/serving/conservative.yaml"
head -c 4096 /dev/zero >"$SRC/release/runtime/aot/kernel.bin"
echo kit >"$SRC/README.md"
git -C "$SRC" add -A
GIT_AUTHOR_NAME=b GIT_AUTHOR_EMAIL=b@e GIT_COMMITTER_NAME=b GIT_COMMITTER_EMAIL=b@e git -C "$SRC" commit -q -m kit
COMMIT=$(git -C "$SRC" rev-parse HEAD)
git clone -q --bare "$SRC" "$REPO"
# The node user fetches it: git refuses a repository owned by someone else.
chown -R "$SF_NODE_USER" "$REPO"
chmod a+rx "$WORK" "$S"

# A hub repo in HF layout: snapshots/REV/... are relative symlinks to blobs/.
mkhub() { # HUB ORG NAME N
  local d="$1/models--$2--$3" rev=0123456789abcdef0123456789abcdef01234567 i
  mkdir -p "$d/blobs" "$d/refs" "$d/snapshots/$rev/shards"
  echo -n $rev >"$d/refs/main"
  for ((i = 0; i < $4; i++)); do
    echo "blob $3 $i" >"$d/blobs/b$i"
    ln -s "../../../blobs/b$i" "$d/snapshots/$rev/shards/f$i.safetensors"
  done
}
nodes=""
for i in 0 1; do
  host=SF_NODE${i}_HOST port=SF_NODE${i}_PORT root=SF_NODE${i}_ROOT
  mkhub "${!root}/hub" org model "$FILES"
  mkhub "${!root}/hub" org drafter "$FILES"
  chown -R "$SF_NODE_USER" "${!root}" 2>/dev/null || true
  nodes+="n$i={host=\"${!host}\",port=${!port},root=\"${!root}\"},"
done

cat >"$S/cfg/main.sf.hcl" <<HCL
variable "nodes" {
  type = map(object({ host = string, port = number, root = string }))
}
node "n" {
  for_each      = var.nodes
  host          = each.value.host
  port          = each.value.port
  user          = "$SF_NODE_USER"
  identity_file = "$SF_IDENTITY_FILE"
  known_hosts   = "$SF_KNOWN_HOSTS"
}
resource "gitkit_checkout" "runtime" {
  for_each = var.nodes
  node     = node.n[each.key]
  repo     = "$REPO"
  commit   = "$COMMIT"
  subdir   = "release/runtime"
  path     = "\${each.value.root}/kit"
}
resource "hubstage_manifest" "model" {
  for_each = var.nodes
  node     = node.n[each.key]
  hub_dir  = "\${each.value.root}/hub"
  repo_id  = "org/model"
  target   = "/model"
}
resource "hubstage_manifest" "draft" {
  for_each = var.nodes
  node     = node.n[each.key]
  hub_dir  = "\${each.value.root}/hub"
  repo_id  = "org/drafter"
  target   = "/draft-exl3"
}
HCL
export SPARKFORM_VAR_nodes="{${nodes%,}}"

cd "$S/cfg"
if ! "$BIN" apply -auto-approve -no-color >"$S/apply.log" 2>&1; then
  echo "bench/ssh: apply failed:" >&2; tail -30 "$S/apply.log" >&2; exit 1
fi
: >"$S/plan.times"
for ((r = 1; r <= RUNS; r++)); do
  /usr/bin/time -f '%e %U %S %M' -o "$S/t" "$BIN" plan -detailed-exitcode -no-color >"$S/plan.log" 2>&1 || {
    echo "bench/ssh: the no-op plan failed or has changes:" >&2; tail -30 "$S/plan.log" >&2; exit 1; }
  awk '{printf "%.3f %.3f\n", $1, $2 + $3}' "$S/t" >>"$S/plan.times"
done
"$BIN" plan -json >"$S/plan.json" 2>/dev/null || true
stat2() { sort -g -k"$2","$2" "$1" | awk -v c="$2" '{v[NR]=$c} END {
  m = (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2; printf "%.2f [%.2f-%.2f]", m, v[1], v[NR] }'; }
echo "two sshd nodes, gitkit_checkout + 2 x hubstage_manifest of $FILES files per node (kmod/docker not included):"
echo "  no-op plan wall s $(stat2 "$S/plan.times" 1), cpu s $(stat2 "$S/plan.times" 2)  ($RUNS runs)"
python3 - "$S/plan.json" <<'PY' || true
import json, sys
r = json.load(open(sys.argv[1])).get("refresh", {})
print("  refresh: read_resources_calls=%s remote_round_trips=%s rpcs=%s" % (
    r.get("read_resources_calls"), r.get("remote_round_trips"), json.dumps(r.get("rpcs"), sort_keys=True)))
PY
"$BIN" destroy -auto-approve -no-color >/dev/null 2>&1 || echo "bench/ssh: destroy failed (test bed is removed anyway)" >&2

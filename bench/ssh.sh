#!/usr/bin/env bash
# bench/ssh.sh — no-op plan over SSH on two real sshd nodes (internal/testbed)
# with the seed-shaped resources per node (issue 7):
#
#   kmod_module       nvidia_drm modeset=1 fbdev=0, on a SIMULATED kernel per
#                     node (internal/kernelsim; the kmod provider of a
#                     -tags kmodsim build finds it through SPARKFORM_KMOD_*
#                     with the {node} placeholder)
#   gitkit_checkout   release/runtime of a local kit repo at a pinned commit
#   hubstage_manifest model and drafter, FILES (1,000) files each, HF layout
#   docker_image      a stand-in built FROM scratch with busybox-static
#   docker_container  the seed's limits (memory 9g, memory_swap 9g, cpus 6,
#                     shm 2g), env, read-only mounts (hub, kit serving/),
#                     bind_files = the model manifest's files (1,000 binds)
#   kmod_cgroup       only on a cgroup v2 host (the seed's 9g / no swap /
#                     6 CPU guard); on cgroup v1 it is left out and the
#                     output says so.
#
# Applies once, then times RUNS no-op plans (must exit 0 with
# -detailed-exitcode), each followed by a plan of the same two nodes with
# no resource (the floor: issue 32's target is the seed's plan <= 2x it),
# and RUNS `sparkform status` (must exit 0, healthy), and prints median
# [min-max] wall and CPU seconds, the ratio to the floor,
# then the refresh counters of one `plan -json`. Destroys, and removes
# everything it made (containers, image, sshd nodes, temp dirs) on any exit.
#
# Both nodes are sshd instances on this machine, so they share one Docker
# Engine: container names and the image tag carry this script's pid.
#
# Env: BIN (sparkform binary; built when unset), RUNS (default 5),
#      DOCKER_ACCESS (sudo, the default: the node user reaches the Docker
#      socket only through `sudo -n docker system dial-stdio`; group: it
#      logs in as the test bed's DockerUser, a member of the docker group
#      like the user of a DGX Spark, and the socket is forwarded by sshd),
#      FILES (default 1000), WORK (scratch dir), ROOT (repo), KEEP=1 keeps
#      the scratch dir (the nodes, containers and image are still removed),
#      PERF=1 adds where the time goes: the nodes' CPU per plan (both sshd
#      listeners' reaped children: sshd, sudo, the scripts, the docker
#      CLI) and the Docker Engine's (dockerd, shared with anything else
#      using it), medians over the timed runs, and perf's breakdown by
#      command of one more plan (needs perf; PERFG=1 records call graphs
#      too, PERFKEEP=FILE keeps that perf.data for perf report).
set -euo pipefail
BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd) # before any cd
ROOT=${ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
RUNS=${RUNS:-5}
PERF=${PERF:-0}
DOCKER_ACCESS=${DOCKER_ACCESS:-sudo}
case $DOCKER_ACCESS in sudo | group) ;; *) echo "bench/ssh: DOCKER_ACCESS=$DOCKER_ACCESS: give sudo or group" >&2; exit 2 ;; esac
FILES=${FILES:-1000}
KEEP=${KEEP:-0}
OWNWORK=0
if [[ -z ${WORK:-} ]]; then WORK=$(mktemp -d /tmp/sparkform-bench-ssh.XXXXXX); OWNWORK=1; fi

need() { command -v "$1" >/dev/null 2>&1 || { echo "bench/ssh: $1 not found: $2" >&2; exit 1; }; }
need docker "install Docker Engine (the docker_container part needs it)"
need git "install git"
need python3 "install python3 (it reads plan -json)"
[[ -x /usr/bin/time ]] || { echo "bench/ssh: GNU time not found at /usr/bin/time (apt-get install time)" >&2; exit 1; }
[[ -x /bin/busybox ]] || { echo "bench/ssh: /bin/busybox not found (apt-get install busybox-static): the stand-in image is built from it" >&2; exit 1; }
[[ $(id -u) = 0 ]] || { echo "bench/ssh: run as root (the test bed creates a user and starts sshd)" >&2; exit 1; }
docker version --format '{{.Server.Version}}' >/dev/null 2>&1 || { echo "bench/ssh: no running Docker Engine (docker version failed)" >&2; exit 1; }

S=$WORK/ssh
TAG=sparkform-bench/ds41-standin:$$
CNAME=sparkform-bench-$$
BEDPID=
APPLIED=0
cleanup_ssh() {
  local rc=$?
  set +e
  if [[ $APPLIED = 1 && -f $S/cfg/main.sf.hcl ]]; then
    (cd "$S/cfg" && "$BIN" destroy -auto-approve -no-color >"$S/destroy.log" 2>&1) ||
      { echo "bench/ssh: destroy failed (removing by hand):" >&2; tail -5 "$S/destroy.log" >&2; }
  fi
  for i in 0 1; do docker rm -f "$CNAME-n$i" >/dev/null 2>&1; done
  docker rmi -f "$TAG" >/dev/null 2>&1
  for i in 0 1; do [[ -d /sys/fs/cgroup/$CNAME-n$i ]] && rmdir "/sys/fs/cgroup/$CNAME-n$i" 2>/dev/null; done
  if [[ -n $BEDPID ]]; then kill "$BEDPID" 2>/dev/null; wait "$BEDPID" 2>/dev/null; fi
  if [[ $OWNWORK = 1 ]]; then
    if [[ $KEEP = 1 ]]; then echo "bench/ssh: work dir kept: $WORK" >&2; else rm -rf "$WORK"; fi
  fi
  return $rc
}
trap cleanup_ssh EXIT
trap 'exit 130' INT TERM

# BIN must be a test build (-tags kmodsim): only that kmod provider reads
# SPARKFORM_KMOD_* and drives the simulated kernels.
if [[ -z ${BIN:-} ]]; then BIN=$WORK/sparkform; (cd "$ROOT" && go build -tags kmodsim -o "$BIN" ./cmd/sparkform); fi
rm -rf "$S"; mkdir -p "$S/cfg" "$S/kernel" "$S/image"
chmod a+rx "$WORK" "$S" "$S/kernel"
(cd "$ROOT" && go build -o "$S/sparkform-testbed" ./internal/testbed/cmd/sparkform-testbed \
  && go build -o "$S/kernelsim" ./internal/kernelsim/cmd/kernelsim)
"$S/sparkform-testbed" -n 2 -dir "$S/bed" -env-file "$S/env" >/dev/null 2>"$S/testbed.log" &
BEDPID=$!

# The stand-in serving image, FROM scratch (as e2e/testdata/image): busybox
# and an entrypoint that idles until docker stop (TERM) and exits at once.
cp /bin/busybox "$S/image/busybox"
cat >"$S/image/Dockerfile" <<'EOF'
FROM scratch
COPY busybox /bin/busybox
ENV PATH=/bin
ENTRYPOINT ["/bin/busybox", "sh", "-c", "trap 'exit 0' TERM; echo ready; sleep 2147483647 & wait"]
EOF
DOCKER_BUILDKIT=0 docker build -q -t "$TAG" "$S/image" >"$S/build.log" 2>&1 ||
  { echo "bench/ssh: docker build of the stand-in image failed:" >&2; cat "$S/build.log" >&2; exit 1; }

# One simulated kernel per node, laid out as kernelsim.Create does (shims
# that exec the kernelsim binary with this root), booted: drm and
# nvidia_drm loaded with modeset=N fbdev=N, as on a DGX Spark.
mksim() { # DIR
  local d=$1 tool
  mkdir -p "$d"/{sys/module,proc,etc/modprobe.d,lib/modules,bin,var/uses}
  cat >"$d/lib/modules/catalog" <<'EOF'
# kernelsim catalogue: a SIMULATED DGX Spark kernel (bench/ssh.sh)
drm        boot size=753664
nvidia_drm depends=drm boot size=126976 modeset:bool:ro=N fbdev:bool:ro=N
EOF
  for tool in modprobe rmmod lsmod kernelsim; do
    printf '#!/bin/sh\n# kernelsim shim: a SIMULATED %s (bench only)\nexec %q --root %q %s "$@"\n' \
      "$tool" "$S/kernelsim" "$d" "$tool" >"$d/bin/$tool"
    chmod 755 "$d/bin/$tool"
  done
  "$d/bin/kernelsim" reboot
}
for i in 0 1; do mksim "$S/kernel/n$i"; done
export SPARKFORM_KMOD_SYSFS_ROOT="$S/kernel/{node}/sys"
export SPARKFORM_KMOD_MODPROBE="$S/kernel/{node}/bin/modprobe"
export SPARKFORM_KMOD_RMMOD="$S/kernel/{node}/bin/rmmod"

for _ in $(seq 1 300); do [[ -s $S/env ]] && break; sleep 0.1; done
if [[ ! -s $S/env ]]; then echo "bench/ssh: test bed did not start:" >&2; cat "$S/testbed.log" >&2; exit 1; fi
# shellcheck disable=SC1090
source "$S/env"
NODE_USER=$SF_NODE_USER
if [[ $DOCKER_ACCESS = group ]]; then
  NODE_USER=$SF_NODE_DOCKER_USER
  id -nG "$NODE_USER" | grep -qw docker ||
    { echo "bench/ssh: DOCKER_ACCESS=group: $NODE_USER is not in the docker group (is Docker installed?)" >&2; exit 1; }
fi

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
chown -R "$NODE_USER" "$REPO"

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
  chown -R "$NODE_USER" "${!root}" 2>/dev/null || true
  nodes+="n$i={host=\"${!host}\",port=${!port},root=\"${!root}\"},"
done

# kmod_cgroup needs a cgroup v2 hierarchy at /sys/fs/cgroup (its provider
# refuses cgroup v1 or hybrid layouts with an error saying so).
CGROUP_NOTE="kmod_cgroup not included: this host runs cgroup v1 (/sys/fs/cgroup is $(stat -fc %T /sys/fs/cgroup)), and kmod_cgroup manages cgroup v2 groups only"
CGROUP_HCL=
if [[ $(stat -fc %T /sys/fs/cgroup) = cgroup2fs ]]; then
  CGROUP_NOTE="kmod_cgroup included (cgroup v2 host): $CNAME-n0, $CNAME-n1"
  CGROUP_HCL=$(cat <<HCL
# The serving guard (memory.max 9g, no swap, cpu quota 6). Both nodes are
# this host: one group per node key.
resource "kmod_cgroup" "guard" {
  for_each        = var.nodes
  node            = node.n[each.key]
  path            = "$CNAME-\${each.key}"
  memory_max      = "9g"
  memory_swap_max = "0"
  cpus            = 6
}
HCL
)
fi

cat >"$S/cfg/main.sf.hcl" <<HCL
variable "nodes" {
  type = map(object({ host = string, port = number, root = string }))
}
node "n" {
  for_each      = var.nodes
  host          = each.value.host
  port          = each.value.port
  user          = "$NODE_USER"
  identity_file = "$SF_IDENTITY_FILE"
  known_hosts   = "$SF_KNOWN_HOSTS"
  become        = true # sudo -n: module reload and the Docker socket
}
resource "kmod_module" "nvidia_drm" {
  for_each = var.nodes
  node     = node.n[each.key]
  name     = "nvidia_drm"
  params   = { modeset = "1", fbdev = "0" }
}
resource "gitkit_checkout" "runtime" {
  for_each   = var.nodes
  node       = node.n[each.key]
  repo       = "$REPO"
  commit     = "$COMMIT"
  subdir     = "release/runtime"
  path       = "\${each.value.root}/kit"
  depends_on = [kmod_module.nvidia_drm]
}
resource "hubstage_manifest" "model" {
  for_each   = var.nodes
  node       = node.n[each.key]
  hub_dir    = "\${each.value.root}/hub"
  repo_id    = "org/model"
  target     = "/model"
  depends_on = [kmod_module.nvidia_drm]
}
resource "hubstage_manifest" "draft" {
  for_each   = var.nodes
  node       = node.n[each.key]
  hub_dir    = "\${each.value.root}/hub"
  repo_id    = "org/drafter"
  target     = "/draft-exl3"
  depends_on = [kmod_module.nvidia_drm]
}
resource "docker_image" "ds41" {
  for_each     = var.nodes
  node         = node.n[each.key]
  name         = "$TAG"
  pull         = "never"
  keep_locally = true # one engine serves both nodes; the script removes it
}
resource "docker_container" "ds41" {
  for_each     = var.nodes
  node         = node.n[each.key]
  name         = "$CNAME-\${each.key}"
  image        = docker_image.ds41[each.key].name
  command      = ["--served-model-name", "deepseek-v41-flash-exl3", "--node-rank", each.key]
  env = {
    DS41_GPU_MEMORY_UTILIZATION = "0.92"
    DS41_MAX_MODEL_LEN          = "1048576"
    DS41_MAX_NUM_SEQS           = "2"
    DS41_MAX_NUM_BATCHED_TOKENS = "3072"
    DS41_ENABLE_DSPARK          = "1"
    DS41_DRAFT_EXL3_PATH        = "/draft-exl3"
    VLLM_CACHE_ROOT             = "/cache/vllm"
    HF_HUB_OFFLINE              = "1"
    TRANSFORMERS_OFFLINE        = "1"
    NCCL_PROTO                  = "^LL128"
  }
  memory       = "9g"
  memory_swap  = "9g" # equal to memory: no swap
  cpus         = 6
  shm_size     = "2g"
  stop_timeout = 2
  mount {
    source    = "\${each.value.root}/hub"
    target    = "/hub"
    read_only = true
  }
  mount {
    source    = "\${gitkit_checkout.runtime[each.key].path}/serving"
    target    = "/opt/ds41-serving"
    read_only = true
  }
  bind_files = hubstage_manifest.model[each.key].files
  wait {
    log_line = "^ready"
    timeout  = "60s"
  }
  depends_on = [kmod_module.nvidia_drm]
}
$CGROUP_HCL
HCL
export SPARKFORM_VAR_nodes="{${nodes%,}}"

cd "$S/cfg"
APPLIED=1
if ! "$BIN" apply -auto-approve -no-color >"$S/apply.log" 2>&1; then
  echo "bench/ssh: apply failed:" >&2; tail -30 "$S/apply.log" >&2; exit 1
fi
# The apply really did it: each simulated nvidia_drm has the new values.
for i in 0 1; do
  p=$S/kernel/n$i/sys/module/nvidia_drm/parameters
  if [[ $(cat "$p/modeset") != Y || $(cat "$p/fbdev") != N ]]; then
    echo "bench/ssh: n$i: nvidia_drm modeset=$(cat "$p/modeset") fbdev=$(cat "$p/fbdev") after apply, want Y N" >&2; exit 1
  fi
  [[ $(docker inspect -f '{{.State.Running}}' "$CNAME-n$i") = true ]] ||
    { echo "bench/ssh: container $CNAME-n$i is not running after apply" >&2; exit 1; }
done
: >"$S/plan.times"
: >"$S/node.times"
: >"$S/floor.times"
# The floor (issue 32): a plan of the same two nodes with no resource,
# from its own folder: the node check alone (process starts, the plugin,
# a login and the held shell's sudo per node). Timed right after each
# seed plan, so both meet the same load.
mkdir -p "$S/floor"
awk '/^resource /{exit} {print}' "$S/cfg/main.sf.hcl" >"$S/floor/main.sf.hcl"
# PERF=1: the nodes' CPU is what the sshd listeners (children of the test
# bed) reaped during a plan: utime+stime of their children, in ticks.
# shellcheck source=bench/nodecpu.sh
source "$BENCH_DIR/nodecpu.sh"
listeners=$(pgrep -P "$BEDPID" -x sshd | tr '\n' ' ' || true)
own() { local f; f=$(cat "/proc/$1/stat") || { echo 0; return; }; f=${f##*) }; set -- $f; echo $((${12} + ${13})); }
dockerd=$(pgrep -xo dockerd || true)
for ((r = 1; r <= RUNS; r++)); do
  if [[ $PERF = 1 ]]; then
    n0=$(reaped $listeners) d0=0; [[ -n $dockerd ]] && d0=$(own "$dockerd")
  fi
  /usr/bin/time -f '%e %U %S' -o "$S/t" "$BIN" plan -detailed-exitcode -no-color >"$S/plan.log" 2>&1 || {
    echo "bench/ssh: the no-op plan failed or has changes:" >&2; tail -30 "$S/plan.log" >&2; exit 1; }
  awk '{printf "%.3f %.3f\n", $1, $2 + $3}' "$S/t" >>"$S/plan.times"
  (cd "$S/floor" && /usr/bin/time -f '%e %U %S' -o "$S/t" "$BIN" plan -detailed-exitcode -no-color >"$S/floor.log" 2>&1) || {
    echo "bench/ssh: the floor's plan (no resources) failed:" >&2; tail -30 "$S/floor.log" >&2; exit 1; }
  awk '{printf "%.3f %.3f\n", $1, $2 + $3}' "$S/t" >>"$S/floor.times"
  if [[ $PERF = 1 ]]; then
    # The listeners reap a connection's process once it has ended.
    nodeidle $listeners
    n1=$(reaped $listeners) d1=0; [[ -n $dockerd ]] && d1=$(own "$dockerd")
    awk -v n=$((n1 - n0)) -v d=$((d1 - d0)) -v t="$TCK" 'BEGIN {printf "%.3f %.3f\n", n / t, d / t}' >>"$S/node.times"
  fi
done
if [[ $PERF = 1 ]]; then
  # Where one seed plan spends the machine's CPU: perf's samples of every
  # CPU (cpu-clock), by command; "swapper" is idle time.
  perf record -q -a ${PERFG:+-g} -o "$S/perf.data" -- "$BIN" plan -detailed-exitcode -no-color >/dev/null 2>&1 ||
    { echo "bench/ssh: the no-op plan under perf failed or has changes" >&2; exit 1; }
  perf report -i "$S/perf.data" --sort comm --stdio -g none 2>/dev/null | grep '%' | head -14 >"$S/perf.txt"
  if [[ -n ${PERFKEEP:-} ]]; then cp "$S/perf.data" "$PERFKEEP"; fi
fi
# sparkform status (issue 30): the same nodes, nothing to change; must say
# healthy (exit 0). Times RUNS runs, and counts sshd logins during one.
: >"$S/status.times"
for ((r = 1; r <= RUNS; r++)); do
  rc=0
  /usr/bin/time -f '%e %U %S' -o "$S/t" "$BIN" status -no-color >"$S/status.log" 2>&1 || rc=$?
  if [[ $rc != 0 ]]; then echo "bench/ssh: status exited $rc, not 0 (healthy):" >&2; tail -30 "$S/status.log" >&2; exit 1; fi
  awk '{printf "%.3f %.3f\n", $1, $2 + $3}' "$S/t" >>"$S/status.times"
done
"$BIN" plan -json >"$S/plan.json" 2>"$S/plan-json.log" || true
stat2() { sort -g -k"$2","$2" "$1" | awk -v c="$2" '{v[NR]=$c} END {
  m = (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2; printf "%.2f [%.2f-%.2f]", m, v[1], v[NR] }'; }
echo "two sshd nodes, per node: kmod_module (simulated kernel) + gitkit_checkout + 2 x hubstage_manifest of $FILES files"
echo "  + docker_image + docker_container ($FILES bind_files, 9g/9g/6 cpus/shm 2g); $CGROUP_NOTE"
echo "  node user $NODE_USER: Docker socket $([[ $DOCKER_ACCESS = group ]] && echo "as a docker group member (sshd forwards it)" || echo "through sudo -n docker system dial-stdio") (DOCKER_ACCESS=$DOCKER_ACCESS)"
echo "  no-op plan: wall s $(stat2 "$S/plan.times" 1), cpu s $(stat2 "$S/plan.times" 2)  ($RUNS runs, median [min-max]; cpu = user+sys incl. plugins)"
med() { sort -g -k"$2","$2" "$1" | awk -v c="$2" '{v[NR]=$c} END {printf "%.4f", (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }
echo "  floor (a plan of the same two nodes, no resource): wall s $(stat2 "$S/floor.times" 1), cpu s $(stat2 "$S/floor.times" 2)"
awk -v a="$(med "$S/plan.times" 1)" -v b="$(med "$S/floor.times" 1)" 'BEGIN {r = a / b; printf "  seed no-op plan / floor (medians)   %.2fx <= 2x   %s\n", r, (r <= 2) ? "PASS" : "FAIL"}'
echo "  status: wall s $(stat2 "$S/status.times" 1), cpu s $(stat2 "$S/status.times" 2)  ($RUNS runs, median [min-max]; exit 0 healthy each time)"
if [[ $PERF = 1 ]]; then
  echo "  node cpu s per plan: both nodes $(stat2 "$S/node.times" 1) (sshd listeners' reaped children), dockerd $(stat2 "$S/node.times" 2) (shared engine)"
fi
if [[ -s $S/perf.txt ]]; then
  echo "  where one seed no-op plan spends the machine's CPU (perf, all CPUs; swapper = idle):"
  sed 's/^/    /' "$S/perf.txt"
fi
python3 - "$S/plan.json" <<'PY' || echo "  refresh: plan -json unreadable (see $S/plan-json.log)"
import json, sys
# plan -json is a stream of JSON lines; the refresh_summary line has the counters.
r = {}
for line in open(sys.argv[1]):
    line = line.strip()
    if line.startswith("{"):
        o = json.loads(line)
        if isinstance(o.get("refresh"), dict) and "read_resources_calls" in o["refresh"]:
            r = o["refresh"]
print("  refresh: read_resources_calls=%s remote_round_trips=%s" % (r.get("read_resources_calls"), r.get("remote_round_trips")))
print("  plugin RPCs per provider (both nodes):")
for p, calls in sorted((r.get("rpcs") or {}).items()):
    print("    %-9s %s" % (p, " ".join("%s=%s" % kv for kv in sorted(calls.items()))))
PY
# Per provider and node: one ReadResources call each, its round trips and
# how long it took (SPARKFORM_LOG=debug). SSH handshakes per node: in the
# debug log (the core dials, the plugins share its connection) and as
# sshd saw them (logins accepted during this plan).
logins() { grep -c 'Accepted publickey for ' "$S/bed/node$1/sshd.log" 2>/dev/null || echo 0; }
s0=$(logins 0) s1=$(logins 1)
"$BIN" status -no-color >"$S/status.log" 2>&1 || true
echo "  sshd logins in one status: n0=$(($(logins 0) - s0)) n1=$(($(logins 1) - s1))"
l0=$(logins 0) l1=$(logins 1)
SPARKFORM_LOG=debug "$BIN" plan -no-color >"$S/plan-debug.log" 2>&1 || true
echo "  ssh handshakes in one no-op plan: debug log n0=$(grep -c 'ssh handshake: node=.*n0' "$S/plan-debug.log") n1=$(grep -c 'ssh handshake: node=.*n1' "$S/plan-debug.log"); sshd logins n0=$(($(logins 0) - l0)) n1=$(($(logins 1) - l1))"
# Plugin connections to the core's relay, one per plugin process and node
# when its providers share a node pool.
echo "  relay connections in one no-op plan: n0=$(grep -c 'node relay: a plugin uses the shared connection: node=.*n0' "$S/plan-debug.log") n1=$(grep -c 'node relay: a plugin uses the shared connection: node=.*n1' "$S/plan-debug.log")"
echo "  refresh per provider and node (SPARKFORM_LOG=debug):"
grep -o '\[DEBUG\] refresh .*' "$S/plan-debug.log" | sed 's/^\[DEBUG\] refresh /    /' | sort || true

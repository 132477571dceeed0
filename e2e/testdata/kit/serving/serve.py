# Stand-in for the kit's serve.py in the end-to-end test (run by the test
# image's /opt/ds41-venv/bin/python, which is busybox sh). Like the seed's
# serving guard it refuses to serve unless: its cgroup says memory.max ==
# 9g, no swap and a CPU quota of at most 6 CPUs; /model and /draft-exl3
# hold regular files only (no symlinks); the kit overlays are mounted; the
# DS41_* profile and cache env are set. Then it answers /health on
# 127.0.0.1:PORT (--port) with busybox httpd until it gets SIGTERM.
B=/bin/busybox
fail() { echo "GUARD FAIL: $*"; exit 3; }
port=8000 rank=?
for a in "$@"; do
  case $prev in --port) port=$a ;; --node-rank) rank=$a ;; esac
  prev=$a
done
if [ -f /sys/fs/cgroup/memory.max ]; then
  mem=$($B cat /sys/fs/cgroup/memory.max)
  swap=$($B cat /sys/fs/cgroup/memory.swap.max)
  set -- $($B cat /sys/fs/cgroup/cpu.max)
  q=$1 p=$2
else
  mem=$($B cat /sys/fs/cgroup/memory/memory.limit_in_bytes)
  memsw=$($B cat /sys/fs/cgroup/memory/memory.memsw.limit_in_bytes)
  swap=$((memsw - mem))
  q=$($B cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us)
  p=$($B cat /sys/fs/cgroup/cpu/cpu.cfs_period_us)
fi
[ "$mem" = 9663676416 ] || fail "memory.max is $mem, want 9g (9663676416)"
[ "$swap" = 0 ] || fail "swap is $swap, want 0"
case $q in max|-1) fail "no cpu quota" ;; esac
[ "$q" -le $((6 * p)) ] || fail "cpu quota $q/$p is above 6 CPUs"
for kv in DS41_MAX_MODEL_LEN=1048576 DS41_MAX_NUM_SEQS=2 DS41_KV_CAP_MIB=0 \
  DS41_ENABLE_COOPERATIVE_MOE=1 DS41_ENABLE_DCP2=1 DS41_ENABLE_DSPARK=1 DS41_ENABLE_SSD_VOCAB=1 \
  DS41_DRAFT_EXL3_PATH=/draft-exl3 VLLM_CACHE_ROOT=/cache/vllm HF_HUB_OFFLINE=1 NCCL_PROTO=^LL128; do
  k=${kv%%=*} want=${kv#*=}
  eval "got=\${$k-}"
  [ "$got" = "$want" ] || fail "env $k is '$got', want '$want'"
done
n=0
for d in /model /draft-exl3; do
  [ -d $d ] || fail "$d is missing"
  bad=$($B find $d ! -type f ! -type d)
  [ -z "$bad" ] || fail "not regular files: $bad"
  c=$($B find $d -type f | $B wc -l)
  [ "$c" -gt 0 ] || fail "$d holds no files"
  n=$((n + c))
done
[ -f /opt/ds41-serving/conservative.yaml ] || fail "kit overlay /opt/ds41-serving is not mounted"
[ -f /usr/local/lib/python3.12/dist-packages/flashinfer/data/aot/mxfp8_gemm_cutlass_sm120/gemm.bin ] || fail "AOT overlay is not mounted"
[ -d /cache ] || fail "/cache is not mounted"
if $B touch /hub/.guard-write 2>/dev/null; then fail "/hub is writable"; fi
$B mkdir -p /www && echo ok >/www/health
echo "guard ok: rank $rank memory $mem swap $swap cpu $q/$p, $n regular files; serving on 127.0.0.1:$port"
# As PID 1 the shell must stop on SIGTERM itself (docker stop).
$B httpd -f -p "127.0.0.1:$port" -h /www &
pid=$!
trap '$B kill $pid; exit 0' TERM INT
wait $pid

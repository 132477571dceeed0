#!/bin/busybox sh
# Plays the seed recipe's serving guard. It refuses to serve unless its own
# cgroup says memory.max == GUARD_MEMORY (9g), no swap, a CPU quota of at
# most 6 CPUs, /dev/shm is 2g, every file in GUARD_FILES is a regular file
# (not a symlink), /hub is a read-only directory and the runtime env is set.
# Otherwise it serves /health on 127.0.0.1:$PORT (busybox httpd).
B=/bin/busybox
fail() { echo "GUARD FAIL: $*"; exit 3; }
want_mem=${GUARD_MEMORY:-9663676416}
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
[ "$mem" = "$want_mem" ] || fail "memory.max is $mem, want $want_mem"
[ "$swap" = 0 ] || fail "swap is $swap, want 0"
case $q in max|-1) fail "no cpu quota" ;; esac
[ "$q" -le $((6 * p)) ] || fail "cpu quota $q/$p is above 6 CPUs"
shm=$($B df -k /dev/shm | $B tail -n 1 | $B awk '{print $2}')
[ "$shm" = 2097152 ] || fail "/dev/shm is ${shm}k, want 2g"
[ "$DS41_MAX_MODEL_LEN" = 1048576 ] || fail "env DS41_MAX_MODEL_LEN is '$DS41_MAX_MODEL_LEN'"
[ "$VLLM_CACHE_ROOT" = /cache/vllm ] || fail "env VLLM_CACHE_ROOT is '$VLLM_CACHE_ROOT'"
n=0
for f in $GUARD_FILES; do
  { [ -f "$f" ] && [ ! -h "$f" ]; } || fail "$f is not a regular file"
  n=$((n + 1))
done
[ -d /hub ] || fail "/hub is not a directory"
if $B touch /hub/.guard-write 2>/dev/null; then fail "/hub is writable"; fi
$B mkdir -p /www && echo ok > /www/health
echo "guard ok: memory $mem swap $swap cpu $q/$p, $n regular files; serving on 127.0.0.1:${PORT}"
exec $B httpd -f -p "127.0.0.1:${PORT}" -h /www

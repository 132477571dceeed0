# bench/nodecpu.sh — sourced by bench/ssh.sh, hub.sh and fleet.sh: the CPU
# a test bed's nodes spend, read from their sshd listeners.
#
# TCK is the unit of /proc/PID/stat times (clock ticks per second).
# reaped PID... prints the CPU ticks (utime+stime) that the processes PID
# reaped from their children, summed: for an sshd listener, every
# connection's sshd and what its sessions ran, once that connection ended.
# shellcheck shell=bash
# shellcheck disable=SC2034 # the scripts that source this use it
TCK=$(getconf CLK_TCK)
reaped() {
  local p s=0 f
  for p in "$@"; do
    f=$(cat "/proc/$p/stat") || return 1
    f=${f##*) } # after the command name: state ppid ...
    # shellcheck disable=SC2086 # split into fields on purpose
    set -- $f
    s=$((s + ${14} + ${15})) # cutime cstime (fields 16 and 17)
  done
  echo $s
}
# nodeidle PID... waits (up to 2 s) until none of the processes PID has a
# child left: the connections of the command that just ended have closed
# and been reaped, so reaped counts all of their CPU.
nodeidle() {
  local ids
  ids=$(printf '%s,' "$@")
  for _ in $(seq 1 100); do
    pgrep -P "${ids%,}" >/dev/null || return 0
    sleep 0.02
  done
}

package docker

import (
	"bufio"
	"bytes"
	"context"
	"strconv"
	"strings"

	"github.com/sparkform/sparkform/providers/node"
)

// cgroupScript prints, for each pid argument, the cgroup limits the kernel
// applied to it: "PID v1 LIMIT MEMSW QUOTA PERIOD" or "PID v2 MEMORY.MAX
// SWAP.MAX CPU.MAX" (tab-separated), or "PID none". Its only inputs are
// its arguments. POSIX sh and busybox compatible.
const cgroupScript = `
mem1= cpu1= v2=
while read -r dev mnt typ opts rest; do
  case $typ in
    cgroup2) [ -n "$v2" ] || v2=$mnt ;;
    cgroup)
      case ",$opts," in *,memory,*) mem1=$mnt ;; esac
      case ",$opts," in *,cpu,*) cpu1=$mnt ;; esac ;;
  esac
done < /proc/self/mounts
# rd VAR FILE: the file's first line into VAR, '?' when it cannot be read
# (a shell builtin: no process per file).
rd() { _v=; { IFS= read -r _v < "$2" || [ -n "$_v" ]; } 2>/dev/null || _v='?'; eval "$1=\$_v"; }
for pid in "$@"; do
  m= c= u= seen=
  if [ -r "/proc/$pid/cgroup" ]; then
    while IFS=: read -r n ctl p; do
      seen=1
      case ",$ctl," in
        *,memory,*) m=$p ;;
        *,cpu,*) c=$p ;;
        ,,) u=$p ;;
      esac
    done < "/proc/$pid/cgroup"
  fi
  if [ -n "$m" ] && [ -n "$mem1" ]; then
    rd a "$mem1$m/memory.limit_in_bytes"; rd b "$mem1$m/memory.memsw.limit_in_bytes"
    rd q "$cpu1$c/cpu.cfs_quota_us"; rd r "$cpu1$c/cpu.cfs_period_us"
    printf '%s\tv1\t%s\t%s\t%s\t%s\n' "$pid" "$a" "$b" "$q" "$r"
  elif [ -n "$seen" ] && [ -n "$v2" ]; then
    d=$v2$u
    rd a "$d/memory.max"; rd b "$d/memory.swap.max"; rd q "$d/cpu.max"
    printf '%s\tv2\t%s\t%s\t%s\n' "$pid" "$a" "$b" "$q"
  else
    printf '%s\tnone\n' "$pid"
  fi
done
`

// v1Unlimited: cgroup v1 reports "no limit" as a page-rounded huge number.
const v1Unlimited = int64(1) << 62

// readCgroups returns the applied limits per pid in one remote command,
// and the round trips it made. /proc/PID/cgroup and the limit files are
// world-readable on a stock kernel, so it reads as the login user; only
// when something could not be read that way (/proc mounted hidepid, a
// locked-down cgroup tree) and the node allows become does it read again
// as root: a second round trip instead of a sudo on every refresh.
func readCgroups(ctx context.Context, conn node.Conn, become bool, pids []int) (map[int]cgroupValues, int, error) {
	out := map[int]cgroupValues{}
	if len(pids) == 0 {
		return out, 0, nil
	}
	argv := []string{"sh", "-c", cgroupScript, "sh"}
	for _, p := range pids {
		argv = append(argv, strconv.Itoa(p))
	}
	res, err := conn.Run(ctx, node.Cmd{Argv: argv})
	if err == nil {
		out = parseCgroups(res.Stdout)
		if !become || complete(out, pids) {
			return out, 1, nil
		}
	} else if !become {
		return nil, 1, err
	}
	res, err = conn.Run(ctx, node.Cmd{Argv: argv, Become: true})
	if err != nil {
		return nil, 2, err
	}
	return parseCgroups(res.Stdout), 2, nil
}

// complete reports whether cgs has every value of every pid.
func complete(cgs map[int]cgroupValues, pids []int) bool {
	for _, p := range pids {
		cg, ok := cgs[p]
		if !ok || cg.MemoryMax == "?" || cg.SwapMax == "?" || cg.CPUMax == "?" {
			return false
		}
	}
	return true
}

func parseCgroups(b []byte) map[int]cgroupValues {
	out := map[int]cgroupValues{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		pid, err := strconv.Atoi(f[0])
		if err != nil || len(f) < 2 {
			continue
		}
		switch {
		case f[1] == "v2" && len(f) == 5:
			out[pid] = cgroupValues{Version: 2, MemoryMax: f[2], SwapMax: f[3], CPUMax: f[4]}
		case f[1] == "v1" && len(f) == 6:
			cg := cgroupValues{Version: 1, MemoryMax: "?", SwapMax: "?", CPUMax: "?"}
			lim, err1 := strconv.ParseInt(f[2], 10, 64)
			memsw, err2 := strconv.ParseInt(f[3], 10, 64)
			if err1 == nil {
				cg.MemoryMax = v1Bytes(lim)
			}
			// v1 limits memory+swap together; v2's swap.max is the swap part.
			if err1 == nil && err2 == nil {
				if memsw >= v1Unlimited {
					cg.SwapMax = "max"
				} else {
					cg.SwapMax = strconv.FormatInt(memsw-lim, 10)
				}
			}
			if f[4] != "?" && f[5] != "?" {
				q := f[4]
				if strings.HasPrefix(q, "-") {
					q = "max"
				}
				cg.CPUMax = q + " " + f[5]
			}
			out[pid] = cg
		}
	}
	return out
}

func v1Bytes(n int64) string {
	if n >= v1Unlimited {
		return "max"
	}
	return strconv.FormatInt(n, 10)
}

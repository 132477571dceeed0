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
rd() { cat "$1" 2>/dev/null || echo '?'; }
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
    printf '%s\tv1\t%s\t%s\t%s\t%s\n' "$pid" "$(rd "$mem1$m/memory.limit_in_bytes")" "$(rd "$mem1$m/memory.memsw.limit_in_bytes")" \
      "$(rd "$cpu1$c/cpu.cfs_quota_us")" "$(rd "$cpu1$c/cpu.cfs_period_us")"
  elif [ -n "$seen" ] && [ -n "$v2" ]; then
    d=$v2$u
    printf '%s\tv2\t%s\t%s\t%s\n' "$pid" "$(rd "$d/memory.max")" "$(rd "$d/memory.swap.max")" "$(rd "$d/cpu.max")"
  else
    printf '%s\tnone\n' "$pid"
  fi
done
`

// v1Unlimited: cgroup v1 reports "no limit" as a page-rounded huge number.
const v1Unlimited = int64(1) << 62

// readCgroups returns the applied limits per pid in one remote command.
func readCgroups(ctx context.Context, conn node.Conn, become bool, pids []int) (map[int]cgroupValues, error) {
	out := map[int]cgroupValues{}
	if len(pids) == 0 {
		return out, nil
	}
	argv := []string{"sh", "-c", cgroupScript, "sh"}
	for _, p := range pids {
		argv = append(argv, strconv.Itoa(p))
	}
	res, err := conn.Run(ctx, node.Cmd{Argv: argv, Become: become})
	if err != nil {
		return nil, err
	}
	return parseCgroups(res.Stdout), nil
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

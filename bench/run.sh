#!/usr/bin/env bash
# bench/run.sh — end-to-end figures for sparkform (issues 7 and 13).
#
# Part 1: N sparkform_data instances in chains of 10 on a local node, in
#         every shape users write (-p selects; default all four):
#           count    10 resource blocks, count = N/10, block i takes input
#                    from block i-1 (sparkform_data.r{i-1}[count.index].id)
#           blocks   N single-instance blocks, chains of 10 (generated configs)
#           foreach  10 blocks with for_each over a map of N/10 keys
#                    (a literal local), block i takes input from
#                    sparkform_data.r{i-1}[each.key].id
#           module   a local module (./mod) holding a chain of 10 blocks,
#                    called once with for_each over the same map: N/10
#                    module instances (as docs/language.md and the seed's
#                    root write a module used many times)
#           modblocks the same module as N/10 module blocks (one folder)
#         Phases: apply from empty, no-op plan (-detailed-exitcode must be
#         0), destroy. Per shape, N and phase: median [min-max] of wall s,
#         CPU s (user+sys of sparkform and its plugin children: GNU time,
#         i.e. wait4 rusage), peak RSS (largest single process of the tree),
#         and state bytes per instance (state file size after apply / N);
#         then the CPU ratio between consecutive N, and a PASS/FAIL check of
#         issue 13's targets at N=10000.
#         When TOFU names an OpenTofu binary, the same shapes run through it
#         (terraform_data, same chains on .id, local backend, `tofu init`
#         once per dir), and the sparkform/tofu ratios are printed.
# Part 2: two sshd test nodes with the seed-shaped resources: no-op plan
#         over SSH (bench/ssh.sh; -s skips it).
#
# Usage: bench/run.sh [-n "1000 10000"] [-r 3] [-p "count blocks foreach module modblocks"]
#                     [-b] [-f] [-k] [-s]
#   -n  instance counts (multiples of 10; add 50000 for the large run)
#   -r  runs per shape and N (N > 10000 get BIG_RUNS runs, default 1)
#   -p  shapes; -b is the old spelling of -p blocks
#   -f  also time the floor's parts on each config (bench/floor)
#   -k  keep the work dir, -s skip part 2
# Env: SPARKFORM_BIN (a built -tags kmodsim binary), TOFU (an OpenTofu
#      binary), TOFU_NS (N list for OpenTofu, default -n), TOFU_RUNS (default
#      -r), BIG_RUNS (runs for N > 10000, default 1), SSH_RUNS (part 2's
#      no-op plans, default 5), TOOLS (default "sparkform" plus "tofu" when
#      TOFU is set; TOOLS=tofu runs OpenTofu alone).
set -euo pipefail

NS="1000 10000"
RUNS=3
KEEP=0
SKIP_SSH=0
FLOOR=0
SHAPES="count blocks foreach module modblocks"
usage() { echo "usage: $0 [-n \"1000 10000\"] [-r RUNS] [-p \"count blocks foreach module modblocks\"] [-b] [-f] [-k] [-s]" >&2; exit 2; }
while getopts "n:r:p:bfks" opt; do
  case $opt in
    n) NS=$OPTARG ;;
    r) RUNS=$OPTARG ;;
    p) SHAPES=$OPTARG ;;
    b) SHAPES=blocks ;;
    f) FLOOR=1 ;;
    k) KEEP=1 ;;
    s) SKIP_SSH=1 ;;
    *) usage ;;
  esac
done
for s in $SHAPES; do
  case $s in count | blocks | foreach | module | modblocks) ;; *) echo "bench: unknown shape $s" >&2; usage ;; esac
done
for n in $NS; do
  if ! [[ $n =~ ^[0-9]+$ ]] || ((n < 10 || n % 10 != 0)); then echo "bench: N must be a multiple of 10: $n" >&2; exit 2; fi
done
TOFU=${TOFU:-}
TOFU_NS=${TOFU_NS:-$NS}
TOFU_RUNS=${TOFU_RUNS:-$RUNS}
BIG_RUNS=${BIG_RUNS:-1}

ROOT=$(cd "$(dirname "$0")/.." && pwd)
TIME=/usr/bin/time
if [[ ! -x $TIME ]]; then
  echo "bench: GNU time not found at $TIME (apt-get install time)" >&2
  exit 1
fi
if [[ -n $TOFU && ! -x $TOFU ]]; then echo "bench: TOFU=$TOFU is not an executable" >&2; exit 1; fi

WORK=$(mktemp -d /tmp/sparkform-bench.XXXXXX)
cleanup() { if [[ $KEEP = 0 ]]; then rm -rf "$WORK"; else echo "work dir kept: $WORK"; fi; }
trap cleanup EXIT
RES=$WORK/res
mkdir -p "$RES"

TOOLS=${TOOLS:-sparkform${TOFU:+ tofu}}
BIN=${SPARKFORM_BIN:-}
if [[ -z $BIN && " $TOOLS " = *" sparkform "* ]]; then
  BIN=$WORK/sparkform
  (cd "$ROOT" && go build -tags kmodsim -o "$BIN" ./cmd/sparkform)
fi
# bench/floor: the floor's parts (-f), and the bytes in use of a state file.
FLOORBIN=$WORK/floor
(cd "$ROOT" && go build -o "$FLOORBIN" ./bench/floor)
export BIN WORK ROOT RUNS

# ---- configs ---------------------------------------------------------------
# Both tools get the same graph: chains of 10 where each link's input is the
# previous link's id (unknown until that link is created, so apply must
# follow the chain and plan shows it as known after apply).
# $T: resource type (sparkform_data / terraform_data); $NODE: the node
# argument line (sparkform only; terraform_data has none).

setup_tool() {
  if [[ $1 = sparkform ]]; then
    T=sparkform_data EXT=sf.hcl NODE='  node  = node.local\n' MNODE='  node  = var.node\n'
    HEAD='node "local" {\n  transport = "local"\n}\n'
  else
    T=terraform_data EXT=tf NODE='' MNODE='' HEAD=''
  fi
}

# items K: a literal map of K keys, the for_each of the foreach and module shapes.
items() {
  local k=$1 i
  printf '\nlocals {\n  items = {\n'
  for ((i = 0; i < k; i++)); do printf '    k%d = "seed-%d"\n' "$i" "$i"; done
  printf '  }\n}\n'
}

gen_count() {
  local per=$(($1 / 10)) i
  printf '%b' "$HEAD"
  # shellcheck disable=SC2016 # ${count.index} is HCL
  printf '\nresource "%s" "r0" {\n  count = %d\n%b  input = "seed-${count.index}"\n}\n' "$T" "$per" "$NODE"
  for ((i = 1; i < 10; i++)); do
    printf '\nresource "%s" "r%d" {\n  count = %d\n%b  input = %s.r%d[count.index].id\n}\n' "$T" "$i" "$per" "$NODE" "$T" $((i - 1))
  done
}

gen_blocks() {
  local chains=$(($1 / 10)) c i
  printf '%b' "$HEAD"
  for ((c = 0; c < chains; c++)); do
    printf '\nresource "%s" "c%d_0" {\n%b  input = "seed-%d"\n}\n' "$T" "$c" "$NODE" "$c"
    for ((i = 1; i < 10; i++)); do
      printf '\nresource "%s" "c%d_%d" {\n%b  input = %s.c%d_%d.id\n}\n' "$T" "$c" "$i" "$NODE" "$T" "$c" $((i - 1))
    done
  done
}

gen_foreach() {
  local i
  printf '%b' "$HEAD"
  items $(($1 / 10))
  printf '\nresource "%s" "r0" {\n  for_each = local.items\n%b  input    = each.value\n}\n' "$T" "$NODE"
  for ((i = 1; i < 10; i++)); do
    printf '\nresource "%s" "r%d" {\n  for_each = local.items\n%b  input    = %s.r%d[each.key].id\n}\n' "$T" "$i" "$NODE" "$T" $((i - 1))
  done
}

# gen_module_body: the module's own file (./mod): a chain of 10 on var.seed.
gen_module_body() {
  local i
  printf 'variable "seed" {}\n'
  if [[ -n $MNODE ]]; then printf 'variable "node" {}\n'; fi
  printf '\nresource "%s" "r0" {\n%b  input = var.seed\n}\n' "$T" "$MNODE"
  for ((i = 1; i < 10; i++)); do
    printf '\nresource "%s" "r%d" {\n%b  input = %s.r%d.id\n}\n' "$T" "$i" "$MNODE" "$T" $((i - 1))
  done
  printf '\noutput "last" {\n  value = %s.r9.id\n}\n' "$T"
}

gen_module() {
  printf '%b' "$HEAD"
  items $(($1 / 10))
  printf '\nmodule "m" {\n  source   = "./mod"\n  for_each = local.items\n  seed     = each.value\n'
  if [[ -n $MNODE ]]; then printf '  node     = node.local\n'; fi
  printf '}\n'
}

gen_modblocks() {
  local k=$(($1 / 10)) i
  printf '%b' "$HEAD"
  for ((i = 0; i < k; i++)); do
    printf '\nmodule "m%d" {\n  source = "./mod"\n  seed   = "seed-%d"\n' "$i" "$i"
    if [[ -n $MNODE ]]; then printf '  node   = node.local\n'; fi
    printf '}\n'
  done
}

# gen_dir TOOL SHAPE N DIR
gen_dir() {
  local tool=$1 shape=$2 n=$3 d=$4
  setup_tool "$tool"
  mkdir -p "$d"
  "gen_$shape" "$n" >"$d/main.$EXT"
  if [[ $shape = module || $shape = modblocks ]]; then
    mkdir -p "$d/mod"
    gen_module_body >"$d/mod/main.$EXT"
  fi
}

# ---- measuring -------------------------------------------------------------

# measure OUT CMD...: runs CMD under GNU time, appends "wall cpu rss_mib" to
# OUT; returns CMD's exit status (the output is in $WORK/last.log).
measure() {
  local out=$1 rc=0
  shift
  "$TIME" -f '%e %U %S %M' -o "$WORK/time" "$@" >"$WORK/last.log" 2>&1 || rc=$?
  tail -1 "$WORK/time" | awk '{printf "%.3f %.3f %.1f\n", $1, $2 + $3, $4 / 1024}' >>"$out"
  return "$rc"
}
fail() {
  echo "bench: $*" >&2
  tail -20 "$WORK/last.log" >&2
  exit 1
}

# stat FILE COL: "median [min-max]" of column COL.
stat() {
  sort -g -k"$2","$2" "$1" | awk -v c="$2" '{v[NR]=$c} END {
    m = (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2
    printf "%.2f [%.2f-%.2f]", m, v[1], v[NR] }'
}
median() {
  if [[ ! -s $1 ]]; then echo NA; return; fi
  sort -g -k"$2","$2" "$1" | awk -v c="$2" '{v[NR]=$c} END {
    print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2 }'
}

# run_sparkform SHAPE N RUNS
run_sparkform() {
  local shape=$1 n=$2 runs=$3 r p=$RES/sparkform.$1.$2 d=$WORK/cfg/sparkform/$1/$2
  gen_dir sparkform "$shape" "$n" "$d"
  for ((r = 1; r <= runs; r++)); do
    rm -rf "$d/.sparkform"
    (cd "$d" && measure "$p.apply" "$BIN" apply -auto-approve -no-color) || fail "sparkform apply failed ($shape N=$n)"
    echo "$(($(wc -c <"$d/.sparkform/state.db"))) $("$FLOORBIN" -state "$d/.sparkform/state.db")" >>"$p.state"
    (cd "$d" && measure "$p.plan" "$BIN" plan -detailed-exitcode -no-color) ||
      fail "sparkform: the plan after apply is not a no-op ($shape N=$n)"
    (cd "$d" && measure "$p.destroy" "$BIN" destroy -auto-approve -no-color) || fail "sparkform destroy failed ($shape N=$n)"
  done
  if [[ $FLOOR = 1 ]]; then "$FLOORBIN" -dir "$d" -n "$n" -shape "$shape" >"$p.floor" 2>&1 || fail "floor failed: $(cat "$p.floor")"; fi
}

# run_tofu SHAPE N RUNS
run_tofu() {
  local shape=$1 n=$2 runs=$3 r p=$RES/tofu.$1.$2 d=$WORK/cfg/tofu/$1/$2
  gen_dir tofu "$shape" "$n" "$d"
  (cd "$d" && "$TOFU" init -input=false -no-color >"$WORK/last.log" 2>&1) || fail "tofu init failed ($shape N=$n)"
  for ((r = 1; r <= runs; r++)); do
    rm -f "$d/terraform.tfstate" "$d/terraform.tfstate.backup"
    (cd "$d" && measure "$p.apply" "$TOFU" apply -auto-approve -input=false -no-color) || fail "tofu apply failed ($shape N=$n)"
    sz=$(($(wc -c <"$d/terraform.tfstate")))
    echo "$sz $sz" >>"$p.state"
    (cd "$d" && measure "$p.plan" "$TOFU" plan -detailed-exitcode -input=false -no-color) ||
      fail "tofu: the plan after apply is not a no-op ($shape N=$n)"
    (cd "$d" && measure "$p.destroy" "$TOFU" destroy -auto-approve -input=false -no-color) || fail "tofu destroy failed ($shape N=$n)"
  done
}

runs_for() { if (($1 > 10000)); then echo "$BIG_RUNS"; else echo "$2"; fi; }

if [[ $TOOLS = *tofu* && -z $TOFU ]]; then echo "bench: TOOLS has tofu but TOFU is unset" >&2; exit 2; fi
if [[ -n $TOFU ]]; then
  : >"$WORK/tofurc"
  export TF_IN_AUTOMATION=1 CHECKPOINT_DISABLE=1 TF_CLI_CONFIG_FILE=$WORK/tofurc
  TOFU_VERSION=$("$TOFU" version 2>/dev/null | sed -n 1p) # not head: under pipefail its SIGPIPE would end the script
fi

echo "sparkform bench: repo $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?'), binary $BIN, $(go version | awk '{print $3}') $(nproc) cpus, load $(cut -d' ' -f1-3 /proc/loadavg); shapes: $SHAPES; N: $NS; $RUNS runs (N > 10000: $BIG_RUNS)${TOFU:+; OpenTofu: $TOFU_VERSION, N: $TOFU_NS, $TOFU_RUNS runs}"
echo "medians [min-max]; cpu = user+sys of the tool and its plugin children; RSS = peak of the largest process;"
echo "state = file size after apply / N (bbolt grows its file in steps), and the bytes of bbolt pages in use / N (OpenTofu: the JSON file)"
printf '%-9s %-9s %-6s %-8s %-22s %-22s %-22s %s\n' tool shape N phase "wall s" "cpu s" "peak RSS MiB" "state B/inst"
for shape in $SHAPES; do
  for tool in $TOOLS; do
    if [[ $tool = tofu ]]; then ns=$TOFU_NS; runs=$TOFU_RUNS; else ns=$NS; runs=$RUNS; fi
    for n in $ns; do
      "run_$tool" "$shape" "$n" "$(runs_for "$n" "$runs")"
      p=$RES/$tool.$shape.$n
      for ph in apply plan destroy; do
        st=""
        if [[ $ph = apply ]]; then st="$(awk -v n="$n" '{print $1 / n}' "$p.state" | sort -g | awk '{v[NR]=$1} END {printf "%.0f", (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}') ($(awk -v n="$n" '{print $2 / n}' "$p.state" | sort -g | awk '{v[NR]=$1} END {printf "%.0f", (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}') in use)"; fi
        printf '%-9s %-9s %-6s %-8s %-22s %-22s %-22s %s\n' "$tool" "$shape" "$n" "$ph" "$(stat "$p.$ph" 1)" "$(stat "$p.$ph" 2)" "$(stat "$p.$ph" 3)" "$st"
      done
    done
  done
done

# Ratios between consecutive N (medians of CPU s).
echo
echo "CPU ratio between consecutive N (medians; linear = N ratio):"
for tool in $TOOLS; do
  if [[ $tool = tofu ]]; then ns=$TOFU_NS; else ns=$NS; fi
  # shellcheck disable=SC2086
  set -- $ns
  while [[ $# -ge 2 ]]; do
    lo=$1 hi=$2
    shift
    for shape in $SHAPES; do
      line=$(printf '  %-9s %-9s %6s->%-6s' "$tool" "$shape" "$lo" "$hi")
      for ph in apply plan destroy; do
        line+=$(awk -v a="$(median "$RES/$tool.$shape.$lo.$ph" 2)" -v b="$(median "$RES/$tool.$shape.$hi.$ph" 2)" -v p="$ph" \
          'BEGIN {if (a + 0 > 0 && b != "NA") printf "  %s %.1fx", p, b / a; else printf "  %s -", p}')
      done
      echo "$line"
    done
  done
done

# sparkform / OpenTofu, per shape, N and phase.
if [[ " $TOOLS " = *" sparkform "*" tofu "* ]]; then
  echo
  echo "sparkform / OpenTofu (medians; CPU and peak RSS; < 1 is sparkform cheaper):"
  for shape in $SHAPES; do
    for n in $NS; do
      [[ -s $RES/tofu.$shape.$n.apply ]] || continue
      line=$(printf '  %-9s %-6s' "$shape" "$n")
      for ph in apply plan destroy; do
        line+=$(awk -v a="$(median "$RES/sparkform.$shape.$n.$ph" 2)" -v b="$(median "$RES/tofu.$shape.$n.$ph" 2)" \
          -v c="$(median "$RES/sparkform.$shape.$n.$ph" 3)" -v d="$(median "$RES/tofu.$shape.$n.$ph" 3)" -v p="$ph" \
          'BEGIN {if (a == "NA" || b + 0 <= 0) printf "  %s -", p; else printf "  %s cpu %.2f (%.2f/%.2f s) rss %.2f", p, a / b, a, b, c / d}')
      done
      echo "$line"
    done
  done
fi

# Issue 13's targets at N=10000 (sparkform). A FAIL is a finding, not an
# error: the script still exits 0.
if [[ " $NS " = *" 10000 "* && " $TOOLS " = *" sparkform "* ]]; then
  echo
  echo "issue 13 targets at N=10000 (sparkform medians):"
  check() { # LABEL VALUE OP LIMIT
    awk -v l="$1" -v v="$2" -v op="$3" -v lim="$4" 'BEGIN {
      if (v == "NA" || v == "") { printf "  %-44s %10s %s %-8s SKIP (not measured)\n", l, "-", op, lim; exit }
      ok = (op == "<=") ? (v <= lim) : (v >= lim)
      printf "  %-44s %10.2f %s %-8s %s\n", l, v, op, lim, ok ? "PASS" : "FAIL" }'
  }
  for shape in $SHAPES; do
    p=$RES/sparkform.$shape.10000
    check "$shape apply CPU s" "$(median "$p.apply" 2)" "<=" 2.5
    check "$shape no-op plan CPU s" "$(median "$p.plan" 2)" "<=" 1.0
    check "$shape destroy CPU s" "$(median "$p.destroy" 2)" "<=" 1.5
    if [[ " $NS " = *" 1000 "* ]]; then
      for ph in apply plan destroy; do
        check "$shape $ph CPU ratio 1000->10000" "$(awk -v a="$(median "$RES/sparkform.$shape.1000.$ph" 2)" -v b="$(median "$p.$ph" 2)" 'BEGIN {if (a + 0 > 0 && b != "NA") print b / a; else print "NA"}')" "<=" 10.5
      done
    fi
    for ph in apply plan destroy; do
      check "$shape $ph peak RSS MiB" "$(median "$p.$ph" 3)" "<=" 150
    done
    check "$shape state KB/instance" "$([[ -s $p.state ]] || { echo NA; exit; }; awk '{print $1 / 10000 / 1000}' "$p.state" | sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}')" "<=" 0.9
    if [[ -s $RES/tofu.$shape.10000.apply ]]; then
      for ph in apply plan destroy; do
        check "$shape $ph OpenTofu CPU / sparkform CPU" "$(awk -v a="$(median "$p.$ph" 2)" -v b="$(median "$RES/tofu.$shape.10000.$ph" 2)" 'BEGIN {if (a + 0 > 0 && b != "NA") print b / a; else print "NA"}')" ">=" 10
      done
    fi
  done
fi

if [[ $FLOOR = 1 ]]; then
  echo
  echo "floor parts (bench/floor; medians; see bench/README.md 'The physical limit'):"
  for shape in $SHAPES; do
    for n in $NS; do
      [[ -s $RES/sparkform.$shape.$n.floor ]] && sed "s/^/  $shape N=$n: /" "$RES/sparkform.$shape.$n.floor"
    done
  done
  sshflag=
  if [[ $(id -u) = 0 && -x /usr/sbin/sshd ]]; then sshflag=-ssh; fi
  { "$FLOORBIN" -n 0 -bin "$BIN" $sshflag 2>&1 || echo "(the exec/ssh part of the floor failed)"; } | sed 's/^/  /'
fi

if [[ $SKIP_SSH = 0 ]]; then
  echo
  RUNS=${SSH_RUNS:-5} "$ROOT/bench/ssh.sh"
fi

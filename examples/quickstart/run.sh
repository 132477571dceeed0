#!/bin/sh
# sparkform quickstart: plan, apply, show and destroy on this machine.
#
#   examples/quickstart/run.sh [PATH-TO-sparkform]
#
# Prepares, in a fresh temporary folder: a git repository holding a runtime
# kit, a tiny Hugging Face hub cache, and (when a Docker Engine answers and
# /bin/busybox is busybox-static) an image built FROM scratch. Then runs the
# real binary on main.sf.hcl. Everything it made is removed on exit, also
# on failure or Ctrl-C; running it again starts from nothing.
# QUICKSTART_NO_DOCKER=1 leaves the container out even when Docker is here.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
bin=${1:-}
if [ -z "$bin" ]; then
	bin=$(command -v sparkform || true)
fi
if [ -z "$bin" ] || [ ! -x "$bin" ]; then
	echo "usage: $0 PATH-TO-sparkform   (build it with: make build, or go build -o bin/sparkform ./cmd/sparkform)" >&2
	exit 2
fi
case $bin in /*) ;; *) bin=$(pwd)/$bin ;; esac

work=$(mktemp -d "${TMPDIR:-/tmp}/sparkform-quickstart.XXXXXX")
# Names of this run's own: two demos on one Docker Engine (two users, two
# terminals) never take each other's container or image.
run_id=$(basename "$work" | sed 's/^sparkform-quickstart\.//' | tr 'A-Z' 'a-z')
image=sparkform-quickstart/serve:$run_id
container=sparkform-quickstart-$run_id
docker=false built=false

cleanup() {
	rc=$?
	trap - EXIT INT TERM HUP
	trap '' PIPE # a reader that went away (| head) must not stop the cleanup
	# A run that stopped half-way still undoes what it applied.
	if [ -f "$work/run/.sparkform/state.db" ] && [ -n "$("$bin" -chdir "$work/run" state list 2>/dev/null)" ]; then
		echo "== cleaning up: sparkform destroy" 2>/dev/null || true
		"$bin" -chdir "$work/run" destroy -auto-approve -no-color >/dev/null 2>&1 || true
	fi
	if [ "$built" = true ]; then
		docker rm -f "$container" >/dev/null 2>&1 || true
		docker rmi -f "$image" >/dev/null 2>&1 || true
	fi
	rm -rf "$work"
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM
trap 'exit 129' HUP
trap 'exit 141' PIPE

step() { printf '\n== %s\n' "$*"; }

step "preparing $work"
# A kit repository: runtime/ is what gets staged.
mkdir -p "$work/kit-repo/runtime/serving"
cat >"$work/kit-repo/runtime/serving/serve.sh" <<'SERVE'
# The kit's serve script: checks the model files are regular files, then
# says ready and idles until docker stop.
B=/bin/busybox
n=0
for f in $($B find "$MODEL_DIR" -type f); do n=$((n + 1)); done
bad=$($B find "$MODEL_DIR" ! -type f ! -type d)
[ -z "$bad" ] || { echo "not regular files: $bad"; exit 3; }
echo "ready: $n model files, memory limit $($B cat /sys/fs/cgroup/memory.max 2>/dev/null || $B cat /sys/fs/cgroup/memory/memory.limit_in_bytes)"
trap 'exit 0' TERM INT
while :; do $B sleep 1 & wait $!; done
SERVE
echo "kit 1" >"$work/kit-repo/runtime/VERSION"
echo "# not staged: only runtime/ is" >"$work/kit-repo/README.md"
g() { git -C "$work/kit-repo" -c user.name=quickstart -c user.email=quickstart@example.invalid "$@"; }
g init -q
g add -A
g commit -q -m "kit 1"
commit=$(g rev-parse HEAD)

# A hub cache: blobs/ hold the bytes, snapshots/<rev>/ relative symlinks.
repo=$work/hub/models--demo--tiny-model
rev=0123456789abcdef0123456789abcdef01234567
mkdir -p "$repo/blobs" "$repo/snapshots/$rev" "$repo/refs"
for f in config.json:'{"model_type":"tiny"}' model.safetensors:weights tokenizer.json:'{}'; do
	name=${f%%:*} content=${f#*:}
	sum=$(printf '%s' "$content" | sha256sum | cut -d' ' -f1)
	printf '%s' "$content" >"$repo/blobs/$sum"
	ln -s "../../blobs/$sum" "$repo/snapshots/$rev/$name"
done
printf '%s' "$rev" >"$repo/refs/main"

if [ "${QUICKSTART_NO_DOCKER:-}" != 1 ] && command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1 &&
	[ -x /bin/busybox ]; then
	mkdir -p "$work/image/bin"
	cp /bin/busybox "$work/image/bin/busybox"
	# The image is one layer with a static busybox (FROM scratch, in
	# Dockerfile terms), made with docker import: no builder runs, so no
	# builder (legacy or BuildKit) is needed and none warns.
	if tar -C "$work/image" -cf - bin | docker import -c 'ENV PATH=/bin' - "$image" >/dev/null; then
		docker=true built=true
		docker run --rm --network none "$image" /bin/busybox true >/dev/null 2>&1 || docker=false
	fi
fi
[ "$docker" = true ] && echo "Docker Engine found: the container is part of the run" ||
	echo "no usable Docker Engine (or no static /bin/busybox): the run leaves the container out"

# The configuration is the example's own file; state stays in $work.
mkdir -p "$work/run"
ln -s "$here/main.sf.hcl" "$work/run/main.sf.hcl"
export SPARKFORM_VAR_workdir="$work" SPARKFORM_VAR_kit_commit="$commit" SPARKFORM_VAR_docker="$docker"
export SPARKFORM_VAR_image="$image" SPARKFORM_VAR_container_name="$container"
sf() { "$bin" -chdir "$work/run" "$@"; }

step "sparkform plan"
sf plan
step "sparkform apply -auto-approve"
sf apply -auto-approve
step "sparkform show"
sf show
step "sparkform plan -detailed-exitcode   (0: nothing left to do)"
sf plan -detailed-exitcode >/dev/null && echo "No changes."
step "sparkform destroy -auto-approve"
sf destroy -auto-approve
if [ -e "$work/node/kit" ]; then
	echo "quickstart: the kit is still at $work/node/kit after destroy" >&2
	exit 1
fi
step "done: applied and destroyed; $work is removed on exit"

# sparkform — see README.md.
GO      ?= go
BIN     := bin/sparkform
PKGS    := ./...

.PHONY: all build nodebin test fuzz torture demo bench proto docs fmt vet lint deadcode clean

all: build

build: nodebin
	$(GO) build -o $(BIN) ./cmd/sparkform

# The node helper (cmd/sparkform-node) for linux/amd64 and linux/arm64,
# built into providers/node/nodebin/bin, which sparkform embeds: every
# build and test target runs this first. Without it sparkform still builds
# and works, running the providers' shell scripts on the nodes instead.
nodebin:
	GO="$(GO)" $(GO) generate ./providers/node/nodebin

# The tests drive real sshd nodes, git, bbolt, the Docker Engine and a qemu
# kernel; they need root (CI runs as root). See .ci/run for the packages.
#
# CI is true unless the caller sets it (any non-empty value counts; `CI=`
# turns it off): under CI a missing part fails a test instead of skipping
# it, so `make test` alone is as strict as .ci/run.
CI ?= true
export CI

# The packages whose tests run under the race detector: the concurrent core
# (the engine's walker, the graph, state, the plugin SDK), where it is cheap.
RACE_PKGS := ./engine/... ./state/... ./providers/sdk/...

# staticcheck stays at zero findings (a pinned release, built through the
# module proxy on first use).
STATICCHECK ?= $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2
# deadcode stays at zero too: every function is reached from a main
# package or a test (-test), with the kmodsim and fault-injection builds' own
# (-tags kmodsim,sparkform_faultinject).
# internal/hubtest/hfref is a copy of another project's client, kept as it
# was written (see its doc.go), so its unused functions are not ours to cut.
DEADCODE ?= $(GO) run golang.org/x/tools/cmd/deadcode@v0.52.0

# examples/conftest is a module of its own (Open Policy Agent stays out of
# sparkform's build): its policy runs over real plan documents.
test: nodebin
	$(GO) vet $(PKGS)
	$(STATICCHECK) $(PKGS)
	$(MAKE) deadcode
	$(GO) test -count=1 -race -timeout 25m $(RACE_PKGS)
	$(GO) test -count=1 -timeout 25m $$($(GO) list $(PKGS) | grep -v -x -F "$$($(GO) list $(RACE_PKGS))")
	cd examples/conftest && $(GO) vet ./... && $(STATICCHECK) ./... && $(GO) test -count=1 -timeout 10m ./...
	$(MAKE) fuzz

# Each fuzz target for a few seconds from its checked-in corpus
# (testdata/fuzz/NAME; `go test` alone replays the corpus): the config
# loader, plan files, state files and records, plugin replies, the resource
# decoder against hcldec, and the msgpack appender against cty's encoder. A failing input is
# written to that folder; fix the bug and commit the input with the fix.
# (.ci/fuzz also rides out a Go 1.26 fuzz-coordinator race; see there.)
FUZZTIME ?= 5s
FUZZ_TARGETS := ./engine/config:FuzzLoadConfig ./engine/config:FuzzParseChunked ./engine/plans:FuzzReadPlan ./state:FuzzStateFile ./state:FuzzRecord ./providers/sdk:FuzzPluginReply ./engine/config:FuzzResourceDecoder ./providers/sdk:FuzzAppendValue
fuzz:
	@GO="$(GO)" ./.ci/fuzz $(FUZZTIME) $(FUZZ_TARGETS)

# The torture suite, not part of test: >= 100 kills (CLI, plugin, sshd
# link) at uniformly random moments of whole applies and destroys on two
# nodes; an apply killed is converged by apply and a clean plan, a destroy
# killed by destroy alone (the nodes then exactly as before) or by apply;
# each round ends with a destroy that must leave the nodes as they were.
# Often the recovering rerun is killed too. Prints the table. About 10-15
# minutes; bounded by SPARKFORM_TORTURE_TIME (default 20m). The short
# version, TestKillPoints, is part of test. Then the snapshot transfer's
# kill point (TestTortureSnapshot): SPARKFORM_TORTURE_SNAPSHOT_KILLS
# (default 20) kills inside hub transfers of two snapshots sharing blobs;
# no half blob under its final name, partial blobs resumed (the test hub
# counts the bytes), destroy exact. About 5 minutes.
torture: nodebin
	CI=$${CI:-true} $(GO) test -tags torture -run '^TestTorture(Snapshot)?$$' -count=1 -v -timeout 50m ./e2e/

# The main job on a built-in local example: plan, apply, show, destroy.
# A cold first build takes minutes: say so, and name each package as it
# compiles (go build -v prints nothing when all is cached).
demo: nodebin
	@echo "== building $(BIN): the first build downloads modules and compiles for a few minutes; each package is named as it compiles"
	$(GO) build -v -o $(BIN) ./cmd/sparkform
	./examples/quickstart/run.sh $(CURDIR)/$(BIN)

# The end-to-end benchmarks run a test build (-tags kmodsim): its kmod
# provider drives simulated kernels; the shipped binary never does.
# bench/run.sh measures every config shape (count, single-instance blocks,
# for_each, module, module blocks) at BENCH_N instances; `make bench BENCH_N="1000 10000 50000"`
# adds the 50,000 run (one run per shape), BENCH_SHAPES picks shapes, and
# TOFU=/path/to/tofu (an OpenTofu you built; never committed) runs the same
# shapes through OpenTofu and prints the ratios. bench/hub.sh: hub
# snapshots against the test hub and two sshd nodes (curl and rsync
# floors, peak RSS, a no-op plan's node CPU), on a loop-mounted journalled
# ext4 (HUB_FS=root: this machine's filesystem). bench/fleet.sh: apply,
# no-op plan, destroy and the floor (the nodes alone) on 2, 8 and 32 sshd
# nodes (FLEET_SIZES), the 32/2 no-op plan ratio, the nodes' CPU and peak
# RSS. See bench/README.md.
BENCH_N      ?= 1000 10000
BENCH_SHAPES ?= count blocks foreach module modblocks
TOFU         ?=
FLEET_SIZES  ?= 2 8 32
HUB_FS       ?= journal
bench: build
	$(GO) build -tags kmodsim -o bin/sparkform-kmodsim ./cmd/sparkform
	$(GO) test -run '^$$' -bench . -benchtime 3x ./engine/... ./state/... ./providers/sdk/... ./providers/hubstage/...
	SPARKFORM_BIN=$(CURDIR)/bin/sparkform-kmodsim TOFU="$(TOFU)" ./bench/run.sh -n "$(BENCH_N)" -p "$(BENCH_SHAPES)" -f
	BIN=$(CURDIR)/$(BIN) ./bench/etcd.sh
	BIN=$(CURDIR)/$(BIN) HUBFS="$(HUB_FS)" ./bench/hub.sh
	BIN=$(CURDIR)/$(BIN) SIZES="$(FLEET_SIZES)" ./bench/fleet.sh

# Regenerate the provider protocol code (protoc from Debian's protobuf-compiler).
proto:
	$(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
	$(GO) install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2
	PATH="$$($(GO) env GOPATH)/bin:$$PATH" $(GO) generate ./providers/sdk/proto

# Regenerate the resource reference pages from the provider schemas.
docs:
	$(GO) run ./internal/docgen

fmt:
	gofmt -w $$(git ls-files '*.go')

vet:
	$(GO) vet $(PKGS)

lint: vet
	$(STATICCHECK) $(PKGS)
	$(MAKE) deadcode

deadcode:
	@out=$$($(DEADCODE) -test -tags kmodsim,sparkform_faultinject $(PKGS) 2>&1 | grep -v -e '^internal/hubtest/hfref/' -e '^go: downloading '); \
	if [ -n "$$out" ]; then echo "$$out"; echo "deadcode: the functions above are reached from no main package and no test: delete them, or use them" >&2; exit 1; fi

clean:
	rm -rf bin

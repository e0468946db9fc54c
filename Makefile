# Flotilla — one Makefile over the whole monorepo. `make help` lists the targets.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
ROOT := $(CURDIR)
BIN := $(ROOT)/bin
CLUSTER_DIR ?= $(ROOT)/.cluster
export CLUSTER_DIR

# Every module of the workspace, as directories relative to the root (go.work is the source of truth).
MODULES := $(shell sed -n 's|^\t\./\(.*\)$$|\1|p' go.work)
CONTROLLERS := cloneset statefulset daemonset sidecarset pub probe cronjob deletionprotection uniteddeployment resourcedistribution containerrecreate imagepulljob launchpriority workloadspread persistentpodstate
PREFIX := github.com/flotilla-dev/flotilla
GOTESTFLAGS ?= -count=1 -timeout 30m

.PHONY: help build test unit-test generate verify lint run stop bench cluster-build cluster-up cluster-down clean
help: ## this list
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

include hack/cluster/cluster.mk

# -tags grpcnotrace: gRPC (linked by probe-agent, the node agent) then leaves out golang.org/x/net/trace, whose
# html/template use keeps every exported method of every type alive; the agent is half the size and ~12 MiB smaller
# in RSS (bench/RESULTS.md). hack/images (the images), test/e2e/framework and the agent's footprint bench build
# with the same tag; controllers/probe TestBuildsLeaveOutGRPCTracing checks all four.
build: ## all controller binaries and the client example into bin/
	@mkdir -p $(BIN)
	go build -tags grpcnotrace -o $(BIN)/ $(foreach c,$(CONTROLLERS),$(PREFIX)/controllers/$(c)/cmd/$(c)-controller) \
	  $(PREFIX)/controllers/probe/cmd/probe-agent \
	  $(PREFIX)/client/examples/list-clonesets

# The e2e tests of test/e2e/realnode need a real node (kubelet + containerd): `make test` adds one to the control
# plane (also to one already running); `make test REAL_NODES=0` skips them instead.
test: REAL_NODES = 1
test: cluster-up ## every test of every module, against the local control plane (started if needed)
	@# Controllers left running by `make run` watch every namespace and would act on the tests' objects.
	hack/run-local.sh --stop
	FLOTILLA_REAL_NODES=$(REAL_NODES) FLOTILLA_KUBECONFIG=$(CLUSTER_DIR)/kubeconfig hack/test.sh $(GOTESTFLAGS)
	@# test/e2e/install installs the overlays into the cluster, controllers as pods on the real node: it runs alone,
	@# after every other package (those controllers watch every namespace), and removes what it installed.
	if [ "$(REAL_NODES)" != 0 ]; then FLOTILLA_E2E_INSTALL=1 FLOTILLA_REAL_NODES=$(REAL_NODES) \
	  FLOTILLA_KUBECONFIG=$(CLUSTER_DIR)/kubeconfig go test $(GOTESTFLAGS) -v ./test/e2e/install/ | grep --line-buffered -vE '^[IWE][0-9]{4} '; fi
	@# charts/tools/install: the same, through the Helm chart (install, upgrade turning a feature off, uninstall); alone
	@# too, after test/e2e/install. charts/tools is outside go.work (hack/lib.sh standalone_modules).
	if [ "$(REAL_NODES)" != 0 ]; then cd charts/tools && GOWORK=off FLOTILLA_E2E_INSTALL=1 FLOTILLA_REAL_NODES=$(REAL_NODES) \
	  FLOTILLA_KUBECONFIG=$(CLUSTER_DIR)/kubeconfig go test $(GOTESTFLAGS) -v ./install/ | grep --line-buffered -vE '^[IWE][0-9]{4} '; fi

unit-test: ## tests that need no control plane (integration tests skip without one)
	hack/test.sh -short $(GOTESTFLAGS)

generate: ## regenerate deepcopy, clients, CRDs, go.work, kit/README.md's per-binary flags and gates, the Helm chart
	hack/update-workspace.sh
	hack/update-codegen.sh
	hack/gen-flags-doc.sh
	cd charts/tools && GOWORK=off go run ./cmd/genchart

verify: ## regenerate everything and fail on any diff; version pins; lint; kustomize renders
	hack/verify.sh

lint: ## gofmt + go vet over all modules
	hack/lint.sh

# The PodProbeMarker sample's game servers run on a real node, where probe-agent probes them: `make run` adds one
# too (it needs root, as `make test` does); `make run REAL_NODES=0` runs kwok nodes only (that sample then shows
# reconciliation only, and says so).
run: REAL_NODES = 1
run: cluster-up build ## local control plane + all ten controllers + a real node + the samples
	hack/run-local.sh

stop: ## stop the controllers started by `make run` (the control plane keeps running)
	hack/run-local.sh --stop

BENCH_SIZE ?= default
BENCH_ARGS ?=
bench: cluster-build ## scale harness at default size on a private control plane (~25 min) + Go micro-benchmarks; table in bench/results/
	@mkdir -p bench/results
	cd bench && go test -count=1 -timeout 60m -v . -args -bench.size=$(BENCH_SIZE) \
	  -bench.report=$(ROOT)/bench/results/latest.md $(BENCH_ARGS) 2>&1 | grep --line-buffered -vE '^[IWE][0-9]{4} ' | tee $(ROOT)/bench/results/latest.log
	go test -run '^$$' -bench . -benchmem $(PREFIX)/controllers/cloneset/internal/controller $(PREFIX)/kit/podutil \
	  $(PREFIX)/kit/inplace $(PREFIX)/kit/controller | tee $(ROOT)/bench/results/micro.txt

# Images: one OCI image per binary, built without a container engine (hack/images: static binaries on an empty
# base, user 65532, reproducible digests). The layout goes to bin/images/oci, "<binary> <image>@sha256:..." lines
# to bin/images/digests.txt. IMAGE_PLATFORMS=linux/amd64 builds one platform in about half the time (CI may);
# REGISTRY=host:port also pushes (plain http to a loopback registry such as hack/cluster's 127.0.0.1:5050).
IMAGE_PLATFORMS ?= linux/amd64,linux/arm64
IMAGE_TAG ?= dev
IMAGE_REPO ?= flotilla
REGISTRY ?=
IMAGE_PACKAGES := $(foreach c,$(CONTROLLERS),$(PREFIX)/controllers/$(c)/cmd/$(c)-controller) \
  $(PREFIX)/controllers/probe/cmd/probe-agent
.PHONY: images
images: ## OCI images of every binary, no Docker (IMAGE_PLATFORMS, IMAGE_TAG, REGISTRY=host:port to push)
	@mkdir -p $(BIN)/tools
	go build -o $(BIN)/tools/ $(PREFIX)/hack/images/cmd/flotilla-images
	$(BIN)/tools/flotilla-images -out $(BIN)/images -platforms $(IMAGE_PLATFORMS) -tag $(IMAGE_TAG) \
	  -repo $(IMAGE_REPO) -registry '$(REGISTRY)' $(IMAGE_PACKAGES)

clean: stop cluster-down ## stop everything; remove build outputs and cluster state (keeps bin/cluster: slow to rebuild)
	find $(BIN) -mindepth 1 -maxdepth 1 ! -name cluster -exec rm -rf {} +
	rm -rf $(CLUSTER_DIR)

# Gleaner's build. `make test` is what CI runs (.ci/run); `make run` is the main job on a fresh machine.
# Everything heavy (kube-apiserver, etcd, kubectl, golangci-lint) is built once into a per-user cache outside the
# tree by hack/kube-build.sh and hack/tool.sh.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := build

BIN ?= bin
GO_TEST_FLAGS ?=
# How many test binaries the unit suite runs at once (go test -p; see the unit target).
UNIT_PARALLEL ?= 4
# Every Go command here compiles as the images are built: static (nothing in the tree uses cgo; the NVML build of
# gpu-check-build turns it on) and without the checkout's path in the objects (-trimpath). So vet, the unit tests,
# the images and the e2e binaries share one compile of each package in Go's build cache, and a clone in another
# directory (CI's is fresh every time) reuses it instead of compiling the whole tree again.
export CGO_ENABLED ?= 0
export GOFLAGS := -trimpath $(filter-out -trimpath,$(GOFLAGS))
CONTROLLER_GEN := go tool controller-gen
# The Helm chart; `make generate` copies into it what config/ generates or holds without options (CHART_GENERATED).
CHART := charts/gleaner
CHART_GENERATED := $(CHART)/crds $(CHART)/files/generated $(CHART)/files/monitoring
CHART_SCHEMA := $(CHART)/values.schema.json
# The local cluster's tool (internal/localcluster) and the e2e suite's own state directory.
LOCAL := $(BIN)/gleaner-local
E2E_STATE ?= /var/lib/gleaner-e2e

# The version stamped into the binaries (pkg/version): the nearest tag and the commits since it (a bare abbreviated
# commit before the first tag), -dirty with uncommitted changes; v0.0.0-dev where git cannot say.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo v0.0.0-dev)
VERSION_LDFLAGS = -X github.com/gleaner-sh/gleaner/pkg/version.version=$(VERSION)

.PHONY: build
build: ## Build the binaries into bin/, stamped with VERSION.
	go build -ldflags "$(VERSION_LDFLAGS)" -o $(BIN)/ ./cmd/...

# `make release` (hack/release; docs/operations.md, "Release artifacts"): kubectl-glean's archives for PLATFORMS, the
# chart package, the Krew manifest of the archives, downloadable under RELEASE_URL, and checksums.txt, into
# RELEASE_DIR. The archives' files are dated SOURCE_DATE_EPOCH, the commit's time unless set, so that one commit
# makes the same archives. HELM empty: hack/tool.sh's.
PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64
RELEASE_DIR ?= $(BIN)/release
RELEASE_URL ?= https://github.com/gleaner-sh/gleaner/releases/download/$(VERSION)
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
HELM ?=

.PHONY: release
release: ## Release artifacts into bin/release: kubectl-glean archives for PLATFORMS, the chart package, the Krew manifest, checksums.txt.
	@helm=$(or $(HELM),$$(hack/tool.sh helm)); \
	  go run ./hack/release --version "$(VERSION)" --ldflags "$(VERSION_LDFLAGS)" --platforms "$(PLATFORMS)" \
	    --out "$(RELEASE_DIR)" --release-url "$(RELEASE_URL)" --source-date-epoch "$(SOURCE_DATE_EPOCH)" --helm "$$helm" \
	    --image-registry "$(REGISTRY)"

# `make images` (hack/images; docs/install.md, "Images and the chart into your registry"): gleaner-manager's and
# gleaner-agent's images for IMAGE_PLATFORMS, tagged VERSION, as an OCI image layout in IMAGES_DIR/oci. `make push`
# pushes them to REGISTRY (REGISTRY/gleaner-manager:VERSION, ...) and the release's chart, whose default
# image.registry is then REGISTRY, to oci://REGISTRY/charts/gleaner. Credentials are docker's and helm's own
# (`docker login`, `helm registry login`); HELM_PUSH_FLAGS=--plain-http for a registry without TLS (the images go
# over plain HTTP to a registry on a loopback or private address by themselves).
REGISTRY ?=
IMAGE_PLATFORMS ?= linux/amd64 linux/arm64
IMAGES_DIR ?= $(BIN)/images
HELM_PUSH_FLAGS ?=

.PHONY: images
images: ## OCI images of gleaner-manager and gleaner-agent for IMAGE_PLATFORMS, tagged VERSION, into bin/images/oci.
	go run ./hack/images --version "$(VERSION)" --ldflags "$(VERSION_LDFLAGS)" --platforms "$(IMAGE_PLATFORMS)" --out "$(IMAGES_DIR)"

.PHONY: push
push: ## Push the images and the chart to REGISTRY (host[:port][/path]); the chart defaults to the images there.
	@[[ -n "$(REGISTRY)" ]] || { echo "make push: set REGISTRY, e.g. REGISTRY=registry.example.com/gleaner" >&2; exit 2; }
	go run ./hack/images --version "$(VERSION)" --ldflags "$(VERSION_LDFLAGS)" --platforms "$(IMAGE_PLATFORMS)" --out "$(IMAGES_DIR)" \
	  --push "$(REGISTRY)"
	$(MAKE) --no-print-directory release
	@helm=$(or $(HELM),$$(hack/tool.sh helm)); \
	  for chart in $(RELEASE_DIR)/gleaner-*.tgz; do \
	    echo "$$helm push $$chart oci://$(REGISTRY)/charts $(HELM_PUSH_FLAGS)"; \
	    "$$helm" push "$$chart" "oci://$(REGISTRY)/charts" $(HELM_PUSH_FLAGS) || exit 1; \
	  done

.PHONY: generate
generate: ## Regenerate deepcopy functions, CRD and RBAC manifests from the code, and the chart's copies of them.
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/...
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./pkg/sloconfig/...
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=config/crd/bases
	$(CONTROLLER_GEN) rbac:roleName=gleaner-agent paths=./pkg/agent/... output:rbac:artifacts:config=config/rbac/agent
	$(CONTROLLER_GEN) rbac:roleName=gleaner-manager paths=./pkg/controllers/... paths=./pkg/webhook/... output:rbac:artifacts:config=config/rbac/manager
	@# The chart (charts/gleaner/templates/generated.yaml renders files/generated/ with the release's namespace):
	@# the CRDs, the generated Roles, and the webhook configurations and admission policies, which have no options.
	rm -rf $(CHART_GENERATED) && mkdir -p $(CHART_GENERATED)
	cp config/crd/bases/*.yaml $(CHART)/crds/
	cp config/rbac/manager/role.yaml $(CHART)/files/generated/rbac-manager.yaml
	cp config/rbac/agent/role.yaml $(CHART)/files/generated/rbac-agent.yaml
	for f in config/webhook/*.yaml config/policy/*.yaml; do \
	  case $$f in */kustomization.yaml|config/webhook/service.yaml) continue ;; esac; \
	  d=$${f#config/}; cp "$$f" $(CHART)/files/generated/$${d%%/*}-$${d#*/}; \
	done
	@# The alerting rules, for metrics.prometheusRule (templates/metrics.yaml).
	cp config/monitoring/gleaner-rules.yaml $(CHART)/files/monitoring/
	@# The values' schema, its manager.flags and agent.flags from the binaries' flag sets (internal/chart).
	go run ./hack/chart-schema > $(CHART_SCHEMA).tmp && mv $(CHART_SCHEMA).tmp $(CHART_SCHEMA)

.PHONY: verify-generated
verify-generated: ## Fail when generated files are not what `make generate` writes.
	@sum() { find api config/crd $(wildcard config/rbac) pkg/sloconfig/zz_generated.deepcopy.go $(wildcard $(CHART_GENERATED) $(CHART_SCHEMA)) -type f | sort | xargs md5sum; }; \
	before=$$(sum); $(MAKE) --no-print-directory generate >/dev/null; after=$$(sum); \
	if [[ "$$before" != "$$after" ]]; then \
	  diff <(echo "$$before") <(echo "$$after") || true; \
	  echo "generated files were stale and have been regenerated: commit them"; exit 1; \
	fi

.PHONY: fmt
fmt: ## Format the code.
	gofmt -w $$(git ls-files '*.go')

.PHONY: vet
vet: ## Run go vet (its first run compiles the whole tree and Kubernetes' packages: minutes, once).
	@echo "vet: go vet ./... (a first run compiles Gleaner and the Kubernetes packages it uses into Go's build cache: about 10 minutes on 2 cores, once)"
	go vet ./...

.PHONY: lint
# Its caches stay in one directory: golangci-lint's own, and (XDG_CACHE_HOME) the ones its linters keep in the user's
# cache directory (goimports'), which would otherwise appear in the home directory while `make test` runs the unit
# suite beside it (hack/home-check.sh).
lint: ## Run golangci-lint (pinned, built into the cache).
	@lint=$$(hack/tool.sh golangci-lint); cache=$${XDG_CACHE_HOME:-$$HOME/.cache}/golangci-lint; \
	  echo "lint: golangci-lint run ./... (a first run fills its analysis cache in $$cache: several minutes, once)"; \
	  GOCACHE=$$(go env GOCACHE) GOLANGCI_LINT_CACHE=$$cache XDG_CACHE_HOME=$$cache/user \
	  $$lint run --allow-parallel-runners ./...

# The host's Debian packages the tests run (internal/hostpkg/packages.tsv), installed when missing: once a machine.
# `make run` and `make local-up` install theirs through the local cluster's start (the same list and code).
.PHONY: host-packages
host-packages: ## Install the Debian packages the tests and the local cluster run (internal/hostpkg/packages.tsv), once.
	@go run ./hack/host-packages run e2e unit cgroupv2

.PHONY: envtest-assets
envtest-assets: ## Build kube-apiserver, etcd and kubectl (once) and print their directory.
	@hack/kube-build.sh envtest

.PHONY: unit
unit: host-packages ## Run the Go tests against a real kube-apiserver and etcd (and the Helm chart's with helm, the monitoring's with Prometheus).
	@echo "unit: go test ./... against kube-apiserver and etcd from hack/kube-build.sh's cache, the chart's tests with helm 4 and 3 and test/monitoring's with prometheus and promtool from hack/tool.sh's (their first builds: about 2.5, 2.5, 12 and 1 minutes on 2 cores, once)"
	@# The tools are built here, before go test, so that a first build does not count against a test binary's timeout.
	@$(MAKE) --no-print-directory tools-unit
	@# The tests must leave the user's home as it was (hack/home-check.sh): a cache there hides a fresh machine's failure.
	@# envtest reserves its ports with lock files in the user's cache directory (XDG_CACHE_HOME, else ~/.cache): the
	@# suite gets a cache directory of its own, while Go's build cache and the project's tools stay where they are.
	@# Four test binaries at once, not one per CPU: most packages wait on their kube-apiserver and etcd, and two left
	@# a third of the CPUs idle (a warm run here: 6m13s at -p 2, 5m20s at -p 4; docs/development.md).
	home=$$(mktemp); cache=$$(mktemp -d); hack/home-check.sh snapshot "$$home"; \
	  KUBEBUILDER_ASSETS=$$(hack/kube-build.sh envtest) GLEANER_HELM=$$(hack/tool.sh helm) GLEANER_HELM3=$$(hack/tool.sh helm3) \
	  GOCACHE=$$(go env GOCACHE) GLEANER_CACHE=$${GLEANER_CACHE:-$${XDG_CACHE_HOME:-$$HOME/.cache}/gleaner} XDG_CACHE_HOME=$$cache \
	  go test -count=1 -p $(UNIT_PARALLEL) -ldflags=-w $(GO_TEST_FLAGS) ./... && hack/home-check.sh compare "$$home"; rc=$$?; rm -rf "$$home" "$$cache"; exit $$rc

# The tools each suite runs, built once into the cache (hack/tool.sh, hack/kube-build.sh); `make test` builds them in
# the background beside the stages before the suite that needs them (hack/stages.sh). Two builds of one tool never
# run at once: the scripts take a lock, and the second finds the binary the first built.
.PHONY: tools-unit tools-e2e
tools-unit: ## Build what the unit suite runs: Prometheus and promtool, etcd, kube-apiserver and kubectl, Helm 4 and 3 (once).
	@for t in prometheus promtool; do hack/tool.sh $$t >/dev/null; done
	@hack/kube-build.sh envtest >/dev/null
	@for t in helm helm3; do hack/tool.sh $$t >/dev/null; done
tools-e2e: ## Build what the e2e suites run beside the unit suite's tools: containerd, kubelet, the scheduler and the controller manager (once).
	@hack/kube-build.sh bin etcd kube-apiserver kubectl kubelet kube-scheduler kube-controller-manager containerd >/dev/null
	@hack/tool.sh prometheus >/dev/null

.PHONY: test-cgroupv2
# The host is cgroup v1 and its hierarchies belong to it: the v2 half of the real-kernel tests runs in a kernel of its
# own, Debian's, in the QEMU machine of hack/cgroupv2-node.sh. Like e2e, what cannot run is skipped with the reason,
# and fails under CI=true.
test-cgroupv2: host-packages ## The real-kernel tests (TestRealKernel*) on cgroup v2, in a QEMU machine with Debian's kernel (root; docs/benchmarks.md).
	@hack/cgroupv2-test.sh

.PHONY: e2e-cgroupv2
# The local cluster on a cgroup v2 kernel (Debian's, in QEMU with emulated CPUs: this machine's KVM runs only kernels
# built for it) and the QoS subset of the e2e suite, whose tests read cgroups through either version. Like e2e, what
# cannot run is skipped with the reason, and fails under CI=true. docs/benchmarks.md has what it costs.
e2e-cgroupv2: ## The local cluster and the QoS e2e subset on cgroup v2, in a QEMU machine with Debian's kernel (root; about 10 minutes).
	@go run ./hack/host-packages run e2e nodev2
	@hack/cgroupv2-node.sh

.PHONY: e2e
# Where the local cluster cannot run (`gleaner-local check` says why), e2e skips with the reason, except under
# CI=true, where it fails: CI must not go green without the end-to-end tests. test/ci/makefile_test.go runs this
# recipe with a stand-in check (`go test ./test/ci`).
e2e: host-packages gleaner-local ## End-to-end tests on a real local cluster; where it cannot run: skipped with the reason, failed under CI=true.
	@if ! why=$$($(LOCAL) check 2>&1); then \
	  if [[ "$${CI:-}" == true ]]; then \
	    printf 'e2e: FAIL: CI=true and the end-to-end tests cannot run on this machine:\n%s\n' "$$why" >&2; exit 1; \
	  fi; \
	  printf 'e2e: skipped: the end-to-end tests cannot run on this machine (under CI=true this fails):\n%s\n' "$$why"; \
	  exit 0; \
	fi; \
	echo "$$why"; \
	rc=0; GLEANER_E2E=1 GLEANER_E2E_STATE=$(E2E_STATE) go test -count=1 -timeout 45m -v $(GO_TEST_FLAGS) ./test/e2e/ || rc=$$?; \
	$(LOCAL) --state-dir $(E2E_STATE) down >/dev/null 2>&1 || true; \
	exit $$rc

.PHONY: gleaner-local
gleaner-local: ## Build bin/gleaner-local, the local cluster's tool (up, down, check, status).
	@go build -o $(BIN)/ ./hack/gleaner-local

# `make fuzz` runs every fuzzer for FUZZTIME (plain `go test` runs only their seed corpora).
# FUZZTIME is a count of executions, not a duration: with a duration, Go 1.26's fuzz coordinator can report its own
# deadline as a failure on a loaded machine (go.dev/issue/75804, fixed in Go 1.27). 3000 runs take a few seconds.
FUZZTIME ?= 3000x

.PHONY: fuzz
fuzz: ## Run every fuzzer for FUZZTIME (default 3000 executions; not part of `make test`, whose unit suite runs their seed corpora); a failing input is saved under the package's testdata/fuzz.
	@# Every fuzzer of the tree, found by its declaration, so that a new one is fuzzed without a list to update.
	@grep -rHo --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*' pkg internal api cmd test | sort | while IFS=: read -r file decl; do \
	  pkg=./$${file%/*}; fn=$${decl#func }; echo "fuzz $$pkg $$fn for $(FUZZTIME)"; \
	  out=$$(go test -run '^$$' -fuzz "^$$fn$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 0 "$$pkg" 2>&1) || { echo "$$out"; exit 1; }; \
	done

.PHONY: test
# The stages in order, each timed (hack/stages.sh prints a table at the end and warns past 70 minutes). After the
# generated files are checked (lint must not read them while they are rewritten), the unit suite's tools, lint and
# the e2e suites' tools are built in the background at the lowest CPU priority, in the CPU that vet's downloads and
# the unit and real-kernel suites leave idle; the e2e suites, which measure the node's CPU, start only after them.
# The fuzzers' seed corpora run in the unit suite; fuzzing proper is `make fuzz`.
test: ## Everything CI checks: generated files, vet, lint, unit tests, the real-kernel tests on cgroup v2, e2e, the e2e QoS subset on cgroup v2.
	@hack/stages.sh verify-generated '&tools-unit,lint,tools-e2e' vet unit test-cgroupv2 wait e2e e2e-cgroupv2

.PHONY: bench-noderesource
bench-noderesource: build ## Node-resource benchmark: 2,000 nodes with 30 pods and a NodeMetric each (not in `make test`; ~4 min).
	KUBEBUILDER_ASSETS=$$(hack/kube-build.sh envtest) go run ./hack/bench/noderesource $(BENCH_FLAGS)

.PHONY: bench-agentload
bench-agentload: ## The agents' cost to the API server: 1,000 simulated agents and kubelets on their own connections, kubelets, both, agents (not in `make test`; ~8 min).
	KUBEBUILDER_ASSETS=$$(hack/kube-build.sh envtest) go run ./hack/bench/agentload $(BENCH_FLAGS)

.PHONY: bench-nodeallocation
bench-nodeallocation: build ## Node-allocation benchmark: 2,000 nodes, 60,000 pods, churn (not in `make test`; ~10 min).
	KUBEBUILDER_ASSETS=$$(hack/kube-build.sh envtest) go run ./hack/bench/nodeallocation $(BENCH_FLAGS)

.PHONY: bench-agent
bench-agent: ## The agent's benchmarks: collection cycle, metric cache, process RSS (about 15 minutes; not part of `make test`).
	KUBEBUILDER_ASSETS=$$(hack/kube-build.sh envtest) go test -run '^$$' -bench . -benchmem -benchtime=1x -timeout 30m ./pkg/agent/
	@# The simulated host rewrites 1,200 counter files a second: on tmpfs, like cgroupfs, no disk writeback competes
	@# with the agent's reads (on ext4 it adds about 1.5 ms a cycle; docs/benchmarks.md shows both).
	TMPDIR=$$(test -w /dev/shm && echo /dev/shm || echo $${TMPDIR:-/tmp}) go test -run '^$$' -bench . -benchmem ./pkg/agent/collector/ ./pkg/agent/metriccache/

.PHONY: gpu-check-build
# The real-GPU check of the NVML layer runs on a machine with NVIDIA GPUs (hack/gpu-check/run.sh); what it runs is
# built here, with cgo and the nvml tag, and needs no CUDA toolkit.
gpu-check-build: ## Build the real-GPU check's binaries into bin/gpu-check (run there: hack/gpu-check/run.sh; docs/agent.md).
	mkdir -p bin/gpu-check
	CGO_ENABLED=1 go test -c -tags nvml -o bin/gpu-check/gpu.test ./pkg/agent/system/gpu/
	CGO_ENABLED=1 go test -c -tags nvml -o bin/gpu-check/collector.test ./pkg/agent/collector/
	gcc -O2 -Wall -o bin/gpu-check/gpuhold hack/gpu-check/gpuhold.c -ldl

.PHONY: bench-prediction
bench-prediction: ## Peak prediction scored on the future: 14 days of seven load shapes replayed through the server, the table of docs/benchmarks.md (~10 s).
	go test -run '^TestAccuracyReplay$$' -count 1 -v ./pkg/agent/prediction/ | grep -E '^ *\||days at|^(--- |ok|FAIL)' | sed 's/^ *//'

.PHONY: bench-qos
bench-qos: gleaner-local ## QoS reaction times on the real local node, five times each (docs/benchmarks.md; root, cgroup v1; ~10 min).
	rc=0; GLEANER_E2E=1 GLEANER_E2E_STATE=$(E2E_STATE) go test -count=5 -timeout 40m -v \
	  -run '^(TestCPUSuppressFollowsTheService|TestMemoryEvictionSparesPodsUnderABudget)$$' ./test/e2e/ | grep -E 'qos_test.go|^(---|ok|FAIL)' || rc=$$?; \
	$(LOCAL) --state-dir $(E2E_STATE) down >/dev/null 2>&1 || true; \
	exit $$rc

.PHONY: bench-colocation
bench-colocation: gleaner-local ## The service's latency alone and beside batch pods of three sizes under each of Gleaner's settings, six rounds in random order, on the real local node: the frontier (table, picture), the phases, JSON and the whole log in bin/colocation (docs/benchmarks.md; root, cgroup v1; ~90 min, GLEANER_BENCH_SETTINGS/SIZES to cut it).
	rc=0; out=$${GLEANER_BENCH_OUT:-$(CURDIR)/$(BIN)/colocation}; mkdir -p $$out; GLEANER_E2E=1 GLEANER_E2E_STATE=$(E2E_STATE) GLEANER_BENCH_OUT=$$out \
	  go test -count=1 -timeout 300m -v -run '^$$' -bench '^BenchmarkColocation$$' -benchtime=1x ./test/e2e/ | \
	  tee $$out/run.log | grep -E 'colocation_bench_test.go|^ *\||^(---|ok|FAIL)' || rc=$$?; \
	$(LOCAL) --state-dir $(E2E_STATE) down >/dev/null 2>&1 || true; \
	exit $$rc

.PHONY: peer-koordinator
peer-koordinator: ## Build Koordinator's koordlet and koord-manager (v1.8.0), the colocation benchmark's peer, into the cache and print their directory (once: about 17 minutes on 2 cores; not part of `make test`).
	@go run ./hack/host-packages peer
	@hack/peer-koordinator.sh

.PHONY: bench-runtimehook
bench-runtimehook: gleaner-local ## Container start latency with and without the runtime hook's NRI plugin, 100 pods each, on the real local node (docs/benchmarks.md; root, cgroup v1; ~15 min).
	rc=0; GLEANER_E2E=1 GLEANER_E2E_STATE=$(E2E_STATE) go test -count=1 -timeout 40m -v -run '^$$' \
	  -bench '^BenchmarkRuntimeHookStartLatency$$' -benchtime=1x ./test/e2e/ | grep -E 'latency|difference|nri_duration|^(---|ok|FAIL)' || rc=$$?; \
	$(LOCAL) --state-dir $(E2E_STATE) down >/dev/null 2>&1 || true; \
	exit $$rc

.PHONY: run
run: gleaner-local ## A real local cluster with Gleaner and a demo workload (root; cgroup v1 or v2); Ctrl-C tears it down.
	$(LOCAL) run

.PHONY: local-up local-down local-status
local-up: gleaner-local ## Start the local cluster and leave it running (`make local-down` stops it).
	$(LOCAL) up
local-down: gleaner-local ## Stop the local cluster and remove everything it created.
	$(LOCAL) down
local-status: gleaner-local ## What the local cluster runs, with PIDs and memory.
	$(LOCAL) status

.PHONY: bench-local
bench-local: gleaner-local ## Local cluster start/stop times and memory per component (docs/benchmarks.md).
	$(LOCAL) --runs 3 --settle 30s bench

.PHONY: run-bare
run-bare: ## A bare control plane (no node, no root needed) with gleaner-manager in the foreground.
	hack/run.sh

.PHONY: help
help: ## List every target with what it does.
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' \
	  '{t[NR]=$$1; d[NR]=$$2; if (length($$1) > w) w = length($$1)} END {for (i = 1; i <= NR; i++) printf "  %-*s  %s\n", w, t[i], d[i]}'

# Gleaner's build. `make test` is what CI runs (.ci/run); `make run` is the main job on a fresh machine.
# Everything heavy (kube-apiserver, etcd, kubectl, golangci-lint) is built once into a per-user cache outside the
# tree by hack/kube-build.sh and hack/tool.sh.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := build

BIN ?= bin
GO_TEST_FLAGS ?=
CONTROLLER_GEN := go tool controller-gen

.PHONY: build
build: ## Build the binaries into bin/.
	go build -o $(BIN)/ ./cmd/...

.PHONY: generate
generate: ## Regenerate deepcopy functions and CRD manifests from the API types.
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/...
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=config/crd/bases
	$(CONTROLLER_GEN) rbac:roleName=gleaner-manager paths=./pkg/controllers/... output:rbac:artifacts:config=config/rbac/manager

.PHONY: verify-generated
verify-generated: ## Fail when generated files are not what `make generate` writes.
	@sum() { find api config/crd $(wildcard config/rbac) -type f | sort | xargs md5sum; }; \
	before=$$(sum); $(MAKE) --no-print-directory generate >/dev/null; after=$$(sum); \
	if [[ "$$before" != "$$after" ]]; then \
	  diff <(echo "$$before") <(echo "$$after") || true; \
	  echo "generated files were stale and have been regenerated: commit them"; exit 1; \
	fi

.PHONY: fmt
fmt: ## Format the code.
	gofmt -w $$(git ls-files '*.go')

.PHONY: vet
vet:
	go vet ./...

.PHONY: lint
lint: ## Run golangci-lint (pinned, built into the cache).
	$$(hack/tool.sh golangci-lint) run ./...

.PHONY: envtest-assets
envtest-assets: ## Build kube-apiserver, etcd and kubectl (once) and print their directory.
	@hack/kube-build.sh envtest

.PHONY: unit
unit: ## Run the Go tests against a real kube-apiserver and etcd.
	KUBEBUILDER_ASSETS=$$(hack/kube-build.sh envtest) go test $(GO_TEST_FLAGS) ./...

.PHONY: test
test: verify-generated vet lint unit ## Everything CI checks.

.PHONY: bench-nodeallocation
bench-nodeallocation: build ## Node-allocation benchmark: 2,000 nodes, 60,000 pods, churn (not in `make test`; ~10 min).
	KUBEBUILDER_ASSETS=$$(hack/kube-build.sh envtest) go run ./hack/bench/nodeallocation $(BENCH_FLAGS)

.PHONY: run
run: ## Start a local control plane and run gleaner-manager against it; Ctrl-C stops both.
	hack/run.sh

.PHONY: help
help:
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-18s %s\n", $$1, $$2}'

# Shardgate. `make test` does every set-up step itself on a fresh machine: Debian packages
# (hack/install-deps.sh) and the real components, built once per version into
# ~/.cache/shardgate/tools (hack/tools/build.sh).
SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
GO ?= go
TOOLS_BIN := $(CURDIR)/bin/tools
CONTROLLER_GEN := $(TOOLS_BIN)/controller-gen
RUN_DIR ?= $(CURDIR)/bin/run
TEST_TIMEOUT ?= 60m
# Go test flags for `make test`; e.g. make test TESTFLAGS='-run TestHarness -v'.
TESTFLAGS ?=
export SHARDGATE_TOOLS_BIN := $(TOOLS_BIN)

.PHONY: all build generate manifests test test-unit test-e2e conformance bench demo lint verify tools deps release clean

all: build

# The controller and the kubectl plugin (copy bin/kubectl-shardgate onto your PATH:
# `kubectl shardgate` finds it).
build:
	$(GO) build -o bin/seed-controller ./cmd/seed-controller
	$(GO) build -o bin/kubectl-shardgate ./cmd/kubectl-shardgate

deps:
	hack/install-deps.sh

tools: deps
	hack/tools/build.sh

$(CONTROLLER_GEN):
	hack/tools/build.sh controller-gen

# DeepCopy methods for the API types.
generate: $(CONTROLLER_GEN)
	@if [ -d api ]; then $(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/...; fi

# CRDs (config/crd/bases) and RBAC (config/rbac) from the markers next to the code.
manifests: $(CONTROLLER_GEN)
	@if [ -d api ]; then $(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=config/crd/bases; fi
	@# RoutedIP and IngressClaim live in user clusters: Shardgate installs them from the copies it embeds.
	mv config/crd/bases/shardgate.io_routedips.yaml pkg/clusteraccess/crds/routedips.yaml
	mv config/crd/bases/shardgate.io_ingressclaims.yaml pkg/clusteraccess/crds/ingressclaims.yaml
	@if [ -d pkg ]; then $(CONTROLLER_GEN) rbac:roleName=shardgate-seed-controller paths=./pkg/... paths=./cmd/... output:rbac:artifacts:config=config/rbac; fi
	@# The Helm chart ships the same CRDs and RBAC rules.
	rm -f charts/shardgate/crds/*.yaml && cp config/crd/bases/*.yaml charts/shardgate/crds/
	cp config/rbac/role.yaml config/rbac/metrics_reader_role.yaml charts/shardgate/rbac/

# reaped runs a go test command with every process it starts under RUN_DIR, then fails the run
# if hack/reap.sh finds one that survived or a host setting the run changed.
define reaped
	rm -rf $(RUN_DIR) && mkdir -p $(RUN_DIR) && hack/reap.sh --snapshot $(RUN_DIR)
	rc=0; SHARDGATE_RUN_DIR=$(RUN_DIR) $(1) || rc=$$?; \
	hack/reap.sh $(RUN_DIR) || { [ $$rc -ne 0 ] || rc=1; }; exit $$rc
endef

# Unit, envtest and end-to-end tests against real control planes, BIND and external-dns.
test: tools
	$(call reaped,$(GO) test -count=1 -timeout $(TEST_TIMEOUT) $(TESTFLAGS) ./...)

CONTROLLER_PKGS = $(shell $(GO) list ./pkg/controller/... | paste -sd, -)

# The short run: pure units everywhere, and the reconciler tests against one real API server each
# when the control-plane tools are built (they skip without them). Prints the controllers'
# statement coverage.
test-unit:
	$(call reaped,$(GO) test -count=1 -short -coverpkg=$(CONTROLLER_PKGS) -coverprofile=$(RUN_DIR)/unit.cover ./api/... ./pkg/... ./cmd/... && \
	  echo "controller statements covered by the short run: $$($(GO) tool cover -func=$(RUN_DIR)/unit.cover | tail -1 | awk '{print $$NF}')")

test-e2e: tools
	$(call reaped,$(GO) test -count=1 -timeout $(TEST_TIMEOUT) -v $(TESTFLAGS) ./test/e2e/...)

# Gateway API's conformance suite (the GATEWAY-HTTP profile's core tests) against a Shardgate-rendered
# Traefik shard on a real node (test/e2e/gatewayapi_conformance_test.go): prints every test's result
# and why, the full log in $(RUN_DIR)/conformance.log. Not in `make test`: CI's budget is full.
conformance: tools
	$(call reaped,$(GO) test -count=1 -timeout 60m -tags conformance -run '^TestGatewayAPIConformance$$' -json \
	  ./test/e2e/ | $(GO) run ./hack/conformance-summary $(RUN_DIR)/conformance.log)

# Benchmarks print figures (latency percentiles, bytes per object, write counts); they assert
# nothing about speed, so a noisy machine cannot make them flake.
bench: tools
	$(call reaped,$(GO) test -count=1 -run '^$$' -bench . -benchmem -benchtime=1x -timeout $(TEST_TIMEOUT) ./...)

# Seed + user clusters with real nodes, BIND, external-dns and the controller (test/demo): prints
# the kubeconfigs, the status page URL and commands to try, and keeps a live summary until Ctrl-C,
# SIGTERM or a closed terminal, which stop every process it started. DEMOFLAGS: --clusters N,
# --nodes N, --simulated (kwok nodes: starts in seconds).
DEMOFLAGS ?=
demo: tools build
	@$(GO) build -o bin/shardgate-demo ./test/demo
	@rm -rf $(RUN_DIR)/demo && mkdir -p $(RUN_DIR)/demo
	@SHARDGATE_RUN_DIR=$(RUN_DIR)/demo bin/shardgate-demo $(DEMOFLAGS)

GOLANGCI_LINT := $(TOOLS_BIN)/golangci-lint

$(GOLANGCI_LINT):
	hack/tools/build.sh golangci-lint

# go vet, and golangci-lint with the deliberate set of linters in .golangci.yml (gofmt and
# goimports included).
lint: $(GOLANGCI_LINT)
	$(GO) vet ./...
	$(GOLANGCI_LINT) run ./...

# Generated files are up to date, code is formatted and vetted. Regenerating must change nothing
# in the tree as it is (committed or not), so uncommitted API edits are not mistaken for stale files.
verify:
	@before=$$(git diff -- api config charts | sha256sum); \
	$(MAKE) --no-print-directory generate manifests >/dev/null; \
	after=$$(git diff -- api config charts | sha256sum); \
	[ "$$before" = "$$after" ] || { echo "generated files were stale: make generate manifests rewrote them (see git diff)"; exit 1; }
	@$(MAKE) --no-print-directory lint

# A static, non-root controller binary for the container image (Dockerfile); the image itself is
# built by CI elsewhere (no container engine here).
VERSION ?= $(shell git describe --tags --always 2>/dev/null || echo dev)
release:
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 $(GO) build -trimpath -ldflags "-s -w" -o dist/seed-controller-linux-amd64 ./cmd/seed-controller
	CGO_ENABLED=0 GOOS=linux GOARCH=arm64 $(GO) build -trimpath -ldflags "-s -w" -o dist/seed-controller-linux-arm64 ./cmd/seed-controller
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 $(GO) build -trimpath -ldflags "-s -w" -o dist/shardgate-vip-agent-linux-amd64 ./cmd/shardgate-vip-agent
	CGO_ENABLED=0 GOOS=linux GOARCH=arm64 $(GO) build -trimpath -ldflags "-s -w" -o dist/shardgate-vip-agent-linux-arm64 ./cmd/shardgate-vip-agent
	@# The kubectl plugin for krew: archives and the manifest with their sha256 (hack/krew).
	set -e; for p in linux/amd64 linux/arm64 darwin/arm64; do \
	  CGO_ENABLED=0 GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) build -trimpath -ldflags "-s -w" -o dist/kubectl-shardgate-$${p%/*}-$${p#*/} ./cmd/kubectl-shardgate; \
	done
	hack/krew/manifest.sh $(VERSION) dist
	@echo "built dist/ for $(VERSION)"

clean:
	rm -rf bin

# xdsconform — build, test, benchmark, lint.
GO ?= go
# Go's default proxy without the slow direct fallback.
export GOPROXY ?= $(shell go env GOPROXY | sed 's/,direct$$//')
# The binary's version (xdsconform --version, every report's harness_version). In a clone it is
# what the go command stamps from the checkout, a tag or a pseudo-version (+dirty), as for any
# go build: that needs VCS stamping on, which these machines turn off (GOFLAGS=-buildvcs=false).
# The go command stamps nothing in a git worktree (.git is a file there), so there git describe
# names it. make build VERSION=v1.2.3 links in any other.
VERSION ?= $(shell test -d .git || git describe --tags --always --dirty 2>/dev/null)
BUILDFLAGS := -buildvcs=true $(if $(VERSION),-ldflags "-X main.version=$(VERSION)")

.PHONY: all build test bench soak mutation lint licenses generate run clean e2e e2e-deps compat e2e-heavy e2e-heavy-deps release-check footprint

all: lint test build

## build: the xdsconform binary in bin/
build:
	$(GO) build $(BUILDFLAGS) -o bin/xdsconform ./cmd/xdsconform

## test: every unit test, the self-proof tables and the built-in go-control-plane runs. One
## package at a time (-p 1): the scenario tests judge real peers against the CLI's default
## timeouts, and under the race detector on 2 cores the other packages' tests running beside
## them starved those peers past them (a heartbeat late for its TTL, a fault's timer missed).
## Then the Kubernetes manifests' checks, a module of their own (deploy/kubernetes).
test:
	$(GO) test -race -count=1 -p 1 ./...
	cd deploy/kubernetes && $(GO) test -count=1 ./...

## bench: suite timings against the built-in targets (figures for the closing note), `xdsconform
## run` as a user runs it (its own process, the median of 3), then the
## load runs (docs/load.md): 500 clients against each built-in in-process, and 10,000 clients
## against examples/fixture-server in a process of its own, on 100 streams a connection and on
## one connection a stream (each run is the xdsconform CLI in its own process, so its peak RSS
## is its own; a few minutes)
bench:
	$(GO) test -run '^$$' -bench . -benchtime 3x ./scenarios/
	$(GO) test -run '^$$' -bench DefaultRun -benchtime 3x ./cmd/xdsconform/
	$(GO) test -run '^$$' -bench ReadJSON -benchtime 3x ./reports/
	$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 30m ./internal/load/

## soak: both suites against the reference peers SOAK_RUNS times in a row (default 200; the
## reference client's does-not-exist timer at 3 s, so it takes about 15 minutes); reports verdict
## flips, peak RSS and goroutines. Not part of make test or .ci/run.
SOAK_RUNS ?= 200
soak:
	$(GO) test -tags soak -count=1 -timeout 120m -run TestSoak ./internal/soak/ -v -soak.runs=$(SOAK_RUNS)

## mutation: mutation testing of the reference peers with the suites as the oracle: every mutant of
## peers/refserver and peers/refclient's protocol code is built into xdsconform (go build -overlay)
## and faces its suite; writes tools/mutation/results.jsonl and docs/mutation.md. Hours: it runs
## MUTATION_SHARDS shards side by side (default 2); MUTATION_RESUME=1 keeps the results of files
## unchanged since. Do not edit the peers while it runs. Not part of make test or .ci/run.
MUTATION_SHARDS ?= 2
mutation:
	$(GO) build -o bin/mutation ./tools/mutation
	test "$(MUTATION_RESUME)" = 1 || rm -f tools/mutation/results.jsonl
	bin/mutation reach
	seq 1 $(MUTATION_SHARDS) | xargs -P $(MUTATION_SHARDS) -I{} bin/mutation run $(if $(filter 1,$(MUTATION_RESUME)),-resume) -shard {}/$(MUTATION_SHARDS)
	bin/mutation report

## footprint: what embedding the suites costs an importer (packages linked, container stack and
## built-in peers among them, module graph, go.sum, cold test build time and binary size), measured
## from throwaway modules outside the repository (docs/embedding-footprint.md). Cold builds take
## minutes; FOOTPRINT_COLD=0 skips them. Not part of make test or .ci/run.
footprint:
	tools/footprint.sh

## lint: gofmt, go vet, and the licence check (licenses)
lint: licenses
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags e2e ./e2e/
	$(GO) vet -tags soak ./internal/soak/
	cd deploy/kubernetes && $(GO) vet ./...
	cd tools/licenses && $(GO) vet ./...

## licenses: every module that a package or test of the root, deploy/kubernetes and light peer
## modules builds (with the e2e and soak tags too) must be under an OSI-approved licence; one
## nothing recognises fails too (tools/licenses, github.com/google/licensecheck; exceptions, with
## their reasons, in tools/licenses/exceptions.txt). The heavy peers' modules are checked in
## e2e-heavy-deps.
LICENSE_CHECK := $(GO) run . -exceptions exceptions.txt
licenses:
	cd tools/licenses && $(GO) test -count=1 ./...
	cd tools/licenses && $(LICENSE_CHECK) -tags e2e,soak ../.. ../../deploy/kubernetes . ../../e2e/peers/go-control-plane ../../e2e/peers/grpc-go ../../e2e/peers/istio

## generate: regenerate the requirements catalogue (from internal/requirements/requirements.md) and the
## fixture API code (installs protoc from Debian and the pinned Go plugins into bin/tools if missing)
generate:
	cd internal/requirements && $(GO) generate ./...
	GO=$(GO) tools/genproto.sh

## e2e-deps: build and install the real peers the e2e suite drives (each Go peer from its own
## version-pinned module under e2e/peers, npm packages, Debian packages); cached
GRPCJS := e2e/peers/grpc-js
e2e-deps: $(GRPCJS)/node_modules/.installed
	cd e2e/peers/go-control-plane && $(GO) build -o bin/gcp-server .
	cd e2e/peers/grpc-go && $(GO) build -o bin/grpc-go-driver .
	cd e2e/peers/istio && $(GO) build -o bin/istio-server .
	@/usr/bin/python3 -c 'import grpc' 2>/dev/null || { apt-get update -qq && apt-get install -y -qq --no-install-recommends python3-grpcio; }

$(GRPCJS)/node_modules/.installed: $(GRPCJS)/package.json $(GRPCJS)/package-lock.json
	cd $(GRPCJS) && npm ci --no-audit --no-fund
	touch $@

## e2e: both suites against real implementations, with ginkgo (LABELS=client, grpc-js, ... to select)
LABELS ?=
e2e: e2e-deps
	$(if $(LABELS),,rm -rf e2e/out)
	$(GO) test -tags e2e -count=1 -timeout 20m ./e2e/ -ginkgo.v -ginkgo.label-filter='!heavy $(if $(LABELS),&& ($(LABELS)))'

## e2e-heavy-deps: build Envoy Gateway and Cilium's xDS server from their pinned modules (minutes;
## cached), and check the licences of their module graphs. Consul is not built: it is not open source (BUSL-1.1 since
## 1.17); make e2e-heavy runs it only from a binary supplied in CONSUL_BIN.
HEAVY_GOENV := GOFLAGS=-mod=mod
HEAVY_MODULES := ../../e2e/peers/envoy-gateway ../../e2e/peers/cilium
e2e-heavy-deps: e2e/peers/envoy-gateway/bin/envoy-gateway e2e/peers/cilium/bin/cilium-server
	cd tools/licenses && $(HEAVY_GOENV) $(LICENSE_CHECK) $(HEAVY_MODULES)

e2e/peers/cilium/bin/cilium-server: e2e/peers/cilium/go.mod e2e/peers/cilium/main.go
	cd e2e/peers/cilium && $(GO) build -o bin/cilium-server .

e2e/peers/envoy-gateway/bin/envoy-gateway: e2e/peers/envoy-gateway/go.mod
	cd e2e/peers/envoy-gateway && $(HEAVY_GOENV) $(GO) build -o bin/envoy-gateway github.com/envoyproxy/gateway/cmd/envoy-gateway

## e2e-heavy: the server suite against Envoy Gateway and Cilium, and against Consul when CONSUL_BIN names a
## consul binary (not part of make e2e; Envoy Gateway runs in a private network namespace, which
## needs root, unshare and ip); results land in the committed e2e/heavy-results, which
## COMPATIBILITY.md is also made of. Without CONSUL_BIN, Consul's committed results stay as they
## are, their note saying when they were last run.
export CONSUL_BIN
e2e-heavy: e2e-heavy-deps
	$(if $(LABELS),,rm -rf $(if $(CONSUL_BIN),e2e/heavy-results,$(filter-out e2e/heavy-results/consul,$(wildcard e2e/heavy-results/*))))
	XDSCONFORM_E2E_OUT=heavy-results $(GO) test -tags e2e -count=1 -timeout 30m ./e2e/ -ginkgo.v -ginkgo.label-filter='heavy $(if $(LABELS),&& ($(LABELS)))'


## compat: COMPATIBILITY.md from a fresh e2e run
compat: e2e
	$(GO) run ./e2e/compat -in e2e/out,e2e/heavy-results -out COMPATIBILITY.md

## release-check: GoReleaser checks .goreleaser.yaml and builds a snapshot of every release
## archive into dist/, without the image (needs a Docker engine) or publishing. GoReleaser is
## built from its module into bin/tools the first time (minutes); not part of make test or .ci/run.
GORELEASER_VERSION := v2.15.1
GORELEASER := bin/tools/goreleaser
release-check: $(GORELEASER)
	$(GORELEASER) check
	$(GORELEASER) release --snapshot --clean --skip=docker,publish

$(GORELEASER):
	GOBIN=$(CURDIR)/bin/tools $(GO) install github.com/goreleaser/goreleaser/v2@$(GORELEASER_VERSION)

## run: the embedded default, as a newcomer would
run: build
	./bin/xdsconform run

clean:
	rm -rf bin

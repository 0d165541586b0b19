# Tributary build. `make test` is the one command CI runs (.ci/run);
# `make help` lists the targets.

SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

GO ?= go
BUF := tools/buf/node_modules/.bin/buf
PROTOC_GEN_ES := client/node/node_modules/.bin/protoc-gen-es
GO_TOOLS := bin/golangci-lint bin/grpcurl bin/benchstat

# KUBERNETES_ASSETS holds the kube-apiserver and etcd that the adapter's
# end-to-end tests run through controller-runtime's envtest (which finds
# them through KUBEBUILDER_ASSETS). Nothing prebuilt can be downloaded
# here, so they are built from a module of their own (tools/kubernetes),
# whose go.mod pins them: about 5 minutes on a cold build cache, seconds
# on a warm one. The version goes into the API server's ldflags, as
# Kubernetes' own build sets it, so that clients see v1.37.2 and not
# v0.0.0-master.
KUBERNETES_ASSETS := bin/kubernetes
KUBERNETES_BINARIES := $(KUBERNETES_ASSETS)/kube-apiserver $(KUBERNETES_ASSETS)/etcd
KUBERNETES_VERSION_PKG := k8s.io/component-base/version

TEST_TIMEOUT ?= 10m
FUZZTIME ?= 60s
BENCH_PKGS ?= ./internal/translate/ ./internal/envoy/

# stage runs one make target and prints how long it took, so a slow CI run
# shows where its time went.
stage = @start=$$(date +%s); $(MAKE) --no-print-directory $(1); \
	echo "--- $(1) took $$(( $$(date +%s) - start ))s"

.PHONY: help
help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | expand -t 18

## Tools: pinned versions, installed once, reinstalled when their pins change.

.PHONY: tools
tools: debian-packages $(BUF) $(PROTOC_GEN_ES) $(GO_TOOLS) bin/ghz $(KUBERNETES_BINARIES) ## install buf and the Node client's packages (npm), the Go tools, and kube-apiserver and etcd into ./bin

$(BUF): tools/buf/package.json tools/buf/package-lock.json
	cd tools/buf && npm ci --no-audit --no-fund
	touch $@

# The Node client's packages, protoc-gen-es among them (client/node/package-lock.json).
$(PROTOC_GEN_ES): client/node/package.json client/node/package-lock.json
	cd client/node && npm ci --no-audit --no-fund
	touch $@

# The Go tools come from their own module (tools/go.mod) so that their
# dependencies never move the versions the service itself is built with.
$(GO_TOOLS) &: tools/go.mod tools/go.sum
	cd tools && $(GO) build -o ../bin/ tool
	touch $(GO_TOOLS)

# ghz (the load generator of `make load`) has a module of its own: its pinned
# version needs an older gRPC than the tools above (tools/ghz/go.mod).
bin/ghz: tools/ghz/go.mod tools/ghz/go.sum
	cd tools/ghz && $(GO) build -o ../../bin/ tool
	touch $@

$(KUBERNETES_BINARIES) &: tools/kubernetes/go.mod tools/kubernetes/go.sum
	cd tools/kubernetes && version=$$($(GO) list -m -f '{{.Version}}' k8s.io/kubernetes) && \
	minor=$$(echo "$$version" | cut -d. -f2) && \
	$(GO) build -trimpath -o ../../$(KUBERNETES_ASSETS)/kube-apiserver -ldflags "-s -w \
		-X $(KUBERNETES_VERSION_PKG).gitVersion=$$version -X $(KUBERNETES_VERSION_PKG).gitMajor=1 \
		-X $(KUBERNETES_VERSION_PKG).gitMinor=$$minor -X $(KUBERNETES_VERSION_PKG).gitTreeState=clean" \
		k8s.io/kubernetes/cmd/kube-apiserver && \
	$(GO) build -trimpath -o ../../$(KUBERNETES_ASSETS)/etcd -ldflags "-s -w" go.etcd.io/etcd/server/v3
	touch $(KUBERNETES_BINARIES)

# debian-packages installs what Debian must provide: protoc for the Python
# code in gen/python, and the gRPC and protobuf modules of Debian's python3
# for the Python client's tests. It does nothing when they are present.
DEBIAN_PACKAGES := protobuf-compiler python3-grpcio python3-protobuf

.PHONY: debian-packages
debian-packages: ## install protoc and Python gRPC from Debian if missing
	@if ! command -v protoc >/dev/null || ! $(PYTHON) -c 'import grpc, google.protobuf' 2>/dev/null; then \
		echo "installing from Debian: $(DEBIAN_PACKAGES)"; \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $(DEBIAN_PACKAGES); \
	fi

## Code generation

# API_DESCRIPTORS is proto/ as a FileDescriptorSet that keeps the comments
# (source info), which server reflection serves (internal/apidocs). Only our
# files: the ones they import are in the Go registry already. Options kept
# only in source are left out, as they are from the code buf generates.
API_DESCRIPTORS := internal/apidocs/tributary.binpb
BUILD_API_DESCRIPTORS := $(BUF) build --as-file-descriptor-set --exclude-imports --exclude-source-retention-options -o

.PHONY: generate
generate: $(BUF) $(PROTOC_GEN_ES) ## regenerate gen/, client/node/gen/ and internal/apidocs/tributary.binpb from proto/
	$(BUF) generate
	$(BUILD_API_DESCRIPTORS) $(API_DESCRIPTORS)

# GENERATED lists every directory buf.gen.yaml writes, and API_DESCRIPTORS.
# check-generated regenerates into a scratch directory and compares each with
# the work tree, so stale or hand-edited generated code fails without
# touching the tree (Python's bytecode caches and gen/go's go.mod and go.sum
# aside).
GENERATED := gen client/node/gen $(API_DESCRIPTORS)

.PHONY: check-generated
check-generated: $(BUF) $(PROTOC_GEN_ES) ## fail if gen/, client/node/gen/ or internal/apidocs/tributary.binpb is not what proto/ generates
	@scratch=$$(mktemp -d); trap 'rm -rf "$$scratch"' EXIT; \
	$(BUF) generate --output "$$scratch"; \
	mkdir -p "$$scratch/$(dir $(API_DESCRIPTORS))"; \
	$(BUILD_API_DESCRIPTORS) "$$scratch/$(API_DESCRIPTORS)"; \
	for dir in $(GENERATED); do \
		if ! diff -r --exclude=__pycache__ --exclude=go.mod --exclude=go.sum "$$dir" "$$scratch/$$dir"; then \
			echo "$$dir is stale: run 'make generate' and commit the result." >&2; exit 1; \
		fi; \
	done; \
	echo "$(GENERATED) match proto/"

## Checks

.PHONY: buf-lint
buf-lint: $(BUF) ## buf lint, and buf breaking against branch main when proto/ differs from it
	$(BUF) lint
	@if ! git rev-parse --verify --quiet refs/heads/main >/dev/null; then \
		echo "buf breaking: skipped (no branch main in this clone)"; \
	elif git diff --quiet main -- proto; then \
		echo "buf breaking: skipped (proto/ is unchanged from main)"; \
	else \
		echo "$(BUF) breaking --against '.git#branch=main'"; \
		$(BUF) breaking --against '.git#branch=main'; \
	fi

# GO_MODULES are the repository's Go modules that `./...` at the root does
# not reach past: the service (the root), the public clients and the
# generated API, each with a go.mod of its own so that a program importing
# the clients needs none of the service's requirements. test/deploy is a
# module too; deploy-test checks it.
GO_MODULES := . client gen/go

.PHONY: vet
vet: ## go vet, and every go.mod as go mod tidy leaves it
	@for m in $(GO_MODULES); do echo "go vet ($$m)"; (cd $$m && $(GO) vet ./... && $(GO) mod tidy -diff); done

.PHONY: lint
lint: buf-lint bin/golangci-lint ## buf-lint and golangci-lint (.golangci.yml)
	@for m in $(GO_MODULES); do echo "golangci-lint ($$m)"; (cd $$m && $(CURDIR)/bin/golangci-lint run --config $(CURDIR)/.golangci.yml ./...); done

.PHONY: go-test
go-test: $(KUBERNETES_BINARIES) ## go test -race only (fuzz targets run on their seed corpus)
	@for m in $(GO_MODULES); do echo "go test ($$m)"; (cd $$m && KUBEBUILDER_ASSETS=$(CURDIR)/$(KUBERNETES_ASSETS) $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) ./...); done

# node-test type-checks the Node client's JSDoc, then runs its tests against
# bin/tributary, which they start themselves (without TRIBUTARY_BIN they
# build their own).
.PHONY: node-test
node-test: build $(PROTOC_GEN_ES) ## the Node client's type check and tests (client/node)
	cd client/node && npm run --silent typecheck
	cd client/node && TRIBUTARY_BIN=$(CURDIR)/bin/tributary node --test

# python-test runs the Python client's tests against bin/tributary. Debian's
# python3 is the one with python3-grpcio and python3-protobuf.
PYTHON ?= /usr/bin/python3

.PHONY: python-test
python-test: build ## the Python client's tests (client/python)
	TRIBUTARY_BIN=$(CURDIR)/bin/tributary PYTHONPATH=gen/python:client/python PYTHONDONTWRITEBYTECODE=1 \
		$(PYTHON) -m unittest discover -s client/python -v

# deploy-test builds the Kubernetes manifests with kustomize and checks them
# (and the Dockerfile) against bin/tributary. Its tests (test/deploy) are a
# module of their own, so kustomize's dependencies stay out of go.mod; it is
# vetted and linted here because `./...` at the root does not reach it.
.PHONY: deploy-test
deploy-test: build bin/golangci-lint ## the manifests in deploy/ and the Dockerfile, checked against bin/tributary
	cd test/deploy && $(GO) vet ./... && $(GO) mod tidy -diff
	cd test/deploy && $(CURDIR)/bin/golangci-lint run --config $(CURDIR)/.golangci.yml ./...
	cd test/deploy && TRIBUTARY_BIN=$(CURDIR)/bin/tributary $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) ./...

# test-short is the edit-test loop: the unit, golden and in-process tests
# of the service and the Go client, without the race detector and with
# -short (which trims property and fuzz-seed sizes), skipping the end-to-end,
# load and attack suites under test/ that start processes. `make test` stays
# what CI runs.
SHORT_TEST_PKGS := ./internal/... ./cmd/... ./examples/...

.PHONY: test-short
test-short: ## the quick loop: unit and golden tests, no -race, no test/ suites (CI runs make test)
	$(GO) test -short -count=1 -timeout $(TEST_TIMEOUT) $(SHORT_TEST_PKGS)
	cd client && $(GO) test -short -count=1 -timeout $(TEST_TIMEOUT) ./...

.PHONY: test
test: tools ## everything CI checks: check-generated, vet, lint, go-test, node-test, python-test, deploy-test
	$(call stage,check-generated)
	$(call stage,vet)
	$(call stage,lint)
	$(call stage,go-test)
	$(call stage,node-test)
	$(call stage,python-test)
	$(call stage,deploy-test)

## Build and run

.PHONY: build
build: ## build bin/tributary
	$(GO) build -o bin/tributary ./cmd/tributary

# run serves everything the README walks through from one process, on
# loopback only: the API on 127.0.0.1:8081 (serve's default), xDS on
# 127.0.0.1:18000 and metrics on 127.0.0.1:9090. ARGS adds flags; RUN_ARGS=
# leaves serve on its defaults alone. The shell execs the server, so it is
# make's own child: Ctrl-C reaches it with the terminal's process group,
# and GNU make passes a SIGTERM sent to make on to it; either way it drains
# and stops, and no server is left behind holding the ports.
RUN_ARGS ?= --xds-address 127.0.0.1:18000 --metrics-address 127.0.0.1:9090

.PHONY: run
run: build ## build and run the server: API 127.0.0.1:8081, xDS :18000, metrics :9090 (ARGS adds flags)
	exec bin/tributary serve $(RUN_ARGS) $(ARGS)

## Performance and fuzzing

# bench writes bench/new.txt; copy it to bench/base.txt to make it the
# baseline that later runs are compared with.
.PHONY: bench
bench: bin/benchstat ## benchmarks into bench/new.txt, compared with bench/base.txt
	@mkdir -p bench
	$(GO) test -run '^$$' -bench . -benchmem -count 6 $(BENCH_PKGS) | tee bench/new.txt
	@if [[ -f bench/base.txt ]]; then bin/benchstat bench/base.txt bench/new.txt; \
	else bin/benchstat bench/new.txt; echo "(no bench/base.txt to compare with)"; fi

# load runs ghz on Translate against a freshly started bin/tributary for
# LOAD_DURATION (default 30s; LOAD_CONCURRENCY, LOAD_CONNECTIONS too, see the
# script) and prints requests/s, p50 and p99; it fails if any call fails.
.PHONY: load
load: build bin/ghz ## ghz load on Translate against a fresh server: requests/s, p50, p99
	scripts/load-translate.sh --serve bin/tributary

# attack runs the hostile-input scenarios of test/attack (issue 10's table)
# at the issue's sizes, each against a fresh tributary serve, and prints a
# table: what was sent, what the client got, the server's peak RSS, the
# time, and whether it held. CI runs the same scenarios small (go-test).
.PHONY: attack
attack: ## the hostile-input scenarios at full size against fresh servers: a table of what held
	ATTACK_SCALE=full $(GO) test -count=1 -v -timeout 60m -run '^TestAttack$$' ./test/attack/

.PHONY: fuzz
fuzz: ## run every Fuzz target for FUZZTIME each (default 60s)
	FUZZTIME=$(FUZZTIME) scripts/fuzz.sh

.PHONY: clean
clean: ## remove build outputs (bin/, bench/new.txt)
	rm -rf bin bench/new.txt

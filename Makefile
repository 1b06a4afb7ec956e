# STOL — the two commands: `make run` and `make test`. `make help` lists the rest.
SHELL := /bin/bash
export PATH := /opt/swift/usr/bin:$(PATH)

SWIFT        ?= swift
RUNTIME_DIR  ?= $(CURDIR)/run
STATE_DIR    ?= $(CURDIR)/state
OUT          ?= $(CURDIR)/out
# The public key the stack's verifier trusts: by default the development key that
# `make build-db` signs out/reference.stol with (created then, read per import).
STOL_TRUSTED_KEY ?= $(CURDIR)/.cache/keys/dev-signing.key.pub
BUNDLED_DB   := $(OUT)/bundled.sqlite
RELEASE_BIN   = $(shell $(SWIFT) build -c release --show-bin-path 2>/dev/null)
DEBUG_BIN     = $(shell $(SWIFT) build --show-bin-path 2>/dev/null)
# Debian packages the build, the tests and `make run` need.
DEB_PACKAGES := libsodium-dev libsystemd-dev libseccomp-dev zlib1g-dev libsqlite3-dev pkg-config systemd util-linux python3 python3-venv
SUDO         := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: help run test fault deps build build-debug db build-db reference-db check-ids check-lca start restart stop status demo proto clean bench bench-pipeline

help:
	@echo "make run    install packages, build (release), build the bundled DB, start the stack, demo"
	@echo "make test   the whole test suite (unit, component, integration)"
	@echo "make stop   stop the stack started by make run"
	@echo "make restart  restart its daemons (favourites and state are kept)"
	@echo "make status which daemons are up"
	@echo "make db     build the bundled database (NCBI 2024 + curated overlay; curated only when offline), check-ids"
	@echo "make build-db  the bundled database and the signed reference (full NCBI tree): out/reference.stol"
	@echo "make fault  the import fault-injection tests with 1000 random kills of the verifier (KILLS=N)"
	@echo "make bench  latency/throughput of taxonomy and favourites, and the import of out/reference.stol, through the real sockets"
	@echo "make bench-pipeline  pipeline speed, memory and table sizes on the full NCBI tree"
	@echo "make check-lca  compare (LCA, distance) on the real server against an independent computation, random pairs"
	@echo "make proto  regenerate Sources/STOLProtocol/Generated from protocol/*.proto"

## Installs the Debian packages that are missing (apt-get as root, or sudo).
deps:
	@missing=$$(for p in $(DEB_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:" $$missing; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	fi

build: deps
	$(SWIFT) build -c release

build-debug: deps
	$(SWIFT) build

## NCBI 2024 (downloaded once into .cache/) without placeholders, named species only,
## plus the curated overlay; the committed curated source when the download is impossible.
$(BUNDLED_DB): build $(wildcard Pipeline/curated/*.tsv) Pipeline/scripts/build-db.sh
	OUT=$(OUT) Pipeline/scripts/build-db.sh "$(RELEASE_BIN)" bundled

db: $(BUNDLED_DB)

## The reference candidate: the full NCBI tree, signed (SIGNING_KEY=FILE, else a dev key in .cache/keys).
reference-db: build
	OUT=$(OUT) Pipeline/scripts/build-db.sh "$(RELEASE_BIN)" reference

build-db: db reference-db

## The stable-id check: every released id (Pipeline/released-ids/) is still there, unchanged.
check-ids: $(BUNDLED_DB)
	"$(RELEASE_BIN)/stol-pipeline" check-ids --database $(BUNDLED_DB) $(foreach r,$(wildcard Pipeline/released-ids/*.tsv),--released $(r))

## compare on the real server against an independent parent-pointer LCA (Python), for random pairs
## of the reference build (the bundled one when there is no reference).
check-lca: build
	@db=$(OUT)/reference.sqlite; test -s $$db || db=$(BUNDLED_DB); \
	python3 Pipeline/scripts/check_lca.py --bin "$(RELEASE_BIN)" --database $$db --pairs $${PAIRS:-500}

start: build db
	STOL_RUNTIME_DIR=$(RUNTIME_DIR) STOL_STATE_DIR=$(STATE_DIR) STOL_TRUSTED_KEY=$(STOL_TRUSTED_KEY) \
	  systemd/stack.sh start "$(RELEASE_BIN)" $(BUNDLED_DB)

## Restarts every daemon (stack.sh start stops the old ones first); favourites and state are kept.
restart: start

stop:
	@STOL_RUNTIME_DIR=$(RUNTIME_DIR) STOL_STATE_DIR=$(STATE_DIR) systemd/stack.sh stop

status:
	@STOL_RUNTIME_DIR=$(RUNTIME_DIR) STOL_STATE_DIR=$(STATE_DIR) systemd/stack.sh status

## A short real demo through stol-client against the running stack.
demo:
	@export STOL_RUNTIME_DIR=$(RUNTIME_DIR); c="$(RELEASE_BIN)/stol-client"; set -x; \
	$$c status; \
	$$c search lion; \
	$$c search --lang es león; \
	$$c search --prefix quer --rank genus; \
	$$c ancestors 9689; \
	$$c children 9688; \
	$$c fav toggle 9689; \
	$$c fav list; \
	$$c fav toggle 9689; \
	$$c db status
	@echo
	@echo "The stack is running (sockets in $(RUNTIME_DIR)). Query it with:"
	@echo "  export PATH=$(RELEASE_BIN):\$$PATH STOL_RUNTIME_DIR=$(RUNTIME_DIR)"
	@echo "  stol-client --help"
	@echo "  stol-client search tiger"
	@echo "The full NCBI tree (2.26 M taxa) as a signed reference database, imported and activated:"
	@echo "  make build-db && stol-client db import out/reference.stol && stol-client db activate"
	@echo "Stop it with: make stop"

run: start demo

test: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build --disable-swift-testing

## The import's fault injection with 1,000 random SIGKILLs of the verifier (KILLS=N to change;
## STOL_FAULT_SEED=S replays a run), plus the kills at each stage, of importd, Ctrl-C and a full disk.
fault: deps
	$(SWIFT) build --build-tests
	STOL_FAULT_KILLS=$${KILLS:-1000} $(SWIFT) test --skip-build --disable-swift-testing --filter ImportFaultInjectionTests

## Regenerates the protobuf Swift code (commit the result). Needs protoc (Debian
## protobuf-compiler) and builds protoc-gen-swift 1.39.0 from the local package copy.
PROTOC_GEN_SWIFT := .build-proto/swift-protobuf/.build/release/protoc-gen-swift
$(PROTOC_GEN_SWIFT):
	@dpkg -s protobuf-compiler >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq protobuf-compiler; }
	rm -rf .build-proto/swift-protobuf && mkdir -p .build-proto
	git clone -q --depth 1 --branch 1.39.0 https://github.com/apple/swift-protobuf .build-proto/swift-protobuf
	cd .build-proto/swift-protobuf && $(SWIFT) build -c release --product protoc-gen-swift

proto: $(PROTOC_GEN_SWIFT)
	rm -f Sources/STOLProtocol/Generated/*.pb.swift
	protoc --plugin=protoc-gen-swift=$(PROTOC_GEN_SWIFT) --swift_out=Visibility=Public:Sources/STOLProtocol/Generated \
	  -I protocol protocol/*.proto

## Taxonomy on the full NCBI reference build (made once into $(OUT)/reference.sqlite and .stol),
## favourites, then the import of $(OUT)/reference.stol through importd and a sandboxed verifier.
bench: build
	@test -s $(OUT)/reference.sqlite -a -s $(OUT)/reference.stol || OUT=$(OUT) Pipeline/scripts/build-db.sh "$(RELEASE_BIN)" reference
	"$(RELEASE_BIN)/stol-bench" taxonomy --database $(OUT)/reference.sqlite
	"$(RELEASE_BIN)/stol-bench" favorites
	"$(RELEASE_BIN)/stol-bench" import --file $(OUT)/reference.stol --public-key $(STOL_TRUSTED_KEY)

## Pipeline speed and memory: the full NCBI build and the bundled build, rows/s, peak RSS, table sizes.
bench-pipeline: build
	@OUT=$(OUT) Pipeline/scripts/build-db.sh "$(RELEASE_BIN)" fetch
	@for kind in full bundled; do \
	  if [ $$kind = full ]; then args=""; else args="--drop-placeholders --only-named-species"; fi; \
	  echo "== $$kind build"; \
	  /usr/bin/time -f "$$kind: %e s wall, peak RSS %M KiB" "$(RELEASE_BIN)/stol-pipeline" build --format ncbi \
	    --source .cache/ncbi/taxdump --overlay Pipeline/curated $$args --output /tmp/stol-bench-$$kind.sqlite \
	    2> >(grep -E "done .*rows/s|wall" >&2); \
	  python3 Pipeline/scripts/table_sizes.py /tmp/stol-bench-$$kind.sqlite; \
	  if [ $$kind = bundled ]; then echo "compressed (gzip -9): $$(gzip -9 -c /tmp/stol-bench-$$kind.sqlite | wc -c) bytes (budget 20000000)"; fi; \
	  rm -f /tmp/stol-bench-$$kind.sqlite; \
	done

clean: stop
	rm -rf .build $(OUT) $(RUNTIME_DIR) $(STATE_DIR)

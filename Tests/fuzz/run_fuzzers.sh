#!/usr/bin/env bash
# Builds the libFuzzer targets (README, "Fuzzing"; the package Tools/Package.swift) and runs each of them:
#
#   Tests/fuzz/run_fuzzers.sh --runs N [--seed S] [TARGET…]   a fixed number of inputs
#   Tests/fuzz/run_fuzzers.sh --seconds T [TARGET…]           T seconds per target (make fuzz)
#
# TARGET is fuzz-frame-decoder, fuzz-taxonomy, fuzz-favorites, fuzz-import or
# fuzz-verifier (default: all). Every run starts from the committed seeds
# (Tests/fuzz/corpus/<target>) and regressions (Tests/fuzz/regressions/<target>),
# which it never writes to; the inputs it finds go to $FUZZ_BUILD/corpus/<target>
# (kept between `make fuzz` runs, not by --runs), a crash, hang or memory blow-up
# to $FUZZ_BUILD/artifacts/<target>/. Exit status 1 when any target failed.
#
# Environment: FUZZ_BUILD (.build-fuzz), FUZZ_SANITIZE (fuzzer,address), SWIFT (swift),
# FUZZ_RSS_MB (1024: libFuzzer's -rss_limit_mb), FUZZ_TIMEOUT (10: seconds per input),
# FUZZ_BUILD_NICE (a prefix for the build, e.g. "nice -n 10"). Coverage and
# AddressSanitizer go to every module, the dependencies' too (swift-nio's
# ByteToMessageHandler, swift-protobuf's decoder). (`make test` runs 2,000 mutations of
# each target's inputs in its debug build instead: STOLFuzzTests.FuzzMutationTests.)
set -uo pipefail
cd "$(dirname "$0")/../.."

SWIFT=${SWIFT:-swift}
BUILD=${FUZZ_BUILD:-.build-fuzz}
[[ $BUILD == /* ]] || BUILD=$PWD/$BUILD  # the build is of Tools/ (--package-path), the directory here
SANITIZE=${FUZZ_SANITIZE:-fuzzer,address}
BUILD_NICE=${FUZZ_BUILD_NICE:-}
RSS_MB=${FUZZ_RSS_MB:-1024}
TIMEOUT=${FUZZ_TIMEOUT:-10}
ALL_TARGETS=(fuzz-frame-decoder fuzz-taxonomy fuzz-favorites fuzz-import fuzz-verifier)

runs="" seconds="" seed=1 targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    fuzz-*) targets+=("$1"); shift ;;
    *) echo "usage: $0 (--runs N [--seed S] | --seconds T) [TARGET…]" >&2; exit 64 ;;
  esac
done
[ -n "$runs$seconds" ] || { echo "usage: $0 (--runs N [--seed S] | --seconds T) [TARGET…]" >&2; exit 64; }
[ ${#targets[@]} -gt 0 ] || targets=("${ALL_TARGETS[@]}")

# The longest input per target is the target's own (FuzzTarget.maximumInputBytes, passed
# as -max_len by the executable). malloc_limit_mb (needs AddressSanitizer's allocator
# hooks): no input of the frame decoder comes near 1 MiB, so an allocation over it can
# only be of an announced length.
options() {
  case "$1" in
    fuzz-frame-decoder) echo "-malloc_limit_mb=1" ;;
    *) echo "-malloc_limit_mb=256" ;;
  esac
}

# Swift code gets libFuzzer's coverage (and AddressSanitizer) from -sanitize; the C
# shims (the SQLite VFS that reads the verifier's untrusted database, the socket and
# sandbox calls) get the same from clang, so that a bad pointer there is caught too.
flags=(-Xswiftc -sanitize="$SANITIZE" -Xswiftc -DFUZZING -Xcc -fsanitize=fuzzer-no-link)
case ",$SANITIZE," in *,address,*) flags+=(-Xcc -fsanitize=address) ;; esac

started=$(date +%s)
# Tools reaches the root package by path, and SwiftPM keeps that package's build plan
# between runs without noticing a source file that was deleted or moved since ("couldn't
# build … because of missing inputs"): the plan is made again each run (it takes
# seconds; nothing is recompiled for it).
rm -f "$BUILD"/*/debug/description.json
for target in "${targets[@]}"; do
  # shellcheck disable=SC2086
  $BUILD_NICE "$SWIFT" build -c debug --package-path Tools --scratch-path "$BUILD" "${flags[@]}" --product "$target" 2>&1 \
    | grep -E "error|Build of" || { echo "cannot build $target" >&2; exit 2; }
done
built=$(date +%s)
bin=$("$SWIFT" build -c debug --package-path Tools --scratch-path "$BUILD" --show-bin-path)

failed=0
summary=()
for target in "${targets[@]}"; do
  log="$BUILD/logs/$target.log"
  artifacts="$BUILD/artifacts/$target/"
  mkdir -p "$BUILD/logs" "$artifacts" "$BUILD/corpus/$target"
  if [ -n "$runs" ]; then
    # A fresh working corpus: the same binary, seed and inputs run the same way every time.
    work=$(mktemp -d "${TMPDIR:-/tmp}/stol-fuzz-corpus.XXXXXX")
    limit="-runs=$runs -seed=$seed"
  else
    work="$BUILD/corpus/$target"
    limit="-max_total_time=$seconds"
  fi
  seeds=("Tests/fuzz/corpus/$target")
  [ -d "Tests/fuzz/regressions/$target" ] && seeds+=("Tests/fuzz/regressions/$target")
  # shellcheck disable=SC2046
  "$bin/$target" $limit $(options "$target") -rss_limit_mb="$RSS_MB" -timeout="$TIMEOUT" \
    -artifact_prefix="$artifacts" -print_final_stats=1 "$work" "${seeds[@]}" > "$log" 2>&1
  status=$?
  [ -n "$runs" ] && rm -rf "$work"
  executed=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log" | tail -1)
  coverage=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  if [ $status -eq 0 ]; then
    result=ok
  else
    failed=1
    result="FAILED ($status)"
    artifact=$(grep -o "Test unit written to [^ ]*" "$log" | tail -1 | cut -d' ' -f5)
    echo "== $target failed; the end of its log ($log):"
    grep -v '^#[0-9]' "$log" | tail -30
    if [ -n "$artifact" ]; then
      echo "== replay it: $bin/$target $artifact"
      echo "   or, in an ordinary build: swift build --package-path Tools --product $target && Tools/.build/debug/$target $artifact"
      echo "   keep it fixed: copy it into Tests/fuzz/regressions/$target/ (replayed by make test)"
    fi
  fi
  summary+=("$(printf '%-20s %-12s %9s %9s %9s %9s' "$target" "$result" "${executed:-?}" "${speed:-?}" "${rss:-?}" "${coverage:-?}")")
done

echo
echo "fuzzing summary (sanitizers: $SANITIZE; build $((built - started)) s, runs $(( $(date +%s) - built )) s)"
printf '%-20s %-12s %9s %9s %9s %9s\n' target result inputs "inputs/s" "peak MiB" coverage
printf '%s\n' "${summary[@]}"
exit $failed

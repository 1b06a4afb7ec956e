#!/usr/bin/env bash
# make bench-delta: a signed delta between two real NCBI releases (issues 22, 38), against the
# full file of the new release: its size, the time and memory to make it, and the import
# of each through the real stack (client, importd, a fresh verifier per import), the
# import of the full file being the baseline measured in the same run.
#
#   bench-delta.sh BIN_DIR BUNDLED_DB BASE_DB BASE_STOL NEW_DB NEW_STOL SIGNING_KEY PUBLIC_KEY OUT_DIR
set -euo pipefail
bin=$1 bundled=$2 base_db=$3 base_stol=$4 new_db=$5 new_stol=$6 key=$7 pub=$8 out=$9
top=$(cd "$(dirname "$0")/../.." && pwd)
release() { python3 -c "
import sqlite3, sys; print(sqlite3.connect('file:' + sys.argv[1] + '?mode=ro', uri=True).execute(\"SELECT value FROM provenance WHERE key = 'release'\").fetchone()[0])" "$1"; }
from=$(release "$base_db"); to=$(release "$new_db")
delta=$out/delta-$from-to-$to.stol
work=$(mktemp -d /var/tmp/stol-bench-delta.XXXXXX)
export STOL_RUNTIME_DIR=$work/run STOL_STATE_DIR=$work/state STOL_TRUSTED_KEY=$pub TMPDIR=$work/tmp
mkdir -p "$TMPDIR"
cleanup() { "$top/systemd/stack.sh" stop >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT

echo "delta $from -> $to (zstd --patch-from against the installed base; STOL-FORMAT.md §10)"
if [[ ! -s $delta || $delta -ot $new_db || $delta -ot $base_db ]]; then
  /usr/bin/time -f "%e %M" -o "$work/make.time" "$bin/stol-pipeline" delta --key "$key" --base "$base_db" --input "$new_db" \
    --output "$delta" > "$work/make.log"
  read -r make_seconds make_kib < "$work/make.time"
  echo "made $delta in $make_seconds s, peak RSS $((make_kib / 1024)) MiB"
fi
kind=$(od -An -tu1 -j12 -N1 "$delta" | tr -d ' ')
case $kind in 3) kind="row delta (kind 3)" ;; 2) kind="byte delta (kind 2)" ;; *) kind="kind $kind" ;; esac

"$top/systemd/stack.sh" start "$bin" "$bundled" > /dev/null
client=$bin/stol-client
timed() { local start end; start=$(date +%s.%N); "$@" > "$work/last.log" 2>&1; end=$(date +%s.%N); awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }'; }
base_seconds=$(timed "$client" db import "$base_stol")
full_seconds=$(timed "$client" db import "$new_stol")
full_sha=$(sha256sum < "$STOL_STATE_DIR/databases/releases/$to.sqlite" | cut -d' ' -f1)
"$client" db delete --yes "$to" > /dev/null
delta_seconds=$(timed "$client" db import "$delta")
grep -q "imported: release $to" "$work/last.log" || { cat "$work/last.log" >&2; exit 1; }
delta_sha=$(sha256sum < "$STOL_STATE_DIR/databases/releases/$to.sqlite" | cut -d' ' -f1)
want_sha=$(sha256sum < "$new_db" | cut -d' ' -f1)
[[ $delta_sha == "$want_sha" && $full_sha == "$want_sha" ]] || { echo "the installed $to is not $new_db" >&2; exit 1; }
twice_seconds=$(timed "$client" db import "$delta")
grep -q "already installed" "$work/last.log" || { cat "$work/last.log" >&2; exit 1; }
peaks=$(grep -o 'peak_rss_kib=[0-9]*' "$STOL_RUNTIME_DIR/verify.log" | cut -d= -f2 | tr '\n' ' ')

size() { stat -c %s "$1"; }
mib() { awk -v n="$1" 'BEGIN { printf "%.1f", n / 1048576 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }
printf '\n| %-38s | %12s | %10s |\n' "what" "size" "import"
printf '| %-38s | %12s | %10s |\n' "--------------------------------------" "------------" "----------"
printf '| %-38s | %8s MiB | %8s s |\n' "full file of $to (baseline)" "$(mib "$(size "$new_stol")")" "$full_seconds"
printf '| %-38s | %8s MiB | %8s s |\n' "$kind $from -> $to" "$(mib "$(size "$delta")")" "$delta_seconds"
printf '| %-38s | %12s | %8s s |\n' "the same delta again (already installed)" "" "$twice_seconds"
echo
size_ratio=$(ratio "$(size "$delta")" "$(size "$new_stol")")
echo "delta/full: size $size_ratio, import time $(ratio "$delta_seconds" "$full_seconds")"
echo "installed $to is byte for byte $new_db (SHA-256 ${want_sha:0:16}…) by either route; the base $from import took $base_seconds s"
echo "verifier peak RSS per import (KiB, in order: base, full, delta, delta again): $peaks"
# Issue 38's targets: at most 0.15 of the full file, imported in less time than it.
missed=""
awk -v r="$size_ratio" 'BEGIN { exit !(r > 0.15) }' && missed="$missed size ratio $size_ratio > 0.15;"
awk -v d="$delta_seconds" -v f="$full_seconds" 'BEGIN { exit !(d >= f) }' && missed="$missed import $delta_seconds s >= the full file's $full_seconds s;"
if [[ -n $missed ]]; then echo "targets MISSED:$missed"; exit 1; fi
echo "targets met: size at most 0.15 of the full file, import faster than the full file's"

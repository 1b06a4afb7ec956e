#!/usr/bin/env bash
# `make bench-relevance` (and the end of `make bench`): the project's relevance set,
# Tests/relevance/everyday-queries.tsv (queries typed as people type them, each with
# the NCBI taxon a person means), through `stol-client search` against a stack serving
# the bundled database and then one serving the reference build; top-1 and top-5 per
# database (targets: top-1 ≥ 90 % on the bundled database, ≥ 95 % on the reference).
#
#   bench-relevance.sh BIN BUNDLED_DB REFERENCE_DB
#
# Each stack runs in a scratch runtime directory of its own (the `make run` stack is
# left alone) and is queried once its in-memory indexes are loaded, as a running
# service answers. A database that is missing is skipped with a note.
set -euo pipefail
bin=${1:?usage: bench-relevance.sh BIN BUNDLED_DB REFERENCE_DB}; bundled=${2:?}; reference=${3:?}
cd "$(dirname "$0")/../.."
scratch=$(mktemp -d /tmp/stol-relevance.XXXXXX)
export STOL_RUNTIME_DIR=$scratch/run STOL_STATE_DIR=$scratch/state
cleanup() { systemd/stack.sh stop >/dev/null 2>&1 || true; rm -rf "$scratch"; }
trap cleanup EXIT
for scope in bundled reference; do
  database=$bundled; [[ $scope == reference ]] && database=$reference
  if [[ ! -s $database ]]; then echo "relevance $scope: skipped, $database is missing (make db / make reference-db)"; continue; fi
  systemd/stack.sh start "$bin" "$database" >/dev/null
  # The answers of a running service come from its in-memory indexes: wait for them
  # (the status says so), at most 120 s.
  loaded=
  for _ in $(seq 240); do
    if "$bin/stol-client" status --json 2>/dev/null | python3 -c 'import json,sys; s=json.load(sys.stdin); sys.exit(0 if s.get("tree_loaded") and (s.get("full_tree_loaded") or not s.get("full_tree_nodes")) else 1)'; then
      loaded=1; break
    fi
    sleep 0.5
  done
  [[ -n $loaded ]] || { echo "relevance $scope: the in-memory indexes did not load within 120 s" >&2; exit 1; }
  python3 Pipeline/scripts/relevance.py --client "$bin/stol-client" --queries Tests/relevance/everyday-queries.tsv \
    --scope "$scope" --runtime-dir "$STOL_RUNTIME_DIR" --served-as "$scope"
  systemd/stack.sh stop >/dev/null
done

"""STOL from Python: the majority vote of every set of INPUT (one set per line, taxids separated by
spaces), with the `stol` package.

    STOL_RUNTIME_DIR=RUN PYTHONPATH=clients/python /usr/bin/python3 stol_python_majority.py INPUT OUTPUT

Issue 24's row "STOL python" of `make bench-peers`' majority workload: one process starts the
interpreter, imports the package and connects, as taxopy's program does. Taxonomy.lca_sets streams the
sets (lca_batch: up to 1000 sets, 10,000 members and 64 KiB per request, 4 in flight, one release for
the whole batch) with majority=0.5 on NCBI's whole tree (ranks="all"), taxopy's find_majority_vote. The
answer is the taxon and its support (taxopy's agreement); a set without a majority is NONE, a set none
of whose members is known !NOT_FOUND (a member unknown among known ones is listed in not_found and the
set answered from the others).

Debian's python3 with python3-protobuf, not the peers' virtual environment.
"""
import sys

import stol

from normalise import NOT_FOUND, Err, majority_line, read_lines

FRACTION = 0.5

source, target = sys.argv[1:3]
lines = read_lines(source)
with stol.Taxonomy() as tx, open(target, "w", encoding="utf-8") as out:
    for result in tx.lca_sets(((line, line.split()) for line in lines), majority=FRACTION, ranks="all"):
        if result.error is None:
            answer = (result.taxon.id, result.support)
        elif result.error.message.startswith("no taxon holds"):
            answer = None
        elif result.error.message.startswith("no member"):
            answer = NOT_FOUND
        else:
            answer = Err(result.error.code_name)
        out.write(majority_line(result.key, answer))

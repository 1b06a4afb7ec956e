"""STOL from Python: the whole lineage of every taxid of INPUT, as a notebook writes it with the `stol` package.

    STOL_RUNTIME_DIR=RUN PYTHONPATH=clients/python /usr/bin/python3 stol_python_lineage.py INPUT OUTPUT

Issue 23's row "STOL python" of `make bench-peers`: one process starts the interpreter,
imports the package and connects, as each peer's program does, but loads no
taxonomy: the shared server answers. One Taxonomy() (its socket from
STOL_RUNTIME_DIR) and one lineage(ids, ranks="all", names=False) iterator over every
id: 1000 queries per request, 4 requests in flight, the ids form (this workload
writes ids, as ete4's get_lineage and taxopy's taxid_lineage give them). A Lineage's
ids run from root 1 to the taxon, both included: already the normalised form.
A query that names nothing carries its typed error, written as !CODE.

Debian's python3 with python3-protobuf, not the peers' virtual environment.
"""
import sys

import stol

from normalise import Err, lineage_line, read_lines

source, target = sys.argv[1:3]
with stol.Taxonomy() as tx, open(target, "w", encoding="utf-8") as out:
    for lineage in tx.lineage(read_lines(source), ranks="all", names=False):
        out.write(lineage_line(lineage.query, Err(lineage.error.code_name) if lineage.error else lineage.ids))

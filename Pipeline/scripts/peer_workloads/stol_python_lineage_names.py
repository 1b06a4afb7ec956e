"""STOL from Python, names compared with names: the whole lineage of every taxid of INPUT with its names.

    STOL_RUNTIME_DIR=RUN PYTHONPATH=clients/python /usr/bin/python3 stol_python_lineage_names.py INPUT OUTPUT

Issue 38's row "STOL python names" of `make bench-peers`: as "STOL python" (one process,
interpreter start, `import stol` and connect included), but lineage(ids, ranks="all")
with the names, as a notebook that prints lineages asks for them; each line as
`stol-client lineage --ranks all --no-header` writes it (query, id, rank, name, the
scientific names root first joined by ";"), or query, the error code's name and its
message, so that the benchmark checks the names as it checks the CLI's.
"""
import sys

import stol

from normalise import read_lines

source, target = sys.argv[1:3]
with stol.Taxonomy() as tx, open(target, "w", encoding="utf-8") as out:
    for lineage in tx.lineage(read_lines(source), ranks="all"):
        if lineage.error is not None:
            out.write(f"{lineage.query}\t{lineage.error.code_name}\t{lineage.error.message}\n")
        else:
            taxon = lineage.taxon
            out.write(f"{lineage.query}\t{taxon.id}\t{taxon.rank}\t{taxon.name}\t{lineage}\n")

"""STOL from Python into pandas: one frame of the lineages of every taxid of INPUT.

    STOL_RUNTIME_DIR=RUN PYTHONPATH=clients/python /usr/bin/python3 stol_python_lineage_frame.py INPUT OUTPUT

Issue 38's row "STOL python frame" of `make bench-peers`: `stol.lineage_frame(ids,
ranks="all")` (Debian's python3-pandas), the frame then written one row per line as
`stol-client lineage --ranks all --no-header` writes it (query, id, rank, name, its
`lineage` column), or query and the `error` column, so that the benchmark checks its
names as it checks the CLI's. Building the frame is part of the time, as it is of a
notebook's.
"""
import sys

import stol

from normalise import read_lines

source, target = sys.argv[1:3]
frame = stol.lineage_frame(read_lines(source), ranks="all")
with open(target, "w", encoding="utf-8") as out:
    for row in frame.itertuples(index=False):
        if row.error is not None:
            out.write(f"{row.query}\t{row.error}\t\n")
        else:
            out.write(f"{row.query}\t{row.id}\t{row.rank}\t{row.name}\t{row.lineage}\n")

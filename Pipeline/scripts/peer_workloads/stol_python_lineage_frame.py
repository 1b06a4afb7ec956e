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
from peer_frame import write_frame  # the peers' frames are written by the same loop

source, target = sys.argv[1:3]
write_frame(stol.lineage_frame(read_lines(source), ranks="all"), target)

"""STOL from Python: the taxids of every scientific name of INPUT, with one name2id call.

    STOL_RUNTIME_DIR=RUN PYTHONPATH=clients/python /usr/bin/python3 stol_python_names.py INPUT OUTPUT

Issue 38's "STOL python" row of the names workload of `make bench-peers`: one process
(interpreter start, `import stol` and connect included), one `Taxonomy().name2id(names)`
(1000 names per request, several in flight), as ete4's get_name_translator is called
with the whole list. Every taxon carrying a name, at most 100 listed per name (the
protocol's cap; `.totals` has the real count): a name shared by more taxa disagrees
with taxopy's full list, and the benchmark says so. Names no taxon carries are written
as not found. Written in the normalised form (normalise.names_line).
"""
import sys

import stol

from normalise import names_line, read_lines

source, target = sys.argv[1:3]
names = read_lines(source)
with stol.Taxonomy() as tx:
    found = tx.name2id(names)
with open(target, "w", encoding="utf-8") as out:
    for name in names:
        out.write(names_line(name, found.get(name.strip(), [])))

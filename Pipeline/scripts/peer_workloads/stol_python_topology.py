"""STOL from Python: the smallest tree connecting the taxids of INPUT, with the `stol` package, written as Newick.

    STOL_RUNTIME_DIR=RUN PYTHONPATH=clients/python /usr/bin/python3 stol_python_topology.py INPUT OUTPUT

Issue 24's row "STOL python" of `make bench-peers`' topology workload: one process starts the interpreter,
imports the package and connects, as ete4's program does. Taxonomy.topology(ids, format="newick", ranks="all",
label="id") asks for the tree in one induced_tree request (at most 10,000 taxa), built as ete4's
get_topology(taxids, intermediate_nodes=False), and answers the Newick text stol-client tree --taxa --format
newick --label id prints: every node named by its taxid. The text goes to OUTPUT in one line, as ete4's does;
bench_peers.py reads it back into (taxon, parent) edges. Ids that name nothing would be in .not_found (the tree
is that of the others); the inputs are nodes of nodes.dmp, and the bench compares the trees node by node.

Debian's python3 with python3-protobuf, not the peers' virtual environment.
"""
import sys

import stol

from normalise import read_lines

source, target = sys.argv[1:3]
taxids = [int(q) for q in read_lines(source)]
with stol.Taxonomy() as tx:
    tree = tx.topology(taxids, format="newick", ranks="all", label="id")
with open(target, "w", encoding="utf-8") as out:
    out.write(tree + "\n")

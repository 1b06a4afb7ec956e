"""STOL from Python: taxonomy on the nodes of the Newick tree of INPUT with the `stol` package, written as Newick.

    STOL_RUNTIME_DIR=RUN PYTHONPATH=clients/python /usr/bin/python3 stol_python_annotate.py INPUT OUTPUT

The row "STOL python" of `make bench-peers`' annotate workload: one process starts the interpreter, imports the
package and connects, as ete4's program does. Taxonomy.annotate(newick) reads the tree as ete4's Tree(text,
parser=1) does, looks every distinct label up in lineage batches on NCBI's whole tree, and answers the tree with
ete4's annotate_tree properties in NHX (inner nodes without a taxon of their own: the common ancestor of their
annotated leaves, as ignore_unclassified=True), the text stol-client annotate prints; leaves that name nothing
stay as they were (.not_found). The text goes to OUTPUT in one line; bench_peers.py reads it back with ete4's
parser and compares every node's properties with ete4's.

Debian's python3 with python3-protobuf, not the peers' virtual environment.
"""
import sys

import stol

source, target = sys.argv[1:3]
with open(source, encoding="utf-8") as f:
    text = f.read().strip()
with stol.Taxonomy() as tx:
    tree = tx.annotate(text)
with open(target, "w", encoding="utf-8") as out:
    out.write(tree + "\n")

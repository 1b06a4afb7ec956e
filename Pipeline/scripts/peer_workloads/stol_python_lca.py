"""STOL from Python: the lowest common ancestor of every pair "A B" of INPUT, with the `stol` package.

    STOL_RUNTIME_DIR=RUN PYTHONPATH=clients/python /usr/bin/python3 stol_python_lca.py INPUT OUTPUT

Issue 23's row "STOL python" of `make bench-peers`: one process starts the interpreter,
imports the package and connects, as each peer's program does. Many pairs are what
Taxonomy.compare_pairs is for (compare_batch: 1000 pairs per request, 4 in flight, one
release for the whole batch); Taxonomy.lca(ids) folds one list of ids into one ancestor,
one round of compare_batch per halving, which for a pair would be a round trip per
pair. ranks="all": NCBI's whole tree, as the peers. A pair whose taxa have no common
ancestor (different roots: never on NCBI's tree) is NONE, a side naming nothing !CODE.

Debian's python3 with python3-protobuf, not the peers' virtual environment.
"""
import sys

import stol

from normalise import Err, lca_line, read_lines

source, target = sys.argv[1:3]
pairs = [line.split() for line in read_lines(source)]
with stol.Taxonomy() as tx, open(target, "w", encoding="utf-8") as out:
    for pair in tx.compare_pairs(pairs, ranks="all"):
        if pair.error is not None:
            answer = Err(pair.error.code_name)
        else:
            answer = pair.lca.id if pair.lca is not None else None
        out.write(lca_line(pair.a, pair.b, answer))

"""ete4: the smallest tree connecting the taxids of INPUT, with NCBITaxa.get_topology, written as Newick.

    python ete4_topology.py TAXDUMP_DIR ETE_DB INPUT OUTPUT   (TAXDUMP_DIR unused)

Issue 24's topology workload of `make bench-peers`: one process opens ETE_DB (the taxa.sqlite that
bench_peers.py builds once from the same taxdump), reads the taxids (one per line), calls
get_topology(taxids, intermediate_nodes=False, annotate=False) once and writes the tree to OUTPUT in one
Newick line, every node (inner ones and the top too) named by its taxid, as get_topology names them
(write(parser=8, format_root_node=True): names, no lengths, no extended properties).

annotate=False: the tree is written with taxids only, as `stol-client tree --taxa --format newick --label
id` writes it, so ete4 is not made to look up names, ranks and lineages nobody reads here (the default,
annotate=True, took about 0.1 s more for 1,000 taxids and 0.65 s more for 10,000 on this machine,
2026-11-26). bench_peers.py reads the Newick back into (taxon, parent) edges and compares them with STOL's.

An id ete4 does not know fails the whole call (KeyError in get_topology); every input id is a node of
nodes.dmp, so that does not happen here.
"""
import sys

from ete4 import NCBITaxa

from normalise import read_lines

_taxdump, ete_db, source, target = sys.argv[1:5]
ncbi = NCBITaxa(dbfile=ete_db, update=False)
taxids = [int(q) for q in read_lines(source)]
tree = ncbi.get_topology(taxids, intermediate_nodes=False, annotate=False)
with open(target, "w", encoding="utf-8") as out:
    out.write(tree.write(parser=8, format_root_node=True) + "\n")

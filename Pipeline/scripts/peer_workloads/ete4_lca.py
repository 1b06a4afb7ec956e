"""ete4: the lowest common ancestor of every pair "A B" of INPUT, from ete4 lineages.

    python ete4_lca.py TAXDUMP_DIR ETE_DB INPUT OUTPUT   (TAXDUMP_DIR unused)

ete4 has no LCA call for ids. Users either build get_topology([a, b]) and take its
root, or compare the two lineages; the lineages (one get_lineage_translator call
for every id of the file) are much faster than a topology per pair (bench_peers.py
--help), so that is what is timed. The LCA is the last node the two root-first
lineages share.
"""
import sys

from ete4 import NCBITaxa

from normalise import NOT_FOUND, lca_line, lca_of_lineages, read_lines

_taxdump, ete_db, source, target = sys.argv[1:5]
ncbi = NCBITaxa(dbfile=ete_db, update=False)
pairs = [line.split() for line in read_lines(source)]
lineages = ncbi.get_lineage_translator({int(x) for pair in pairs for x in pair})
with open(target, "w", encoding="utf-8") as out:
    for a, b in pairs:
        la, lb = lineages.get(int(a)), lineages.get(int(b))
        if la is None or lb is None:
            out.write(lca_line(a, b, NOT_FOUND))
        else:
            out.write(lca_line(a, b, lca_of_lineages(la, lb)))

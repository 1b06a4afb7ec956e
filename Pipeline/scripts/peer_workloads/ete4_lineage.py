"""ete4: the lineage of every taxid of INPUT, with NCBITaxa.get_lineage_translator.

    python ete4_lineage.py TAXDUMP_DIR ETE_DB INPUT OUTPUT   (TAXDUMP_DIR unused)

ETE_DB is the taxa.sqlite that bench_peers.py builds once from the same taxdump.
One get_lineage_translator call with every id (one SQL query) rather than
get_lineage per id: the fastest of the two (bench_peers.py --help). Its lineages
are root first, root 1 and the taxon included; an unknown id is left out of the dict.
"""
import sys

from ete4 import NCBITaxa

from normalise import NOT_FOUND, lineage_line, normalise_lineage, read_lines

_taxdump, ete_db, source, target = sys.argv[1:5]
ncbi = NCBITaxa(dbfile=ete_db, update=False)
queries = read_lines(source)
lineages = ncbi.get_lineage_translator([int(q) for q in queries])
with open(target, "w", encoding="utf-8") as out:
    for query in queries:
        lineage = lineages.get(int(query))
        if lineage is None:
            out.write(lineage_line(query, NOT_FOUND))
        else:
            out.write(lineage_line(query, normalise_lineage(lineage, int(query), order="root-first")))

"""ete4, names compared with names: the lineage of every taxid of INPUT with its scientific names.

    python ete4_lineage_names.py TAXDUMP_DIR ETE_DB INPUT OUTPUT   (TAXDUMP_DIR unused)

Issue 38's like-for-like peer of "STOL python names" (`make bench-peers`): one
get_lineage_translator call with every id (as ete4_lineage.py), then one get_taxid_translator
and one get_rank call for every id of those lineages (ete4's own way to name them: one SQL
query each), each line as `stol-client lineage --ranks all --no-header` writes it (query, id,
rank, name, the names root first joined by ";"), or query, NOT_FOUND and a message.
"""
import sys

from ete4 import NCBITaxa

from normalise import read_lines

_taxdump, ete_db, source, target = sys.argv[1:5]
ncbi = NCBITaxa(dbfile=ete_db, update=False)
queries = read_lines(source)
lineages = ncbi.get_lineage_translator([int(q) for q in queries])
every = {t for lineage in lineages.values() for t in lineage}
names = ncbi.get_taxid_translator(every)
ranks = ncbi.get_rank(lineages)
with open(target, "w", encoding="utf-8") as out:
    for query in queries:
        taxid = int(query)
        lineage = lineages.get(taxid)
        if lineage is None:
            out.write(f"{query}\tNOT_FOUND\tunknown taxid\n")
        else:
            out.write(f"{query}\t{taxid}\t{ranks.get(taxid, '')}\t{names[taxid]}\t"
                      f"{';'.join(names[t] for t in lineage)}\n")

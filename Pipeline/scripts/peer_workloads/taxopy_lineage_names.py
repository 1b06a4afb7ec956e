"""taxopy, names compared with names: the lineage of every taxid of INPUT with its scientific names.

    python taxopy_lineage_names.py TAXDUMP_DIR ETE_DB INPUT OUTPUT   (ETE_DB unused)

Issue 38's like-for-like peer of "STOL python names" (`make bench-peers`): Taxon(id).name_lineage,
each line as `stol-client lineage --ranks all --no-header` writes it (query, id, rank, name, the
names root first joined by ";"), or query, NOT_FOUND and a message. TaxDb as taxopy_lineage.py
makes it.
"""
import os
import sys

import taxopy
from taxopy.exceptions import TaxidError

from normalise import read_lines

taxdump, _ete_db, source, target = sys.argv[1:5]
taxdb = taxopy.TaxDb(nodes_dmp=os.path.join(taxdump, "nodes.dmp"), names_dmp=os.path.join(taxdump, "names.dmp"),
                     keep_files=True)
with open(target, "w", encoding="utf-8") as out:
    for query in read_lines(source):
        try:
            taxon = taxopy.Taxon(int(query), taxdb)
        except TaxidError:
            out.write(f"{query}\tNOT_FOUND\tunknown taxid\n")
            continue
        out.write(f"{query}\t{taxon.taxid}\t{taxon.rank}\t{taxon.name}\t{';'.join(reversed(taxon.name_lineage))}\n")

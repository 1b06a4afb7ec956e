"""taxopy: the lowest common ancestor of every pair "A B" of INPUT, with taxopy.find_lca.

    python taxopy_lca.py TAXDUMP_DIR ETE_DB INPUT OUTPUT   (ETE_DB unused)

Two Taxon objects per pair, then find_lca([a, b], taxdb), as taxopy's README shows.
taxopy raises LCAError when no taxon is shared (never on NCBI: everything is under 1).
"""
import os
import sys

import taxopy
from taxopy.exceptions import LCAError, TaxidError

from normalise import NOT_FOUND, lca_line, read_lines

taxdump, _ete_db, source, target = sys.argv[1:5]
taxdb = taxopy.TaxDb(nodes_dmp=os.path.join(taxdump, "nodes.dmp"), names_dmp=os.path.join(taxdump, "names.dmp"),
                     keep_files=True)
with open(target, "w", encoding="utf-8") as out:
    for line in read_lines(source):
        a, b = line.split()
        try:
            taxa = [taxopy.Taxon(int(a), taxdb), taxopy.Taxon(int(b), taxdb)]
        except TaxidError:
            out.write(lca_line(a, b, NOT_FOUND))
            continue
        try:
            out.write(lca_line(a, b, taxopy.find_lca(taxa, taxdb).taxid))
        except LCAError:
            out.write(lca_line(a, b, None))

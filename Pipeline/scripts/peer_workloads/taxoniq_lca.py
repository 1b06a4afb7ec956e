"""taxoniq: the lowest common ancestor of every pair "A B" of INPUT, from two lineages.

    python taxoniq_lca.py TAXDUMP_DIR ETE_DB INPUT OUTPUT   (both unused)

taxoniq's Taxon.lca raises NotImplementedError, so its users compare the two
Taxon(id).lineage lists: the LCA is the last node they share from the root.
"""
import sys

import taxoniq

from normalise import NOT_FOUND, lca_line, lca_of_lineages, normalise_lineage, read_lines


def root_first(taxid: int) -> list[int]:
    return normalise_lineage([t.tax_id for t in taxoniq.Taxon(taxid).lineage], taxid, order="taxon-first")


_taxdump, _ete_db, source, target = sys.argv[1:5]
with open(target, "w", encoding="utf-8") as out:
    for line in read_lines(source):
        a, b = line.split()
        try:
            la, lb = root_first(int(a)), root_first(int(b))
        except KeyError:
            out.write(lca_line(a, b, NOT_FOUND))
            continue
        out.write(lca_line(a, b, lca_of_lineages(la, lb)))

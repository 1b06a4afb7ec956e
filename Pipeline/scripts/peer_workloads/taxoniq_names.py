"""taxoniq: the taxid of every scientific name of INPUT, with Taxon(scientific_name=...).

    python taxoniq_names.py TAXDUMP_DIR ETE_DB INPUT OUTPUT   (both unused)

taxoniq's public API gives one taxon per name (the first record of its
scientific-name index), so a name shared by several taxa resolves to one of
them. An unknown name raises KeyError.
"""
import sys

import taxoniq

from normalise import NOT_FOUND, names_line, read_lines

_taxdump, _ete_db, source, target = sys.argv[1:5]
with open(target, "w", encoding="utf-8") as out:
    for name in read_lines(source):
        try:
            out.write(names_line(name, [taxoniq.Taxon(scientific_name=name).tax_id]))
        except KeyError:
            out.write(names_line(name, NOT_FOUND))

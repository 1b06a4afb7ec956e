"""ete4: the taxids of every scientific name of INPUT, with NCBITaxa.get_name_translator.

    python ete4_names.py TAXDUMP_DIR ETE_DB INPUT OUTPUT   (TAXDUMP_DIR unused)

One call with the whole list. ete4 matches case-insensitively (its spname column
is COLLATE NOCASE) and returns every taxon with the name; names it does not find
among scientific names it looks up among synonyms (none in this snapshot).
"""
import sys

from ete4 import NCBITaxa

from normalise import NOT_FOUND, names_line, read_lines

_taxdump, ete_db, source, target = sys.argv[1:5]
ncbi = NCBITaxa(dbfile=ete_db, update=False)
names = read_lines(source)
found = ncbi.get_name_translator(names)
with open(target, "w", encoding="utf-8") as out:
    for name in names:
        out.write(names_line(name, found.get(name, NOT_FOUND)))

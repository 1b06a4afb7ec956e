"""taxopy: the taxids of every scientific name of INPUT, with taxopy.taxid_from_name.

    python taxopy_names.py TAXDUMP_DIR ETE_DB INPUT OUTPUT   (ETE_DB unused)

One call with the whole list (taxopy then builds its name index once; called per
name it scans every taxon each time). Exact match on scientific names; every
taxon with that name is returned.
"""
import os
import sys
import warnings

import taxopy

from normalise import read_lines, names_line

taxdump, _ete_db, source, target = sys.argv[1:5]
taxdb = taxopy.TaxDb(nodes_dmp=os.path.join(taxdump, "nodes.dmp"), names_dmp=os.path.join(taxdump, "names.dmp"),
                     keep_files=True)
names = read_lines(source)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # "At least one of the input names was not found"
    found = taxopy.taxid_from_name(names, taxdb)
with open(target, "w", encoding="utf-8") as out:
    for name, ids in zip(names, found):
        out.write(names_line(name, ids))

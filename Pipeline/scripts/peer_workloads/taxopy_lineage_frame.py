"""taxopy into pandas: one frame of the lineages of every taxid of INPUT, as "STOL python frame" builds STOL's.

    python taxopy_lineage_frame.py TAXDUMP_DIR ETE_DB INPUT OUTPUT   (ETE_DB unused)

Issue 38's like-for-like peer of `stol.lineage_frame(ids, ranks="all")`: Taxon(id) with its
name_lineage and rank_name_dictionary, the frame built and written by peer_frame.py.
"""
import os
import sys

import taxopy
from taxopy.exceptions import TaxidError

from normalise import read_lines
from peer_frame import PeerFrame, write_frame

taxdump, _ete_db, source, target = sys.argv[1:5]
taxdb = taxopy.TaxDb(nodes_dmp=os.path.join(taxdump, "nodes.dmp"), names_dmp=os.path.join(taxdump, "names.dmp"),
                     keep_files=True)
frame = PeerFrame()
for query in read_lines(source):
    try:
        taxon = taxopy.Taxon(int(query), taxdb)
    except TaxidError:
        frame.missing(query)
        continue
    frame.add(query, taxon.taxid, taxon.rank, taxon.name, reversed(taxon.name_lineage), taxon.rank_name_dictionary)
write_frame(frame.frame(), target)

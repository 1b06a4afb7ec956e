"""taxoniq into pandas: one frame of the lineages of every taxid of INPUT, as "STOL python frame" builds STOL's.

    python taxoniq_lineage_frame.py TAXDUMP_DIR ETE_DB INPUT OUTPUT   (both unused)

Issue 38's like-for-like peer of `stol.lineage_frame(ids, ranks="all")`: each Taxon of
Taxon(id).lineage with its scientific_name and rank, the frame built and written by peer_frame.py.
"""
import sys

import taxoniq

from normalise import read_lines
from peer_frame import PeerFrame, write_frame

_taxdump, _ete_db, source, target = sys.argv[1:5]
frame = PeerFrame()
for query in read_lines(source):
    try:
        taxon = taxoniq.Taxon(int(query))
        lineage = [(t.scientific_name, t.rank.name) for t in taxon.lineage]
    except KeyError:
        frame.missing(query)
        continue
    frame.add(query, taxon.tax_id, taxon.rank.name, lineage[0][0], [n for n, _ in reversed(lineage)],
              {rank: name for name, rank in reversed(lineage)})
write_frame(frame.frame(), target)

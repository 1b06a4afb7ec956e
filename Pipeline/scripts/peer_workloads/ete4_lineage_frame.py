"""ete4 into pandas: one frame of the lineages of every taxid of INPUT, as "STOL python frame" builds STOL's.

    python ete4_lineage_frame.py TAXDUMP_DIR ETE_DB INPUT OUTPUT   (TAXDUMP_DIR unused)

Issue 38's like-for-like peer of `stol.lineage_frame(ids, ranks="all")`: one
get_lineage_translator call, then one get_taxid_translator and one get_rank call for every
id of those lineages (as ete4_lineage_names.py), the frame built and written by peer_frame.py.
"""
import sys

from ete4 import NCBITaxa

from normalise import read_lines
from peer_frame import PeerFrame, write_frame

_taxdump, ete_db, source, target = sys.argv[1:5]
ncbi = NCBITaxa(dbfile=ete_db, update=False)
queries = read_lines(source)
lineages = ncbi.get_lineage_translator([int(q) for q in queries])
every = {t for lineage in lineages.values() for t in lineage}
names = ncbi.get_taxid_translator(every)
ranks = ncbi.get_rank(every)
frame = PeerFrame()
for query in queries:
    taxid = int(query)
    lineage = lineages.get(taxid)
    if lineage is None:
        frame.missing(query)
        continue
    frame.add(query, taxid, ranks.get(taxid, ""), names[taxid], [names[t] for t in lineage],
              {ranks[t]: names[t] for t in lineage if t in ranks})
write_frame(frame.frame(), target)

"""taxopy: the majority vote of every set of INPUT (one set per line, taxids separated by spaces), with
taxopy.find_majority_vote.

    python taxopy_majority.py TAXDUMP_DIR ETE_DB INPUT OUTPUT   (ETE_DB unused)

TaxDb(nodes_dmp=, names_dmp=) as the lineage workload builds it; per set one Taxon per member, then
find_majority_vote(taxa, taxdb, fraction=0.5) (unweighted), as taxopy's README shows. The answer is the
taxon and its agreement (the share of the members whose lineage holds it). MajorityVoteError (no taxon
holds more than half: never on NCBI's tree, where every lineage holds root 1) is NONE; a member taxopy
does not know fails the set (TaxidError): !NOT_FOUND.
"""
import os
import sys

import taxopy
from taxopy.exceptions import MajorityVoteError, TaxidError

from normalise import NOT_FOUND, majority_line, read_lines

FRACTION = 0.5

taxdump, _ete_db, source, target = sys.argv[1:5]
taxdb = taxopy.TaxDb(nodes_dmp=os.path.join(taxdump, "nodes.dmp"), names_dmp=os.path.join(taxdump, "names.dmp"),
                     keep_files=True)
with open(target, "w", encoding="utf-8") as out:
    for line in read_lines(source):
        try:
            taxa = [taxopy.Taxon(int(member), taxdb) for member in line.split()]
        except TaxidError:
            out.write(majority_line(line, NOT_FOUND))
            continue
        try:
            vote = taxopy.find_majority_vote(taxa, taxdb, fraction=FRACTION)
        except MajorityVoteError:
            out.write(majority_line(line, None))
            continue
        out.write(majority_line(line, (vote.taxid, vote.agreement)))

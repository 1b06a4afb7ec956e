"""Ids of every rank of the database a test stack serves, for the tests of
``lineage_format``, ``filter`` and ``annotate``: whatever the database (the curated
fixture of ``make test``, NCBI's bundled subset, the whole NCBI reference), the
sample holds some taxa of each rank its whole tree has (strains, subspecies, ``no
rank``, ``clade``, viruses where the database has them), so that the tests exercise
every rank the database offers rather than a hand-picked few."""

from __future__ import annotations

import random
from typing import Dict, List, Tuple

import _stack  # noqa: F401 - first: it puts this checkout's package on sys.path

import stol

#: NCBI ids worth asking whatever the sample holds: the root and `cellular
#: organisms`, the domains, species, a subspecies (161), strains (E. coli K-12 and
#: MG1655), a serovar (90371), Viruses and viruses of several ranks (the realm
#: Riboviria, HIV-1, SARS-CoV-2 and its species), 424242 (a species of NCBI's whole
#: tree that the smaller databases lack), and ids no release has (999999999,
#: 2^31 - 1). Those a database lacks are answered NOT_FOUND, which the tests check too.
NOTABLE_IDS = [1, 131567, 2, 2157, 2759, 10239, 2559587, 9606, 9598, 9605, 207598, 10090, 10116, 9689, 562, 83333,
               511145, 161, 90371, 11676, 2697049, 694009, 3055, 4932, 1280, 424242, 999999999, 2147483647]

_CACHE: Dict[str, Dict[int, Tuple[str, str]]] = {}


def tree_nodes(tx: stol.Taxonomy) -> Dict[int, Tuple[str, str]]:
    """``{id: (rank, scientific name)}`` of every node of the served whole tree
    (``ranks="all"``), read with ``subtree`` (50,000 nodes at most per answer),
    splitting a subtree too large for one answer into its children's."""
    key = tx.path
    if key in _CACHE:
        return _CACHE[key]
    tops = sorted({tx.lineage(root.id, ranks="all", names=False).ids[0] for root in tx.roots()})
    nodes: Dict[int, Tuple[str, str]] = {}
    pending = list(tops)
    while pending:
        top = pending.pop()
        try:
            answer = tx.subtree(top, format="nodes", ranks="all", max_taxa=50000)
        except stol.InvalidRequestError:
            taxon = tx.lineage(top, ranks="all").taxon
            nodes[top] = (taxon.rank, taxon.name)
            pending.extend(child.id for child in tx.children(top, ranks="all"))
            continue
        nodes.update((node.id, (node.rank, node.name)) for node in answer)
    _CACHE[key] = nodes
    return nodes


def tree_ranks(tx: stol.Taxonomy) -> Dict[int, str]:
    """``{id: rank}`` of every node of the served whole tree."""
    return {taxon_id: rank for taxon_id, (rank, _) in tree_nodes(tx).items()}


def sample_ids(tx: stol.Taxonomy, per_rank: int = 6, seed: int = 24) -> List[int]:
    """Up to ``per_rank`` ids of each rank of the served tree (seeded), then the
    notable ids, in a seeded random order."""
    by_rank: Dict[str, List[int]] = {}
    for taxon_id, rank in sorted(tree_ranks(tx).items()):
        by_rank.setdefault(rank, []).append(taxon_id)
    rng = random.Random(seed)
    ids: List[int] = []
    for rank in sorted(by_rank):
        members = by_rank[rank]
        ids.extend(rng.sample(members, min(per_rank, len(members))))
    ids.extend(NOTABLE_IDS)
    rng.shuffle(ids)
    return ids

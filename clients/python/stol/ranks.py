"""The order of NCBI's ranks, top down, and taxonkit's ``filter`` rules on it.

This module is a port of ``Sources/STOLModel/RankOrder.swift`` (``enum RankOrder``
and ``struct RankFilter``), the Swift client's copy of the same table and rules
(``stol-client filter``). The two must stay identical, so that a filter gives the same
answer from Python and from the command line: change one, change the other.

Spellings on one level are the same rank to a filter: NCBI renamed ``superkingdom``
to ``domain`` in 2025 and gave Viruses the new rank ``acellular root``, and a script
written for one release must keep working on the other, so ``rank="superkingdom"``
also keeps the domains of a 2025 database. Ranks outside the order (``no rank``,
``clade``, and any rank this table does not know) have no level: a filter keeps them
unless told to discard them, as taxonkit does.

Nothing here asks the service: :class:`RankFilter` judges ranks you give it;
:meth:`stol.Taxonomy.filter` asks for the ranks (NCBI's own, the whole tree) and
applies it.
"""

from __future__ import annotations

from typing import Dict, Iterable, List, Optional, Sequence, Tuple, Union

from . import errors

__all__ = ["LEVELS", "UNORDERED", "level", "order", "RankFilter"]

#: Levels from the top; each entry lists the spellings of one level (the Swift
#: ``RankOrder.levels``, entry for entry).
LEVELS: Tuple[Tuple[str, ...], ...] = (
    ("acellular root", "cellular root"),
    ("domain", "superkingdom", "realm", "empire"),
    ("kingdom",), ("subkingdom",), ("infrakingdom",),
    ("superphylum", "superdivision"), ("phylum", "division"), ("subphylum", "subdivision"),
    ("infraphylum", "infradivision"),
    ("superclass",), ("class",), ("subclass",), ("infraclass",), ("parvclass",),
    ("supercohort",), ("cohort",), ("subcohort",), ("infracohort",),
    ("superorder",), ("order",), ("suborder",), ("infraorder",), ("parvorder",),
    ("superfamily",), ("epifamily",), ("family",), ("subfamily",), ("infrafamily",),
    ("supertribe",), ("tribe",), ("subtribe",),
    ("genus",), ("subgenus",), ("section",), ("subsection",), ("series",), ("subseries",),
    ("species group", "superspecies"), ("species subgroup",), ("species",),
    ("subspecies", "forma specialis", "pathovar"),
    ("serogroup", "pathogroup"), ("serotype", "biotype", "genotype"),
    ("varietas", "variety", "morph"), ("subvariety", "subvarietas"), ("forma", "form"), ("subforma", "subform"),
    ("strain",), ("isolate",),
)

#: Ranks that say a node has none (kept by default, dropped by ``discard_noranks``).
UNORDERED: Tuple[str, ...] = ("no rank", "clade")

_LEVEL_OF_RANK: Dict[str, int] = {spelling: index for index, spellings in enumerate(LEVELS) for spelling in spellings}


def _normalized(rank: str) -> str:
    # The Swift trimmingBlanks: spaces and tabs only, then lower case.
    return rank.strip(" \t").lower()


def level(rank: str) -> Optional[int]:
    """The level of ``rank`` (0 at the top: ``acellular root``/``cellular root``; 1:
    ``domain``, ``superkingdom``, ``realm``; ... ``isolate`` last), or ``None`` for a
    rank without order (``no rank``, ``clade``, a rank the table does not list). Case
    and surrounding blanks do not matter (``"Genus"``, ``"genus "``)."""
    return _LEVEL_OF_RANK.get(_normalized(rank))


def order() -> List[str]:
    """The order as ``stol-client filter --list-order`` prints it: one line per level,
    top down, its spellings comma-separated, then the unordered ranks each after a
    ``!`` (``"!no rank,!clade"``)."""
    return [",".join(spellings) for spellings in LEVELS] + [",".join("!" + rank for rank in UNORDERED)]


def _level_or_error(rank: str) -> int:
    found = level(rank)
    if found is None:
        raise errors.InvalidRequestError("unknown rank '%s'; the ordered ranks are listed by stol.ranks.order()"
                                         % (rank,), details={"rank": rank})
    return found


def _rank_list(rank: Union[None, str, Iterable[str]]) -> List[str]:
    """``rank`` as a list: a str may hold several, comma-separated, as the command
    line's ``--rank genus,species``; blanks around each are dropped, empty ones too."""
    if rank is None:
        return []
    values = [rank] if isinstance(rank, str) else list(rank)
    out: List[str] = []
    for value in values:
        if not isinstance(value, str):
            raise TypeError("a rank is a str, not %r" % (value,))
        out.extend(part.strip(" \t") for part in value.split(","))
    return [part for part in out if part]


class RankFilter:
    """Which taxa a rank filter keeps: taxonkit's ``filter`` rules.

    - With ``lower_than`` (or ``higher_than``), a taxon whose rank is strictly below
      (above) that rank; with ``rank`` as well, also the taxa of those ranks; with
      ``rank`` alone, only them; with none of the three, every ranked taxon.
    - A taxon without an ordered rank (``no rank``, ``clade``, an unknown rank) is kept
      unless ``discard_noranks``. With ``save_predictable_noranks`` (which needs
      ``lower_than`` and implies ``discard_noranks``) it is kept when its nearest
      ancestor with an ordered rank is at or below the ``lower_than`` rank: a ``no
      rank`` serotype under a species passes ``lower_than="genus"``, and so does a
      ``no rank`` directly under a genus (the genus is *at* the bound); one under a
      family does not.

    ``rank``: one rank, several comma-separated (``"genus,species"``) or a list.
    Raises :class:`~stol.InvalidRequestError` (a ``ValueError``) for an unknown rank,
    both bounds at once, or ``save_predictable_noranks`` without ``lower_than``, where
    ``stol-client filter`` refuses the same options."""

    __slots__ = ("lower_than", "higher_than", "equal_to", "discard_noranks", "save_predictable_noranks")

    def __init__(self, lower_than: Optional[str] = None, higher_than: Optional[str] = None,
                 rank: Union[None, str, Iterable[str]] = None, discard_noranks: bool = False,
                 save_predictable_noranks: bool = False):
        if lower_than is not None and higher_than is not None:
            raise errors.InvalidRequestError("lower_than and higher_than cannot be used together")
        if save_predictable_noranks and lower_than is None:
            raise errors.InvalidRequestError("save_predictable_noranks goes with lower_than")
        #: The levels of the bounds (``None``: no bound) and of the ranks kept as they are.
        self.lower_than: Optional[int] = None if lower_than is None else _level_or_error(lower_than)
        self.higher_than: Optional[int] = None if higher_than is None else _level_or_error(higher_than)
        self.equal_to: frozenset = frozenset(_level_or_error(value) for value in _rank_list(rank))
        self.discard_noranks = bool(discard_noranks or save_predictable_noranks)
        self.save_predictable_noranks = bool(save_predictable_noranks)

    def __repr__(self) -> str:
        return ("RankFilter(lower_than=%r, higher_than=%r, equal_to=%r, discard_noranks=%r, "
                "save_predictable_noranks=%r)" % (self.lower_than, self.higher_than, sorted(self.equal_to),
                                                  self.discard_noranks, self.save_predictable_noranks))

    def keeps(self, rank: str, ancestor_ranks: Iterable[str] = ()) -> bool:
        """Whether a taxon of ``rank`` passes. ``ancestor_ranks`` are the ranks above it,
        **nearest first** (only read for a taxon without an ordered rank under
        ``save_predictable_noranks``; from a :class:`~stol.Lineage` of ``ranks="all"``:
        ``reversed(lineage.ranks[:-1])``). The root itself (no ancestors) is never
        predictable."""
        found = level(rank)
        if found is None:
            if not self.discard_noranks:
                return True
            if not self.save_predictable_noranks or self.lower_than is None:
                return False
            for ancestor in ancestor_ranks:
                above = level(ancestor)
                if above is not None:
                    return above >= self.lower_than
            return False
        if found in self.equal_to:
            return True
        if self.lower_than is not None:
            return found > self.lower_than
        if self.higher_than is not None:
            return found < self.higher_than
        return not self.equal_to

    def keeps_lineage(self, lineage: Sequence[str]) -> bool:
        """Whether the last taxon of a lineage of ranks, root first and the taxon last
        (a :class:`~stol.Lineage`'s ``ranks`` with ``ranks="all"``), passes."""
        if not lineage:
            return False
        return self.keeps(lineage[-1], reversed(lineage[:-1]))

"""Lineages written in a template of rank placeholders, as taxonkit's
``reformat -f "{k};{p};{c};{o};{f};{g};{s}"`` writes them, so that pipelines built
around taxonkit's columns (and ``stol-client lineage --format``) take the same text
from Python.

This module is a port of ``Sources/STOLModel/LineageFormat.swift``, the Swift
client's copy of the same rules: the placeholder table, the template scanner, the
fill of a missing rank and the rank prefixes must stay identical in both, because
the tests compare this package's text with ``stol-client lineage --format`` byte
for byte. Change one, change the other.

It needs nothing from the service: :class:`LineageFormat` formats any lineage given
as (rank, name) pairs, root first (a :class:`~stol.Lineage` of ``ranks="all"``, or
pairs of your own). :meth:`stol.Taxonomy.lineage_format` asks the service for the
lineages and formats them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Sequence, Tuple, Union

from . import errors

__all__ = ["LineageFormat", "Placeholder", "PLACEHOLDERS", "DEFAULT_FILL", "slot_of_rank"]


@dataclass(frozen=True)
class Placeholder:
    """A placeholder of the template: one of the ranks a lineage is written in.

    ``letter``: taxonkit's letter (``k``, ``K``, ``p``, ...); ``name``: the rank's name
    as the fill's ``{rank}`` writes it; ``ranks``: the spellings, as the sources write
    them, that fill it (old and new alike); ``prefix``: the prefix of
    ``prefix_ranks``; ``level``: how deep the rank is (a missing rank's ``{higher}`` is
    the nearest filled placeholder of a smaller level); ``aliases``: other names that
    stand for it in a template."""
    letter: str
    name: str
    ranks: Tuple[str, ...]
    prefix: str
    level: int
    aliases: Tuple[str, ...]


#: Every placeholder, from the top of the tree down, in the Swift table's order (the
#: order decides ties: the domain before the realm, both at level 0). The domain is
#: ``k`` (taxonkit's superkingdom: NCBI's ``superkingdom`` before 2025, ``domain``
#: since, and ``acellular root``, the rank of Viruses since 2025) prefixed ``d__`` as
#: GTDB and QIIME write it; the kingdom is ``K`` and ``k__``. Realm is the top of
#: virus taxonomy, at the domain's level.
PLACEHOLDERS: Tuple[Placeholder, ...] = (
    Placeholder("k", "domain", ("domain", "superkingdom", "acellular root"), "d__", 0, ("d", "domain", "superkingdom")),
    Placeholder("r", "realm", ("realm",), "r__", 0, ("realm",)),
    Placeholder("K", "kingdom", ("kingdom",), "k__", 1, ("kingdom",)),
    Placeholder("p", "phylum", ("phylum", "division"), "p__", 2, ("phylum", "division")),
    Placeholder("c", "class", ("class",), "c__", 3, ("class",)),
    Placeholder("o", "order", ("order",), "o__", 4, ("order",)),
    Placeholder("f", "family", ("family",), "f__", 5, ("family",)),
    Placeholder("g", "genus", ("genus",), "g__", 6, ("genus",)),
    Placeholder("s", "species", ("species",), "s__", 7, ("species",)),
    Placeholder("S", "subspecies", ("subspecies",), "t__", 8, ("subspecies",)),
    Placeholder("t", "strain", ("strain",), "T__", 9, ("strain",)),
)

#: The default text of a missing rank with ``fill=True``, as taxonkit's ``-F`` writes
#: it (``unclassified Felidae genus``).
DEFAULT_FILL = "unclassified {higher} {rank}"


def _slot_of_rank() -> Dict[str, int]:
    table: Dict[str, int] = {}
    for slot, placeholder in enumerate(PLACEHOLDERS):
        for rank in placeholder.ranks:
            table.setdefault(rank, slot)  # the first placeholder wins, as the Swift table's uniquingKeysWith
    return table


def _slot_of_name() -> Dict[str, int]:
    table: Dict[str, int] = {}
    for slot, placeholder in enumerate(PLACEHOLDERS):
        table[placeholder.letter] = slot
        for alias in placeholder.aliases:
            table[alias] = slot
    return table


_SLOT_OF_RANK = _slot_of_rank()
_SLOT_OF_NAME = _slot_of_name()


def slot_of_rank(rank: str) -> Optional[int]:
    """The placeholder a source's rank fills, as its position in :data:`PLACEHOLDERS`
    (``None`` for any other rank). Exact spelling: ranks come from the service as the
    source writes them, lower case."""
    return _SLOT_OF_RANK.get(rank)


_PLACEHOLDER_HELP = ("use {k} {K} {p} {c} {o} {f} {g} {s} {S} {t} {r} (or the rank's name: {domain}, {genus}, …)")


def _split(template: str) -> List[Tuple[bool, str]]:
    """A template's literal text and ``{name}`` parts, in order: ``(is_name, text)``.
    The one scanner of both templates (the Swift ``split``): a ``{`` opens a name that
    runs to the next ``}``; a ``}`` alone is text."""
    parts: List[Tuple[bool, str]] = []
    text: List[str] = []
    index, end = 0, len(template)
    while index < end:
        character = template[index]
        if character != "{":
            text.append(character)
            index += 1
            continue
        close = template.find("}", index + 1)
        if close < 0:
            raise errors.InvalidRequestError("a '{' without its '}'", details={"template": template,
                                                                               "position": str(index)})
        if text:
            parts.append((False, "".join(text)))
            text = []
        parts.append((True, template[index + 1:close]))
        index = close + 1
    if text:
        parts.append((False, "".join(text)))
    return parts


#: A fill template's variables.
_HIGHER, _HIGHER_RANK, _RANK = object(), object(), object()
_FILL_VARIABLES = {"higher": _HIGHER, "higher_rank": _HIGHER_RANK, "rank": _RANK}

LineageLike = Union["Lineage", Iterable[Tuple[str, str]]]  # noqa: F821 - stol.answers.Lineage, or (rank, name) pairs


class LineageFormat:
    """A parsed template: ``LineageFormat("{k};{p};{c};{o};{f};{g};{s}")`` then
    ``.format(lineage)`` for as many lineages as you like.

    Placeholders: ``{k}`` domain (NCBI's ``superkingdom`` before 2025, ``domain``
    since, and ``acellular root``, the rank of Viruses since 2025), ``{K}`` kingdom,
    ``{p}`` phylum (or division), ``{c}`` class, ``{o}`` order, ``{f}`` family, ``{g}``
    genus, ``{s}`` species, ``{S}`` subspecies, ``{t}`` strain, ``{r}`` realm; or the
    rank's name instead of its letter (``{domain}``, ``{superkingdom}`` and ``{d}`` are
    ``{k}``, ``{phylum}`` is ``{p}``, ...). Anything else in the template is copied as
    it is.

    ``fill``: what a rank the lineage lacks gives. ``None`` or ``False``: an empty
    field; ``True``: :data:`DEFAULT_FILL` (``"unclassified {higher} {rank}"``, taxonkit's
    ``--fill-miss-rank``: ``unclassified Felidae genus``); a string: a fill template
    of its own, with ``{higher}`` (the name of the nearest rank above it that the
    lineage has), ``{higher_rank}`` (that rank's name) and ``{rank}`` (the missing
    rank's name). A fill naming ``{higher}`` or ``{higher_rank}`` leaves the field
    empty when no rank above is there (the top of a lineage, Kraken's unclassified 0).

    ``prefix_ranks``: every non-empty field starts with its rank's prefix as MetaPhlAn
    and QIIME write them: ``d__`` domain, ``k__`` kingdom, ``p__``, ``c__``, ``o__``,
    ``f__``, ``g__``, ``s__``, ``t__`` subspecies, ``T__`` strain, ``r__`` realm.

    A template is checked here, before any lineage is asked for: an unknown
    placeholder, a ``{`` without its ``}`` or an unknown fill variable raises
    :class:`~stol.InvalidRequestError` (a ``ValueError``) with the same sentence as
    ``stol-client lineage --format``."""

    def __init__(self, template: str, fill: Union[None, bool, str] = None, prefix_ranks: bool = False):
        if not isinstance(template, str):
            raise TypeError("the template is a str, not %r" % (template,))
        pieces: List[Union[str, int]] = []
        for is_name, text in _split(template):
            if not is_name:
                pieces.append(text)
                continue
            slot = _SLOT_OF_NAME.get(text)
            if slot is None:
                raise errors.InvalidRequestError("unknown placeholder {%s}; %s" % (text, _PLACEHOLDER_HELP),
                                                 details={"template": template, "placeholder": text})
            pieces.append(slot)
        if fill is True:
            fill = DEFAULT_FILL
        elif fill is False:
            fill = None
        elif fill is not None and not isinstance(fill, str):
            raise TypeError("fill is None, True or a fill template (str), not %r" % (fill,))
        self.template = template
        #: The fill template (``None``: a missing rank is empty).
        self.fill: Optional[str] = fill
        self.prefix_ranks = bool(prefix_ranks)
        self._pieces = pieces
        self._fill = None if fill is None else self._parse_fill(fill)

    @staticmethod
    def _parse_fill(template: str) -> list:
        pieces: list = []
        for is_name, text in _split(template):
            if not is_name:
                pieces.append(text)
                continue
            variable = _FILL_VARIABLES.get(text)
            if variable is None:
                raise errors.InvalidRequestError(
                    "unknown variable {%s} in the fill template; use {higher} {higher_rank} {rank}" % (text,),
                    details={"fill": template, "variable": text})
            pieces.append(variable)
        return pieces

    @property
    def fills_missing(self) -> bool:
        """Whether a missing rank is filled."""
        return self._fill is not None

    def __repr__(self) -> str:
        return "LineageFormat(%r, fill=%r, prefix_ranks=%r)" % (self.template, self.fill, self.prefix_ranks)

    def __eq__(self, other) -> bool:
        if not isinstance(other, LineageFormat):
            return NotImplemented
        return (self.template, self.fill, self.prefix_ranks) == (other.template, other.fill, other.prefix_ranks)

    def __hash__(self) -> int:
        return hash((self.template, self.fill, self.prefix_ranks))

    def format(self, lineage: LineageLike) -> str:
        """The template filled from a lineage: a :class:`~stol.Lineage` (asked for with
        names; ``ranks="all"`` gives NCBI's own ranks, so that subspecies, strain and
        realm can fill), or (rank, name) pairs, root first. For a rank that occurs
        twice the lowest one counts. An empty lineage (Kraken's 0) gives every field
        empty or filled."""
        pairs: Iterable[Tuple[str, str]]
        ranks = getattr(lineage, "ranks", None)
        if ranks is not None or hasattr(lineage, "names"):
            names = getattr(lineage, "names", None)
            if ranks is None or names is None:
                raise ValueError("the lineage of %r was asked for with names=False: it has ids only "
                                 "(ask with names=True to format it)" % (getattr(lineage, "query", ""),))
            pairs = zip(ranks, names)
        else:
            pairs = lineage  # type: ignore[assignment]
        slots: List[Optional[str]] = [None] * len(PLACEHOLDERS)
        table = _SLOT_OF_RANK
        for rank, name in pairs:
            slot = table.get(rank)
            if slot is not None:
                slots[slot] = name
        return self.format_names(slots)

    def format_names(self, names: Sequence[Optional[str]]) -> str:
        """The template filled from the name of each placeholder (indexed as
        :data:`PLACEHOLDERS`; ``None`` where the lineage has none): what :meth:`format`
        gives once the lineage is sorted into placeholders (:func:`slot_of_rank`)."""
        if len(names) != len(PLACEHOLDERS):
            raise ValueError("one name or None per placeholder (%d), not %d" % (len(PLACEHOLDERS), len(names)))
        out: List[str] = []
        for piece in self._pieces:
            if isinstance(piece, str):
                out.append(piece)
                continue
            value = names[piece]
            if value is None:
                value = self._filled(piece, names)
            if not value:  # None, or a name that is empty
                continue
            if self.prefix_ranks:
                out.append(PLACEHOLDERS[piece].prefix)
            out.append(value)
        return "".join(out)

    def _filled(self, slot: int, names: Sequence[Optional[str]]) -> Optional[str]:
        """The fill of the missing placeholder ``slot``, or ``None`` (no fill, or none
        above it when the fill names it)."""
        if self._fill is None:
            return None
        level = PLACEHOLDERS[slot].level
        higher: Optional[Tuple[str, str, int]] = None  # (name, rank, level) of the nearest filled one above
        for other, placeholder in enumerate(PLACEHOLDERS):
            if placeholder.level >= level:
                continue
            name = names[other]
            if not name:
                continue
            if placeholder.level > (higher[2] if higher is not None else -1):
                higher = (name, placeholder.name, placeholder.level)
        out: List[str] = []
        for piece in self._fill:
            if isinstance(piece, str):
                out.append(piece)
            elif piece is _RANK:
                out.append(PLACEHOLDERS[slot].name)
            else:
                if higher is None:
                    return None
                out.append(higher[0] if piece is _HIGHER else higher[1])
        return "".join(out)

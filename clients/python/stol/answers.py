"""The Python values ``stol`` answers with, made from the protocol's messages.

Plain, immutable objects: ranks, statuses and match types are lower-case
strings (``"species"``, ``"accepted"``, ``"common"``), an absent optional field
is ``None``. Every answer says which release answered it (``release``: the name
that pins it, ``"bundled"`` for the bundled database; PROTOCOL.md §4): on a
single object as an attribute, on a list or dict answer as an attribute of the
container.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from typing import Dict, Iterator, List, Optional, Tuple

from . import errors
from ._enums import _MATCHES, _name  # noqa: F401 - _MATCHES: the search hits' match types
from .name_ids import NameIds  # noqa: F401 - here before it had a module of its own

__all__ = [
    "MAIN_RANKS", "Database", "Taxon", "Node", "TaxonList", "TaxonMap", "Lineage", "Comparison",
    "PairComparison", "SetConsensus", "SearchHit", "SearchResults", "Relative", "Relatives", "NameIds", "Newick",
    "SubtreeNode", "SubtreeNodes", "Detail", "Trait", "Reference", "ReleaseInfo", "Status",
    "TaxonInRelease", "TaxonChange", "Favorite", "FavoriteList", "FormattedLineage", "FilteredTaxa", "RankOrder",
    "Placeholder", "NameResolution",
]

#: The eight main ranks, root first (``Rank`` 1-8 of common.proto).
MAIN_RANKS: Tuple[str, ...] = ("domain", "kingdom", "phylum", "class", "order", "family", "genus", "species")
_RANKS = ("",) + MAIN_RANKS
_STATUSES = ("", "accepted", "synonym", "doubtful")
_RELATIONS = ("", "same", "a_ancestor_of_b", "b_ancestor_of_a", "related", "unrelated")
_KINDS = ("", "bundled", "reference")
_SOURCES = ("", "precomputed", "computed")
_CHANGES = ("", "added", "deleted", "merged", "renamed", "moved", "rank_changed")
_RESOLUTIONS = ("", "one", "ambiguous", "not_found")


def _main_rank(value: int) -> str:
    """The name of a ``Rank`` value; "" for none (0) or one this package does not know."""
    return _RANKS[value] if 0 < value < len(_RANKS) else ""


def main_rank_number(rank: Optional[str]) -> int:
    """The ``Rank`` enum value of a main rank name (``"genus"`` -> 7); 0 for none."""
    if not rank:
        return 0
    try:
        return MAIN_RANKS.index(rank.lower()) + 1
    except ValueError as exc:
        raise errors.InvalidRequestError("unknown rank %r (one of %s)" % (rank, ", ".join(MAIN_RANKS))) from exc


@dataclass(frozen=True)
class Database:
    """Which database answered (``DatabaseIdentity``): ``kind`` ``"bundled"`` or
    ``"reference"``, ``fingerprint`` (changes when the database is switched: refresh
    what you cached), ``schema_version``, ``release``, ``source`` (``"NCBI Taxonomy"``)
    and ``id_namespace`` (``"ncbi-taxid"``)."""
    kind: str
    fingerprint: str
    schema_version: int
    release: str
    source: str
    id_namespace: str

    @classmethod
    def from_pb(cls, identity) -> "Database":
        """From a ``stol.v1.DatabaseIdentity``."""
        return cls(_name(_KINDS, identity.kind), identity.fingerprint, identity.schema_version,
                   identity.release, identity.source, identity.id_namespace)


@dataclass(frozen=True)
class Taxon:
    """One taxon (``stol.v1.Taxon``).

    ``rank`` is the rank as one reads it: the source's own spelling where the
    answer has it (whole-tree answers, nodes outside the eight ranks: ``"no rank"``,
    ``"clade"``, ``"strain"``), else the main rank (``"species"``). ``main_rank`` is
    the main rank or ``None``. ``parent_id`` is ``None`` for a root. ``merged_from``
    is the id that was asked for when the source had merged it into this taxon.
    ``child_count`` (children in the eight-rank view) is filled by ``children``,
    ``roots``, ``descendants``, ``taxon`` and ``detail``; ``source_parent_id`` and
    ``source_child_count`` are the source's own parent and direct children (NCBI's
    parent of *Mus musculus* is subgenus *Mus*, 862507, where ``parent_id`` is genus
    *Mus*, 10088), filled by ``taxon`` and ``detail`` on a database with the whole
    tree, else ``None``.
    """
    id: int
    name: str
    rank: str
    parent_id: Optional[int]
    main_rank: Optional[str]
    source_rank: str
    author: str
    year: Optional[int]
    status: str
    conservation: str
    common_name: str
    child_count: int
    release: str
    merged_from: Optional[int] = None
    source_parent_id: Optional[int] = None
    source_child_count: Optional[int] = None

    @property
    def scientific_name(self) -> str:
        """The scientific name (same as ``name``)."""
        return self.name

    @classmethod
    def from_pb(cls, taxon, release: str, merged_from: Optional[int] = None) -> "Taxon":
        """From a ``stol.v1.Taxon`` answered by ``release``."""
        main = _RANKS[taxon.rank] if 0 < taxon.rank < len(_RANKS) else None
        return cls(
            id=taxon.id, name=taxon.scientific_name, rank=taxon.source_rank or main or "",
            parent_id=taxon.parent_id if taxon.HasField("parent_id") else None, main_rank=main,
            source_rank=taxon.source_rank, author=taxon.author,
            year=taxon.year if taxon.HasField("year") else None, status=_name(_STATUSES, taxon.status),
            conservation=taxon.conservation, common_name=taxon.common_name, child_count=taxon.child_count,
            release=release, merged_from=merged_from,
            source_parent_id=taxon.source_parent_id if taxon.HasField("source_parent_id") else None,
            source_child_count=taxon.source_child_count if taxon.HasField("source_child_count") else None)

    def __str__(self) -> str:
        return "%d %s %s" % (self.id, self.rank or "-", self.name)


@dataclass(frozen=True)
class Node:
    """A taxon named only by id, rank and scientific name (a lineage entry, a common ancestor)."""
    id: int
    rank: str
    name: str


class TaxonList(list):
    """A list of :class:`Taxon` (children, roots, ancestors), with ``release`` and
    ``total`` (all children, for ``children``)."""

    def __init__(self, taxa=(), release: str = "", total: Optional[int] = None):
        super().__init__(taxa)
        self.release = release
        self.total = len(self) if total is None else total


class TaxonMap(dict):
    """``{asked id: Taxon}`` from :meth:`~stol.Taxonomy.taxa`. ``missing`` lists the ids
    the database has no taxon for (in the order asked), ``merged`` maps each merged id
    to the id it went to, ``release`` names the release that answered."""

    def __init__(self, release: str = ""):
        super().__init__()
        self.release = release
        self.missing: List[int] = []
        self.merged: Dict[int, int] = {}


class _RankTable:
    """The rank of each node of a nodes-form answer, read from its ``nodes`` when a lineage
    of that answer is first asked for its ranks (once per answer, shared by its lineages)."""

    __slots__ = ("_nodes", "_table")

    def __init__(self, nodes):
        self._nodes = nodes
        self._table: Optional[Dict[int, str]] = None

    def table(self) -> Dict[int, str]:
        if self._table is None:
            self._table = {node.id: node.rank for node in self._nodes}
            self._nodes = None
        return self._table


class _TaxonTable:
    """The taxa of a packed-form answer (its ``nodes``), read when a lineage of that answer
    is first asked for its ``taxon`` (once per answer, shared by its lineages)."""

    __slots__ = ("_nodes", "_table")

    def __init__(self, nodes):
        self._nodes = nodes
        self._table: Optional[Dict[int, "Node"]] = None

    def node(self, taxon_id: int) -> "Node":
        if self._table is None:
            self._table = {node.id: Node(node.id, node.rank, node.name) for node in self._nodes}
            self._nodes = None
        return self._table[taxon_id]


class Lineage:
    """The lineage of one query of :meth:`~stol.Taxonomy.lineage` (``LineageResult``).

    ``ids``, ``ranks`` and ``names`` run from the root down to the taxon itself,
    **the taxon included** (as ete4's ``get_lineage`` and ``stol-client lineage``'s
    TSV). ``taxon`` is the taxon (a :class:`Node`), ``None`` when the query named
    nothing: then ``error`` is the typed exception (:class:`~stol.NotFoundError`,
    :class:`~stol.InvalidRequestError` for an ambiguous name or a bad id,
    :class:`~stol.TaxonDeletedError`) and the lists are empty. ``merged_from`` is
    the id asked for when the source merged it into ``taxon``. A lineage asked for
    with ``names=False`` has its ``ids`` only: ``ranks`` and ``names`` are ``None``
    (``taxon`` is complete).
    """

    __slots__ = ("query", "_taxon", "_taxon_pb", "ids", "_ranks", "_rank_of", "names", "merged_from", "error", "release")

    def __init__(self, query: str, taxon: Optional[Node], ids: Tuple[int, ...], ranks: Optional[Tuple[str, ...]],
                 names: Optional[Tuple[str, ...]], merged_from: Optional[int], error: Optional[errors.StolError],
                 release: str):
        self.query = query
        self._taxon = taxon
        self._taxon_pb = None  # the ids form's taxon message, until ``taxon`` is first read
        self.ids = ids
        self._ranks = ranks
        self._rank_of = None  # the nodes form's rank of each lineage id, until ``ranks`` is first read
        self.names = names
        self.merged_from = merged_from
        self.error = error
        self.release = release

    @property
    def ranks(self) -> Optional[Tuple[str, ...]]:
        """The ranks along the lineage, root first, the taxon's last (``None`` with ``names=False``)."""
        rank_of = self._rank_of
        if rank_of is not None:  # made on first use: most scripts print names, not ranks
            self._ranks = (*map(rank_of.table().__getitem__, self.ids[:-1]), self.taxon.rank)
            self._rank_of = None
        return self._ranks

    @property
    def taxon(self) -> Optional[Node]:
        """The taxon the query named (a :class:`Node`), ``None`` when it named nothing."""
        message = self._taxon_pb
        if message is not None:  # made on first use: a batch of ids that only wants ids never pays for it
            if type(message) is _TaxonTable:  # the packed form's: the taxon is the lineage's last id
                self._taxon = message.node(self.ids[-1])
            else:
                self._taxon = Node(message.id, message.source_rank or _main_rank(message.rank), message.scientific_name)
            self._taxon_pb = None
        return self._taxon

    @classmethod
    def unclassified(cls, query: str, release: str, names: bool = True) -> "Lineage":
        """Kraken's taxon 0, "unclassified", as ``stol-client lineage`` answers it: the
        taxon 0 and an empty lineage (the TSV's lineage column is empty), no error."""
        empty = () if names else None
        return cls(query, Node(0, "no rank", "unclassified"), (), empty, empty, None, None, release)

    @classmethod
    def from_pb(cls, result, release: str, names: bool = True) -> "Lineage":
        """From a ``stol.v1.LineageResult`` of the compact form (or of the ids form,
        ``names=False``: ``ranks`` and ``names`` are then ``None``)."""
        if not names:
            return cls._from_ids_form(result, release)
        if result.HasField("error"):
            return cls(result.query, None, (), (), (), None, errors.from_pb(result.error), release)
        taxon = result.taxon
        main = _RANKS[taxon.rank] if 0 < taxon.rank < len(_RANKS) else ""
        rank = taxon.source_rank or main
        if result.lineage_names or not result.lineage:
            ids = tuple(result.lineage_ids) + (taxon.id,)
            ranks = tuple(result.lineage_ranks) + (rank,)
            names = tuple(result.lineage_names) + (taxon.scientific_name,)
        else:  # the taxa form (LINEAGE_FORM_TAXA)
            nodes = [Taxon.from_pb(t, release) for t in result.lineage]
            ids = tuple(t.id for t in nodes) + (taxon.id,)
            ranks = tuple(t.rank for t in nodes) + (rank,)
            names = tuple(t.name for t in nodes) + (taxon.scientific_name,)
        return cls(result.query, Node(taxon.id, rank, taxon.scientific_name), ids, ranks, names,
                   result.merged_from or None, None, release)

    @classmethod
    def reader(cls, answer, names: bool = True):
        """How each result of the ``LineageBatchResponse`` ``answer`` is made a Lineage:
        the nodes form's (each lineage node's rank and name read once per response, from
        its ``nodes``), else :meth:`from_pb` (the compact form; the taxa form of a server
        that knows no nodes form) or the ids form's."""
        if not names:
            return cls._from_ids_form
        if not answer.nodes:
            return lambda result, release: cls.from_pb(result, release)
        names_of = {node.id: node.name for node in answer.nodes}
        ranks_of = _RankTable(answer.nodes)

        def from_nodes_form(result, release: str) -> "Lineage":
            taxon = result.taxon
            taxon_id = taxon.id
            if not taxon_id:  # no taxon: the query named nothing (ids are > 0)
                error = errors.from_pb(result.error) if result.HasField("error") else errors.ProtocolViolationError(
                    "the answer to %r has neither a taxon nor an error" % (result.query,))
                return cls(result.query, None, (), (), (), None, error, release)
            rank = taxon.source_rank or (_RANKS[taxon.rank] if 0 < taxon.rank < len(_RANKS) else "")
            name = taxon.scientific_name
            lineage_ids = (*result.lineage_ids, taxon_id)  # the repeated field read once
            lineage = cls(result.query, Node(taxon_id, rank, name), lineage_ids, None,
                          (*map(names_of.__getitem__, lineage_ids[:-1]), name), result.merged_from or None, None, release)
            lineage._rank_of = ranks_of
            return lineage
        return from_nodes_form

    @classmethod
    def packed(cls, answer, queries: List[str], release: str) -> List["Lineage"]:
        """The lineages of a ``LineageBatchResponse`` of the packed form (LINEAGE_FORM_PACKED)
        to ``queries`` (those the request sent, which the answer does not repeat), with
        ``ids`` alone: one slice of one list per query, where the ids form reads a message's
        fields per query (100,000 ids: 0.2 s of Python less). An answer of the taxa form
        (an older server's, to a form it does not know) is read as such."""
        if answer.results or not answer.packed_lengths:
            if len(answer.results) != len(queries):
                raise errors.ProtocolViolationError("%d lineages answer %d queries" % (len(answer.results), len(queries)))
            return [cls._ids_of(cls.from_pb(result, release)) for result in answer.results]
        lengths = answer.packed_lengths
        if len(lengths) != len(queries):
            raise errors.ProtocolViolationError("%d packed lineages answer %d queries" % (len(lengths), len(queries)))
        ids = list(answer.packed_ids)
        taxa = _TaxonTable(answer.nodes)
        lineages = []
        append = lineages.append
        position = 0
        for query, length in zip(queries, lengths):
            end = position + length
            lineage = cls(query, None, tuple(ids[position:end]), None, None, None, None, release)
            if length:
                lineage._taxon_pb = taxa
            position = end
            append(lineage)
        if position != len(ids):
            raise errors.ProtocolViolationError("the packed lengths add up to %d of %d ids" % (position, len(ids)))
        for note in answer.packed_notes:
            lineage = lineages[note.index]
            lineage.merged_from = note.merged_from or None
            if note.HasField("error"):
                lineage.error = errors.from_pb(note.error)
        for lineage in lineages:
            if not lineage.ids and lineage.error is None:
                lineage.error = errors.ProtocolViolationError("the answer to %r has neither a lineage nor an error"
                                                              % (lineage.query,))
        return lineages

    @classmethod
    def _ids_of(cls, lineage: "Lineage") -> "Lineage":
        """``lineage`` without its ranks and names (as asked with ``names=False``)."""
        return cls(lineage.query, lineage.taxon, lineage.ids, None, None, lineage.merged_from, lineage.error,
                   lineage.release)

    @classmethod
    def _from_ids_form(cls, result, release: str) -> "Lineage":
        """From a ``LineageResult`` of the ids form (LINEAGE_FORM_IDS), with as few field
        reads as can be: a batch of 100,000 makes one per query, and protobuf's field
        reads, not the server, then set the pace."""
        taxon = result.taxon
        taxon_id = taxon.id
        if not taxon_id:  # no taxon: the query named nothing (ids are > 0)
            error = errors.from_pb(result.error) if result.HasField("error") else errors.ProtocolViolationError(
                "the answer to %r has neither a taxon nor an error" % (result.query,))
            return cls(result.query, None, (), None, None, None, error, release)
        lineage = cls(result.query, None, (*result.lineage_ids, taxon_id), None, None, result.merged_from or None,
                      None, release)
        lineage._taxon_pb = taxon
        return lineage

    @property
    def found(self) -> bool:
        """Whether the query named a taxon."""
        return self.error is None

    def _named(self) -> Tuple[Tuple[str, ...], Tuple[str, ...]]:
        """(ranks, names); a lineage of ids only says so rather than failing on ``None``."""
        if self.names is None or self.ranks is None:
            raise ValueError("the lineage of %r was asked for with names=False: it has ids only "
                             "(ask with names=True for ranks and names)" % (self.query,))
        return self.ranks, self.names

    @property
    def nodes(self) -> List[Node]:
        """The lineage as :class:`Node` objects, root first, the taxon last."""
        ranks, names = self._named()
        return [Node(*entry) for entry in zip(self.ids, ranks, names)]

    @property
    def rank_names(self) -> Dict[str, str]:
        """``{rank: scientific name}`` along the lineage (taxopy's ``rank_name_dictionary``);
        a rank that occurs twice keeps its lowest entry."""
        ranks, names = self._named()
        return dict(zip(ranks, names))

    @property
    def rank_ids(self) -> Dict[str, int]:
        """``{rank: id}`` along the lineage."""
        ranks, _ = self._named()
        return dict(zip(ranks, self.ids))

    def __iter__(self):
        return iter(self.nodes)

    def __len__(self) -> int:
        return len(self.ids)

    def __str__(self) -> str:
        """Names joined by ``;`` (ids, for a lineage asked for with ``names=False``)."""
        if self.names is None:
            return ";".join(map(str, self.ids))
        return ";".join(self.names)

    def __repr__(self) -> str:
        if self.error is not None:
            return "Lineage(%r, error=%r)" % (self.query, self.error)
        return "Lineage(%r, %r)" % (self.query, str(self))


class FormattedLineage:
    """One query of :meth:`~stol.Taxonomy.lineage_format`: ``text``, the template filled
    from the query's lineage (``str()`` of the object is the text, the 5th column of
    ``stol-client lineage --format``), and the :class:`Lineage` it was filled from
    (``lineage``: ids, ranks and names, what ``--keep-lineage`` adds, at no extra cost).

    A query that names nothing has ``error`` set (the typed exception, not raised) and an
    empty ``text``, as :meth:`~stol.Taxonomy.lineage` answers it; Kraken's 0 is the empty
    lineage formatted (every field empty, or filled where the fill needs no rank above)."""

    __slots__ = ("query", "text", "lineage", "release")

    def __init__(self, query: str, text: str, lineage: Lineage, release: str):
        self.query = query
        self.text = text
        self.lineage = lineage
        self.release = release

    @property
    def taxon(self) -> Optional[Node]:
        """The taxon the query named, ``None`` when it named nothing."""
        return self.lineage.taxon

    @property
    def error(self) -> Optional[errors.StolError]:
        """The typed error of a query that named nothing, else ``None``."""
        return self.lineage.error

    @property
    def found(self) -> bool:
        """Whether the query named a taxon."""
        return self.lineage.error is None

    def __str__(self) -> str:
        return self.text

    def __eq__(self, other) -> bool:
        if not isinstance(other, FormattedLineage):
            return NotImplemented
        return (self.query, self.text, self.release) == (other.query, other.text, other.release)

    def __repr__(self) -> str:
        if self.error is not None:
            return "FormattedLineage(%r, error=%r)" % (self.query, self.error)
        return "FormattedLineage(%r, %r)" % (self.query, self.text)


class FilteredTaxa(list):
    """The inputs of :meth:`~stol.Taxonomy.filter` that passed, **as they were given**
    (an int stays an int, a name its string), in input order, repeats kept, as
    taxonkit's ``filter`` writes its input lines. ``taxa`` is the parallel list of the
    taxa they were judged by (a :class:`Node`: a merged id's is the taxon it went to).
    ``not_found`` lists the inputs that name no single taxon (unknown, deleted, an
    ambiguous name), each occurrence in input order: they are left out, never silently.
    Kraken's 0 (unclassified, no rank) is left out and not listed. ``release`` is the
    release that answered."""

    def __init__(self, release: str = ""):
        super().__init__()
        self.taxa: List[Node] = []
        self.not_found: list = []
        self.release = release


class FilterStream:
    """What :meth:`~stol.Taxonomy.filter_stream` gives: an iterator of ``(input, Node)``
    pairs that pass the filter, in input order, read lazily. ``not_found`` (the inputs
    that name no single taxon) and ``release`` fill in as it is read."""

    def __init__(self, release: str = ""):
        self.not_found: list = []
        self.release = release
        self._source: Iterator = iter(())

    def __iter__(self) -> "FilterStream":
        return self

    def __next__(self):
        return next(self._source)


@dataclass(frozen=True)
class Placeholder:
    """A placeholder of :meth:`~stol.Taxonomy.lineage_format`'s templates, as the service
    fills it (``RankPlaceholder``): ``letter`` (taxonkit's, ``"k"``), ``name`` (what a
    fill's ``{rank}`` writes, ``"domain"``), ``aliases`` (other names for it in a
    template), ``spellings`` (the source's ranks that fill it), ``prefix`` (with
    ``prefix_ranks``, ``"d__"``) and ``level`` (a fill's ``{higher}`` is the nearest
    filled placeholder of a smaller level)."""
    letter: str
    name: str
    aliases: Tuple[str, ...]
    spellings: Tuple[str, ...]
    prefix: str
    level: int


@dataclass(frozen=True)
class RankOrder:
    """The rank tables the service applies (``rank_order``): ``levels``, top down, each
    the spellings of one rank to :meth:`~stol.Taxonomy.filter` (``("domain",
    "superkingdom", "realm", "empire")``); ``unordered``, the ranks that say a node has
    none; ``main_ranks``, ``{main rank: its spellings}`` (``"domain"``: ``superkingdom``,
    ``acellular root``, ...); ``placeholders`` of lineage templates and their
    ``default_fill``; ``release``."""
    levels: Tuple[Tuple[str, ...], ...]
    unordered: Tuple[str, ...]
    main_ranks: Dict[str, Tuple[str, ...]]
    placeholders: Tuple[Placeholder, ...]
    default_fill: str
    release: str = ""

    @classmethod
    def from_pb(cls, answer, release: str) -> "RankOrder":
        return cls(tuple(tuple(level.spellings) for level in answer.levels), tuple(answer.unordered),
                   {_main_rank(entry.rank): tuple(entry.spellings) for entry in answer.main_ranks},
                   tuple(Placeholder(p.letter, p.name, tuple(p.aliases), tuple(p.spellings), p.prefix, p.level)
                         for p in answer.placeholders), answer.default_fill, release)

    def order(self) -> List[str]:
        """The order as ``stol-client filter --list-order`` prints it: one line per level,
        top down, its spellings comma-separated, then the unordered ranks each after a
        ``!`` (``"!no rank,!clade"``)."""
        return [",".join(spellings) for spellings in self.levels] + [",".join("!" + rank for rank in self.unordered)]


@dataclass(frozen=True)
class NameResolution:
    """What a typed name stands for (:meth:`~stol.Taxonomy.resolve_name`,
    ``resolve_name``): ``resolution`` ``"one"`` (``taxon_id``, and ``taxon`` when the
    database has it), ``"ambiguous"`` (``candidates``: the taxa it names, a person must
    choose) or ``"not_found"`` (``candidates``: approximate matches, maybe none);
    ``total_candidates`` counts them all (at most 10 are listed)."""
    resolution: str
    taxon_id: Optional[int]
    taxon: Optional["Taxon"]
    candidates: Tuple["Taxon", ...]
    total_candidates: int
    release: str = ""

    @classmethod
    def from_pb(cls, answer, release: str) -> "NameResolution":
        return cls(_name(_RESOLUTIONS, answer.resolution), answer.taxon_id or None,
                   Taxon.from_pb(answer.taxon, release) if answer.HasField("taxon") else None,
                   tuple(Taxon.from_pb(t, release) for t in answer.candidates), answer.total_candidates, release)


@dataclass(frozen=True)
class Comparison:
    """Two taxa compared (``CompareResponse``, defined in PROTOCOL.md's *One
    comparison*): their common ancestor ``lca`` as the view shows it (``None`` when
    ``relation`` is ``"unrelated"``), the paths from each up to it (both ends
    included), ``distance_main`` (taxa of the two main lineages below it),
    ``distance_all`` (NCBI's edges; ``None`` without the whole tree), ``distance``
    (the answered view's: ``distance_main`` on the main ranks, else ``distance_all``),
    ``shared_clade`` ("Both are in order Carnivora"), ``trait_similarity`` (Jaccard;
    ``None`` unless both have traits), ``relation`` (``"same"``, ``"a_ancestor_of_b"``,
    ``"b_ancestor_of_a"``, ``"related"``, ``"unrelated"``), ``lca_depth``."""
    a: Taxon
    b: Taxon
    lca: Optional[Taxon]
    path_a: List[Taxon]
    path_b: List[Taxon]
    distance: Optional[int]
    distance_main: Optional[int]
    distance_all: Optional[int]
    shared_clade: str
    trait_similarity: Optional[float]
    relation: str
    lca_depth: int
    release: str

    @classmethod
    def from_pb(cls, answer, release: str) -> "Comparison":
        """From a ``stol.v1.CompareResponse``."""
        def opt(name):
            return getattr(answer, name) if answer.HasField(name) else None
        return cls(
            a=Taxon.from_pb(answer.taxon_a, release), b=Taxon.from_pb(answer.taxon_b, release),
            lca=Taxon.from_pb(answer.lca, release) if answer.HasField("lca") else None,
            path_a=[Taxon.from_pb(t, release) for t in answer.path_a],
            path_b=[Taxon.from_pb(t, release) for t in answer.path_b],
            distance=opt("distance"), distance_main=opt("distance_main"), distance_all=opt("distance_all"),
            shared_clade=answer.shared_clade, trait_similarity=opt("trait_similarity"),
            relation=_name(_RELATIONS, answer.relation), lca_depth=answer.lca_depth, release=release)


@dataclass(frozen=True)
class PairComparison:
    """One pair of :meth:`~stol.Taxonomy.compare_pairs` (``CompareBatchResult``): the
    queries ``a`` and ``b`` as given, the ids they named, and the pair as
    :meth:`~stol.Taxonomy.compare` answers it: the common ancestor ``lca`` (a
    :class:`Node`; ``None`` when ``unrelated``), ``distance_main`` and ``distance_all``
    (``None`` without the whole tree). ``error`` is the typed exception when a query named nothing."""
    a: str
    b: str
    a_id: int
    b_id: int
    lca: Optional[Node]
    distance_main: int
    distance_all: Optional[int]
    unrelated: bool
    error: Optional[errors.StolError]
    release: str

    @classmethod
    def from_pb(cls, result, release: str) -> "PairComparison":
        """From a ``stol.v1.CompareBatchResult``."""
        error = errors.from_pb(result.error) if result.HasField("error") else None
        lca = Node(result.lca_id, result.lca_rank, result.lca_name) if result.lca_id else None
        return cls(result.a, result.b, result.a_id, result.b_id, lca, result.distance_main,
                   result.distance_all if result.HasField("distance_all") else None, result.unrelated,
                   error, release)


@dataclass(frozen=True)
class SetConsensus:
    """The answer for one set of :meth:`~stol.Taxonomy.lca_sets` or
    :meth:`~stol.Taxonomy.majority_vote` (``LcaSetResult``).

    ``key``: the set's key as given (its position in the input, from 0, when none was
    given). ``taxon``: the common ancestor, or with a majority the consensus taxon, as
    a :class:`Node` (the rank is the source's spelling with ``ranks="all"``, else the
    main rank); ``None`` with an ``error``.

    ``support``: the share of the found members' weight whose lineage holds ``taxon``
    (1.0 for the plain common ancestor; what taxopy calls ``agreement``).
    ``agreement``: the same share among the members whose lineage reaches
    ``taxon``'s depth (a member placed only higher neither agrees nor disagrees).

    ``members``: how many members named a taxon (the answer is theirs);
    ``not_found``: the members that name no single taxon (unknown, deleted, an
    ambiguous name; with ``ranks="main"`` also a taxon above every main rank), in
    input order: they are listed and never fail the set.

    ``error``: the typed exception for this set alone, not raised
    (:class:`~stol.InvalidRequestError`: no member names a taxon, no common ancestor,
    no taxon holds the majority, weights that do not match the members;
    :class:`~stol.RequestTooLargeError`: a set too large for one request even with
    its repeated members merged), else ``None``. ``release``: the release that
    answered."""
    key: object
    taxon: Optional[Node]
    support: float
    agreement: float
    members: int
    not_found: List[str]
    error: Optional[errors.StolError]
    release: str

    @classmethod
    def from_pb(cls, result, key: object, release: str,
                asked: Optional[List[str]] = None) -> "SetConsensus":
        """From a ``stol.v1.LcaSetResult``. ``asked``: the members as the caller gave
        them when the set was sent with its repeated members merged; ``not_found`` and
        ``members`` then count every occurrence, as for the set sent whole."""
        error = errors.from_pb(result.error) if result.HasField("error") else None
        taxon = Node(result.taxon_id, result.rank, result.name) if result.taxon_id and error is None else None
        not_found = list(result.not_found)
        members = result.members
        if asked is not None:
            missing = set(not_found)
            not_found = [member for member in asked if member in missing]
            members = len(asked) - len(not_found)
        return cls(key, taxon, result.support, result.agreement, members, not_found, error, release)


@dataclass(frozen=True)
class SearchHit:
    """One search hit: the ``taxon``, the name that matched, how (``match_type``
    ``"scientific"``, ``"common"`` or ``"synonym"``), its ``score`` (comparable within
    one answer only), and whether it is an approximate match (``fuzzy``, with its
    ``edit_distance``)."""
    taxon: Taxon
    matched_name: str
    match_type: str
    score: float
    fuzzy: bool
    edit_distance: int


class SearchResults(list):
    """The hits of :meth:`~stol.Taxonomy.search`, best first, with ``release``."""

    def __init__(self, hits=(), release: str = ""):
        super().__init__(hits)
        self.release = release


@dataclass(frozen=True)
class Relative:
    """One of the closest species: ``rank_order`` (1 = closest), the ``taxon``, the
    common ancestor ``lca`` at depth ``lca_depth``, and the ``distance`` in edges."""
    rank_order: int
    taxon: Taxon
    lca: Taxon
    lca_depth: int
    distance: int


@dataclass(frozen=True)
class Relatives:
    """The closest species of ``taxon`` (a species; a strain is answered for its
    species): ``relatives`` by distance, then name, then id; ``source``
    ``"precomputed"`` or ``"computed"``; ``truncated`` when the candidate guard stopped
    the computation (the list may be inexact)."""
    taxon: Taxon
    relatives: List[Relative]
    source: str
    truncated: bool
    candidates_examined: int
    release: str

    def __iter__(self):
        return iter(self.relatives)

    def __len__(self) -> int:
        return len(self.relatives)


class Newick(str):
    """A subtree in Newick (every node labelled, quoted where Newick needs it), as
    ``stol-client tree ID --format newick`` prints it, with ``release``. Reads in
    ete4 (``Tree(text, parser=1)``), iTOL and R's ``ape::read.tree``."""

    release: str = ""

    def __new__(cls, text: str, release: str = ""):
        value = super().__new__(cls, text)
        value.release = release
        return value


@dataclass(frozen=True)
class SubtreeNode:
    """One node of a subtree in preorder: ``id``, ``parent_id`` (``None`` for the
    subtree's top), ``depth`` below the top, ``rank`` and ``name``."""
    id: int
    parent_id: Optional[int]
    depth: int
    rank: str
    name: str


class SubtreeNodes(list):
    """A subtree as :class:`SubtreeNode` objects in preorder, with ``release``."""

    def __init__(self, nodes=(), release: str = ""):
        super().__init__(nodes)
        self.release = release


@dataclass(frozen=True)
class TopologyNode:
    """One node of :meth:`~stol.Taxonomy.topology` in preorder: as :class:`SubtreeNode`,
    and ``requested``, whether it was one of the taxa asked for (the others join them)."""
    id: int
    parent_id: Optional[int]
    depth: int
    rank: str
    name: str
    requested: bool


class TopologyNodes(list):
    """The tree of :meth:`~stol.Taxonomy.topology` as :class:`TopologyNode` objects in
    preorder, with ``release`` and ``not_found`` (what named no single taxon)."""

    def __init__(self, nodes=(), release: str = "", not_found=()):
        super().__init__(nodes)
        self.release = release
        self.not_found = list(not_found)


@dataclass(frozen=True)
class Trait:
    """A trait: ``key``, ``value`` and its SI ``unit`` (empty for a categorical trait)."""
    key: str
    value: str
    unit: str


@dataclass(frozen=True)
class Reference:
    """A reference: ``citation``, ``url`` (text, never fetched) and ``ref_type``."""
    citation: str
    url: str
    ref_type: str


@dataclass(frozen=True)
class Detail:
    """Everything about one taxon (``TaxonDetail``): ``taxon`` (with ``child_count``),
    ``lineage`` (root first, the taxon excluded), ``names`` (``{language: [names]}``,
    the requested language first, preferred names first), ``synonyms``, ``traits``
    and ``references``."""
    taxon: Taxon
    lineage: List[Taxon]
    names: Dict[str, List[str]]
    synonyms: List[str]
    traits: List[Trait]
    references: List[Reference]
    release: str


@dataclass(frozen=True)
class ReleaseInfo:
    """One database the service can answer from: ``release`` (the name to pin;
    ``"bundled"`` for the bundled database), ``kind``, ``is_default``, ``loaded`` (open
    in the server now), ``size_bytes``, ``build_time``, ``schema_version`` and its
    ``provenance`` (``{"source", "release", "id_namespace", "licence", "attribution",
    "citation", "tool", "built"}``; empty without one)."""
    release: str
    kind: str
    is_default: bool
    loaded: bool
    size_bytes: int
    build_time: str
    schema_version: int
    provenance: Dict[str, str]


def _provenance(message) -> Dict[str, str]:
    return {f.name: value for f, value in message.ListFields()}


@dataclass(frozen=True)
class Status:
    """The taxonomy service's status (``StatusResponse``): the answering ``database``,
    its counts, the ``default_release`` and every installed release in ``releases``."""
    database: Database
    taxa_count: int
    species_count: int
    names_count: int
    full_tree_nodes: int
    server_version: str
    default_release: str
    releases: List[ReleaseInfo]
    provenance: Dict[str, str]
    release: str

    @classmethod
    def from_pb(cls, answer, release: str) -> "Status":
        """From a ``stol.v1.StatusResponse``."""
        return cls(
            database=Database.from_pb(answer.active), taxa_count=answer.taxa_count,
            species_count=answer.species_count, names_count=answer.names_count,
            full_tree_nodes=answer.full_tree_nodes, server_version=answer.server_version,
            default_release=answer.default_release,
            releases=[ReleaseInfo(r.release, _name(_KINDS, r.kind), r.is_default, r.loaded, r.size_bytes,
                                  r.build_time, r.schema_version, _provenance(r.provenance))
                      for r in answer.releases],
            provenance=_provenance(answer.provenance), release=release)


@dataclass(frozen=True)
class TaxonInRelease:
    """One id in one installed release (``history``): ``present``, its ``name``,
    ``rank`` and ``parent_id`` there; else ``merged_into`` (0: not merged) or ``deleted``."""
    release: str
    present: bool
    name: str
    rank: str
    parent_id: int
    merged_into: int
    deleted: bool
    build_time: str


@dataclass(frozen=True)
class TaxonChange:
    """One change of one id between two releases (``diff``): ``kind`` ``"added"``,
    ``"deleted"``, ``"merged"``, ``"renamed"``, ``"moved"`` or ``"rank_changed"``; its
    ``name`` and ``rank``; ``old_value``/``new_value`` (names, parent ids or ranks);
    ``new_id``/``new_name`` for a merge."""
    kind: str
    id: int
    name: str
    rank: str
    old_value: str
    new_value: str
    new_id: int
    new_name: str

    @classmethod
    def from_pb(cls, change) -> "TaxonChange":
        """From a ``stol.v1.TaxonChange``."""
        return cls(_name(_CHANGES, change.kind), change.id, change.name, change.rank, change.old_value,
                   change.new_value, change.new_id, change.new_name)


@dataclass(frozen=True)
class Favorite:
    """One favourite: ``taxon_id``, ``created_at`` (aware UTC ``datetime``) and, when the
    list was resolved against a :class:`~stol.Taxonomy`, its ``taxon`` (``None`` when the
    database lacks it)."""
    taxon_id: int
    created_at: datetime.datetime
    taxon: Optional[Taxon] = field(default=None, compare=False)


class FavoriteList(list):
    """The calling user's favourites, newest first (:class:`Favorite` objects)."""


def parse_time(text: str) -> datetime.datetime:
    """``2026-02-26T10:15:30.123Z`` as an aware UTC ``datetime``."""
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    return datetime.datetime.fromisoformat(text)

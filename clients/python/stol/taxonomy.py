"""``Taxonomy``: the taxonomy service (``taxonomy.sock``, PROTOCOL.md §4) from Python."""

from __future__ import annotations

import collections
import itertools
import warnings

TYPE_CHECKING = False  # typing's names for annotations only (postponed): importing typing is 3 ms of `import stol`
if TYPE_CHECKING:
    from typing import Callable, Deque, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

from . import _transport, errors
from ._proto import taxonomy_pb2 as pb
from ._lazy import lazy_module
from .name_ids import NameIds

#: The record types, loaded when one is first made (``_lazy``): ``name2id`` never needs them.
answers = lazy_module(__package__ + ".answers")

if TYPE_CHECKING:  # the Newick parser loads with the first tree asked for (stol.trees)
    from .trees import NewickNode

__all__ = ["Taxonomy", "LineageFormat", "newick"]

#: Queries, pairs, names or ids per batch request (the server's limit, PROTOCOL.md §9).
BATCH_SIZE = 1000
#: Largest page of ``children`` (PROTOCOL.md §9).
CHILDREN_PAGE = 500
#: Taxa per ``descendants`` page: the server's largest (PROTOCOL.md §4.2).
DESCENDANTS_PAGE = 10_000
#: Room left in a batch request for everything but its queries (id, release, language...).
_ENVELOPE_BYTES = 1024
#: The values of every ``ranks`` argument, as ``RankView``.
_VIEWS = {"main": pb.RANK_VIEW_MAIN, "all": pb.RANK_VIEW_ALL}

if TYPE_CHECKING:
    Query = Union[int, str]


def _view(ranks: str) -> int:
    try:
        return _VIEWS[ranks]
    except KeyError:
        raise errors.InvalidRequestError("ranks must be 'main' (the eight main ranks) or 'all' (the source's whole "
                                         "tree), not %r" % (ranks,)) from None


def _lookup_text(node: NewickNode) -> str:
    """What a Newick label is looked up as: an unquoted label's ``_`` is a blank, as Newick
    defines it (``Mus_musculus`` is Mus musculus); a quoted one as written."""
    source = node.source or ""
    return node.label if source[:1] in ("'", '"') else node.label.replace("_", " ")


def _query(value: Query) -> str:
    kind = type(value)  # the two common cases first: a batch calls this once per query
    if kind is str:
        return value.strip()  # type: ignore[union-attr]
    if kind is int:
        return str(value)
    if isinstance(value, bool):
        raise TypeError("a taxon id or a name, not %r" % (value,))
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return value.strip()
    try:  # numpy integers, pandas' Int64 values
        return str(int(value))  # type: ignore[call-overload]
    except (TypeError, ValueError):
        raise TypeError("a taxon id (int) or a name (str), not %r" % (value,)) from None


def _is_number(label: str) -> bool:
    """A label that is a number (``100``, ``0.95``, ``1e-3``): digits, a point, a sign, an exponent, nothing
    else, as ``stol-client annotate`` reads it (``NewickTree.isNumber``)."""
    if not label or any(c not in "0123456789.+-eE" for c in label):
        return False
    try:
        float(label)
    except ValueError:
        return False
    return True


def _varint_size(value: int) -> int:
    size = 1
    while value >= 0x80:
        value >>= 7
        size += 1
    return size


def _field_cost(size: int) -> int:
    """Bytes of a length-delimited field of ``size`` bytes (tag, length, value)."""
    return 1 + _varint_size(size) + size


def _string_cost(value: str) -> int:
    return _field_cost(len(value.encode("utf-8")))


def _pair_cost(pair: Tuple[str, str]) -> int:
    return _field_cost(_string_cost(pair[0]) + _string_cost(pair[1]))


#: The most bytes a length-delimited field adds to its value (a tag, a 10-byte varint length).
_FIELD_OVERHEAD = 11


def _utf8_size(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def _strings_size(batch: List[str]) -> int:
    """Upper bound of the bytes of a batch of ``string`` fields."""
    return _utf8_size("".join(batch)) + _FIELD_OVERHEAD * len(batch)


def _pairs_size(batch: List[Tuple[str, str]]) -> int:
    """Upper bound of the bytes of a batch of ``TaxonPair`` fields (two strings in each)."""
    return _utf8_size("".join(map("".join, batch))) + 3 * _FIELD_OVERHEAD * len(batch)


def _chunks(values: Iterable, cost: Callable[..., int] = _string_cost, limit: int = BATCH_SIZE,
            bound: Callable[[list], int] = _strings_size) -> Iterator[list]:
    """Batches of at most ``limit`` values whose request stays under 64 KiB (a single
    value too large for a request is left alone: sending it raises RequestTooLargeError).

    ``limit`` values are taken at once and checked against ``bound``, an upper bound of
    their size computed without a Python step per value (ids and everyday names always
    pass: a lineage batch of 100,000 ids spends its time on the answers, not here); only
    a batch that might not fit is measured value by value with ``cost`` and cut where
    it would overflow, the rest starting the next batch."""
    budget = _transport.MAX_REQUEST_BYTES - _ENVELOPE_BYTES
    source = iter(values)
    carry: list = []
    while True:
        batch = carry + list(itertools.islice(source, limit - len(carry)))
        carry = []
        if not batch:
            return
        if bound(batch) <= budget:
            yield batch
            continue
        size = 0
        for index, value in enumerate(batch):
            size += cost(value)
            if index and size > budget:
                carry = batch[index:]
                batch = batch[:index]
                break
        yield batch


#: Sets and members of one ``lca_batch`` request (the server's limits, PROTOCOL.md §4.2).
LCA_SETS = 1000
LCA_MEMBERS = 10_000


def _fraction(majority: Optional[float]) -> float:
    """The wire's ``majority``: 0 for none (the plain common ancestor), else 0 < F < 1."""
    if majority is None or majority == 0:
        return 0.0
    try:
        value = float(majority)
    except (TypeError, ValueError):
        raise TypeError("majority must be a number, not %r" % (majority,)) from None
    if not 0.0 < value < 1.0:
        raise errors.InvalidRequestError("majority must be more than 0 and less than 1 (e.g. 0.5), not %r"
                                         % (majority,))
    return value


def _is_members(value) -> bool:
    """Whether ``value`` is a collection of members (not one member)."""
    if isinstance(value, (str, bytes, int)):
        return False
    try:
        iter(value)
    except TypeError:
        return False
    return True


def _taxon_set(item, index: int) -> Tuple[object, List[str], Optional[List[float]]]:
    """(key, members as queries, weights or None) of one set of ``lca_sets``."""
    if isinstance(item, dict):
        key, members, weights = item.get("key", index), item.get("members", ()), item.get("weights")
    elif isinstance(item, tuple) and len(item) in (2, 3) and _is_members(item[1]):
        key, members = item[0], item[1]
        weights = item[2] if len(item) == 3 else None
    elif _is_members(item):
        key, members, weights = index, item, None
    else:
        raise TypeError("a set of lca_sets is a list of members, (key, members[, weights]) or a dict, not %r"
                        % (item,))
    queries = [_query(member) for member in members]
    if weights is not None:
        weights = [float(weight) for weight in weights] or None
    return key, queries, weights


def _set_cost(queries: List[str], weights: Optional[List[float]]) -> int:
    """Bytes of a ``TaxonSet`` as a field of the request (no key: keys stay here)."""
    joined = "".join(queries)
    if joined.isascii() and (not queries or max(map(len, queries)) < 128):
        size = len(joined) + 2 * len(queries)  # tag, one-byte length, the id or name
    else:
        size = sum(map(_string_cost, queries))
    if weights:
        size += _field_cost(8 * len(weights))  # packed doubles
    return _field_cost(size)


def _fitted(queries: List[str], weights: Optional[List[float]]
            ) -> Tuple[List[str], Optional[List[float]], Optional[List[str]], Optional[errors.StolError]]:
    """A set made to fit one request: as it is when it fits, else its repeated members
    merged with their weights added (the vote and the ancestor are the same). Returns
    (members, weights, the members as asked when merged, the error when it cannot fit)."""
    budget = _transport.MAX_REQUEST_BYTES - _ENVELOPE_BYTES
    if len(queries) <= LCA_MEMBERS and _set_cost(queries, weights) <= budget:
        return queries, weights, None, None
    if weights is not None:
        if len(weights) != len(queries):
            return queries, weights, None, errors.InvalidRequestError(
                "%d weights for %d members" % (len(weights), len(queries)))
        if not all(0.0 < weight < float("inf") for weight in weights):
            return queries, weights, None, errors.InvalidRequestError("weights must be positive numbers")
    merged: dict = {}
    for member, weight in zip(queries, weights if weights is not None else itertools.repeat(1.0)):
        merged[member] = merged.get(member, 0.0) + weight
    members, summed = list(merged), list(merged.values())
    if len(members) > LCA_MEMBERS or _set_cost(members, summed) > budget:
        return queries, weights, None, errors.RequestTooLargeError(
            "a set of %d distinct members does not fit one request (at most %d members and %d bytes); "
            "split it" % (len(members), LCA_MEMBERS, _transport.MAX_REQUEST_BYTES))
    return members, summed, queries, None


def newick(depths: Sequence[int], labels: Sequence[str]) -> str:
    """Newick text of a tree given in preorder with depths (the ``subtree`` answer's
    form), every node labelled; exactly what ``stol-client tree --format newick``
    writes (``Sources/STOLModel/Newick.swift``)."""
    if len(depths) != len(labels):
        raise ValueError("one label per node")
    if not depths:
        return ";"
    parts: List[str] = []
    open_nodes: List[int] = []
    for node, depth in enumerate(depths):
        while open_nodes and depths[open_nodes[-1]] >= depth:
            parts.append(")" + _newick_label(labels[open_nodes.pop()]))
        if node > 0 and open_nodes and depth > depths[open_nodes[-1]] and node != open_nodes[-1] + 1:
            parts.append(",")
        if node + 1 < len(depths) and depths[node + 1] > depth:
            parts.append("(")
            open_nodes.append(node)
        else:
            parts.append(_newick_label(labels[node]))
    while open_nodes:
        parts.append(")" + _newick_label(labels[open_nodes.pop()]))
    return "".join(parts) + ";"


_NEWICK_SPECIAL = frozenset(" \t\n()[]':;,_")


def _newick_label(label: str) -> str:
    if label and not any(char in _NEWICK_SPECIAL for char in label):
        return label
    return "'" + label.replace("'", "''") + "'"


class LineageFormat:
    """A taxonkit-style template with its options, as :meth:`Taxonomy.lineage_format`
    takes them (``template``, ``fill``, ``prefix_ranks``, ``rank_ids``), to pass around
    or reuse. The service checks and fills it (``lineage_batch``'s ``template``);
    nothing is formatted here. ``rank_ids=True`` writes each placeholder's taxon id
    instead of its name (taxonkit's ``reformat -t``: ``{g}`` of 9606 is ``9605``); a
    rank the lineage lacks is then empty, so it goes without ``fill``."""

    __slots__ = ("template", "fill", "prefix_ranks", "rank_ids")

    def __init__(self, template: str, fill: Union[None, bool, str] = None, prefix_ranks: bool = False,
                 rank_ids: bool = False):
        if not isinstance(template, str):
            raise TypeError("the template is a str, not %r" % (template,))
        if fill is not None and not isinstance(fill, (bool, str)):
            raise TypeError("fill is None, True or a fill template (str), not %r" % (fill,))
        if rank_ids and fill:
            raise ValueError("fill writes names; with rank_ids a missing rank is empty")
        self.template = template
        self.fill = fill
        self.prefix_ranks = bool(prefix_ranks)
        self.rank_ids = bool(rank_ids)

    def _proto(self):
        """The ``LineageTemplate`` message."""
        message = pb.LineageTemplate(format=self.template, prefix_ranks=self.prefix_ranks, ids=self.rank_ids)
        if self.fill is True:
            message.fill_missing = True
        elif isinstance(self.fill, str) and self.fill:  # "" fills nothing: a missing rank stays empty
            message.fill_missing = True
            message.fill = self.fill
        return message

    def __repr__(self) -> str:
        return "LineageFormat(%r, fill=%r, prefix_ranks=%r, rank_ids=%r)" % (self.template, self.fill, self.prefix_ranks,
                                                                           self.rank_ids)

    def __eq__(self, other) -> bool:
        if not isinstance(other, LineageFormat):
            return NotImplemented
        return ((self.template, self.fill, self.prefix_ranks, self.rank_ids)
                == (other.template, other.fill, other.prefix_ranks, other.rank_ids))

    def __hash__(self) -> int:
        return hash((self.template, self.fill, self.prefix_ranks, self.rank_ids))


def _equal_ranks(rank: Union[None, str, Iterable[str]]) -> List[str]:
    """``filter``'s ``rank`` as the request's ``equal_to`` entries (each one rank or
    several, comma-separated: the service splits them)."""
    if rank is None:
        return []
    values = [rank] if isinstance(rank, str) else list(rank)
    for value in values:
        if not isinstance(value, str):
            raise TypeError("a rank is a str, not %r" % (value,))
    return values


#: Nodes of one ``annotate_tree`` request (the server's limit, PROTOCOL.md §4.2).
ANNOTATE_NODES = 65_536


class Taxonomy:
    """The STOL taxonomy service: lookups, lineages, common ancestors, search,
    browsing, subtrees and closest relatives, answered by the shared
    ``stol-taxonomyd`` (nothing is loaded into this process).

    ``release`` pins every answer to one installed release (``"2024.9.7"``, or
    ``"bundled"``; ``None``: the service's default, see :meth:`status`). Without it,
    each batch (:meth:`lineage` over many ids, :meth:`taxa`, :meth:`name2id`,
    :meth:`compare_pairs`, :meth:`lca`, :meth:`children`) is answered from the one
    release that was the default when it started, as ``stol-client`` does, and every
    answer says which release it came from (``.release``).

    ``language`` (a BCP-47 tag, default ``"en"``) selects common names.
    ``runtime_dir`` (default ``$STOL_RUNTIME_DIR``, else the user's private stack when
    one runs, else ``/run/stol``) or ``socket_path`` says where the service listens.
    ``database`` (a ``.sqlite`` file) uses the user's private stack serving that file,
    started when none runs (``stol-client serve --detach``; :mod:`stol.private`): no
    root and no system service needed. ``timeout`` is the deadline in
    seconds for each answer (``None``: wait for ever); a stopped daemon raises
    :class:`~stol.ServiceNotRunningError`, a wedged one
    :class:`~stol.StolTimeoutError`, never a hang. ``window`` is the number of batch
    requests in flight at once.

    One object may be used from one thread at a time; its single calls share a
    connection, each batch iterator has one of its own (so other calls may be made
    while iterating). Use it as a context manager, or call :meth:`close`.
    """

    def __init__(self, release: Optional[str] = None, *, language: str = "en", runtime_dir: Optional[str] = None,
                 socket_path: Optional[str] = None, timeout: Optional[float] = _transport.DEFAULT_TIMEOUT,
                 window: int = _transport.PIPELINE_WINDOW, database: Optional[str] = None):
        self.release = release or None
        self.language = language
        if database is not None and runtime_dir is None and socket_path is None:
            # The user's private stack on that file, started when it does not run (stol.private).
            from . import private
            runtime_dir = private.serve(database)
        self.path = socket_path or _transport.socket_path("taxonomy", runtime_dir)
        self.timeout = timeout
        self.window = window
        self._connection = self._connect()
        #: The last answer envelope of a single call (``stol.v1.TaxonomyResponse``), for debugging.
        self.last_response = None
        self._database: Optional[answers.Database] = None
        self._database_pb = None  # the latest answer's DatabaseIdentity, until ``database`` is read

    def _connect(self) -> _transport.Connection:
        return _transport.Connection("taxonomy", self.path, pb.TaxonomyResponse, self.timeout)

    def close(self) -> None:
        """Closes the connection (the next call opens a new one)."""
        self._connection.close()

    def __enter__(self) -> "Taxonomy":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return "Taxonomy(release=%r, path=%r)" % (self.release, self.path)

    @property
    def database(self) -> Optional[answers.Database]:
        """The database that gave the latest answer (``None`` before the first). When its
        ``fingerprint`` changes, the service switched databases: refresh cached answers."""
        message = self._database_pb
        if message is not None:  # made when asked for: each answer names its database
            self._database = answers.Database.from_pb(message)
            self._database_pb = None
        return self._database

    # --- plumbing --------------------------------------------------------------------

    def _call(self, field: str, release: Optional[str] = None, **body):
        pinned = release if release is not None else self.release
        try:
            request = pb.TaxonomyRequest(release=pinned or "", **{field: body})
        except ValueError as exc:  # an id beyond int64
            raise errors.InvalidRequestError("%s: %s" % (field, exc)) from None
        answer = self._connection.call(request)
        self.last_response = answer
        return answer, self._note(answer)

    def _note(self, answer) -> str:
        if answer.HasField("database"):
            database = answer.database
            self._database_pb = identity = type(database)()
            identity.CopyFrom(database)  # not a view into the answer, which it would keep alive
            return database.release
        return ""

    def _result(self, answer, field: str):
        case = answer.WhichOneof("result")
        if case != field:
            raise errors.ProtocolViolationError("the taxonomy service answered %s with %s" % (field, case))
        return getattr(answer, field)

    def _batch_release(self, connection: _transport.Connection) -> str:
        """The release a batch is answered from: the pinned one, or the default now
        (one ``status`` request), so that a switch in the middle mixes nothing."""
        if self.release:
            return self.release
        request = pb.TaxonomyRequest()
        request.status.SetInParent()
        answer = connection.call(request)
        release = self._note(answer)
        return "" if release == "unknown" else release

    def _pipeline(self, requests: Iterable, field: str,
                  release: Optional[str] = None) -> Iterator[Tuple[object, str, object]]:
        """(result, release, envelope) for each request, several in flight on a connection of its own.
        ``release``: pin the requests to it (a second round of a batch, on the first round's
        release) instead of asking which release is the default."""
        connection = self._connect()
        try:
            if not release:
                release = self._batch_release(connection)

            def prepare(request):
                if release:
                    request.release = release
            for answer in connection.pipeline(requests, self.window, prepare):
                yield self._result(answer, field), self._note(answer) or release, answer
        finally:
            connection.close()

    def _language(self, language: Optional[str]) -> str:
        return self.language if language is None else language

    # --- single taxa -----------------------------------------------------------------

    def status(self) -> answers.Status:
        """The service's status: the answering database, its counts, the default
        release and every installed release (``stol-client status``)."""
        answer, release = self._call("status")
        return answers.Status.from_pb(self._result(answer, "status"), release)

    def releases(self) -> List[str]:
        """The names of the releases that can be pinned (``"bundled"`` first)."""
        return [info.release for info in self.status().releases]

    def taxon(self, taxon_id: int, language: Optional[str] = None, ranks: str = "main") -> answers.Taxon:
        """One taxon by id (``get_taxon``), with its parent and child count in both
        trees (``parent_id``/``child_count`` in the eight-rank view,
        ``source_parent_id``/``source_child_count`` in the source's own). An id the
        source merged into another is answered as that taxon (``merged_from`` set).
        ``ranks="all"``: ``rank`` is the source's spelling whatever the rank.

        Raises :class:`~stol.NotFoundError`, :class:`~stol.TaxonDeletedError`, or
        :class:`~stol.InvalidRequestError` for an id <= 0.

        Each call is a round trip to the service: in a loop over many ids,
        :meth:`taxa` is the fast way (1,000 ids per request, several in flight)."""
        answer, release = self._call("get_taxon", taxon_id=int(taxon_id), language=self._language(language),
                                     ranks=_view(ranks))
        merged = {m.old_id: m.new_id for m in answer.merged}
        return answers.Taxon.from_pb(self._result(answer, "taxon"), release, int(taxon_id) if merged else None)

    def taxa(self, taxon_ids: Iterable[int], language: Optional[str] = None) -> answers.TaxonMap:
        """Many taxa by id (``get_taxa``, 1000 per request, several in flight):
        ``{asked id: Taxon}``. Ids the database lacks (unknown, deleted, <= 0) are not
        errors: they are listed in ``.missing``; merged ids map to their new taxon."""
        language = self._language(language)
        result = answers.TaxonMap()
        asked = list(dict.fromkeys(int(value) for value in taxon_ids))  # once each, in order
        wanted = [i for i in asked if 0 < i <= 1 << 53]  # others have no taxon anywhere

        def requests():
            for start in range(0, len(wanted), BATCH_SIZE):
                yield pb.TaxonomyRequest(get_taxa={"taxon_ids": wanted[start:start + BATCH_SIZE],
                                                   "language": language})
        batches = iter(range(0, len(wanted), BATCH_SIZE))
        for answer, release, envelope in self._pipeline(requests(), "taxa"):
            start = next(batches)
            result.release = release
            found = {t.id: t for t in answer.taxa}
            merged = {m.old_id: m.new_id for m in envelope.merged}  # answered as the taxon it went to
            result.merged.update(merged)
            for taxon_id in wanted[start:start + BATCH_SIZE]:
                if taxon_id in merged and merged[taxon_id] in found:
                    result[taxon_id] = answers.Taxon.from_pb(found[merged[taxon_id]], release, taxon_id)
                elif taxon_id in found:
                    result[taxon_id] = answers.Taxon.from_pb(found[taxon_id], release)
        result.missing.extend(i for i in asked if i not in result)
        return result

    def ancestors(self, taxon_id: int, ranks: str = "main", language: Optional[str] = None) -> answers.TaxonList:
        """The lineage of one taxon as :class:`Taxon` objects, root first, the taxon
        excluded (``ancestors``); ``ranks="all"``: the source's whole tree."""
        answer, release = self._call("ancestors", taxon_id=int(taxon_id), language=self._language(language),
                                     ranks=_view(ranks))
        return answers.TaxonList((answers.Taxon.from_pb(t, release) for t in self._result(answer, "ancestors").taxa), release)

    def detail(self, taxon_id: int, language: Optional[str] = None, ranks: str = "main") -> answers.Detail:
        """Everything about one taxon: names by language, synonyms, traits,
        references and lineage (``detail``); the taxon's parent and child count in both
        trees as :meth:`taxon` gives them. ``ranks="all"``: the lineage is the source's
        every ancestor."""
        answer, release = self._call("detail", taxon_id=int(taxon_id), language=self._language(language),
                                     ranks=_view(ranks))
        d = self._result(answer, "detail")
        return answers.Detail(
            taxon=answers.Taxon.from_pb(d.taxon, release), lineage=[answers.Taxon.from_pb(t, release) for t in d.lineage],
            names={group.language: [n.name for n in group.names] for group in d.names},
            synonyms=list(d.synonyms), traits=[answers.Trait(t.key, t.value, t.unit) for t in d.traits],
            references=[answers.Reference(r.citation, r.url, r.ref_type) for r in d.references], release=release)

    def roots(self, language: Optional[str] = None) -> answers.TaxonList:
        """The top of the tree: the taxa without a parent in the eight-rank view (``roots``)."""
        answer, release = self._call("roots", language=self._language(language))
        page = self._result(answer, "roots")
        return answers.TaxonList((answers.Taxon.from_pb(t, release) for t in page.taxa), release, page.total)

    def descendants(self, taxon_id: int, rank: Optional[str] = None, limit: Optional[int] = None) -> answers.TaxonList:
        """The descendants of a taxon (itself excluded) on the source's whole tree, at
        ``rank`` or every rank (``descendants``): taxonkit's ``list`` then ``filter``,
        ete4's ``get_descendant_taxa``. In preorder, children in id order (ete4's order); ``total``
        counts them all, ``limit`` stops after that many. ``rank`` takes the source's
        spelling or another of its level (``"superkingdom"`` = ``"domain"``); an unknown
        rank raises :class:`~stol.InvalidRequestError` listing the database's ranks."""
        if limit is not None and int(limit) < 1:
            raise ValueError("limit must be at least 1")
        taxa: List[answers.Taxon] = []
        total = None
        release = ""
        while total is None or (len(taxa) < total and (limit is None or len(taxa) < limit)):
            page_size = DESCENDANTS_PAGE if limit is None else min(DESCENDANTS_PAGE, int(limit) - len(taxa))
            # Later pages from the release that answered the first: pages of two releases never mix.
            answer, release = self._call("descendants", release=release or None, taxon_id=int(taxon_id),
                                         rank=rank or "", offset=len(taxa), limit=page_size)
            page = self._result(answer, "descendants")
            total = page.total
            if not page.taxa:
                break
            taxa.extend(answers.Taxon.from_pb(t, release) for t in page.taxa)
        return answers.TaxonList(taxa, release, total)

    def children(self, taxon_id: int, ranks: str = "main", language: Optional[str] = None) -> answers.TaxonList:
        """All children of a taxon, by scientific name (``children``, paged here 500 at
        a time). ``ranks="all"``: the source's own children (a species' strains)."""
        language = self._language(language)
        view = _view(ranks)
        connection = self._connect()
        try:
            release = self._batch_release(connection)
            first = self._page(connection, taxon_id, 0, language, view, release)
            taxa = answers.TaxonList((answers.Taxon.from_pb(t, release) for t in first.taxa), release, first.total)

            def requests():
                for offset in range(len(first.taxa), first.total, CHILDREN_PAGE):
                    yield self._page_request(taxon_id, offset, language, view, release)
            for answer in connection.pipeline(requests(), self.window):
                taxa.extend(answers.Taxon.from_pb(t, release) for t in self._result(answer, "children").taxa)
            return taxa
        finally:
            connection.close()

    @staticmethod
    def _page_request(taxon_id, offset, language, view, release):
        request = pb.TaxonomyRequest(release=release)
        request.children.taxon_id = int(taxon_id)
        request.children.offset = offset
        request.children.limit = CHILDREN_PAGE
        request.children.language = language
        request.children.ranks = view
        return request

    def _page(self, connection, taxon_id, offset, language, view, release):
        answer = connection.call(self._page_request(taxon_id, offset, language, view, release))
        self.last_response = answer
        self._note(answer)
        return self._result(answer, "children")

    # --- lineages --------------------------------------------------------------------

    def lineage(self, ids: Union[Query, Iterable[Query]], ranks: str = "main",
                language: Optional[str] = None, names: bool = True) -> Union[answers.Lineage, Iterator[answers.Lineage]]:
        """Lineages (``lineage_batch``, the nodes form: each lineage node's rank and name
        once per answer; 1000 queries per request, several requests in flight).

        ``ids``: one taxon id or exact name, which returns one :class:`Lineage` (and
        raises :class:`~stol.NotFoundError` or another typed error when it names
        nothing); or an iterable of them (ints, decimal strings or exact scientific or
        common names), which returns an **iterator** of :class:`Lineage`, one per
        query in order, read and sent lazily, so any number of ids fits in little
        memory; a query that names nothing yields a Lineage whose ``error`` is set.

        ``ranks="main"``: the eight main ranks; ``"all"``: the source's whole tree
        (``root;cellular organisms;Eukaryota;...``, NCBI's rank names).
        Each lineage runs from the root to the taxon, the taxon included.

        ``names=False`` asks for the ids alone (what ete4's ``get_lineage`` and taxopy's
        ``taxid_lineage`` give): ``ranks`` and ``names`` are then ``None``. A batch is
        then answered in the packed form (every lineage in one array, each taxon once):
        on large batches well over twice as fast as with names."""
        view = _view(ranks)  # checked now, not at the first next()
        language = self._language(language)
        form = pb.LINEAGE_FORM_NODES if names else pb.LINEAGE_FORM_IDS
        if isinstance(ids, (int, str)) and not isinstance(ids, bool):  # one request on the shared connection
            answer, release = self._call("lineage_batch", queries=[_query(ids)], language=language, ranks=view,
                                         form=form)
            answer = self._result(answer, "lineage_batch")
            single = answers.Lineage.reader(answer, names)(answer.results[0], release)
            if single.error is not None:
                raise single.error
            return single
        # A batch of ids alone: the packed form (every lineage in one array, no message per query).
        return self._lineages(ids, view, language, form if names else pb.LINEAGE_FORM_PACKED, names)

    def _lineages(self, ids: Iterable[Query], view: int, language: str, form: int,
                  names: bool, template=None, unclassified: str = "", release: Optional[str] = None,
                  columns: Sequence[str] = (), rows=None) -> Iterator:
        """Lineages (or, with a ``LineageTemplate`` message, :class:`FormattedLineage`
        objects, ``unclassified`` the text of Kraken's 0) of every query, pipelined.

        ``columns``: the request's rank columns (each result's ``column_ids``); ``rows``:
        what reads the results instead of :class:`Lineage` (``frames._FrameRows``: its
        ``reader(answer)`` makes one result's item, its ``zero(release)`` Kraken's 0's)."""
        # Kraken's 0 (unclassified) is answered here, never sent, in its place among the
        # answers: `zeros` holds, in input order, how many queries were sent before each.
        # Queries are read in blocks of a request's size (no further ahead of the answers
        # than one request, as before), each scanned for "0" at once: no bookkeeping per
        # query, on the way out or back (100,000 ids: 0.06 s less).
        zeros: Deque[int] = collections.deque()
        # The packed form does not repeat the queries: each request's, until its answer comes.
        packed = form == pb.LINEAGE_FORM_PACKED
        sent: Deque[List[str]] = collections.deque()

        def blocks():
            queries = map(_query, ids)
            count = 0
            while True:
                block = list(itertools.islice(queries, BATCH_SIZE))
                if not block:
                    return
                if "0" in block:
                    kept: List[str] = []
                    for query in block:
                        if query == "0":
                            zeros.append(count + len(kept))
                        else:
                            kept.append(query)
                    block = kept
                count += len(block)
                yield block

        def requests():
            for batch in _chunks(itertools.chain.from_iterable(blocks())):
                request = pb.TaxonomyRequest()
                request.lineage_batch.queries.extend(batch)
                request.lineage_batch.language = language
                request.lineage_batch.ranks = view
                request.lineage_batch.form = form
                if columns:
                    request.lineage_batch.columns.extend(columns)
                if template is not None:
                    request.lineage_batch.template.CopyFrom(template)
                if packed:
                    sent.append(batch)
                yield request
        def formatted(result, release):  # a template's text with the lineage it was filled from
            lineage = answers.Lineage.from_pb(result, release)
            return answers.FormattedLineage(lineage.query, result.formatted, lineage, release)

        def zero(release):
            if rows is not None:
                return rows.zero(release)
            lineage = answers.Lineage.unclassified("0", release, names)
            return lineage if template is None else answers.FormattedLineage("0", unclassified, lineage, release)
        last_release = ""
        answered_so_far = 0
        for answer, answered, _ in self._pipeline(requests(), "lineage_batch", release=release):
            last_release = answered
            if packed:  # already lineages
                items, make = answers.Lineage.packed(answer, sent.popleft(), answered), None
            else:
                items = answer.results
                make = formatted if template is not None else rows.reader(answer) if rows is not None \
                    else answers.Lineage.reader(answer, names)
            for item in items:
                while zeros and zeros[0] == answered_so_far:
                    zeros.popleft()
                    yield zero(answered)
                answered_so_far += 1
                # Made after the zeros before it: a frame's rows append as they are made.
                yield item if make is None else make(item, answered)
        for _ in zeros:
            yield zero(last_release)

    def lineage_format(self, ids: Union[Query, Iterable[Query]], template: Union[str, LineageFormat], *,
                       fill: Union[None, bool, str] = None, prefix_ranks: bool = False, ranks: str = "all",
                       language: Optional[str] = None,
                       rank_ids: bool = False) -> Union[answers.FormattedLineage, Iterator[answers.FormattedLineage]]:
        """Lineages written in a taxonkit-style template (taxonkit's ``reformat``,
        ``stol-client lineage --ranks all --format TEMPLATE``), filled by the service
        (``lineage_batch`` with a ``template``: 1000 queries per request, several in
        flight, the same as :meth:`lineage`).

        ``template``: e.g. ``"{k};{p};{c};{o};{f};{g};{s}"``; placeholders ``{k}`` (or
        ``{domain}``, ``{superkingdom}``, ``{d}``: NCBI's superkingdom, domain, and the
        acellular root of Viruses) ``{K}`` kingdom ``{p}`` ``{c}`` ``{o}`` ``{f}`` ``{g}``
        ``{s}`` ``{S}`` subspecies ``{t}`` strain ``{r}`` realm, or a rank's name
        (:meth:`rank_order` lists them). ``fill``: ``None`` a missing rank is empty,
        ``True`` taxonkit's ``"unclassified {higher} {rank}"``, or a fill template of your
        own (``{higher}``, ``{higher_rank}``, ``{rank}``). ``prefix_ranks``: ``d__``,
        ``k__``, ``p__``, ... before each non-empty field. ``rank_ids``: each placeholder's
        taxon id instead of its name (taxonkit's ``reformat -t``). A :class:`LineageFormat`
        may be passed as ``template`` instead (then leave ``fill``, ``prefix_ranks`` and
        ``rank_ids`` alone).
        The template is checked by the service now, before this returns: a bad one raises
        :class:`~stol.InvalidRequestError` (a ``ValueError``) naming the placeholder.

        ``ranks="all"`` (the default, unlike ``stol-client lineage``): NCBI's own ranks,
        so that subspecies, strains and realms fill their placeholders; ``"main"``: the
        eight main ranks only.

        One id or name returns one :class:`~stol.FormattedLineage` (and raises the typed
        error when it names nothing, as :meth:`lineage` does); an iterable returns an
        **iterator** of them, one per query in input order, lazily, a query that names
        nothing carrying its ``error`` and an empty ``text``. Each has ``text`` (its
        ``str()``), the ``lineage`` it was filled from (what ``--keep-lineage`` adds) and
        ``release``. Kraken's 0 (unclassified) is not sent: its text is the empty lineage
        filled, as the service gives it (``unclassified``) and the command line writes it."""
        if isinstance(template, LineageFormat):
            if fill is not None or prefix_ranks or rank_ids:
                raise TypeError("fill, prefix_ranks and rank_ids belong to the LineageFormat given as template")
            layout = template
        else:
            layout = LineageFormat(template, fill, prefix_ranks, rank_ids)
        view = _view(ranks)
        language = self._language(language)
        message = layout._proto()
        single = isinstance(ids, (int, str)) and not isinstance(ids, bool)
        query = _query(ids) if single else None  # type: ignore[arg-type]
        # One request now: the template checked (raised here, not at the first next()), and
        # the text of Kraken's 0, which is never sent.
        answer, release = self._call("lineage_batch", queries=[query] if single and query != "0" else [],
                                     language=language, ranks=view, form=pb.LINEAGE_FORM_COMPACT, template=message)
        batch = self._result(answer, "lineage_batch")
        if single:
            if query == "0":
                return answers.FormattedLineage(query, batch.unclassified, answers.Lineage.unclassified(query, release), release)
            result = batch.results[0]
            lineage = answers.Lineage.from_pb(result, release)
            if lineage.error is not None:
                raise lineage.error
            return answers.FormattedLineage(lineage.query, result.formatted, lineage, release)
        return self._lineages(ids, view, language, pb.LINEAGE_FORM_COMPACT, True, message, batch.unclassified)

    def rank_order(self) -> answers.RankOrder:
        """The order of ranks and their spellings, as the service applies them
        (``rank_order``): the levels top down (each level's spellings one rank to
        :meth:`filter`), the ranks without order, the spellings of each main rank, the
        placeholders of :meth:`lineage_format` and its default fill. ``.order()`` is
        what ``stol-client filter --list-order`` prints."""
        answer, release = self._call("rank_order")
        return answers.RankOrder.from_pb(self._result(answer, "rank_order"), release)

    def filter(self, ids: Union[Query, Iterable[Query]], *, lower_than: Optional[str] = None,
               higher_than: Optional[str] = None, rank: Union[None, str, Iterable[str]] = None,
               discard_noranks: bool = False, save_predictable_noranks: bool = False) -> answers.FilteredTaxa:
        """The inputs whose taxon's rank is in a range: taxonkit's ``filter`` (``stol-client
        filter``), on NCBI's own ranks, judged by the service (``rank_filter``, 1000
        queries per request, several in flight). The order of ranks is :meth:`rank_order`'s.

        ``lower_than`` / ``higher_than``: ranks strictly below / above it (not both);
        ``rank``: exactly these (a str, comma-separated ones, or a list); with a bound as
        well, these too (``lower_than="genus", rank="genus"``: the genus and below); none
        of the three: every ranked taxon. Spellings on one level are one rank
        (``superkingdom`` = ``domain`` = ``realm``; ``acellular root`` = ``cellular
        root``); case and blanks around a rank do not matter. A taxon without an ordered
        rank (``no rank``, ``clade``) is kept unless ``discard_noranks``;
        ``save_predictable_noranks`` (needs ``lower_than``, implies ``discard_noranks``)
        keeps it when its nearest ranked ancestor is at or below the ``lower_than`` rank.
        Bad options raise :class:`~stol.InvalidRequestError` (checked by the service
        before any input is read).

        Returns :class:`~stol.FilteredTaxa`: a list of the inputs that pass **as they were
        given**, in input order (repeats kept), with ``.taxa`` (the parallel list of
        :class:`Node`, the taxon each was judged by: a merged id's is the taxon it was
        merged into), ``.not_found`` (the inputs that name no single taxon, left out) and
        ``.release``. Kraken's 0 (unclassified, no rank) is left out silently. The whole
        list is made before it returns; :meth:`filter_stream` gives the same lazily."""
        stream = self.filter_stream(ids, lower_than=lower_than, higher_than=higher_than, rank=rank,
                                    discard_noranks=discard_noranks, save_predictable_noranks=save_predictable_noranks)
        result = answers.FilteredTaxa(stream.release)
        for item, taxon in stream:
            result.append(item)
            result.taxa.append(taxon)
        result.not_found = stream.not_found
        result.release = stream.release
        return result

    def filter_stream(self, ids: Union[Query, Iterable[Query]], *, lower_than: Optional[str] = None,
                      higher_than: Optional[str] = None, rank: Union[None, str, Iterable[str]] = None,
                      discard_noranks: bool = False, save_predictable_noranks: bool = False) -> answers.FilterStream:
        """:meth:`filter`, lazily, for inputs larger than memory (a profile of millions of
        rows read line by line): an iterator of ``(input as given, Node)`` pairs that pass,
        in input order, reading ``ids`` only as far as the requests in flight need. Its
        ``.not_found`` and ``.release`` grow as it is read (whole once it is exhausted).
        Bad options raise :class:`~stol.InvalidRequestError` here (one request without
        inputs, answered by the service), before any input is read."""
        options = dict(lower_than=lower_than or "", higher_than=higher_than or "", equal_to=_equal_ranks(rank),
                       discard_noranks=bool(discard_noranks), save_predictable_noranks=bool(save_predictable_noranks))
        self._result(self._call("rank_filter", **options)[0], "rank_filter")  # the options checked, no input sent
        if isinstance(ids, (int, str)) and not isinstance(ids, bool):
            ids = [ids]
        stream = answers.FilterStream(self.release or "")
        stream._source = self._filtered(ids, options, stream)  # type: ignore[arg-type]
        return stream

    def _filtered(self, ids: Iterable[Query], options: dict, stream: answers.FilterStream) -> Iterator[Tuple[object, answers.Node]]:
        given: Deque[list] = collections.deque()  # per request sent: its inputs as given, in order

        def pairs():
            for item in ids:
                query = _query(item)
                if query != "0":  # Kraken's 0: unclassified, no rank; never sent, never kept
                    yield item, query

        def requests():
            for batch in _chunks(pairs(), lambda pair: _string_cost(pair[1]),
                                 bound=lambda batch: _strings_size([query for _, query in batch])):
                given.append([item for item, _ in batch])
                yield pb.TaxonomyRequest(rank_filter=dict(options, queries=[query for _, query in batch]))
        for answer, release, _ in self._pipeline(requests(), "rank_filter"):
            stream.release = release or stream.release
            items = given.popleft()
            if len(items) != len(answer.results):
                raise errors.ProtocolViolationError("the taxonomy service answered %d queries for %d"
                                                    % (len(answer.results), len(items)))
            for item, result in zip(items, answer.results):
                if result.HasField("error"):
                    stream.not_found.append(item)
                elif result.kept:
                    yield item, answers.Node(result.taxon_id, result.rank, result.name)

    # --- common ancestors ------------------------------------------------------------

    def compare(self, a: int, b: int, ranks: str = "main", language: Optional[str] = None) -> answers.Comparison:
        """Two taxa compared (``compare``): lowest common ancestor, both paths up to it,
        distance, shared clade, trait similarity (``stol-client compare A B``)."""
        answer, release = self._call("compare", taxon_a=int(a), taxon_b=int(b), language=self._language(language),
                                     ranks=_view(ranks))
        return answers.Comparison.from_pb(self._result(answer, "compare"), release)

    def compare_pairs(self, pairs: Iterable[Tuple[Query, Query]], ranks: str = "main") -> Iterator[answers.PairComparison]:
        """Common ancestors of many pairs (``compare_batch``, 1000 pairs per request,
        several in flight): an iterator of :class:`PairComparison`, one per pair in
        order. Each side is an id or an exact name; a side naming nothing sets the
        pair's ``error``."""
        return self._compare_pairs(pairs, _view(ranks))  # the view checked now, not at the first next()

    def _compare_pairs(self, pairs: Iterable[Tuple[Query, Query]], view: int) -> Iterator[answers.PairComparison]:
        def requests():
            for batch in _chunks(((_query(a), _query(b)) for a, b in pairs), _pair_cost, bound=_pairs_size):
                request = pb.TaxonomyRequest()
                request.compare_batch.ranks = view
                for a, b in batch:
                    request.compare_batch.pairs.add(a=a, b=b)
                yield request
        for answer, release, _ in self._pipeline(requests(), "compare_batch"):
            for result in answer.results:
                yield answers.PairComparison.from_pb(result, release)

    def lca(self, ids: Iterable[Query], ranks: str = "main") -> Optional[answers.Node]:
        """The lowest common ancestor of all ``ids`` (ids or exact names), as a
        :class:`Node`; ``None`` when some have no common ancestor (different roots of
        the eight-rank view). A taxon is its own ancestor: ``lca([x])`` is ``x``.

        One ``lca_batch`` request on the shared connection. More ids than one request
        holds (about 7,000 of 7 digits; a repeated id counts once) are sent as several
        sets, whose ancestors are joined in a second round. Raises the typed error of the first
        id or name that names nothing (:class:`~stol.NotFoundError`,
        :class:`~stol.TaxonDeletedError`, ...), as :meth:`compare` would for it. For
        many sets, or to have unknown members listed rather than raised, use
        :meth:`lca_sets`.

        Each call is a round trip to the service (about 0.16 ms on an idle machine,
        where an in-process library answers a pair in 0.04): in a loop over many pairs,
        :meth:`compare_pairs` is the fast way, 1,000 pairs per request and several in
        flight (10,000 pairs in 0.14 s from a fresh interpreter, 14 µs a pair; the same
        ancestors, ``PairComparison.lca``)."""
        view = _view(ranks)
        asked = [_query(value) for value in ids]
        if not asked:
            raise errors.InvalidRequestError("lca needs at least one taxon")
        members = list(dict.fromkeys(asked))  # once each: the same ancestor
        chunks = list(_chunks(members, limit=LCA_MEMBERS))
        if len(chunks) == 1:
            answer, release = self._call("lca_batch", sets=[{"members": members}], ranks=view)
            results = [self._set_results(answer, [(0, None)], release)[0]]
        else:
            results = list(self._lca_batch(((i, chunk, None) for i, chunk in enumerate(chunks)), 0.0, view))
        missing = next((result.not_found[0] for result in results if result.not_found), None)
        if missing is not None:
            raise self._query_error(missing, view)
        for result in results:
            if result.error is not None:
                if isinstance(result.error, errors.InvalidRequestError):
                    return None  # every member was found: the members have no common ancestor
                raise result.error
        if len(results) == 1:
            return results[0].taxon
        return self.lca([result.taxon.id for result in results], ranks)  # type: ignore[union-attr]

    def _query_error(self, query: str, view: int) -> errors.StolError:
        """The typed error of a query that names no single taxon, as the lineage batch
        answers it (the same resolution as every batch's)."""
        answer, release = self._call("lineage_batch", queries=[query], ranks=view, form=pb.LINEAGE_FORM_IDS)
        result = self._result(answer, "lineage_batch").results[0]
        if result.HasField("error"):
            return errors.from_pb(result.error)
        return errors.NotFoundError("%r names no single taxon" % (query,))

    def lca_sets(self, sets: Iterable, majority: Optional[float] = None,
                 ranks: str = "main") -> Iterator[answers.SetConsensus]:
        """The common ancestor, or the consensus taxon, of each of many sets of taxa
        (``lca_batch``, as ``stol-client lca``): an **iterator** of
        :class:`SetConsensus`, one per set in input order, read and sent lazily (at
        most 1000 sets, 10,000 members and 64 KiB per request, several requests in
        flight, one release for the whole batch).

        ``sets`` yields, for each set, one of:

        - its members: a list (or any iterable but a tuple of two or three whose
          second item is itself a list of members) of ids or exact names; the key is
          then the set's position, from 0;
        - ``(key, members)`` or ``(key, members, weights)``: any key (a read id, a
          contig name), handed back as it is; ``weights`` one positive number per
          member, or empty/``None`` for all 1;
        - a dict ``{"key": ..., "members": [...], "weights": [...]}`` (key and
          weights optional).

        ``majority=None``: the plain lowest common ancestor of every member found.
        ``majority=F`` (0 < F < 1): taxopy's ``find_majority_vote``, the consensus of
        CAT/BAT and MMseqs2's taxonomy: the deepest taxon holding more than ``F`` of
        the members' weight, alone (see :meth:`majority_vote`).
        ``ranks="main"``: members and answers on the eight main ranks (a member of
        another rank stands for its nearest main-rank ancestor); ``"all"``: NCBI's
        whole tree, as taxopy and ete4 see it.

        Members that name no single taxon are listed in ``not_found`` and the set is
        answered from the others; a set that cannot be answered carries its typed
        ``error`` (nothing is raised for one set). A set too large for one request is
        sent with its repeated members merged, their weights added (the same answer; on
        weighted sets up to the rounding of the sums), and fails alone with
        :class:`~stol.RequestTooLargeError` when that is still too large."""
        fraction = _fraction(majority)  # both checked now, not at the first next()
        view = _view(ranks)
        return self._lca_batch((_taxon_set(item, index) for index, item in enumerate(sets)), fraction, view)

    def majority_vote(self, members: Iterable[Query], fraction: float = 0.5,
                      weights: Optional[Sequence[float]] = None, ranks: str = "all") -> answers.SetConsensus:
        """The consensus taxon of one set (``lca_batch`` with ``majority``, one request
        on the shared connection), as taxopy's ``find_majority_vote(taxa, taxdb,
        fraction, weights)``: the members' lineages, root first, are lined up by depth
        and read from the deepest level up; a level answers when one taxon there
        weighs more than any other alone and more than ``fraction`` of the total
        weight. A taxon weighs what the members at or below it weigh; the members whose
        lineage ends above the level count together as one more contender that never
        answers. ``weights``: one positive weight per member (``None`` or empty: 1
        each). ``ranks="all"`` (the default): NCBI's whole tree, taxopy's answers;
        ``"main"``: the eight main ranks.

        Returns a :class:`SetConsensus` (``.taxon`` the answer, ``.support`` what
        taxopy calls ``agreement``). Raises the set's typed error when it has no
        answer: :class:`~stol.InvalidRequestError` (also a ``ValueError``) when no
        member names a taxon, no taxon holds the majority, or the weights do not
        match; ``fraction`` outside (0, 1) raises it before anything is sent.

        Differences from taxopy: a single member is accepted (its own taxon answers;
        taxopy requires two); members that name no taxon are listed in ``not_found``
        and the vote is taken among the others (taxopy raises ``TaxidError`` when the
        ``Taxon`` is made); members may be names as well as ids; taxopy's
        ``MajorityVoteError`` is :class:`~stol.InvalidRequestError` here; and
        ``.agreement`` is STOL's own score (the share among the members reaching the
        answer's depth), not taxopy's."""
        view = _view(ranks)
        share = _fraction(fraction)
        if not share:
            raise errors.InvalidRequestError("fraction must be more than 0 and less than 1, not %r" % (fraction,))
        key, queries, weights_list = _taxon_set((None, members, weights), 0)
        queries, weights_list, asked, problem = _fitted(queries, weights_list)
        if problem is not None:
            raise problem
        body = {"members": queries}
        if weights_list:
            body["weights"] = weights_list
        answer, release = self._call("lca_batch", sets=[body], ranks=view, majority=share)
        result = self._set_results(answer, [(key, asked)], release)[0]
        if result.error is not None:
            raise result.error
        return result

    def _set_results(self, answer, slots: List[Tuple[object, Optional[List[str]]]],
                     release: str) -> List[answers.SetConsensus]:
        """The results of a single ``lca_batch`` request answered on the shared connection."""
        results = self._result(answer, "lca_batch").results
        if len(results) != len(slots):
            raise errors.ProtocolViolationError("the taxonomy service answered %d sets for %d"
                                                % (len(results), len(slots)))
        return [answers.SetConsensus.from_pb(result, key, release, asked) for result, (key, asked) in zip(results, slots)]

    def _lca_batch(self, sets: Iterable[Tuple[object, List[str], Optional[List[float]]]], fraction: float,
                   view: int) -> Iterator[answers.SetConsensus]:
        """The pipelined ``lca_batch`` of (key, members, weights) sets: requests cut at
        the server's limits, each with the slots of its sets (key and the members as
        asked when merged) or the ready answers of sets refused here, in order."""
        budget = _transport.MAX_REQUEST_BYTES - _ENVELOPE_BYTES
        waiting: Deque[list] = collections.deque()  # per request sent: its slots, in order
        tail: List[answers.SetConsensus] = []  # sets refused here after the last request

        def requests():
            request = None
            slots: list = []
            count = members = size = 0
            for key, queries, weights in sets:
                cost = _set_cost(queries, weights)
                asked = None
                if len(queries) > LCA_MEMBERS or cost > budget:
                    queries, weights, asked, problem = _fitted(queries, weights)
                    if problem is not None:
                        slots.append(answers.SetConsensus(key, None, 0.0, 0.0, 0, [], problem, self.release or ""))
                        continue
                    cost = _set_cost(queries, weights)
                if request is not None and (count == LCA_SETS or members + len(queries) > LCA_MEMBERS
                                            or size + cost > budget):
                    waiting.append(slots)
                    yield request
                    request, slots = None, []
                if request is None:
                    request = pb.TaxonomyRequest()
                    request.lca_batch.ranks = view
                    request.lca_batch.majority = fraction
                    count = members = size = 0
                added = request.lca_batch.sets.add()
                added.members.extend(queries)
                if weights:
                    added.weights.extend(weights)
                slots.append((key, asked))
                count += 1
                members += len(queries)
                size += cost
            if request is not None:
                waiting.append(slots)
                yield request
            else:
                tail.extend(slots)

        for answer, release, _ in self._pipeline(requests(), "lca_batch"):
            results = iter(answer.results)
            slots = waiting.popleft()
            for slot in slots:
                if isinstance(slot, answers.SetConsensus):
                    yield slot
                    continue
                result = next(results, None)
                if result is None:
                    raise errors.ProtocolViolationError("the taxonomy service answered fewer sets than asked")
                key, asked = slot
                yield answers.SetConsensus.from_pb(result, key, release, asked)
        yield from tail

    # --- names -----------------------------------------------------------------------

    def name2id(self, names: Union[str, Iterable[str]], within: Optional[Query] = None) -> NameIds:
        """Every taxon each name belongs to (``name_lookup``, 1000 names per request):
        ``{name: [ids]}`` as ete4's ``get_name_translator``. Exact scientific names
        (several ids when ambiguous; at most 100 listed, ``.totals`` has the count),
        or a common name or synonym (one taxon). Names no taxon carries are in
        ``.missing``. ``within`` (an id or exact name) keeps only the taxa under it,
        as GBIF's higher-taxon hint: ``name2id("Bacteria", within="Insecta")`` is the
        stick insect genus; the others are in ``.outside``.

        Without ``within`` the service sends the ids alone (``ids_only``); the answer's
        other tables (``ranks``, ``kinds``, ``confidence``, ...) are asked of it when one is
        first read, in one more lookup of the found names pinned to the same release: read
        them while the service runs (after ``stol.private.stop()`` that lookup raises
        :class:`~stol.ServiceNotRunningError`)."""
        hint = "" if within is None else _query(within)
        if isinstance(names, str):
            names = [names]
        result = NameIds()
        if hint:
            for item, release in self._name_results(names, hint):
                result.release = release
                if item.outside_ids:  # found or not: the taxa the hint ruled out
                    result.outside[item.name] = list(item.outside_ids)
                result._add(item)
            return result
        # Without a hint, the ids alone (``ids_only``): the other tables are read when first
        # used, in a second lookup of the found names pinned to this one's release.
        sent: List[list] = []
        missing = result.missing
        requests = self._name_requests(names, "", ids_only=True, sent=sent)
        for index, (answer, release, _) in enumerate(self._pipeline(requests, "name_lookup")):
            result.release = release
            batch = sent[index]
            if answer.results:  # a service older than ids_only: whole results
                for item in answer.results:
                    result._add(item)
                continue
            counts = answer.id_counts
            if len(counts) != len(batch):
                raise errors.ProtocolViolationError("the taxonomy service answered %d names for %d"
                                                    % (len(counts), len(batch)))
            ids, at = list(answer.ids), 0
            for name, count in zip(batch, counts):
                if count:
                    result[name] = ids[at:at + count]
                    at += count
                else:
                    missing.append(name)
            if at != len(ids):
                raise errors.ProtocolViolationError("the taxonomy service answered %d ids for counts of %d"
                                                    % (len(ids), at))
        release = result.release
        result._details = lambda found: (item for item, _ in self._name_results(found, "", release))
        return result

    @staticmethod
    def _name_requests(names: Iterable[str], hint: str, ids_only: bool = False,
                       sent: Optional[List[list]] = None) -> Iterator:
        """``name_lookup`` requests of the stripped names, 1000 a request; each batch also
        appended to ``sent`` (to pair an ids-only answer's counts with its names)."""
        for batch in _chunks(name.strip() for name in names):
            if sent is not None:
                sent.append(batch)
            request = pb.TaxonomyRequest()
            request.name_lookup.names.extend(batch)
            request.name_lookup.within = hint
            request.name_lookup.ids_only = ids_only
            yield request

    def _name_results(self, names: Iterable[str], hint: str,
                      release: Optional[str] = None) -> Iterator[Tuple[object, str]]:
        """(``NameLookupResult``, release) of each name, in order: whole results (1000 names per request)."""
        for answer, answered, _ in self._pipeline(self._name_requests(names, hint), "name_lookup", release):
            for item in answer.results:
                yield item, answered

    def resolve_name(self, text: Union[int, str], *, rank: Optional[str] = None,
                     language: Optional[str] = None) -> answers.NameResolution:
        """What a person typed to name one taxon, resolved as ``stol-client fav add``
        resolves it (``resolve_name``): digits are the id as typed; a name is one taxon
        when exactly one taxon carries it (scientific, common or synonym, case and
        accents folded) or all its words (the last one as a prefix), ``"ambiguous"`` with
        the candidates when several do (never a silent pick), ``"not_found"`` with
        approximate suggestions otherwise. ``rank`` (a main rank) narrows it. Raises
        :class:`~stol.InvalidRequestError` for empty text, text without letters or
        digits, or digits beyond an id's range."""
        answer, release = self._call("resolve_name", text=str(text), rank=answers.main_rank_number(rank),
                                     language=self._language(language))
        return answers.NameResolution.from_pb(self._result(answer, "resolve_name"), release)

    def search(self, text: str, limit: int = 20, *, rank: Optional[str] = None, prefix: bool = False,
               phrase: bool = False, fuzzy: bool = True, conservation: Sequence[str] = (),
               within: Optional[Query] = None, language: Optional[str] = None) -> answers.SearchResults:
        """Search scientific, common (any language) and synonym names (``search``),
        best first: ``limit`` hits (at most 200), only of ``rank`` if given (a main
        rank), ``prefix``: the last word is a prefix (autocomplete), ``phrase``: the
        words adjacent and in order, ``fuzzy``: complete fewer than 3 hits with
        approximate matches, ``conservation``: IUCN codes (``["EN", "CR"]``),
        ``within``: only taxa under this one (an id or exact name, itself included;
        ``search("Bacteria", within="Phasmatodea")`` is the stick insect genus).

        Raises :class:`~stol.InvalidRequestError` for a query without letters or
        digits, over 512 bytes, or a limit over 200, and :class:`~stol.NotFoundError`
        when ``within`` names nothing."""
        answer, release = self._call("search", query=text, limit=int(limit), rank=answers.main_rank_number(rank),
                                     prefix=prefix, language=self._language(language),
                                     conservation=list(conservation), phrase=phrase, no_fuzzy=not fuzzy,
                                     within="" if within is None else _query(within))
        hits = self._result(answer, "search").hits
        return answers.SearchResults((answers.SearchHit(answers.Taxon.from_pb(h.taxon, release), h.matched_name, answers._name(answers._MATCHES, h.match_type),
                                        h.score, h.fuzzy, h.edit_distance) for h in hits), release)

    # --- trees -----------------------------------------------------------------------

    def subtree(self, taxon_id: int, format: str = "newick", ranks: str = "main",
                max_taxa: int = 10000) -> Union[answers.Newick, answers.SubtreeNodes]:
        """The whole subtree of a taxon (``subtree``), in one request.

        ``format="newick"``: one Newick string (:class:`Newick`, every node labelled
        with its scientific name, quoted where needed), the same text as
        ``stol-client tree ID --format newick``; ``format="nodes"``: a list of
        :class:`SubtreeNode` in preorder. Children come in name order (``ranks="main"``)
        or id order (``"all"``, the source's whole tree). A subtree of more than
        ``max_taxa`` taxa (at most 50,000) raises :class:`~stol.InvalidRequestError`
        with its size, never a cut tree."""
        if format not in ("newick", "nodes"):
            raise errors.InvalidRequestError("format must be 'newick' or 'nodes', not %r" % (format,))
        answer, release = self._call("subtree", taxon_id=int(taxon_id), ranks=_view(ranks), max_taxa=int(max_taxa))
        tree = self._result(answer, "subtree")
        if format == "newick":
            return answers.Newick(newick(list(tree.depths), list(tree.names)), release)
        nodes = answers.SubtreeNodes(release=release)
        stack: List[int] = []
        for taxon_id, depth, name, rank in zip(tree.ids, tree.depths, tree.names, tree.ranks):
            del stack[depth:]
            nodes.append(answers.SubtreeNode(taxon_id, stack[-1] if stack else None, depth, rank, name))
            stack.append(taxon_id)
        return nodes

    def topology(self, taxa: Iterable[Query], format: str = "newick", ranks: str = "all", *,
                 keep_single_children: bool = False, label: str = "name") -> Union[answers.Newick, answers.TopologyNodes]:
        """The smallest tree connecting ``taxa`` (ids or exact names; at most 10,000), in
        one request (``induced_tree``), as ete4's ``get_topology(taxids,
        intermediate_nodes=keep_single_children)`` builds it: their lineages joined,
        each node that was not asked for and has one child left out, the top at the
        first node from the root that branches or was asked for.

        ``format="newick"``: a :class:`Newick` string labelled with scientific names
        (``label="id"``: taxids, as ete4 names its nodes), the same text as ``stol-client
        tree --taxa --format newick``; ``format="nodes"``: :class:`TopologyNodes` in
        preorder. Either way ``.not_found`` lists the ids and names that name no single
        taxon: the tree is that of the others (ete4 raises on the first unknown id)."""
        if format not in ("newick", "nodes"):
            raise errors.InvalidRequestError("format must be 'newick' or 'nodes', not %r" % (format,))
        if label not in ("name", "id"):
            raise errors.InvalidRequestError("label must be 'name' or 'id', not %r" % (label,))
        ids: List[int] = []
        names: List[str] = []
        for value in taxa:
            query = _query(value)
            if query.lstrip("-").isdigit():
                ids.append(int(query))
            elif query:
                names.append(query)
        answer, release = self._call("induced_tree", taxon_ids=ids, names=names, ranks=_view(ranks),
                                     keep_single_children=bool(keep_single_children))
        tree = self._result(answer, "induced_tree")
        if format == "newick":
            labels = [str(i) if i else "" for i in tree.ids] if label == "id" else list(tree.names)
            text = answers.Newick(newick(list(tree.depths), labels), release)
            text.not_found = list(tree.not_found)
            return text
        nodes = answers.TopologyNodes(release=release, not_found=tree.not_found)
        stack: List[int] = []
        for taxon_id, depth, name, rank, requested in zip(tree.ids, tree.depths, tree.names, tree.ranks, tree.requested):
            del stack[depth:]
            nodes.append(answers.TopologyNode(taxon_id, stack[-1] if stack else None, depth, rank, name, requested))
            stack.append(taxon_id)
        return nodes

    def annotate(self, newick: str, *, internal_support: bool = False, label: str = "keep",
                 language: Optional[str] = None, internal_labels: str = "auto") -> answers.Newick:
        """A Newick tree whose node labels are taxids or exact names, annotated as ete4's
        ``NCBITaxa.annotate_tree`` does (with ``ignore_unclassified=True``), in NHX that
        ete4's ``Tree(text, parser=1)`` reads back; ``stol-client annotate`` does the same.

        The tree is read as ete4 reads it with ``parser=1`` (:mod:`stol.trees`: quoted or
        bare labels, lengths kept as written, NHX comments kept, other comments dropped);
        a text it cannot read raises :class:`~stol.NewickError` with the position, before
        any request. An internal label is a taxon too unless it is a number (``100``,
        ``0.95``), which is a support value, kept as it is and never looked up
        (``internal_labels="auto"``, warned with a :class:`UserWarning` naming how many);
        ``internal_labels="taxa"`` looks up every internal label, numbers too, and
        ``"support"`` (or ``internal_support=True``, ete4's default parser) none; as
        ``stol-client annotate --internal-labels``.

        Every distinct label (a taxid or an exact scientific or common name) is looked up
        once through the lineage batch on NCBI's whole tree (``ranks="all"``). A node
        whose label names a taxon gets ``taxid``, ``sci_name``, ``common_name`` (empty when
        the taxon has none in ``language``), ``rank`` (NCBI's), ``lineage`` (ids, root
        first, ending with the taxon) and ``named_lineage`` (their scientific names). An
        internal node whose label is empty or names nothing gets the same for the lowest
        common ancestor of its annotated leaves, as the service answers it
        (``annotate_tree``: the tree's shape and the taxa its labels name, sent in parts
        of at most 64 KiB); without annotated leaves below it, it stays as it was. A leaf whose
        label names nothing (unknown, deleted, an ambiguous name, Kraken's 0) stays
        exactly as it was, byte for byte (label, length, its own NHX and comments), and
        its label is listed in ``.not_found``.

        The text written: the structure as read, every node left as it was written back
        as the text had it; an annotated node as its label (quoted only where Newick
        needs it), its length, and an NHX comment holding its own earlier pairs and the
        six properties (ours replace a pair of the same key), written as ete4's writer
        writes a node's props: keys sorted, lists joined with ``|``, each of ``:;(),[]=``
        in a value made ``_``. ``label``: ``"keep"`` the original label, ``"name"`` the
        scientific name or ``"id"`` the taxid on every annotated node (with
        ``internal_support``, an annotated inner node's support value too).

        An unquoted label's ``_`` is a blank, as Newick has it (``Mus_musculus`` is looked
        up as Mus musculus; a quoted ``'Mus_musculus'`` as written). An inner label whose
        taxon is not an ancestor of every annotated leaf below it (a support value read as
        a taxon id, a mislabelled clade) keeps its taxon, is warned of with a
        :class:`UserWarning` and listed in ``.not_ancestors``.

        Returns a :class:`~stol.Newick` (the text) with ``.not_found`` (the labels of the
        leaves that name nothing, in preorder, one per leaf), ``.not_ancestors`` (the inner
        labels that cannot name their clade, in preorder), ``.release`` (the release
        that answered; the pinned one, or ``""``, when nothing was looked up) and ``.tree``
        (the root :class:`~stol.trees.NewickNode`, each annotated node's ``props`` holding
        the Python values)."""
        if label not in ("keep", "name", "id"):
            raise errors.InvalidRequestError("label must be 'keep', 'name' or 'id', not %r" % (label,))
        if internal_labels not in ("auto", "taxa", "support"):
            raise errors.InvalidRequestError("internal_labels must be 'auto', 'taxa' or 'support', not %r" % (internal_labels,))
        inner = "support" if internal_support else internal_labels
        from .trees import nhx_value, parse_newick, write_newick
        root = parse_newick(newick)
        nodes: List[NewickNode] = list(root.traverse())  # preorder
        language = self._language(language)

        def is_taxon_label(node: NewickNode) -> bool:
            if not node.label or not node.children:
                return bool(node.label)
            return inner == "taxa" or (inner == "auto" and not _is_number(node.label))
        support_values = sum(1 for node in nodes if node.children and node.label and not is_taxon_label(node))
        if inner == "auto" and support_values:
            warnings.warn("%d inner label%s, not as taxa (internal_labels='taxa' looks them up)"
                          % (support_values, " is a number, read as a support value" if support_values == 1
                             else "s are numbers, read as support values"), UserWarning, stacklevel=2)
        queries: dict = {}  # label -> its query, each label once, in preorder
        for node in nodes:
            if is_taxon_label(node) and node.label not in queries:
                queries[node.label] = _query(_lookup_text(node))
        sent = list(dict.fromkeys(q for q in queries.values() if q and q != "0"))  # 0 is Kraken's, no taxon
        found = {}  # query -> its Lineage
        release = self.release or ""
        found_lineages = self._lineages(sent, pb.RANK_VIEW_ALL, language, pb.LINEAGE_FORM_COMPACT,
                                 True) if sent else ()  # no label to look up: no connection either
        for query, lineage in zip(sent, found_lineages):
            release = lineage.release or release
            if lineage.error is None and lineage.taxon is not None and lineage.taxon.id:
                found[query] = lineage
        not_found = [node.label for node in nodes if not node.children and node.label
                     and queries[node.label] not in found]

        # Each node's own taxon, then the taxon the service gives it (its own, else its
        # annotated leaves' common ancestor): nothing to ask when no label named one.
        own = [0] * len(nodes)
        for index, node in enumerate(nodes):
            if is_taxon_label(node):
                lineage = found.get(queries[node.label])
                if lineage is not None:
                    own[index] = lineage.taxon.id  # type: ignore[union-attr]
        assigned, not_ancestors = self._annotate_tree(nodes, own, release) if any(own) else (own, [])
        if not_ancestors:
            warnings.warn("%d inner label%s not an ancestor of every annotated leaf below: %s. A support value read "
                          "as a taxon? (internal_labels='support')"
                          % (len(not_ancestors), " names a taxon that is" if len(not_ancestors) == 1 else "s name taxa that are",
                             "; ".join("%r (taxon %d)" % (nodes[i].label, own[i]) for i in not_ancestors[:20])),
                          UserWarning, stacklevel=2)
        lineages = {lineage.taxon.id: lineage for lineage in found.values()}  # type: ignore[union-attr]
        ancestors = sorted({taxid for taxid in assigned if taxid and taxid not in lineages})
        if ancestors:
            for lineage in self._lineages(ancestors, pb.RANK_VIEW_ALL, language, pb.LINEAGE_FORM_COMPACT, True,
                                          release=release):
                if lineage.error is not None:
                    raise lineage.error
                lineages[lineage.taxon.id] = lineage  # type: ignore[union-attr]

        common = self._common_names({taxid for taxid in assigned if taxid}, release, language)
        written: dict = {}  # taxid -> (its props, their NHX pairs): many nodes share a taxon
        escaped: dict = {}  # id -> its scientific name as NHX writes it: each name escaped once,
        # not once per lineage it is on (a tree of 10,000 taxa holds some 400,000 of them)
        for node, taxid in zip(nodes, assigned):
            if not taxid:
                continue
            known = written.get(taxid)
            if known is None:
                lineage = lineages[taxid]
                target, names = lineage.ids, lineage.names
                props = {"taxid": taxid, "sci_name": names[-1], "common_name": common.get(taxid, ""),  # type: ignore[index]
                         "rank": lineage.ranks[-1], "lineage": list(target), "named_lineage": list(names)}  # type: ignore
                for i, name in zip(target, names):  # type: ignore[arg-type]
                    if i not in escaped:
                        escaped[i] = nhx_value(name)
                ours = [("common_name", nhx_value(props["common_name"])), ("lineage", "|".join(map(str, target))),
                        ("named_lineage", "|".join([escaped[i] for i in target])), ("rank", nhx_value(props["rank"])),
                        ("sci_name", escaped[taxid]), ("taxid", str(taxid))]  # sorted by key, as ete4 writes
                known = written[taxid] = (props, ours)
            props, ours = known
            node.props = {key: list(value) if isinstance(value, list) else value for key, value in props.items()}
            if node.nhx:
                pairs = {key: nhx_value(value) for key, value in node.nhx}
                pairs.update(ours)
                node.nhx = sorted(pairs.items())
            else:
                node.nhx = list(ours)
            if label != "keep":
                node.label = props["sci_name"] if label == "name" else str(taxid)  # type: ignore[assignment]
            node.source = None  # written from its parts
        text = answers.Newick(write_newick(root), release)
        text.not_found = not_found
        text.not_ancestors = [nodes[i].label for i in not_ancestors]
        text.tree = root
        return text

    def _annotate_tree(self, nodes: List[NewickNode], own: List[int], release: str) -> Tuple[List[int], List[int]]:
        """The taxon each node (preorder) gets from ``annotate_tree``, and the inner nodes
        whose own taxon is no ancestor of their annotated leaves (``not_ancestors``, in
        preorder). A tree too large for
        one request (64 KiB, :data:`ANNOTATE_NODES` nodes) is sent in parts: the children of
        a node whose subtree does not fit are sent in groups first, each group under a
        root of its own, and each group then stands in the node's part as one leaf
        carrying the group's ``leaves_ancestor`` (the common ancestor of leaves is
        associative, PROTOCOL.md §4.2)."""
        count = len(nodes)
        position = {id(node): index for index, node in enumerate(nodes)}
        depths = [0] * count
        children: List[List[int]] = [[] for _ in range(count)]
        for index, node in enumerate(nodes):
            for child in node.children:
                at = position[id(child)]
                depths[at] = depths[index] + 1
                children[index].append(at)
        budget = _transport.MAX_REQUEST_BYTES - _ENVELOPE_BYTES
        # Bottom-up, each subtree's bytes (its depths and ids, packed) and nodes as it would
        # be sent, its grouped children standing as one leaf per group (depth, an id of at
        # most 10 bytes).
        size = [0] * count
        weight = [0] * count
        groups: Dict[int, List[List[int]]] = {}
        for index in range(count - 1, -1, -1):
            kids = children[index]
            mine = _varint_size(depths[index]) + _varint_size(own[index])
            total, nodes_in = mine + sum(size[k] for k in kids), 1 + sum(weight[k] for k in kids)
            if total > budget or nodes_in > ANNOTATE_NODES:
                packed: List[List[int]] = [[]]
                group_bytes, group_nodes = 2, 1  # the group's own root: depth 0, no taxon
                for kid in kids:
                    if packed[-1] and (group_bytes + size[kid] > budget or group_nodes + weight[kid] > ANNOTATE_NODES):
                        packed.append([])
                        group_bytes, group_nodes = 2, 1
                    packed[-1].append(kid)
                    group_bytes += size[kid]
                    group_nodes += weight[kid]
                groups[index] = packed
                total = mine + len(packed) * (_varint_size(depths[index] + 1) + 10)
                nodes_in = 1 + len(packed)
            size[index], weight[index] = total, nodes_in
        taxids = [0] * count
        not_ancestors: List[int] = []
        ancestors: Dict[Tuple[int, int], int] = {}  # (node, group) -> the group's leaves_ancestor

        def walk(top: int, base: int, held: List[Optional[int]], part_depths: List[int], part_ids: List[int]) -> None:
            """``top``'s subtree in preorder, depths from ``base``, grouped children as their leaves."""
            stack = [top]
            while stack:
                index = stack.pop()
                held.append(index)
                part_depths.append(depths[index] - base)
                part_ids.append(own[index])
                if index in groups:
                    for group in range(len(groups[index])):
                        held.append(None)
                        part_depths.append(depths[index] + 1 - base)
                        part_ids.append(ancestors[(index, group)])
                else:
                    stack.extend(reversed(children[index]))

        def send(held: List[Optional[int]], part_depths: List[int], part_ids: List[int]) -> int:
            answer, _ = self._call("annotate_tree", release=release or None, depths=part_depths, taxon_ids=part_ids)
            result = self._result(answer, "annotate_tree")
            if len(result.taxon_ids) != len(held):
                raise errors.ProtocolViolationError("the taxonomy service annotated %d nodes of %d"
                                                    % (len(result.taxon_ids), len(held)))
            for index, taxid in zip(held, result.taxon_ids):
                if index is not None:
                    taxids[index] = taxid
            for position in result.not_ancestors:
                if position >= len(held):
                    raise errors.ProtocolViolationError("the taxonomy service named node %d of a part of %d"
                                                        % (position, len(held)))
                if held[position] is not None:
                    not_ancestors.append(held[position])  # type: ignore[arg-type]
            return result.leaves_ancestor
        for index in range(count - 1, -1, -1):  # children before parents: nested groups first
            for number, group in enumerate(groups.get(index, ())):
                held: List[Optional[int]] = [None]
                part_depths, part_ids = [0], [0]
                for kid in group:
                    walk(kid, depths[index], held, part_depths, part_ids)
                ancestors[(index, number)] = send(held, part_depths, part_ids)
        held, part_depths, part_ids = [], [], []
        walk(0, 0, held, part_depths, part_ids)
        send(held, part_depths, part_ids)
        return taxids, sorted(not_ancestors)

    def _common_names(self, ids, release: str, language: Optional[str]) -> dict:
        """``{id: common name}`` of taxa (``get_taxa``, pipelined), pinned to ``release``:
        the lineage batch of whole-tree lineages carries no common names."""
        wanted = sorted(ids)
        if not wanted:
            return {}
        language = self._language(language)

        def requests():
            for start in range(0, len(wanted), BATCH_SIZE):
                yield pb.TaxonomyRequest(get_taxa={"taxon_ids": wanted[start:start + BATCH_SIZE],
                                                   "language": language})
        names = {}
        for answer, _, _ in self._pipeline(requests(), "taxa", release=release):
            for taxon in answer.taxa:
                names[taxon.id] = taxon.common_name
        return names

    def relatives(self, taxon_id: int, n: int = 10, *, computed: bool = False, ranks: str = "main",
                  max_candidates: int = 0, language: Optional[str] = None) -> answers.Relatives:
        """The ``n`` (1-100) closest species of a species (``relatives``), by distance,
        then name, then id. ``computed``: compute on the tree even when the
        precomputed table could answer (same list); ``ranks="all"``: by NCBI's edges;
        ``max_candidates``: stop after that many nodes (0: 1,000,000), setting
        ``truncated``. Raises :class:`~stol.InvalidRequestError` for a taxon that is
        not a species (nor below one)."""
        answer, release = self._call("relatives", taxon_id=int(taxon_id), n=int(n), computed=computed,
                                     language=self._language(language), max_candidates=int(max_candidates),
                                     ranks=_view(ranks))
        r = self._result(answer, "relatives")
        return answers.Relatives(answers.Taxon.from_pb(r.taxon, release),
                         [answers.Relative(x.rank_order, answers.Taxon.from_pb(x.taxon, release), answers.Taxon.from_pb(x.lca, release),
                                   x.lca_depth, x.distance) for x in r.relatives],
                         answers._name(answers._SOURCES, r.source), r.truncated, r.candidates_examined, release)

    # --- releases --------------------------------------------------------------------

    def history(self, taxon_id: int) -> List[answers.TaxonInRelease]:
        """One id through the bundled database and every installed release, oldest
        first (``history``): present, renamed, moved, merged or deleted."""
        answer, _ = self._call("history", release="", taxon_id=int(taxon_id))
        return [answers.TaxonInRelease(r.release, r.present, r.name, r.rank, r.parent_id, r.merged_into, r.deleted,
                               r.build_time) for r in self._result(answer, "history").releases]

    def diff(self, from_release: str, to_release: str, taxon_ids: Optional[Iterable[int]] = None
             ) -> Iterator[answers.TaxonChange]:
        """What changed between two installed releases (``diff``), in id order, page
        by page: every id, or only ``taxon_ids`` (e.g. a user's favourites)."""
        if taxon_ids is not None:
            ids = [int(i) for i in taxon_ids]
            for start in range(0, len(ids), BATCH_SIZE):
                answer, _ = self._call("diff", release="", from_release=from_release, to_release=to_release,
                                       taxon_ids=ids[start:start + BATCH_SIZE])
                yield from (answers.TaxonChange.from_pb(c) for c in self._result(answer, "diff").changes)
            return
        after = 0
        while True:
            answer, _ = self._call("diff", release="", from_release=from_release, to_release=to_release,
                                   after_id=after)
            page = self._result(answer, "diff")
            yield from (answers.TaxonChange.from_pb(c) for c in page.changes)
            if page.done:
                return
            after = page.next_after_id

    def diagnostics(self) -> str:
        """The service's plain-text diagnostics report (no queries, no user ids)."""
        answer, _ = self._call("diagnostics")
        return self._result(answer, "diagnostics").report

"""pandas helpers: a column of ids in, a frame of lineages out.

pandas is optional: it is imported when a helper is called, never by
``import stol``.
"""

from __future__ import annotations

import collections
from typing import Iterable, List, Optional, Sequence

from . import errors
from ._proto import taxonomy_pb2 as pb
from .answers import MAIN_RANKS, _main_rank

__all__ = ["lineage_frame"]


def lineage_frame(ids: Iterable, taxonomy=None, *, ranks: str = "main", columns: Optional[Sequence[str]] = None,
                  language: Optional[str] = None, rank_ids: bool = False):
    """A ``pandas.DataFrame`` with one row per id (or exact name) of ``ids``, in order.

    ``ids`` may be a ``pandas.Series`` (its index is kept) or any iterable. Columns:
    ``query``, ``id``, ``rank`` and ``name`` of the taxon, ``lineage`` (scientific
    names root first, the taxon last, ``;``-separated), one column per rank of
    ``columns`` (default the eight main ranks, ``domain`` ... ``species``: the name
    at that rank, or missing), ``release`` (which release answered) and ``error``
    (the error code's name when the query named nothing, else missing). Missing
    values are ``None``; ``id`` is pandas' nullable ``Int64``. ``rank_ids=True``
    adds, after the rank columns, one ``<rank>_id`` column per rank column: the id
    of the taxon at that rank (taxonkit's ``reformat -t``; ``genus_id`` of 9606 is
    9605), nullable ``Int64``.

    ``taxonomy`` is a :class:`~stol.Taxonomy` (default: a new one, closed
    afterwards); ``ranks="all"`` walks the source's whole tree (pass ``columns``
    with its rank names, e.g. ``["superkingdom", "phylum", "genus", "species"]``).
    The lineages are fetched in batches of 1000 with several requests in flight, the
    service naming each cell's taxon (``lineage_batch``'s ``columns``, PROTOCOL.md): no
    lineage is walked here.

    A column names a rank as the service's rank table spells it (:meth:`~stol.Taxonomy.rank_order`),
    in any case: on the main ranks ``superkingdom`` is the ``domain`` column's rank; on the whole
    tree a column is filled by its own spelling, else by the other spellings of its level
    (``domain`` by ``superkingdom``); of several nodes of that rank, the lowest. A column that
    names no rank raises :class:`~stol.InvalidRequestError` listing the valid ones (also when
    ``ids`` is empty), rather than a column that is silently empty.
    """
    import pandas as pd  # optional dependency, imported only here

    from .taxonomy import Taxonomy, _view

    index = ids.index if isinstance(ids, pd.Series) else None
    values = list(ids)
    rank_columns = list(dict.fromkeys(MAIN_RANKS if columns is None else columns))  # a column once
    view = _view(ranks)
    own = taxonomy is None
    taxonomy = Taxonomy() if own else taxonomy
    asked = [str(column) for column in rank_columns]
    try:
        # Which rank fills a column is the service's rule (`lineage_batch`'s `columns`): each
        # result carries the id of its column's node, and a column that names no rank is
        # refused, here before any row is read, also for no ids at all.
        if not values:
            taxonomy._result(taxonomy._call("lineage_batch", queries=[], ranks=view, columns=asked)[0], "lineage_batch")
        rows = _FrameRows(len(rank_columns), rank_ids)
        collections.deque(taxonomy._lineages(values, view, taxonomy._language(language), pb.LINEAGE_FORM_NODES,
                                             True, columns=asked, rows=rows), maxlen=0)
    finally:
        if own:
            taxonomy.close()
    return rows.frame(pd, rank_columns, index)


class _FrameRows:
    """The frame's columns, filled from the answers without a :class:`Lineage` per row
    (``Taxonomy._lineages``' ``rows``).

    Each row is a few field reads and appends; its rank columns are its ``column_ids``
    looked up in the answer's nodes (the taxon's own name added), extended into one flat
    list sliced into columns at the end: 100,000 lineages on NCBI's whole tree in 0.4 s
    where a ``Lineage`` per row and a walk of its ranks took 1.4 s.
    """

    def __init__(self, width: int, rank_ids: bool):
        self.width = width
        self.query, self.id, self.rank, self.name, self.lineage, self.release, self.error = ([] for _ in range(7))
        self.cells: List[Optional[str]] = []  # row by row, `width` names each
        self.cell_ids: Optional[List[int]] = [] if rank_ids else None
        self.blank = (None,) * width

    def reader(self, answer):
        """What appends one result of ``answer`` (a ``LineageBatchResponse`` of the nodes form)."""
        names_of = {node.id: node.name for node in answer.nodes}
        name_of, names_get = names_of.__getitem__, names_of.get
        query, taxon_ids, rank, name, lineage = self.query, self.id, self.rank, self.name, self.lineage
        release, error, cells, cell_ids = self.release, self.error, self.cells, self.cell_ids
        width = self.width

        def row(result, answered: str) -> None:
            taxon = result.taxon
            taxon_id = taxon.id
            query.append(result.query)
            release.append(answered)
            if not taxon_id:  # no taxon: the query named nothing (ids are > 0)
                self._missing(result)
                return
            taxon_name = taxon.scientific_name
            names_of[taxon_id] = taxon_name  # the taxon fills its own rank's column
            taxon_ids.append(taxon_id)
            rank.append(taxon.source_rank or _main_rank(taxon.rank))
            name.append(taxon_name)
            lineage.append(";".join([*map(name_of, result.lineage_ids), taxon_name]))
            found = result.column_ids
            if len(found) != width:
                raise errors.ProtocolViolationError(
                    "the lineage of %r has %d column ids for %d columns (a service older than the package?)"
                    % (result.query, len(found), width))
            cells.extend(map(names_get, found))
            if cell_ids is not None:
                cell_ids.extend(found)
            error.append(None)
        return row

    def _missing(self, result) -> None:
        code = errors.from_pb(result.error).code_name if result.HasField("error") else "PROTOCOL_VIOLATION"
        for column in (self.id, self.rank, self.name, self.lineage):
            column.append(None)
        self.cells.extend(self.blank)
        if self.cell_ids is not None:
            self.cell_ids.extend((0,) * self.width)
        self.error.append(code)

    def zero(self, release: str) -> None:
        """Kraken's 0, "unclassified", as :meth:`Lineage.unclassified` answers it."""
        for column, value in ((self.query, "0"), (self.release, release), (self.id, 0), (self.rank, "no rank"),
                              (self.name, "unclassified"), (self.lineage, ""), (self.error, None)):
            column.append(value)
        self.cells.extend(self.blank)
        if self.cell_ids is not None:
            self.cell_ids.extend((0,) * self.width)

    def frame(self, pd, rank_columns: List[str], index):
        width = self.width
        columns = {"query": self.query, "id": pd.array(self.id, dtype="Int64"), "rank": self.rank,
                   "name": self.name, "lineage": self.lineage}
        for position, column in enumerate(rank_columns):
            columns[column] = self.cells[position::width]
        if self.cell_ids is not None:
            for position, column in enumerate(rank_columns):
                ids = pd.array(self.cell_ids[position::width], dtype="Int64")
                ids[ids == 0] = pd.NA  # 0: the lineage has no node of that rank
                columns["%s_id" % column] = ids
        columns["release"] = self.release
        columns["error"] = self.error
        frame = pd.DataFrame(columns)
        if index is not None:
            frame.index = index
        return frame

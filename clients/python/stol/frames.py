"""pandas helpers: a column of ids in, a frame of lineages out.

pandas is optional: it is imported when a helper is called, never by
``import stol``.
"""

from __future__ import annotations

from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from . import errors
from .answers import MAIN_RANKS, RankOrder

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
    The lineages are fetched in batches of 1000 with several requests in flight.

    A column names a rank as the service's rank table spells it (:meth:`~stol.Taxonomy.rank_order`),
    in any case: on the main ranks ``superkingdom`` is the ``domain`` column's rank; on the whole
    tree a column is filled by any spelling of its level (``domain`` by ``superkingdom``). A
    column that names no rank raises :class:`~stol.InvalidRequestError` listing the valid ones,
    rather than a column that is silently empty.
    """
    import pandas as pd  # optional dependency, imported only here

    from .taxonomy import Taxonomy

    index = ids.index if isinstance(ids, pd.Series) else None
    values = list(ids)
    rank_columns = list(dict.fromkeys(MAIN_RANKS if columns is None else columns))  # a column once
    own = taxonomy is None
    taxonomy = Taxonomy() if own else taxonomy
    id_columns = {rank: "%s_id" % rank for rank in rank_columns} if rank_ids else {}
    # Built column by column (one list per column, appended to per lineage): a list of one
    # dict per row made pandas' construction and the dicts themselves most of the time.
    names = ["query", "id", "rank", "name", "lineage", *rank_columns, *id_columns.values(), "release", "error"]
    columns = {name: [] for name in names}
    query_column, id_column, rank_column, name_column, lineage_column = (
        columns["query"], columns["id"], columns["rank"], columns["name"], columns["lineage"])
    release_column, error_column = columns["release"], columns["error"]
    try:
        # The default columns read through the rank table too: on the whole tree NCBI's
        # superkingdom (before 2025) fills `domain`, which was empty.
        spellings = _column_spellings(rank_columns, ranks, taxonomy.rank_order())
        filled = [(columns[rank], spellings[rank]) for rank in rank_columns]
        # A column of one spelling reads its rank at once; the others their first spelling there.
        single = [(column, spelled[0]) for column, spelled in filled if len(spelled) == 1]
        several = [(column, spelled) for column, spelled in filled if len(spelled) > 1]
        filled_ids = [(columns[id_columns[rank]], spellings[rank]) for rank in id_columns]
        for lineage in taxonomy.lineage(values, ranks=ranks, language=language):
            query_column.append(lineage.query)
            release_column.append(lineage.release)
            if lineage.error is not None:
                for column in (id_column, rank_column, name_column, lineage_column):
                    column.append(None)
                for column, _ in filled + filled_ids:
                    column.append(None)
                error_column.append(lineage.error.code_name)
                continue
            taxon = lineage.taxon
            id_column.append(taxon.id)
            rank_column.append(taxon.rank)
            name_column.append(taxon.name)
            lineage_column.append(str(lineage))
            by_rank = lineage.rank_names
            for column, rank in single:
                column.append(by_rank.get(rank))
            for column, spelled in several:
                column.append(next((by_rank[s] for s in spelled if s in by_rank), None))
            if filled_ids:
                ids_by_rank = lineage.rank_ids
                for column, spelled in filled_ids:
                    column.append(next((ids_by_rank[s] for s in spelled if s in ids_by_rank), None))
            error_column.append(None)
    finally:
        if own:
            taxonomy.close()
    frame = pd.DataFrame(columns, columns=names)
    for column in ["id", *id_columns.values()]:
        frame[column] = frame[column].astype("Int64")
    if index is not None:
        frame.index = index
    return frame


def _column_spellings(columns: List[str], ranks: str, order: RankOrder) -> Dict[str, Tuple[str, ...]]:
    """Each column with the rank names that fill it, from the service's rank table; an error
    naming the valid ranks for a column that names none (issue 34: ``"Genus"``, a typo, or
    ``"superkingdom"`` on the main ranks gave an empty column)."""
    result: Dict[str, Tuple[str, ...]] = {}
    for column in columns:
        folded = str(column).strip().lower()
        if ranks == "main":
            main = next((rank for rank, spellings in order.main_ranks.items()
                         if folded == rank or folded in spellings), None)
            if main is None:
                raise errors.InvalidRequestError(
                    "%r is no main rank; the columns of ranks='main' are %s (or their spellings: %s); "
                    "other ranks need ranks='all'" % (column, ", ".join(order.main_ranks),
                                                      ", ".join(sorted({s for ss in order.main_ranks.values() for s in ss}))))
            result[column] = (main,)
        else:
            level = next((spellings for spellings in order.levels if folded in spellings), None)
            if level is None and folded in order.unordered:
                level = (folded,)
            if level is None:
                raise errors.InvalidRequestError(
                    "%r is no rank of the service's rank table (stol-client filter --list-order): %s"
                    % (column, "; ".join(order.order())))
            result[column] = (folded,) + tuple(s for s in level if s != folded)
    return result

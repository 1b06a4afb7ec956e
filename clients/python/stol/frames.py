"""pandas helpers: a column of ids in, a frame of lineages out.

pandas is optional: it is imported when a helper is called, never by
``import stol``.
"""

from __future__ import annotations

from typing import Iterable, Optional, Sequence

from .answers import MAIN_RANKS

__all__ = ["lineage_frame"]


def lineage_frame(ids: Iterable, taxonomy=None, *, ranks: str = "main", columns: Optional[Sequence[str]] = None,
                  language: Optional[str] = None):
    """A ``pandas.DataFrame`` with one row per id (or exact name) of ``ids``, in order.

    ``ids`` may be a ``pandas.Series`` (its index is kept) or any iterable. Columns:
    ``query``, ``id``, ``rank`` and ``name`` of the taxon, ``lineage`` (scientific
    names root first, the taxon last, ``;``-separated), one column per rank of
    ``columns`` (default the eight main ranks, ``domain`` ... ``species``: the name
    at that rank, or missing), ``release`` (which release answered) and ``error``
    (the error code's name when the query named nothing, else missing). Missing
    values are ``None``; ``id`` is pandas' nullable ``Int64``.

    ``taxonomy`` is a :class:`~stol.Taxonomy` (default: a new one, closed
    afterwards); ``ranks="all"`` walks the source's whole tree (pass ``columns``
    with its rank names, e.g. ``["superkingdom", "phylum", "genus", "species"]``).
    The lineages are fetched in batches of 1000 with several requests in flight.
    """
    import pandas as pd  # optional dependency, imported only here

    from .taxonomy import Taxonomy

    index = ids.index if isinstance(ids, pd.Series) else None
    values = list(ids)
    rank_columns = list(MAIN_RANKS if columns is None else columns)
    own = taxonomy is None
    taxonomy = Taxonomy() if own else taxonomy
    rows = []
    try:
        for lineage in taxonomy.lineage(values, ranks=ranks, language=language):
            if lineage.error is not None:
                row = {"query": lineage.query, "id": None, "rank": None, "name": None, "lineage": None}
                row.update({rank: None for rank in rank_columns})
                row.update(release=lineage.release, error=lineage.error.code_name)
            else:
                by_rank = lineage.rank_names
                row = {"query": lineage.query, "id": lineage.taxon.id, "rank": lineage.taxon.rank,
                       "name": lineage.taxon.name, "lineage": str(lineage)}
                row.update({rank: by_rank.get(rank) for rank in rank_columns})
                row.update(release=lineage.release, error=None)
            rows.append(row)
    finally:
        if own:
            taxonomy.close()
    frame = pd.DataFrame(rows, columns=["query", "id", "rank", "name", "lineage", *rank_columns, "release", "error"])
    frame["id"] = frame["id"].astype("Int64")
    if index is not None:
        frame.index = index
    return frame

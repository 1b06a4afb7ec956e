"""STOL from Python: the shared taxonomy service of this machine, without loading a
copy of NCBI into every notebook.

>>> import stol
>>> tx = stol.Taxonomy()
>>> tx.taxon(9689).name
'Panthera leo'
>>> str(tx.lineage(9689))
'Eukaryota;Metazoa;Chordata;Mammalia;Carnivora;Felidae;Panthera;Panthera leo'
>>> for lineage in tx.lineage(open("ids.txt")):   # any number, 1000 per request
...     print(lineage.query, lineage)

:class:`Taxonomy` answers lookups, lineages (also in taxonkit-style templates,
:meth:`Taxonomy.lineage_format`), rank filters (taxonkit's ``filter``,
:meth:`Taxonomy.filter`), common ancestors, name lookups, search, children, subtrees
(Newick), tree annotation (ete4's ``annotate_tree``, :meth:`Taxonomy.annotate`) and
closest relatives, every rule of them applied by the service; :class:`Favorites`
holds the calling user's favourites; :func:`lineage_frame` (pandas) turns a
column of ids into a frame of lineages. Every error is a :class:`StolError`, one
class per protocol error code (:class:`NotFoundError`, ...). The sockets are in
``$STOL_RUNTIME_DIR``, else the user's private stack's when one runs (``stol-client
serve``: STOL without root), else ``/run/stol``.
"""

import os as _os
import sys as _sys


def _protobuf_or_the_bundled_copy() -> None:
    """The protobuf runtime: the installed one when there is one (faster, compiled),
    else the pure-Python copy a wheel of STOL bundles (``stol/_vendor``, from Debian's
    python3-protobuf), so that ``pip install --no-index stol-….whl`` needs nothing else."""
    try:
        import google.protobuf  # noqa: F401
    except ImportError:
        vendor = _os.path.join(_os.path.dirname(__file__), "_vendor")
        if not _os.path.isdir(vendor):
            raise
        _os.environ.setdefault("PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION", "python")
        _sys.path.append(vendor)


_protobuf_or_the_bundled_copy()

from . import errors  # noqa: E402
from .errors import *  # noqa: F401,F403 - one exception class per error code
from .errors import __all__ as _error_names
from .name_ids import NameIds
from .taxonomy import LineageFormat, Taxonomy, answers  # answers: the record types, loaded on first use

#: The record types of ``answers``, read from it when first asked for (``answers`` itself
#: loads then: ``_lazy``).
_ANSWERS = ("MAIN_RANKS", "Comparison", "Database", "Detail", "Favorite", "FilteredTaxa", "FilterStream",
            "FormattedLineage", "Lineage", "NameResolution", "Newick", "Node", "PairComparison", "Placeholder",
            "RankOrder", "Relatives", "SearchHit", "SearchResults", "SetConsensus", "Status", "SubtreeNode", "Taxon",
            "TaxonMap", "TopologyNode")

#: What loads on first use (PEP 562): a script that asks for lineages does not pay for the
#: favourites' protobuf module, the Newick parser or the frames' helpers at ``import stol``,
#: nor one that turns names into ids for the record types.
_ON_FIRST_USE = {"Favorites": ("favorites", "Favorites"), "FavoritesNotice": ("favorites", "FavoritesNotice"),
                 "lineage_frame": ("frames", "lineage_frame"), "trees": ("trees", None), "favorites": ("favorites", None),
                 "frames": ("frames", None), "private": ("private", None),
                 **{name: ("answers", name) for name in _ANSWERS}}


def __getattr__(name: str):
    try:
        module, attribute = _ON_FIRST_USE[name]
    except KeyError:
        raise AttributeError("module 'stol' has no attribute %r" % (name,)) from None
    import importlib
    loaded = importlib.import_module("." + module, __name__)
    value = loaded if attribute is None else getattr(loaded, attribute)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_ON_FIRST_USE))

__version__ = "0.1.0"

__all__ = ["Taxonomy", "Favorites", "FavoritesNotice", "lineage_frame", "answers", "errors", "trees",
           "MAIN_RANKS", "LineageFormat",
           "Comparison", "Database", "Detail", "Favorite", "FilteredTaxa", "FilterStream", "FormattedLineage", "Lineage",
           "NameIds", "NameResolution", "Newick", "Node", "PairComparison", "Placeholder", "RankOrder", "Relatives",
           "SearchHit", "SearchResults", "SetConsensus", "Status", "SubtreeNode", "Taxon", "TaxonMap", "TopologyNode"] + [name for name in _error_names if name not in ("error_class", "from_code")]

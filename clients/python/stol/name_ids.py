"""``NameIds``, the answer of :meth:`~stol.Taxonomy.name2id`.

A module of its own, without the record types of ``answers`` (``dataclasses`` and two
dozen classes: a third of ``import stol``), so that a script that only turns names
into ids does not load them.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's names for annotations only (postponed): importing typing is 3 ms of `import stol`
if TYPE_CHECKING:
    from typing import Callable, Dict, Iterable, List, Optional, Tuple

from . import errors
from ._enums import _MATCH_KINDS, _MATCHES, _name

__all__ = ["NameIds"]


class NameIds(dict):
    """``{name: [ids]}`` from :meth:`~stol.Taxonomy.name2id`, like ete4's
    ``get_name_translator``: every taxon carrying the name (several when it is
    ambiguous; never a silent pick), ascending. Names no taxon carries are left out
    and listed in ``missing``. ``ranks`` gives each name's ranks (parallel to its ids),
    ``matches`` how it matched (``"scientific"`` or ``"common"``), ``totals`` the real
    number of taxa for a name whose list was cut at 100 ids; ``release`` the release.
    ``kinds`` says how each name matched (``"exact"``, ``"capitalised"``, ``"common"``),
    ``confidence`` 0-100 (shared among the taxa a name fits), ``several_kingdoms`` the
    names whose taxa lie under more than one kingdom (``Bacteria``), and with
    ``within=`` ``outside`` the taxa of each name the hint ruled out. Those tables are
    read from the service's whole results when one is first asked for (after a lookup
    of the ids alone, in one more lookup, pinned to ``release``)."""

    def __init__(self, release: str = ""):
        super().__init__()
        self.release = release
        self.missing: List[str] = []
        self.outside: Dict[str, List[int]] = {}
        # The found names' ``NameLookupResult`` messages, read into the tables below when one
        # is first asked for: most scripts want the ids alone, and filling six tables per
        # name was half of the time of 10,000 names from a fresh interpreter.
        self._found: List[object] = []
        self._tables: Optional[Tuple] = None
        # When the lookup answered the ids alone: the found names' whole results, asked for
        # (pinned to the release) when a table is first read.
        self._details: Optional[Callable[[List[str]], Iterable[object]]] = None

    def _add(self, item) -> None:
        """A name's whole ``NameLookupResult``: its ids under its name, or the name missing."""
        ids = item.ids
        if ids:
            self[item.name] = list(ids)
            self._found.append(item)
            return
        if item.HasField("error"):
            if item.error.code == errors.NotFoundError.CODE:
                self.missing.append(item.name)
                return
            raise errors.from_pb(item.error)
        self[item.name] = []  # neither ids nor an error: a taxon-less answer, kept as before
        self._found.append(item)

    def _read(self) -> Tuple:
        tables = self._tables
        if self._details is not None:
            details, self._details = self._details, None
            self._found.extend(details(list(self)))
        if tables is None or self._found:
            if tables is None:
                tables = self._tables = ({}, {}, {}, {}, {}, [])
            ranks, matches, totals, kinds, confidence, several_kingdoms = tables
            for item in self._found:
                name = item.name
                ranks[name] = list(item.ranks)
                matches[name] = _name(_MATCHES, item.match)
                if item.total:
                    totals[name] = item.total
                kinds[name] = _name(_MATCH_KINDS, item.kind)
                confidence[name] = item.confidence
                if item.several_kingdoms:
                    several_kingdoms.append(name)
            self._found = []
        return tables

    @property
    def ranks(self) -> Dict[str, List[str]]:
        return self._read()[0]

    @property
    def matches(self) -> Dict[str, str]:
        return self._read()[1]

    @property
    def totals(self) -> Dict[str, int]:
        return self._read()[2]

    @property
    def kinds(self) -> Dict[str, str]:
        return self._read()[3]

    @property
    def confidence(self) -> Dict[str, int]:
        return self._read()[4]

    @property
    def several_kingdoms(self) -> List[str]:
        return self._read()[5]

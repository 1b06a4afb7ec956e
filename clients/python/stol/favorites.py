"""``Favorites``: the calling Unix user's private favourites (``favorites.sock``,
PROTOCOL.md §5).

The daemon knows the caller from the socket (``SO_PEERCRED``); nothing here names
a user, and no user can reach another's favourites. Favourites are taxon ids;
names are the client's business (:meth:`Favorites.list` with a
:class:`~stol.Taxonomy` resolves them). Every change is committed before it is
acknowledged.
"""

from __future__ import annotations

import operator
import warnings
from typing import Iterator, List, Optional

from . import _transport, errors
from ._proto import favorites_pb2 as pb
from .answers import Favorite, FavoriteList, parse_time

__all__ = ["Favorites", "FavoritesNotice"]



def _taxon_id(value: object) -> int:
    """A favourite's id: an int (numpy's and pandas' too), an integral float, or digits as text. A name
    is no id: the typed error says how to turn one into an id (``Favorites.add("lion")``, issue 34)."""
    if isinstance(value, bool):
        raise errors.InvalidRequestError("a taxon id (int), not %r" % (value,))
    if isinstance(value, str):
        text = value.strip()
        if text.isascii() and text.isdigit():
            return int(text)
        raise errors.InvalidRequestError(
            "favourites keep taxon ids, and %r is not one: Taxonomy().resolve_name(%r) finds the id a name "
            "stands for (stol-client fav add resolves names itself)" % (value, text))
    if isinstance(value, float) and value.is_integer():
        return int(value)
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise errors.InvalidRequestError("a taxon id (int), not %r" % (value,)) from None

class FavoritesNotice(UserWarning):
    """Warned once when the daemon had to re-create the caller's damaged favourites file."""


class Favorites:
    """The calling user's favourites, kept by ``stol-favoritesd``.

    Behaves like a set of taxon ids (``9689 in favs``, ``len(favs)``, ``for id in
    favs``) with :meth:`add`, :meth:`remove`, :meth:`toggle`, :meth:`list` (newest
    first, with the time each was added), :meth:`clear` and :meth:`forget_me`.

    ``runtime_dir`` (default ``$STOL_RUNTIME_DIR``, else ``/run/stol``) or
    ``socket_path`` says where the service listens; ``timeout`` is the deadline in
    seconds for each answer (``None``: for ever).
    """

    def __init__(self, *, runtime_dir: Optional[str] = None, socket_path: Optional[str] = None,
                 timeout: Optional[float] = _transport.DEFAULT_TIMEOUT):
        self.path = socket_path or _transport.socket_path("favorites", runtime_dir)
        self._connection = _transport.Connection("favorites", self.path, pb.FavoritesResponse, timeout)
        #: The daemon's notice, when it had to re-create this user's damaged file (also warned).
        self.notice = ""

    def close(self) -> None:
        """Closes the connection (the next call opens a new one)."""
        self._connection.close()

    def __enter__(self) -> "Favorites":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return "Favorites(path=%r)" % (self.path,)

    def _call(self, field: str, safe_to_repeat: bool = True, **body):
        try:
            request = pb.FavoritesRequest(**{field: body})
        except ValueError as exc:  # an id beyond int64
            raise errors.InvalidRequestError("%s: %s" % (field, exc)) from None
        answer = self._connection.call(request, safe_to_repeat=safe_to_repeat)
        if answer.notice:
            self.notice = answer.notice
            warnings.warn(answer.notice, FavoritesNotice, stacklevel=3)
        return answer

    @staticmethod
    def _result(answer, field: str):
        case = answer.WhichOneof("result")
        if case != field:
            raise errors.ProtocolViolationError("the favorites service answered with %s, expected %s" % (case, field))
        return getattr(answer, field)

    def add(self, taxon_id: int) -> bool:
        """Adds a favourite; ``True`` when it was not one before. Raises
        :class:`~stol.InvalidRequestError` for an id outside 1 ... 2^53 or when the
        user already keeps the maximum (50,000)."""
        return self._result(self._call("add", taxon_id=_taxon_id(taxon_id)), "state").changed

    def remove(self, taxon_id: int) -> bool:
        """Removes a favourite; ``True`` when it was one."""
        return self._result(self._call("remove", taxon_id=_taxon_id(taxon_id)), "state").changed

    def toggle(self, taxon_id: int) -> bool:
        """Adds the id if absent, else removes it (the heart button); returns whether
        it is a favourite now. Not sent twice on a lost connection (it is not
        idempotent): then :class:`~stol.ConnectionLostError`, check with :meth:`contains`."""
        return self._result(self._call("toggle", safe_to_repeat=False, taxon_id=_taxon_id(taxon_id)), "state").is_favorite

    def contains(self, taxon_id: int) -> bool:
        """Whether the id is a favourite (also ``taxon_id in favorites``)."""
        return self._result(self._call("is_favorite", taxon_id=_taxon_id(taxon_id)), "state").is_favorite

    def __contains__(self, taxon_id: object) -> bool:
        return isinstance(taxon_id, int) and self.contains(taxon_id)

    def list(self, taxonomy=None, language: Optional[str] = None) -> FavoriteList:
        """All favourites, newest first (ties by id), as :class:`~stol.answers.Favorite`
        (``taxon_id``, ``created_at``). With ``taxonomy`` (a :class:`~stol.Taxonomy`),
        each one's ``taxon`` is filled from it (``None`` when that database lacks it),
        as ``stol-client fav list`` shows names."""
        entries = self._result(self._call("list"), "list").entries
        favorites = FavoriteList(Favorite(e.taxon_id, parse_time(e.created_at)) for e in entries)
        if taxonomy is not None and favorites:
            taxa = taxonomy.taxa([f.taxon_id for f in favorites], language=language)
            favorites = FavoriteList(Favorite(f.taxon_id, f.created_at, taxa.get(f.taxon_id)) for f in favorites)
            favorites.release = taxa.release
        return favorites

    def ids(self) -> List[int]:
        """The favourite ids, newest first."""
        return [f.taxon_id for f in self.list()]

    def __iter__(self) -> Iterator[int]:
        return iter(self.ids())

    def count(self) -> int:
        """How many favourites the user keeps (also ``len(favorites)``)."""
        return self._result(self._call("count"), "count").count

    def __len__(self) -> int:
        return self.count()

    def clear(self) -> int:
        """Removes every favourite; returns how many there were."""
        return self._result(self._call("clear"), "cleared").removed

    def storage_bytes(self) -> int:
        """Bytes the user's favourites file occupies (0 without one)."""
        return self._result(self._call("storage"), "storage").bytes

    def forget_me(self) -> None:
        """Deletes the user's favourites file entirely."""
        self._result(self._call("forget_me"), "forgotten")

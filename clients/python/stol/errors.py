"""Typed errors of the STOL protocol (protocol/PROTOCOL.md §8), one class per code.

Every exception the package raises derives from :class:`StolError`. A typed
error a daemon answered (``error`` in a response envelope) is raised as the
class of its ``ErrorCode``; the exception carries ``code`` (the number),
``code_name`` (``"NOT_FOUND"``, what logs and ``stol-client`` print),
``message`` (one English sentence for humans: show it, never parse it) and
``details`` (a ``dict`` of strings, e.g. ``{"taxon_id": "424242"}``).

Failures on the client's side of the socket (no service listening, no answer
within the deadline, a request too large to send, a broken stream) have their
own classes below, with ``code`` ``None``.

A code this package does not know (a newer server's) is raised as
:class:`InternalError` with its number kept in ``code``, as §8 asks.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's names for annotations only (postponed): importing typing is 3 ms of `import stol`
if TYPE_CHECKING:
    from typing import Dict, Mapping, Optional, Type

__all__ = [
    "StolError",
    # one per stol.v1.ErrorCode
    "InvalidRequestError", "FrameTooLargeError", "MalformedFrameError", "UnimplementedError",
    "NotFoundError", "PermissionDeniedError", "UnavailableError", "InternalError", "BusyError",
    "TaxonDeletedError", "FileUnreadableError", "FileTooLargeError", "NotAStolFileError",
    "ChecksumMismatchError", "SignatureInvalidError", "IncompatibleSchemaError",
    "DatabaseCorruptError", "DecompressionLimitError", "FileTooSmallError",
    "DowngradeRefusedError", "NoSpaceError", "IdNamespaceMismatchError",
    "ReleaseNotInstalledError", "UnknownKeyError", "KeyExpiredError", "KeyRevokedError",
    "ContentHashMismatchError", "DeltaBaseMismatchError", "FormatVersionNotAllowedError",
    # the client's side
    "StolConnectionError", "ServiceNotRunningError", "SocketPermissionError",
    "StolTimeoutError", "ConnectionLostError", "ProtocolViolationError", "RequestTooLargeError",
    "NewickError",
    "error_class", "from_code",
]


class StolError(Exception):
    """Base of every error of the ``stol`` package.

    Attributes:
        code: the protocol's ``ErrorCode`` number, or ``None`` for a failure on
            the client's side (no service, timeout, ...).
        code_name: the code's short name (``"NOT_FOUND"``), or the class's own
            name for the client's failures (``"SERVICE_NOT_RUNNING"``).
        message: one sentence for humans; do not parse it.
        details: machine-readable context from the server (strings only).
    """

    #: ErrorCode number of this class (``None``: raised by the client itself).
    CODE: Optional[int] = None
    #: Short name, as the CLI prints it.
    NAME: str = "UNSPECIFIED"

    def __init__(self, message: str, *, code: Optional[int] = None,
                 details: Optional[Mapping[str, str]] = None, request_id: int = 0):
        super().__init__(message)
        self.message = message
        self.code = self.CODE if code is None else code
        self.details: Dict[str, str] = dict(details or {})
        #: The id of the request this error answered (0 for a framing error or a client-side failure).
        self.request_id = request_id

    @property
    def code_name(self) -> str:
        """The code's short name, e.g. ``"NOT_FOUND"`` (``"CODE_99"`` for a code this package does not know)."""
        if self.code is not None and self.code != self.CODE:
            return _NAMES.get(self.code, "CODE_%d" % self.code)
        return self.NAME

    def __str__(self) -> str:
        return "%s [%s]" % (self.message, self.code_name)

    def __repr__(self) -> str:
        return "%s(%r, code=%r, details=%r)" % (type(self).__name__, self.message, self.code, self.details)


def _server(code: int, name: str, doc: str) -> Type[StolError]:
    # An import/verify error class: ``doc`` starts with its short name in double backquotes.
    short = doc.split("``")[1]
    return type(name, (StolError,), {"CODE": code, "NAME": short, "__doc__": doc,  # type: ignore[return-value]
                                     "__module__": __name__})


class InvalidRequestError(StolError, ValueError):
    """``INVALID_REQUEST`` (1): the request decoded but is not acceptable (an id <= 0, a
    limit over its maximum, an empty or too long query, a genus asked for relatives,
    the favourites limit reached). The connection stays open."""
    CODE, NAME = 1, "INVALID_REQUEST"


class FrameTooLargeError(StolError):
    """``FRAME_TOO_LARGE`` (2): the server got a length prefix over the request limit
    (details ``length``, ``limit``); it closed the connection. This client refuses to
    send such a request (:class:`RequestTooLargeError`), so it means a bug."""
    CODE, NAME = 2, "FRAME_TOO_LARGE"


class MalformedFrameError(StolError):
    """``MALFORMED_FRAME`` (3): the server could not decode a request; it closed the connection."""
    CODE, NAME = 3, "MALFORMED_FRAME"


class UnimplementedError(StolError):
    """``UNIMPLEMENTED`` (4): the server does not know this operation (it is older than
    this client, PROTOCOL.md §10)."""
    CODE, NAME = 4, "UNIMPLEMENTED"


class NotFoundError(StolError, LookupError):
    """``NOT_FOUND`` (5): the named taxon does not exist in the database that answered
    (details ``taxon_id``)."""
    CODE, NAME = 5, "NOT_FOUND"


class PermissionDeniedError(StolError, PermissionError):
    """``PERMISSION_DENIED`` (6): the calling Unix user may not do this (import without
    admin rights)."""
    CODE, NAME = 6, "PERMISSION_DENIED"


class UnavailableError(StolError):
    """``UNAVAILABLE`` (7): a backing store or service is not available now (no usable
    taxonomy database); retrying later may help."""
    CODE, NAME = 7, "UNAVAILABLE"


class InternalError(StolError):
    """``INTERNAL`` (8): a bug or an unexpected I/O failure in the daemon (see its log);
    also raised for an error code this package does not know."""
    CODE, NAME = 8, "INTERNAL"


class BusyError(StolError):
    """``BUSY`` (9): too many connections (details ``limit`` or ``limit_per_user``; the
    connection was closed), or another import is running. Try again later."""
    CODE, NAME = 9, "BUSY"


class TaxonDeletedError(StolError, LookupError):
    """``TAXON_DELETED`` (10): the id was deleted from the source taxonomy (NCBI
    ``delnodes.dmp``) and names no taxon any more (details ``taxon_id``)."""
    CODE, NAME = 10, "TAXON_DELETED"


class ReleaseNotInstalledError(StolError, LookupError):
    """``RELEASE_NOT_INSTALLED`` (32): the release a request names is not installed
    (details ``release``; the message lists the installed ones)."""
    CODE, NAME = 32, "RELEASE_NOT_INSTALLED"


# Import and verification codes (20-31, 33-37): raised by the import service only,
# which this package does not speak yet; defined so that every code has its class.
FileUnreadableError = _server(20, "FileUnreadableError", "``FILE_UNREADABLE`` (20): the passed file cannot be read.")
FileTooLargeError = _server(21, "FileTooLargeError", "``FILE_TOO_LARGE`` (21): the file is over 2 GiB.")
NotAStolFileError = _server(22, "NotAStolFileError", "``NOT_A_STOL_FILE`` (22): the file lacks the ``.stol`` magic.")
ChecksumMismatchError = _server(23, "ChecksumMismatchError", "``CHECKSUM_MISMATCH`` (23): the payload's SHA-256 differs.")
SignatureInvalidError = _server(24, "SignatureInvalidError", "``SIGNATURE_INVALID`` (24): the signature does not verify.")
IncompatibleSchemaError = _server(25, "IncompatibleSchemaError", "``INCOMPATIBLE_SCHEMA`` (25): a schema newer than the server.")
DatabaseCorruptError = _server(26, "DatabaseCorruptError", "``DATABASE_CORRUPT`` (26): an integrity or shape check failed.")
DecompressionLimitError = _server(27, "DecompressionLimitError", "``DECOMPRESSION_LIMIT`` (27): over 4 GiB decompressed.")
FileTooSmallError = _server(28, "FileTooSmallError", "``FILE_TOO_SMALL`` (28): empty, or shorter than its header.")
DowngradeRefusedError = _server(29, "DowngradeRefusedError", "``DOWNGRADE_REFUSED`` (29): older than the installed build.")
NoSpaceError = _server(30, "NoSpaceError", "``NO_SPACE`` (30): a disk of the import service is full.")
IdNamespaceMismatchError = _server(31, "IdNamespaceMismatchError",
                                   "``ID_NAMESPACE_MISMATCH`` (31): ids of another namespace than the installed ones.")
UnknownKeyError = _server(33, "UnknownKeyError", "``UNKNOWN_KEY`` (33): signed by a key no trusted key file holds.")
KeyExpiredError = _server(34, "KeyExpiredError", "``KEY_EXPIRED`` (34): the signing key is past its not-after.")
KeyRevokedError = _server(35, "KeyRevokedError", "``KEY_REVOKED`` (35): the signing key is revoked.")
ContentHashMismatchError = _server(36, "ContentHashMismatchError",
                                   "``CONTENT_HASH_MISMATCH`` (36): the content is not what the header signs.")
DeltaBaseMismatchError = _server(37, "DeltaBaseMismatchError",
                                 "``DELTA_BASE_MISMATCH`` (37): a delta's base release is missing or another build.")
FormatVersionNotAllowedError = _server(38, "FormatVersionNotAllowedError",
                                       "``FORMAT_VERSION_NOT_ALLOWED`` (38): a format version 1 file this machine does "
                                       "not install (it signs no content; ``STOL_ALLOW_FORMAT_1``).")


# --- failures on the client's side -------------------------------------------------

class StolConnectionError(StolError, ConnectionError):
    """The service could not be reached or the connection failed (client side; ``code`` is None)."""
    NAME = "CONNECTION"


class ServiceNotRunningError(StolConnectionError):
    """Nothing listens on the service's socket (``ENOENT`` or ``ECONNREFUSED``): the
    service is not running or not installed, or ``STOL_RUNTIME_DIR`` points elsewhere."""
    NAME = "SERVICE_NOT_RUNNING"


class SocketPermissionError(StolConnectionError, PermissionError):
    """The socket refused this user (``EACCES``): e.g. ``import.sock`` without ``stol-admin``."""
    NAME = "SOCKET_PERMISSION_DENIED"


class StolTimeoutError(StolConnectionError, TimeoutError):
    """No whole answer arrived within the deadline (``timeout`` seconds): the daemon is
    stopped, wedged or overloaded. The connection is dropped; the next call reconnects."""
    NAME = "TIMED_OUT"


class ConnectionLostError(StolConnectionError):
    """The service closed the connection in the middle of an answer, or kept closing
    it before answering (after the retries PROTOCOL.md §1.3 allows)."""
    NAME = "CONNECTION_LOST"


class ProtocolViolationError(StolError):
    """The service sent something the protocol does not allow (an answer over 4 MiB,
    bytes that do not decode, an answer to a request that was not sent)."""
    NAME = "PROTOCOL_VIOLATION"


class RequestTooLargeError(StolError, ValueError):
    """A request would be over the protocol's 65,536-byte limit; it was not sent."""
    NAME = "REQUEST_TOO_LARGE"


class NewickError(StolError, ValueError):
    """A Newick text this package cannot read (:meth:`~stol.Taxonomy.annotate`,
    :func:`stol.trees.parse_newick`): unbalanced parentheses, no ``;`` at the end, text
    after it, an unclosed quote or ``[``, a branch length that is not a number. Raised
    before anything is sent. ``position`` is the offset (from 0) in the text where the
    problem was found, also in ``details`` with its ``line`` and ``column`` (from 1)."""
    NAME = "NEWICK_SYNTAX"

    def __init__(self, message: str, position: int, text: str = ""):
        line = text.count("\n", 0, position) + 1
        column = position - (text.rfind("\n", 0, position) + 1) + 1
        super().__init__("%s at position %d (line %d, column %d)" % (message, position, line, column),
                         details={"position": str(position), "line": str(line), "column": str(column)})
        self.position = position


_BY_CODE: Dict[int, Type[StolError]] = {
    cls.CODE: cls for cls in (
        InvalidRequestError, FrameTooLargeError, MalformedFrameError, UnimplementedError, NotFoundError,
        PermissionDeniedError, UnavailableError, InternalError, BusyError, TaxonDeletedError,
        FileUnreadableError, FileTooLargeError, NotAStolFileError, ChecksumMismatchError,
        SignatureInvalidError, IncompatibleSchemaError, DatabaseCorruptError, DecompressionLimitError,
        FileTooSmallError, DowngradeRefusedError, NoSpaceError, IdNamespaceMismatchError,
        ReleaseNotInstalledError, UnknownKeyError, KeyExpiredError, KeyRevokedError,
        ContentHashMismatchError, DeltaBaseMismatchError, FormatVersionNotAllowedError)
}
_NAMES: Dict[int, str] = {code: cls.NAME for code, cls in _BY_CODE.items()}


def error_class(code: int) -> Type[StolError]:
    """The exception class of an ``ErrorCode`` number (:class:`InternalError` for an unknown one)."""
    return _BY_CODE.get(code, InternalError)


def from_code(code: int, message: str, details: Optional[Mapping[str, str]] = None,
              request_id: int = 0) -> StolError:
    """The exception for an error a server answered (``code``, ``message``, ``details``)."""
    return error_class(code)(message, code=code, details=details, request_id=request_id)


def from_pb(error, request_id: int = 0) -> StolError:
    """The exception for a ``stol.v1.Error`` message."""
    return from_code(int(error.code), error.message, dict(error.details), request_id)

"""Frames over a Unix socket, exactly as protocol/PROTOCOL.md §1-§3 says.

A frame is a 4-byte big-endian body length, then one protobuf message. Requests
are at most 65,536 bytes (refused here before sending), answers at most 4 MiB
(checked as soon as the prefix is in, before the body is read). Every answer
has a deadline (``timeout`` seconds from the moment the client starts waiting
for it to its last byte), so a stopped or wedged daemon raises
:class:`~stol.errors.StolTimeoutError` instead of hanging.

A connection carries any number of requests. The server closes an idle one
after 120 s without an error frame, and a restarting daemon closes its
connections between answers; both are handled here by reconnecting and
sending again the requests that were not answered (§1.3, §13 step 7), except a
request marked not safe to repeat (``toggle``). :meth:`Connection.pipeline`
keeps several requests in flight on one connection (the server answers them one
at a time, in order), as ``stol-client`` does for its batches.
"""

from __future__ import annotations

import collections
import fcntl
import os
import select
import socket
import stat
import struct
import threading
import time

TYPE_CHECKING = False  # typing's names for annotations only (postponed): importing typing is 3 ms of `import stol`
if TYPE_CHECKING:
    from typing import Callable, Deque, Iterable, Iterator, Optional, Tuple

from google.protobuf.message import DecodeError

from . import errors

#: Where the sockets are on an installed system (``STOL_RUNTIME_DIR`` overrides it).
DEFAULT_RUNTIME_DIR = "/run/stol"
#: Largest request body (PROTOCOL.md §2.2).
MAX_REQUEST_BYTES = 65536
#: Largest answer body (PROTOCOL.md §2.2).
MAX_RESPONSE_BYTES = 4 * 1024 * 1024
#: Seconds to wait for each answer, as ``stol-client --timeout`` (default 30).
DEFAULT_TIMEOUT = 30.0
# Seconds a connect refused by a socket file nobody listens on (ECONNREFUSED) is tried again
# before the service counts as not running (as stol-client's ServiceClient.connectPatience;
# PROTOCOL.md §1.3).
CONNECT_PATIENCE = 1.0
#: Requests in flight on one connection in batch modes, as ``stol-client``
#: (``ServiceClient.pipeline(window: 4)``): enough to keep both sides busy, few
#: enough to stay under the 1 MiB of unread answers a server holds per connection.
PIPELINE_WINDOW = 4
#: Times a request is sent again after the connection closed before its answer.
_RESENDS = 3
# Seconds before the first resend, twice that before the second…: a daemon that restarts
# (an upgrade) may still reset the connections it had accepted from the backlog.
_RESEND_PAUSE = 0.05

_PREFIX = struct.Struct(">I")


def private_runtime_dir(uid: Optional[int] = None) -> str:
    """Where the user's private stack (``stol-client serve``) puts its sockets:
    ``$XDG_RUNTIME_DIR/stol`` when that is an absolute path, else ``/tmp/stol-<uid>``
    (as stol-client's ``PrivateStackPaths``; docs/private-stack.md)."""
    xdg = os.environ.get("XDG_RUNTIME_DIR") or ""
    if xdg.startswith("/"):
        return os.path.join(xdg, "stol")
    return "/tmp/stol-%d" % (os.getuid() if uid is None else uid)


def private_stack_running(directory: str, uid: Optional[int] = None) -> bool:
    """Whether a private stack serves in ``directory``: the directory is the user's own,
    not a link, with no access for anyone else (another user could have made
    ``/tmp/stol-<uid>`` first), and its ``serve.lock`` is locked (``flock``) by the
    supervisor, or a systemd user manager listens on its ``taxonomy.sock``. Never
    connects: a connection would start a daemon. (stol-client's ``PrivateStackPaths.isServing``.)"""
    uid = os.getuid() if uid is None else uid
    try:
        info = os.lstat(directory)
    except OSError:
        return False
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != uid or info.st_mode & 0o077:
        return False
    try:
        fd = os.open(os.path.join(directory, "serve.lock"), os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError:
        return _listening(os.path.join(directory, "taxonomy.sock"))
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        held = False  # nobody holds it: sockets a crash left behind, or a systemd user manager's
    except BlockingIOError:
        held = True
    except OSError:
        held = False
    finally:
        os.close(fd)
    return held or _listening(os.path.join(directory, "taxonomy.sock"))


def _listening(path: str) -> bool:
    """Whether a socket listens at ``path`` (``/proc/net/unix``, the listening flag):
    a systemd user manager's ``stol.socket`` while the supervisor it starts is not running.
    The file must be a socket too: one still listening after its file was removed keeps
    its path in the table, and nothing can connect to it."""
    try:
        if not stat.S_ISSOCK(os.lstat(path).st_mode):
            return False
    except OSError:
        return False
    try:
        with open("/proc/net/unix") as table:
            next(table, None)
            for line in table:
                fields = line.rstrip("\n").split(None, 7)
                if len(fields) == 8 and fields[3] == "00010000" and fields[7] == path:
                    return True
    except OSError:
        pass
    return False


def runtime_dir(explicit: Optional[str] = None) -> str:
    """The sockets' directory, in stol-client's order (docs/private-stack.md):
    ``explicit``, else ``$STOL_RUNTIME_DIR`` when set and not empty, else the user's
    private stack when one runs (``stol-client serve``), else ``/run/stol``."""
    if explicit:
        return explicit
    variable = os.environ.get("STOL_RUNTIME_DIR")
    if variable:
        return variable
    private = private_runtime_dir()
    if private_stack_running(private):
        return private
    return DEFAULT_RUNTIME_DIR


def socket_path(service: str, directory: Optional[str] = None) -> str:
    """The socket of ``service`` (``"taxonomy"``, ``"favorites"``): ``<runtime dir>/<service>.sock``."""
    return os.path.join(runtime_dir(directory), service + ".sock")


def encode_frame(message) -> bytes:
    """One frame (length prefix + body) for ``message``; raises
    :class:`~stol.errors.RequestTooLargeError` over the request limit, without sending."""
    body = message.SerializeToString()
    if len(body) > MAX_REQUEST_BYTES:
        raise errors.RequestTooLargeError(
            "the request is %d bytes, more than the protocol allows (%d); make it smaller"
            % (len(body), MAX_REQUEST_BYTES), details={"length": str(len(body)), "limit": str(MAX_REQUEST_BYTES)})
    return _PREFIX.pack(len(body)) + body


class _ClosedBetweenFrames(Exception):
    """The server closed the connection where no answer had begun: safe to resend."""


class _LostMidFrame(errors.ConnectionLostError):
    """The server closed the connection inside an answer (e.g. after 30 s of answers left
    unread, PROTOCOL.md §1.3): that answer is lost; a read-only request may be resent."""


class Connection:
    """One client connection to one STOL service socket.

    Not meant to be shared by two threads at once: :meth:`call` takes a lock, and
    :meth:`pipeline` should run on a connection of its own.
    """

    def __init__(self, service: str, path: str, response_type, timeout: Optional[float] = DEFAULT_TIMEOUT):
        """``service`` names the service in messages, ``path`` is its socket,
        ``response_type`` the response envelope class, ``timeout`` the seconds to wait
        for each answer (``None``: for ever)."""
        self.service = service
        self.path = path
        self.response_type = response_type
        self.timeout = timeout
        self._sock: Optional[socket.socket] = None
        self._buffer = bytearray()
        self._start = 0
        self._next_id = 1
        self._lock = threading.Lock()

    def __del__(self):
        # A notebook rarely closes what it opened: close quietly when collected.
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    # --- connection ------------------------------------------------------------------

    def close(self) -> None:
        """Closes the connection (an answer in progress is discarded); the next call reconnects."""
        sock, self._sock = self._sock, None
        self._buffer = bytearray()
        self._start = 0
        if sock is not None:
            try:
                sock.close()
            except OSError:
                pass

    def _connected(self, idle_check: bool = True) -> socket.socket:
        if (idle_check and self._sock is not None and self._start == len(self._buffer)
                and self._closed_by_peer(self._sock)):
            self.close()  # idle timeout or a restart: reconnect transparently (§1.3)
        if self._sock is not None:
            return self._sock
        deadline = time.monotonic() + CONNECT_PATIENCE
        while True:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(self.timeout)
            try:
                sock.connect(self.path)
                break
            except ConnectionRefusedError:
                # A socket file nobody listens on: the moment systemd restarts a socket (an
                # upgrade) looks like this, and nothing was sent yet, so wait a little. No
                # socket file at all is a service that is not there: said at once.
                sock.close()
                if time.monotonic() >= deadline:
                    raise self._not_running_error() from None
                time.sleep(0.05)
            except (FileNotFoundError, NotADirectoryError) as exc:
                sock.close()
                raise self._not_running_error() from exc
            except PermissionError as exc:
                sock.close()
                raise errors.SocketPermissionError(
                    "you may not use the %s service (%s is restricted; ask an administrator to add you to stol-admin)"
                    % (self.service, self.path)) from exc
            except socket.timeout as exc:
                sock.close()
                raise errors.StolTimeoutError("the %s service did not accept a connection within %g s"
                                              % (self.service, self.timeout)) from exc
            except OSError as exc:
                sock.close()
                raise errors.StolConnectionError("connecting to the %s service at %s failed: %s"
                                                 % (self.service, self.path, exc)) from exc
        self._sock = sock
        return sock

    def _not_running_error(self) -> errors.ServiceNotRunningError:
        return errors.ServiceNotRunningError(
            "the %s service is not running (nothing listens on %s). Start your own with "
            "`stol-client serve --detach` (no root needed), or the system's with `systemctl start stol-%sd.socket`; "
            "set STOL_RUNTIME_DIR if it runs elsewhere"
            % (self.service, self.path, self.service))

    @staticmethod
    def _closed_by_peer(sock: socket.socket) -> bool:
        """True when the server has closed its end (a non-blocking peek reads EOF).
        Bytes waiting (a BUSY refusal) are left for the reader."""
        try:
            sock.setblocking(False)  # the socket's timeout is set again before its next use
            return sock.recv(1, socket.MSG_PEEK) == b""
        except (BlockingIOError, InterruptedError):
            return False
        except OSError:
            return True

    def _new_id(self) -> int:
        request_id = self._next_id
        self._next_id = self._next_id + 1 if self._next_id < (1 << 63) else 1
        return request_id

    # --- frames ----------------------------------------------------------------------

    def _send(self, frame: bytes, idle_check: bool = True, read_meanwhile: bool = False) -> None:
        """Sends one frame. ``idle_check``: first replace a connection the server has
        closed (only when no answer is outstanding on it). ``read_meanwhile``: other
        requests are in flight, so their answers are read into the buffer whenever the
        socket cannot take more of this one (:meth:`_send_reading`)."""
        sock = self._connected(idle_check)
        try:
            if read_meanwhile:
                self._send_reading(sock, frame)
            else:
                sock.settimeout(self.timeout)
                sock.sendall(frame)
        except socket.timeout as exc:
            self.close()
            raise errors.StolTimeoutError("the %s service did not take the request within %g s (stopped, or "
                                          "overloaded)" % (self.service, self.timeout)) from exc
        except (BrokenPipeError, ConnectionResetError) as exc:
            # A daemon that refused the connection (BUSY) may have closed it before the
            # request went out: its one error frame may still be there to read.
            refusal = self._refusal()
            self.close()
            if refusal is not None:
                raise refusal from exc
            raise _ClosedBetweenFrames() from exc

    def _send_reading(self, sock: socket.socket, frame: bytes) -> None:
        """``sendall`` that reads answers while the socket cannot take more of ``frame``.

        The server stops reading requests while its answers to earlier ones wait
        unsent (PROTOCOL.md §1.3, §4.3), and a pipelined request may not fit in the socket's
        buffer (1000 long names are 60 KB; four in flight, 240 KB): blocking in the
        send until the server reads it would wait for this client to read the answers
        it is not reading, until the server closes the connection after 30 s. So the
        answers are read into the buffer meanwhile; they are decoded in order later.
        Within one deadline of ``timeout`` seconds."""
        view = memoryview(frame)
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        poller = select.poll()  # not select(): a notebook may hold descriptors above 1024
        poller.register(sock, select.POLLIN | select.POLLOUT)
        sock.setblocking(False)
        try:
            while view:
                try:
                    view = view[sock.send(view):]
                    continue
                except (BlockingIOError, InterruptedError):
                    pass
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise socket.timeout("timed out")
                events = poller.poll(None if left is None else max(1, int(left * 1000)))
                if any(mask & (select.POLLIN | select.POLLHUP | select.POLLERR) for _, mask in events):
                    try:
                        chunk = sock.recv(262144)
                    except (BlockingIOError, InterruptedError):
                        continue
                    if not chunk:
                        raise ConnectionResetError("the server closed the connection")
                    self._buffer += chunk
        finally:
            sock.settimeout(self.timeout)

    def _refusal(self) -> Optional[errors.StolError]:
        try:
            body = self._read_body(time.monotonic() + min(self.timeout or 1.0, 1.0))
            answer = self.response_type()
            answer.ParseFromString(body)
            if answer.id == 0 and answer.WhichOneof("result") == "error":
                return errors.from_pb(answer.error, 0)
        except Exception:  # noqa: BLE001 - nothing readable: the caller reports the closed connection
            pass
        return None

    def _read_body(self, deadline: Optional[float]) -> bytes:
        """The next frame's body. Raises ``_ClosedBetweenFrames`` on EOF before its first byte."""
        sock = self._sock
        if sock is None:
            raise _ClosedBetweenFrames()
        buffer = self._buffer
        while True:
            available = len(buffer) - self._start
            if available >= 4:
                (length,) = _PREFIX.unpack_from(buffer, self._start)
                if length > MAX_RESPONSE_BYTES:
                    self.close()
                    raise errors.ProtocolViolationError(
                        "the %s service sent an answer of %d bytes, more than the protocol allows (%d)"
                        % (self.service, length, MAX_RESPONSE_BYTES))
                if available >= 4 + length:
                    begin = self._start + 4
                    body = bytes(buffer[begin:begin + length])
                    self._start = begin + length
                    if self._start == len(buffer):
                        buffer.clear()
                        self._start = 0
                    elif self._start > (1 << 20):
                        del buffer[:self._start]
                        self._start = 0
                    return body
                wanted = 4 + length - available
            else:
                wanted = 4 - available
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    self.close()
                    raise errors.StolTimeoutError(
                        "the %s service did not answer within %g s (stopped, or overloaded); "
                        "a larger timeout waits longer, None for ever" % (self.service, self.timeout))
                sock.settimeout(left)
            else:
                sock.settimeout(None)
            try:
                chunk = sock.recv(max(wanted, 262144))
            except socket.timeout:
                continue  # the deadline check above raises
            except (ConnectionResetError, BrokenPipeError):
                chunk = b""
            except OSError as exc:
                self.close()
                raise errors.StolConnectionError("reading from the %s service failed: %s" % (self.service, exc)) from exc
            if not chunk:
                partial = len(buffer) - self._start
                self.close()
                if partial:
                    raise _LostMidFrame(
                        "the %s service closed the connection in the middle of an answer (%d bytes of it received)"
                        % (self.service, partial))
                raise _ClosedBetweenFrames()
            buffer += chunk

    def _receive(self):
        """The next answer envelope, decoded; a framing error (id 0) is raised typed."""
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        body = self._read_body(deadline)
        answer = self.response_type()
        try:
            answer.ParseFromString(body)
        except DecodeError as exc:
            self.close()
            raise errors.ProtocolViolationError("the %s service sent an answer that does not decode as %s"
                                                % (self.service, self.response_type.DESCRIPTOR.full_name)) from exc
        if answer.id == 0 and answer.WhichOneof("result") == "error":
            # A framing error or a refused connection (BUSY): the server closes it (§2.3).
            self.close()
            raise errors.from_pb(answer.error, 0)
        return answer

    @staticmethod
    def _checked(answer):
        if answer.WhichOneof("result") == "error":
            raise errors.from_pb(answer.error, answer.id)
        return answer

    # --- requests --------------------------------------------------------------------

    def call(self, request, *, safe_to_repeat: bool = True):
        """Sends ``request`` (its ``id`` is set here) and returns the answer envelope;
        an ``error`` answer is raised as its typed exception.

        When the server closed the connection before answering (idle timeout,
        restart), the request is sent again on a new connection, unless
        ``safe_to_repeat`` is false and it may have arrived (then
        :class:`~stol.errors.ConnectionLostError`)."""
        with self._lock:
            for attempt in range(_RESENDS + 1):
                request.id = self._new_id()
                frame = encode_frame(request)
                sent = False
                try:
                    self._send(frame)
                    sent = True
                    answer = self._receive()
                except _ClosedBetweenFrames:
                    if attempt == _RESENDS or (sent and not safe_to_repeat):
                        raise errors.ConnectionLostError(
                            "the %s service closed the connection before answering%s"
                            % (self.service, "" if safe_to_repeat else "; the request may or may not have been applied"))
                    time.sleep(_RESEND_PAUSE * (attempt + 1))
                    continue
                except _LostMidFrame as lost:
                    if attempt == _RESENDS or not safe_to_repeat:
                        raise errors.ConnectionLostError(lost.message) from None
                    time.sleep(_RESEND_PAUSE * (attempt + 1))
                    continue
                if answer.id != request.id:
                    self.close()
                    raise errors.ProtocolViolationError("the %s service answered request %d, expected %d"
                                                        % (self.service, answer.id, request.id))
                return self._checked(answer)
        raise AssertionError("unreachable")

    def pipeline(self, requests: Iterable, window: int = PIPELINE_WINDOW,
                 prepare: Optional[Callable[[object], None]] = None) -> Iterator:
        """Sends the requests ``requests`` yields, keeping up to ``window`` of them in
        flight, and yields each answer envelope in the order of the requests.

        ``prepare`` is applied to each request before it is sent (to pin a release).
        An ``error`` answer to a whole request is raised typed. Requests not yet
        answered when the server closes the connection (between answers, or inside
        one after answers were left unread for 30 s) are sent again on a new
        connection: batches are read-only, so safe to repeat. Closing the generator
        early closes the connection."""
        source = iter(requests)
        in_flight: Deque[Tuple[int, bytes]] = collections.deque()
        exhausted = False
        resends = 0
        try:
            while True:
                while not exhausted and len(in_flight) < max(window, 1):
                    request = next(source, None)
                    if request is None:
                        exhausted = True
                        break
                    if prepare is not None:
                        prepare(request)
                    request.id = self._new_id()
                    frame = encode_frame(request)
                    in_flight.append((request.id, frame))
                    try:
                        self._send(frame, idle_check=len(in_flight) == 1, read_meanwhile=len(in_flight) > 1)
                    except _ClosedBetweenFrames:
                        resends = self._resend(in_flight, resends)
                if not in_flight:
                    return
                try:
                    answer = self._receive()
                except (_ClosedBetweenFrames, _LostMidFrame):  # batches are read-only: send again
                    resends = self._resend(in_flight, resends)
                    continue
                expected = in_flight[0][0]
                if answer.id != expected:
                    self.close()
                    raise errors.ProtocolViolationError("the %s service answered request %d, expected %d"
                                                        % (self.service, answer.id, expected))
                in_flight.popleft()
                resends = 0
                yield self._checked(answer)
        finally:
            if in_flight or not exhausted:
                self.close()

    def _resend(self, in_flight: Deque[Tuple[int, bytes]], resends: int) -> int:
        """Sends every unanswered frame again on a new connection (§13 step 7)."""
        resends += 1
        if resends > _RESENDS:
            raise errors.ConnectionLostError("the %s service kept closing the connection before answering"
                                             % self.service)
        self.close()
        for index, (_, frame) in enumerate(list(in_flight)):
            try:
                self._send(frame, idle_check=index == 0, read_meanwhile=index > 0)
            except _ClosedBetweenFrames:
                return self._resend(in_flight, resends)
        return resends

"""The transport without daemons: the protocol's test vectors byte for byte, and
small fake servers for what the real ones rarely do (pipelining observed from
the server's side, oversized or truncated answers, refusals, closed
connections, a daemon that never answers, no daemon at all)."""

from __future__ import annotations

import os
import shutil
import socket
import struct
import tempfile
import threading
import time
import unittest

import _stack  # noqa: F401 - puts the package on sys.path, fails without protobuf

import stol
from stol import _transport, errors
from stol._proto import common_pb2, favorites_pb2, taxonomy_pb2
from stol.taxonomy import newick

VECTORS = os.path.join(_stack.REPOSITORY, "protocol", "vectors")


def vector(name: str) -> bytes:
    with open(os.path.join(VECTORS, name + ".hex")) as file:
        return bytes.fromhex("".join(file.read().split()))


class Vectors(unittest.TestCase):
    """protocol/vectors: what PROTOCOL.md §11-§12 asks every client to check."""

    def test_requests_encode_to_the_vectors(self):
        request = taxonomy_pb2.TaxonomyRequest(id=2, get_taxon={"taxon_id": 9689, "language": "en"})
        self.assertEqual(_transport.encode_frame(request), vector("taxonomy-get-taxon-request"))
        self.assertEqual(_transport.encode_frame(taxonomy_pb2.TaxonomyRequest(id=1, status={})),
                         vector("taxonomy-status-request"))
        self.assertEqual(_transport.encode_frame(favorites_pb2.FavoritesRequest(id=4, toggle={"taxon_id": 9689})),
                         vector("favorites-toggle-request"))

    def decode(self, name, message_type):
        frame = vector(name)
        (length,) = struct.unpack(">I", frame[:4])
        self.assertEqual(length, len(frame) - 4)
        message = message_type()
        message.ParseFromString(frame[4:])
        return message

    def test_responses_decode_from_the_vectors(self):
        answer = self.decode("taxonomy-get-taxon-response", taxonomy_pb2.TaxonomyResponse)
        taxon = stol.Taxon.from_pb(answer.taxon, answer.database.release)
        self.assertEqual((answer.id, taxon.id, taxon.parent_id, taxon.rank, taxon.name, taxon.year, taxon.common_name),
                         (2, 9689, 9688, "species", "Panthera leo", 1758, "lion"))
        self.assertEqual(answer.database.kind, common_pb2.DATABASE_KIND_BUNDLED)

        answer = self.decode("taxonomy-not-found-response", taxonomy_pb2.TaxonomyResponse)
        error = errors.from_pb(answer.error, answer.id)
        self.assertIsInstance(error, stol.NotFoundError)
        self.assertEqual((error.request_id, error.details), (3, {"taxon_id": "424242"}))

        answer = self.decode("taxonomy-malformed-frame-response", taxonomy_pb2.TaxonomyResponse)
        self.assertEqual(answer.id, 0)
        self.assertIsInstance(errors.from_pb(answer.error), stol.MalformedFrameError)

        answer = self.decode("favorites-state-response", favorites_pb2.FavoritesResponse)
        self.assertEqual((answer.id, answer.state.taxon_id, answer.state.is_favorite, answer.state.changed),
                         (4, 9689, True, True))


class Errors(unittest.TestCase):
    def test_one_class_per_error_code(self):
        classes = set()
        for number in common_pb2.ErrorCode.values():
            if number == 0:
                continue
            name = common_pb2.ErrorCode.Name(number)[len("ERROR_CODE_"):]
            cls = errors.error_class(number)
            self.assertEqual((cls.CODE, cls.NAME), (number, name))
            self.assertTrue(issubclass(cls, stol.StolError))
            self.assertIs(getattr(stol, cls.__name__), cls)
            self.assertTrue(cls.__doc__)
            classes.add(cls)
        self.assertEqual(len(classes), len(common_pb2.ErrorCode.values()) - 1)

    def test_unknown_code_is_internal(self):
        error = errors.from_code(99, "from the future", {"k": "v"})
        self.assertIsInstance(error, stol.InternalError)
        self.assertEqual((error.code, error.code_name, str(error)), (99, "CODE_99", "from the future [CODE_99]"))

    def test_request_over_64_kib_is_refused(self):
        request = taxonomy_pb2.TaxonomyRequest(id=1, search={"query": "x" * 65536})
        with self.assertRaises(stol.RequestTooLargeError):
            _transport.encode_frame(request)
        request.search.query = "x" * 65520  # the largest body that fits
        request.search.query = "x" * (65536 - (len(request.SerializeToString()) - 65520))
        self.assertEqual(len(_transport.encode_frame(request)), 4 + 65536)


class Newick(unittest.TestCase):
    def test_shapes_and_quoting(self):
        self.assertEqual(newick([], []), ";")
        self.assertEqual(newick([0], ["A"]), "A;")
        self.assertEqual(newick([0, 1, 1], ["A", "B", "C"]), "(B,C)A;")
        self.assertEqual(newick([0, 1, 2, 2, 1], ["A", "B", "C", "D", "E"]), "((C,D)B,E)A;")
        self.assertEqual(newick([0, 1, 1], ["root", "Escherichia coli O157:H7", "[Candida] glabrata's"]),
                         "('Escherichia coli O157:H7','[Candida] glabrata''s')root;")
        self.assertEqual(newick([0], [""]), "'';")
        self.assertEqual(newick([0], ["a_b"]), "'a_b';")


class FakeServer:
    """A Unix socket server running ``handler(connection, number)`` per connection."""

    def __init__(self, handler):
        self.directory = tempfile.mkdtemp(prefix="stol-fake-")
        self.path = os.path.join(self.directory, "taxonomy.sock")
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(self.path)
        self.listener.listen(16)
        self.handler = handler
        self.connections = 0
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._handle, args=(connection, self.connections), daemon=True).start()

    def _handle(self, connection, number):
        try:
            self.handler(connection, number)
        except OSError:
            pass
        finally:
            connection.close()

    def close(self):
        self.listener.close()
        shutil.rmtree(self.directory, ignore_errors=True)


def read_request(connection):
    header = b""
    while len(header) < 4:
        chunk = connection.recv(4 - len(header))
        if not chunk:
            return None
        header += chunk
    (length,) = struct.unpack(">I", header)
    body = b""
    while len(body) < length:
        body += connection.recv(length - len(body))
    request = taxonomy_pb2.TaxonomyRequest()
    request.ParseFromString(body)
    return request


def taxon_answer(request, release="bundled"):
    answer = taxonomy_pb2.TaxonomyResponse(id=request.id, database={"release": release})
    answer.taxon.id = request.get_taxon.taxon_id
    answer.taxon.scientific_name = "Taxon %d" % request.get_taxon.taxon_id
    return _transport.encode_frame(answer)


def lineage_answer(request):
    answer = taxonomy_pb2.TaxonomyResponse(id=request.id, database={"release": "bundled"})
    for query in request.lineage_batch.queries:
        answer.lineage_batch.results.add(query=query, taxon={"id": int(query), "scientific_name": query})
    return _transport.encode_frame(answer)


class FakeServers(unittest.TestCase):
    def serve(self, handler):
        server = FakeServer(handler)
        self.addCleanup(server.close)
        return server

    def test_batches_are_pipelined(self):
        """The server reads four requests before it answers any: a client that waited
        for each answer before sending the next would time out."""
        def handler(connection, number):
            status = read_request(connection)
            connection.sendall(_transport.encode_frame(taxonomy_pb2.TaxonomyResponse(
                id=status.id, database={"release": "bundled"}, status={})))
            while True:
                requests = [read_request(connection) for _ in range(4)]
                requests = [r for r in requests if r is not None]
                if not requests:
                    return
                self.assertTrue(all(r.release == "bundled" for r in requests))  # the batch is pinned
                for request in requests:
                    connection.sendall(lineage_answer(request))
        server = self.serve(handler)
        tx = stol.Taxonomy(socket_path=server.path, timeout=2)
        ids = list(range(1, 8001))  # 8 requests of 1000, in two windows of 4
        self.assertEqual([lineage.taxon.id for lineage in tx.lineage(ids)], ids)

    def test_a_server_that_stops_reading_while_its_answers_wait_is_not_deadlocked(self):
        """Like stol-taxonomyd, this server reads no request while it is writing an answer
        (here 1 MB each), and the client's pipelined requests (60 KB each, 8 in flight) do not
        fit in the socket's buffer: a client that blocked in its send without reading the
        answers would wait until its deadline."""
        def handler(connection, number):
            while True:
                request = read_request(connection)
                if request is None:
                    return
                answer = taxonomy_pb2.TaxonomyResponse(id=request.id, database={"release": "bundled"})
                if request.HasField("status"):
                    answer.status.SetInParent()
                else:
                    for query in request.lineage_batch.queries:
                        answer.lineage_batch.results.add(query=query, taxon={"id": 1, "scientific_name": "x" * 1000})
                body = answer.SerializeToString()  # over the 64 KiB of a request: framed here
                connection.sendall(struct.pack(">I", len(body)) + body)  # blocks until the client reads
        server = self.serve(handler)
        tx = stol.Taxonomy(socket_path=server.path, timeout=5, window=8)
        names = ["Name %055d" % i for i in range(16000)]
        started = time.monotonic()
        self.assertEqual([lineage.query for lineage in tx.lineage(names)], names)
        self.assertLess(time.monotonic() - started, 5)
        self.assertEqual(server.connections, 1)

    def test_reconnects_when_the_server_closed_between_answers(self):
        def handler(connection, number):
            request = read_request(connection)
            connection.sendall(taxon_answer(request))  # one answer, then close (idle timeout, restart)
        server = self.serve(handler)
        tx = stol.Taxonomy(socket_path=server.path, timeout=2)
        self.assertEqual([tx.taxon(i).id for i in (1, 2, 3)], [1, 2, 3])
        self.assertEqual(server.connections, 3)

    def test_batch_resends_what_was_not_answered(self):
        def handler(connection, number):
            while True:
                request = read_request(connection)
                if request is None:
                    return
                if request.HasField("status"):
                    connection.sendall(_transport.encode_frame(taxonomy_pb2.TaxonomyResponse(
                        id=request.id, database={"release": "bundled"}, status={})))
                    continue
                connection.sendall(lineage_answer(request))
                if number == 1:
                    return  # the first connection closes after one batch, others in flight
        server = self.serve(handler)
        tx = stol.Taxonomy(socket_path=server.path, timeout=2)
        ids = list(range(1, 5001))
        self.assertEqual([lineage.taxon.id for lineage in tx.lineage(ids)], ids)
        self.assertEqual(server.connections, 2)

    def test_batch_resends_an_answer_cut_in_the_middle(self):
        """A server closes a connection whose answers were left unread for 30 s, possibly
        inside an answer (PROTOCOL.md §1.3): a batch sends the lost requests again."""
        def handler(connection, number):
            while True:
                request = read_request(connection)
                if request is None:
                    return
                if request.HasField("status"):
                    connection.sendall(_transport.encode_frame(taxonomy_pb2.TaxonomyResponse(
                        id=request.id, database={"release": "bundled"}, status={})))
                    continue
                frame = lineage_answer(request)
                if number == 1 and request.lineage_batch.queries[0] == "1001":
                    connection.sendall(frame[:len(frame) // 2])
                    return
                connection.sendall(frame)
        server = self.serve(handler)
        tx = stol.Taxonomy(socket_path=server.path, timeout=2)
        ids = list(range(1, 6001))
        self.assertEqual([lineage.taxon.id for lineage in tx.lineage(ids)], ids)
        self.assertEqual(server.connections, 2)

    def test_toggle_is_not_sent_twice(self):
        def handler(connection, number):
            connection.recv(1000)  # takes the request, closes without answering
        server = self.serve(handler)
        favorites = stol.Favorites(socket_path=server.path, timeout=2)
        with self.assertRaises(stol.ConnectionLostError) as caught:
            favorites.toggle(9689)
        self.assertIn("may or may not", str(caught.exception))
        self.assertEqual(server.connections, 1)

    def test_busy_refusal_is_typed(self):
        def handler(connection, number):
            refusal = taxonomy_pb2.TaxonomyResponse(id=0)
            refusal.error.code = common_pb2.ERROR_CODE_BUSY
            refusal.error.message = "too many connections"
            refusal.error.details["limit_per_user"] = "64"
            connection.sendall(_transport.encode_frame(refusal))
        server = self.serve(handler)
        with self.assertRaises(stol.BusyError) as caught:
            stol.Taxonomy(socket_path=server.path, timeout=2).taxon(1)
        self.assertEqual(caught.exception.details, {"limit_per_user": "64"})

    def test_answer_over_4_mib_is_refused_unread(self):
        def handler(connection, number):
            read_request(connection)
            connection.sendall(struct.pack(">I", 4 * 1024 * 1024 + 1))
            time.sleep(1)
        server = self.serve(handler)
        with self.assertRaises(stol.ProtocolViolationError):
            stol.Taxonomy(socket_path=server.path, timeout=5).taxon(1)

    def test_answer_that_does_not_decode(self):
        def handler(connection, number):
            read_request(connection)
            connection.sendall(struct.pack(">I", 3) + b"\xff\xff\xff")
        server = self.serve(handler)
        with self.assertRaises(stol.ProtocolViolationError):
            stol.Taxonomy(socket_path=server.path, timeout=2).taxon(1)

    def test_closed_inside_an_answer(self):
        def handler(connection, number):
            read_request(connection)
            connection.sendall(struct.pack(">I", 100) + b"\x08")
        server = self.serve(handler)
        with self.assertRaises(stol.ConnectionLostError):
            stol.Taxonomy(socket_path=server.path, timeout=2).taxon(1)

    def test_a_daemon_that_never_answers_times_out(self):
        def handler(connection, number):
            read_request(connection)
            time.sleep(10)
        server = self.serve(handler)
        started = time.monotonic()
        with self.assertRaises(stol.StolTimeoutError) as caught:
            stol.Taxonomy(socket_path=server.path, timeout=0.5).taxon(1)
        self.assertLess(time.monotonic() - started, 3)
        self.assertIsInstance(caught.exception, TimeoutError)

    def test_a_trickle_does_not_extend_the_deadline(self):
        def handler(connection, number):
            read_request(connection)
            connection.sendall(struct.pack(">I", 50))
            for _ in range(40):
                connection.sendall(b"\x08")
                time.sleep(0.1)
        server = self.serve(handler)
        started = time.monotonic()
        with self.assertRaises(stol.StolTimeoutError):
            stol.Taxonomy(socket_path=server.path, timeout=1).taxon(1)
        self.assertLess(time.monotonic() - started, 3)


class NoService(unittest.TestCase):
    def setUp(self):
        self.directory = tempfile.mkdtemp(prefix="stol-empty-")
        self.addCleanup(shutil.rmtree, self.directory, True)

    def test_missing_socket_is_a_clear_error_at_once(self):
        for make in (lambda: stol.Taxonomy(runtime_dir=self.directory).taxon(9689),
                     lambda: list(stol.Taxonomy(runtime_dir=self.directory).lineage([1, 2])),
                     lambda: stol.Favorites(runtime_dir=self.directory).list()):
            started = time.monotonic()
            with self.assertRaises(stol.ServiceNotRunningError) as caught:
                make()
            self.assertLess(time.monotonic() - started, 1)
            self.assertIn("is not running", str(caught.exception))
            self.assertIn(self.directory, str(caught.exception))
            self.assertIsInstance(caught.exception, ConnectionError)
            self.assertIsInstance(caught.exception, stol.StolError)

    def test_socket_nobody_listens_on(self):
        path = os.path.join(self.directory, "taxonomy.sock")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(path)
        listener.close()  # a stale socket file: ECONNREFUSED
        with self.assertRaises(stol.ServiceNotRunningError):
            stol.Taxonomy(runtime_dir=self.directory).taxon(9689)

    def test_runtime_dir_from_the_environment(self):
        saved = os.environ.get("STOL_RUNTIME_DIR")
        try:
            os.environ["STOL_RUNTIME_DIR"] = self.directory
            self.assertEqual(stol.Taxonomy().path, os.path.join(self.directory, "taxonomy.sock"))
            os.environ["STOL_RUNTIME_DIR"] = ""
            self.assertEqual(stol.Favorites().path, "/run/stol/favorites.sock")
        finally:
            if saved is None:
                os.environ.pop("STOL_RUNTIME_DIR", None)
            else:
                os.environ["STOL_RUNTIME_DIR"] = saved


if __name__ == "__main__":
    unittest.main()

#!/usr/bin/env python3
"""A socket-level fuzzer of the STOL daemons, written from protocol/PROTOCOL.md
alone (length-prefixed frames, protobuf read at the wire-format level): it takes
the request frames of protocol/vectors for a socket, mutates them, sends them at
the running daemon, and after every batch checks that the daemon is the same
process, still answers a valid request, and keeps its memory bounded.

  socket_fuzzer.py SOCKET [--seed S] [--cases N] [--batch B] [--seconds T]
                   [--pid PID] [--max-rss-growth-mb M] [--vectors DIR]

SOCKET is a daemon's socket (taxonomy.sock, favorites.sock, import.sock); which
vectors and which probe request apply follows from its name. Mutations: bit
flips, truncations (the connection ends inside a frame), length-prefix lies,
duplicated and spliced frames, huge lengths, random bodies, garbage streams.
Every answer must be a frame within the 4 MiB response limit whose body is
well-formed protobuf with exactly one result field; a framing error (id 0,
FRAME_TOO_LARGE or MALFORMED_FRAME) must be the last frame before the daemon
closes; no answer may be INTERNAL; the daemon must close every connection after
the client's end of stream within --answer-timeout seconds. A file of hex given to
--replay may hold `#` comments (Tests/fuzz/regressions/socket-*/ keeps such files).

The daemon's pid comes from --pid, else from SO_PEERCRED (the process that
listens: right for `make run`'s stack and the tests; under systemd it is pid 1,
so pass --pid "$(systemctl show -p MainPID --value stol-taxonomy.service)").
Favourites and import requests change state: run it as a user whose favourites
do not matter, and not against an import.sock whose reference database matters
(mutated requests may deactivate or delete it).

Prints one JSON summary line last; exit 0 when every check held, 1 when one did
not (the failing case is printed in hex: --replay HEX sends it again), 2 when
the daemon could not be reached at all.
"""
import argparse
import json
import os
import random
import select
import socket
import struct
import sys
import time

RESPONSE_LIMIT = 4 * 1024 * 1024
REQUEST_LIMIT = 64 * 1024
FRAMING_CODES = {2: "FRAME_TOO_LARGE", 3: "MALFORMED_FRAME"}
CODE_NAMES = {1: "INVALID_REQUEST", 2: "FRAME_TOO_LARGE", 3: "MALFORMED_FRAME", 4: "UNIMPLEMENTED", 5: "NOT_FOUND",
              6: "PERMISSION_DENIED", 7: "UNAVAILABLE", 8: "INTERNAL", 9: "BUSY", 20: "FILE_UNREADABLE",
              21: "FILE_TOO_LARGE", 22: "NOT_A_STOL_FILE", 23: "CHECKSUM_MISMATCH", 24: "SIGNATURE_INVALID",
              25: "INCOMPATIBLE_SCHEMA", 26: "DATABASE_CORRUPT", 27: "DECOMPRESSION_LIMIT", 28: "FILE_TOO_SMALL",
              29: "DOWNGRADE_REFUSED", 30: "NO_SPACE", 10: "TAXON_DELETED", 31: "ID_NAMESPACE_MISMATCH",
              32: "RELEASE_NOT_INSTALLED", 33: "UNKNOWN_KEY", 34: "KEY_EXPIRED", 35: "KEY_REVOKED",
              36: "CONTENT_HASH_MISMATCH", 37: "DELTA_BASE_MISMATCH", 38: "FORMAT_VERSION_NOT_ALLOWED"}
# The probe per socket (PROTOCOL.md §4-6): a request with id 424242 and the result
# field its answer must carry (or an error, e.g. PERMISSION_DENIED for a non-admin).
PROBE_ID = 424242


def encode_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


PROBES = {
    "taxonomy.sock": (b"\x08" + encode_varint(PROBE_ID) + b"\x52\x00", 10),   # status {} -> status (10)
    "favorites.sock": (b"\x08" + encode_varint(PROBE_ID) + b"\x7a\x00", 12),  # count {} -> count (12)
    "import.sock": (b"\x08" + encode_varint(PROBE_ID) + b"\x52\x00", 10),     # status {} -> status (10)
}


class CheckFailed(Exception):
    pass


def frame(body: bytes) -> bytes:
    return len(body).to_bytes(4, "big") + body


def varint(data: bytes, offset: int):
    value, shift = 0, 0
    while True:
        if offset >= len(data) or shift > 63:
            raise ValueError("truncated varint")
        byte = data[offset]
        offset += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, offset


def fields(body: bytes):
    """Top-level protobuf fields as (number, wire type, value); ValueError when malformed."""
    result, offset = [], 0
    while offset < len(body):
        key, offset = varint(body, offset)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise ValueError("field number 0")
        if wire == 0:
            value, offset = varint(body, offset)
        elif wire == 1:
            value, offset = body[offset:offset + 8], offset + 8
        elif wire == 2:
            length, offset = varint(body, offset)
            value, offset = body[offset:offset + length], offset + length
        elif wire == 5:
            value, offset = body[offset:offset + 4], offset + 4
        else:
            raise ValueError(f"wire type {wire}")
        if offset > len(body):
            raise ValueError("field runs past the end")
        result.append((number, wire, value))
    return result


class Answer:
    """One response frame, read at the wire-format level."""

    def __init__(self, body: bytes):
        try:
            parsed = fields(body)
        except ValueError as error:
            raise CheckFailed(f"an answer is not protobuf ({error}): {body[:64].hex()}")
        ids = [v for n, w, v in parsed if n == 1 and w == 0]
        self.id = ids[-1] if ids else 0
        results = {n for n, w, v in parsed if n == 9 or n >= 10}
        if len(results) != 1:
            raise CheckFailed(f"an answer with {len(results)} result fields {sorted(results)}: {body[:64].hex()}")
        self.result = results.pop()
        self.code = None
        if self.result == 9:
            error = [v for n, w, v in parsed if n == 9 and w == 2][-1]
            codes = [v for n, w, v in fields(error) if n == 1 and w == 0]
            self.code = codes[-1] if codes else 0
            if self.code not in CODE_NAMES:
                raise CheckFailed(f"an error with code {self.code}: {body[:64].hex()}")


def exchange(path: str, data: bytes, timeout: float, chunk_sizes):
    """Sends `data` (in chunks), ends the stream, reads until the daemon closes.
    Returns the answers; raises CheckFailed on a malformed answer or a hang."""
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.settimeout(timeout)
    connection.connect(path)
    connection.setblocking(False)
    received, sent, deadline = bytearray(), 0, time.monotonic() + timeout
    writing = True
    try:
        while True:
            if time.monotonic() > deadline:
                raise CheckFailed(f"the daemon neither answered nor closed within {timeout} s")
            if writing and sent >= len(data):
                connection.shutdown(socket.SHUT_WR)
                writing = False
            readable, writable, _ = select.select([connection], [connection] if writing else [], [], 0.5)
            if writable:
                size = next(chunk_sizes)
                try:
                    sent += connection.send(data[sent:sent + size])
                except (BrokenPipeError, ConnectionResetError):
                    writing = False  # the daemon closed first (a framing error): read what it said
                except BlockingIOError:
                    pass
            if readable:
                try:
                    chunk = connection.recv(65536)
                except ConnectionResetError:
                    chunk = b""
                except BlockingIOError:
                    continue
                if not chunk:
                    break
                received += chunk
                if len(received) > 64 * RESPONSE_LIMIT:
                    raise CheckFailed("more than 256 MiB of answers to one case")
    finally:
        connection.close()
    answers, offset = [], 0
    while len(received) - offset >= 4:
        length = int.from_bytes(received[offset:offset + 4], "big")
        if length > RESPONSE_LIMIT:
            raise CheckFailed(f"an answer announces {length} bytes, over the response limit")
        if len(received) - offset - 4 < length:
            break  # cut by a reset: nothing to hold against the daemon
        answers.append(Answer(bytes(received[offset + 4:offset + 4 + length])))
        offset += 4 + length
    for index, answer in enumerate(answers):
        if answer.id == 0 and answer.code in FRAMING_CODES and index != len(answers) - 1:
            raise CheckFailed(f"the daemon answered on after a framing error ({FRAMING_CODES[answer.code]})")
        if answer.code == 8:
            raise CheckFailed("an answer is INTERNAL (a bug or an I/O failure, says PROTOCOL.md §8)")
    return answers


class Mutator:
    """Mutated client streams from the vector frames, each kind named."""

    def __init__(self, frames, rng: random.Random):
        self.frames, self.rng = frames, rng

    def body(self, data: bytes) -> bytes:
        return data[4:]

    def case(self):
        kinds = [self.bit_flips, self.truncation, self.length_lie, self.duplicated, self.spliced,
                 self.huge_length, self.random_body, self.garbage, self.edited_body]
        kind = self.rng.choice(kinds)
        return kind.__name__, kind()

    def pick(self) -> bytes:
        return self.rng.choice(self.frames)

    def bit_flips(self):
        data = bytearray(self.pick())
        for _ in range(self.rng.randint(1, 8)):
            position = self.rng.randrange(len(data))
            data[position] ^= 1 << self.rng.randrange(8)
        return bytes(data)

    def truncation(self):
        stream = b"".join(self.pick() for _ in range(self.rng.randint(1, 3)))
        return stream[:self.rng.randrange(len(stream))]

    def length_lie(self):
        body = self.body(self.pick())
        length = max(0, len(body) + self.rng.choice([-3, -2, -1, 1, 2, 7, 100, 1000]))
        return length.to_bytes(4, "big") + body + self.pick()

    def duplicated(self):
        return self.pick() * self.rng.randint(2, 200)

    def spliced(self):
        first, second = self.pick(), self.pick()
        return first[:self.rng.randrange(len(first) + 1)] + second[self.rng.randrange(len(second) + 1):] + self.pick()

    def huge_length(self):
        length = self.rng.choice([0xFFFFFFFF, 0x80000000, RESPONSE_LIMIT, REQUEST_LIMIT + 1, REQUEST_LIMIT,
                                  REQUEST_LIMIT - 1, self.rng.randrange(REQUEST_LIMIT + 1, 1 << 32)])
        return self.pick() + length.to_bytes(4, "big") + bytes(self.rng.randrange(64))

    def random_body(self):
        body = bytes(self.rng.randrange(256) for _ in range(self.rng.randrange(64)))
        return self.pick() + frame(body) + self.pick()

    def garbage(self):
        return bytes(self.rng.randrange(256) for _ in range(self.rng.randrange(1, 256)))

    def edited_body(self):
        """Inserts, deletes or overwrites bytes inside a body, keeping the prefix right."""
        body = bytearray(self.body(self.pick()))
        for _ in range(self.rng.randint(1, 4)):
            position = self.rng.randrange(len(body) + 1)
            choice = self.rng.randrange(3)
            if choice == 0:
                body[position:position] = bytes([self.rng.choice([0x00, 0x08, 0x0a, 0x12, 0x52, 0x5a, 0x7a, 0xff, 0x80])])
            elif choice == 1 and body:
                del body[min(position, len(body) - 1)]
            elif body:
                body[min(position, len(body) - 1)] = self.rng.randrange(256)
        return frame(bytes(body))


def request_vectors(directory: str, socket_name: str):
    with open(os.path.join(directory, "vectors.json"), encoding="utf-8") as handle:
        listed = json.load(handle)["vectors"]
    frames = []
    for vector in listed:
        if vector.get("socket") == socket_name and vector.get("direction") == "client to server":
            with open(os.path.join(directory, vector["file"]), encoding="ascii") as handle:
                frames.append(bytes.fromhex("".join(handle.read().split())))
    return frames


def peer_pid(path: str) -> int:
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.connect(path)
        pid, _, _ = struct.unpack("3i", connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
        return pid
    finally:
        connection.close()


def process_identity(pid: int):
    """(start time, VmRSS KiB) of `pid`; start time tells a restarted daemon that got the same pid."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            started = handle.read().rsplit(")", 1)[1].split()[19]
        with open(f"/proc/{pid}/status", encoding="ascii") as handle:
            rss = next(int(line.split()[1]) for line in handle if line.startswith("VmRSS:"))
        return started, rss
    except (OSError, StopIteration, IndexError):
        return None, None


def probe(path: str, socket_name: str, timeout: float):
    body, result_field = PROBES[socket_name]
    answers = exchange(path, frame(body), timeout, iter(lambda: 65536, None))
    if not answers:
        raise CheckFailed("the probe request got no answer")
    answer = answers[0]
    if answer.id != PROBE_ID or answer.result not in (result_field, 9) or answer.code in FRAMING_CODES:
        raise CheckFailed(f"the probe was answered with id {answer.id}, result field {answer.result}, code {answer.code}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("socket")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--cases", type=int, default=1000, help="mutated streams to send in all")
    parser.add_argument("--batch", type=int, default=50, help="cases between two checks of the daemon")
    parser.add_argument("--seconds", type=float, default=600, help="stop starting batches after this long")
    parser.add_argument("--pid", type=int, help="the daemon's pid (default: from SO_PEERCRED)")
    parser.add_argument("--max-rss-growth-mb", type=float, default=64)
    parser.add_argument("--answer-timeout", type=float, default=10, help="seconds a daemon may take to answer and close")
    parser.add_argument("--vectors", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "protocol", "vectors"))
    parser.add_argument("--replay", metavar="HEX|FILE",
                        help="send this one stream (a failing case, in hex or a file of hex) and check as usual")
    arguments = parser.parse_args()

    socket_name = os.path.basename(arguments.socket)
    if socket_name not in PROBES:
        sys.exit(f"socket_fuzzer: {socket_name} is not one of {', '.join(sorted(PROBES))}")
    frames = request_vectors(arguments.vectors, socket_name)
    if not frames:
        sys.exit(f"socket_fuzzer: no request vectors for {socket_name} in {arguments.vectors}")
    try:
        pid = arguments.pid or peer_pid(arguments.socket)
    except OSError as error:
        print(f"socket_fuzzer: cannot reach {arguments.socket}: {error}", file=sys.stderr)
        sys.exit(2)
    try:
        probe(arguments.socket, socket_name, arguments.answer_timeout)  # answers before the baseline: warm
    except (CheckFailed, OSError) as error:
        print(f"socket_fuzzer: {arguments.socket} does not answer its probe: {error}", file=sys.stderr)
        sys.exit(2)
    started, baseline = process_identity(pid)
    if started is None:
        print(f"socket_fuzzer: no process {pid} to watch (pass --pid)", file=sys.stderr)
        sys.exit(2)
    rng = random.Random(arguments.seed)
    mutator = Mutator(frames, rng)
    # Chunk sizes from a generator of their own: how many sends a case takes depends on
    # the daemon's timing, and must not shift the cases that follow (a seed names a run).
    chunk_rng = random.Random(arguments.seed + 1)
    chunk_sizes = iter(lambda: chunk_rng.choice([1, 2, 3, 4, 5, 7, 64, 4096, 65536]), None)
    summary = {"socket": socket_name, "seed": arguments.seed, "pid": pid, "cases": 0, "batches": 0, "probes": 0,
               "bytes_sent": 0, "answers": 0, "error_codes": {}, "kinds": {}, "rss_baseline_kib": baseline,
               "rss_peak_kib": baseline, "same_process": True, "ok": False, "failure": None}
    deadline = time.monotonic() + arguments.seconds
    current = None
    try:
        if arguments.replay:
            text = arguments.replay
            if os.path.isfile(text):
                with open(text, encoding="ascii") as handle:
                    text = "".join(line.split("#")[0] for line in handle)
            cases = [("replay", bytes.fromhex("".join(text.split())))]
        else:
            cases = (mutator.case() for _ in range(arguments.cases))
        for kind, data in cases:
            current = (kind, data)
            answers = exchange(arguments.socket, data, arguments.answer_timeout, chunk_sizes)
            summary["cases"] += 1
            summary["bytes_sent"] += len(data)
            summary["answers"] += len(answers)
            summary["kinds"][kind] = summary["kinds"].get(kind, 0) + 1
            for answer in answers:
                if answer.code is not None:
                    name = CODE_NAMES[answer.code]
                    summary["error_codes"][name] = summary["error_codes"].get(name, 0) + 1
            last = summary["cases"] == (1 if arguments.replay else arguments.cases)
            if summary["cases"] % arguments.batch == 0 or last:
                current = None
                summary["batches"] += 1
                probe(arguments.socket, socket_name, arguments.answer_timeout)
                summary["probes"] += 1
                now_started, rss = process_identity(pid)
                if now_started != started:
                    summary["same_process"] = False
                    raise CheckFailed(f"the daemon (pid {pid}) is gone or was restarted")
                summary["rss_peak_kib"] = max(summary["rss_peak_kib"], rss)
                if rss - baseline > arguments.max_rss_growth_mb * 1024:
                    raise CheckFailed(f"the daemon grew from {baseline} to {rss} KiB")
                if time.monotonic() > deadline:
                    break
        summary["ok"] = True
    except (CheckFailed, OSError) as error:
        summary["failure"] = str(error)
        if current is not None:
            print(f"socket_fuzzer: case {summary['cases'] + 1} ({current[0]}) failed: {error}\n"
                  f"  replay: {sys.argv[0]} {arguments.socket} --replay {current[1].hex()}", file=sys.stderr)
        else:
            print(f"socket_fuzzer: after {summary['cases']} cases: {error}", file=sys.stderr)
        now_started, _ = process_identity(pid)
        summary["same_process"] = now_started == started
    print(f"{socket_name}: {summary['cases']} cases in {summary['batches']} batches, {summary['answers']} answers, "
          f"RSS {summary['rss_baseline_kib']} -> peak {summary['rss_peak_kib']} KiB, "
          f"{'every check held' if summary['ok'] else 'FAILED: ' + str(summary['failure'])}", file=sys.stderr)
    print(json.dumps(summary, sort_keys=True), flush=True)
    sys.exit(0 if summary["ok"] else 1)


if __name__ == "__main__":
    main()

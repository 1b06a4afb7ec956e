#!/usr/bin/env python3
"""A hostile client of the STOL daemons, written from protocol/PROTOCOL.md alone
(length-prefixed frames, protobuf envelopes built by hand), for the attack tests.

  hostile_client.py hold SOCKET COUNT SECONDS
      open COUNT connections and keep them; print "kept K refused R" once the
      refusals (a BUSY frame, then the close) have stopped arriving.
  hostile_client.py churn SOCKET COUNT
      connect and close COUNT times; print "churned COUNT".
  hostile_client.py pipeline SOCKET REQUEST_HEX COUNT SECONDS [CONNECTIONS]
      send COUNT copies of one request frame (body in hex) on each of
      CONNECTIONS connections (1) without reading any answer, keep them SECONDS;
      print "sent N" (the frames sent in all).
  hostile_client.py ask SOCKET REQUEST_HEX
      send one request frame (body in hex), read its answer frame and print its
      body in hex.
  hostile_client.py trickle SOCKET INTERVAL SECONDS
      announce a 1,000-byte frame and send one byte every INTERVAL seconds for
      at most SECONDS; print "closed after N bytes" when the daemon cuts it,
      else "still open after N bytes".
"""
import select
import socket
import sys
import time


def frame(body: bytes) -> bytes:
    return len(body).to_bytes(4, "big") + body


def hold(path, count, seconds):
    connections = []
    for _ in range(count):
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        connection.connect(path)
        connections.append(connection)
    pending, refused = list(connections), 0
    while pending:
        readable, _, _ = select.select(pending, [], [], 1.0)
        if not readable:
            break
        refused += len(readable)
        pending = [c for c in pending if c not in readable]
    print(f"kept {count - refused} refused {refused}", flush=True)
    time.sleep(seconds)


def churn(path, count):
    for _ in range(count):
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        connection.connect(path)
        connection.close()
    print(f"churned {count}", flush=True)


def pipeline(path, request_hex, count, seconds, connections=1):
    data = frame(bytes.fromhex(request_hex)) * count
    sent = {}
    for _ in range(connections):
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        connection.connect(path)
        connection.setblocking(False)
        sent[connection] = 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        unfinished = [c for c, n in sent.items() if n < len(data)]
        if not unfinished:
            break
        _, writable, _ = select.select([], unfinished, [], 0.1)
        for connection in writable:
            try:
                sent[connection] += connection.send(data[sent[connection]:sent[connection] + 65536])
            except (BlockingIOError, InterruptedError):
                pass
            except (BrokenPipeError, ConnectionResetError):
                sent[connection] = len(data)  # cut: nothing more to send on it
    print(f"sent {sum(sent.values()) // len(frame(bytes.fromhex(request_hex)))}", flush=True)
    time.sleep(max(0.0, deadline - time.monotonic()))


def receive_exactly(connection, count):
    data = b""
    while len(data) < count:
        chunk = connection.recv(count - len(data))
        if not chunk:
            sys.exit(f"closed after {len(data)} of {count} bytes")
        data += chunk
    return data


def ask(path, request_hex):
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.connect(path)
    connection.sendall(frame(bytes.fromhex(request_hex)))
    length = int.from_bytes(receive_exactly(connection, 4), "big")
    print(receive_exactly(connection, length).hex(), flush=True)


def trickle(path, interval, seconds):
    """Announces a 1,000-byte frame and sends it one byte every `interval` s;
    says whether the daemon closed the connection before `seconds` ran out."""
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.connect(path)
    connection.sendall((1000).to_bytes(4, "big"))
    sent, deadline = 0, time.monotonic() + seconds
    while time.monotonic() < deadline and sent < 999:
        readable, _, _ = select.select([connection], [], [], interval)
        if readable:
            try:
                answer = connection.recv(65536)
            except (ConnectionResetError, OSError):
                answer = b""
            # An error frame, then EOF; or EOF at once.
            while answer:
                try:
                    answer = connection.recv(65536)
                except (ConnectionResetError, OSError):
                    break
            print(f"closed after {sent} bytes", flush=True)
            return
        try:
            connection.sendall(b"x")
            sent += 1
        except (BrokenPipeError, ConnectionResetError):
            print(f"closed after {sent} bytes", flush=True)
            return
    print(f"still open after {sent} bytes", flush=True)


if __name__ == "__main__":
    command = sys.argv[1]
    if command == "hold":
        hold(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]))
    elif command == "churn":
        churn(sys.argv[2], int(sys.argv[3]))
    elif command == "pipeline":
        pipeline(sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5]),
                 int(sys.argv[6]) if len(sys.argv) > 6 else 1)
    elif command == "ask":
        ask(sys.argv[2], sys.argv[3])
    elif command == "trickle":
        trickle(sys.argv[2], float(sys.argv[3]), float(sys.argv[4]))
    else:
        sys.exit(f"unknown command {command}")

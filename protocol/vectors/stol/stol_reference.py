#!/usr/bin/env python3
"""Independent reference implementation of the .stol format (protocol/STOL-FORMAT.md).

Written from the specification only, with the Python standard library (zlib,
hashlib) and the `cryptography` package (OpenSSL's Ed25519), so that it shares
no code with the Swift implementation (STOLFormat: libsodium + zlib via Swift).
Deltas (version 2, kinds 2 and 3) are made and decompressed with the zstd command-line
tool (`zstd`, on PATH or /usr/bin/zstd; `STOL_ZSTD` overrides), never with
Python bindings: the frame itself (one frame, content size present, window,
nothing after it) is parsed here, from RFC 8878, before zstd sees it. A row
delta's patchset (kind 3) is made and applied by the system's SQLite library
(its session extension) through ctypes: no STOL code is involved.

    stol_reference.py build   --key PRIVATE.key --body FILE --out FILE.stol [--schema-version N]
                              [--format-version 1|2] [--release R] [--id-namespace NS]
                              [--base BASE --base-release R]      (kind 2, a delta of BODY against BASE)
    stol_reference.py verify  --public-key FILE|DIR... FILE.stol [--base BASE] [--now WHEN]
                              [--extract OUT] [--max-schema-version N] [--max-decompressed-bytes N]
    stol_reference.py classify --public-key FILE|DIR... FILE.stol...   one result per line
                              (same options as verify, but no --extract)
    stol_reference.py vectors DIR        (re)write the version 1 test vectors into DIR
    stol_reference.py check   DIR        verify every vector of DIR/vectors.json (version 1)
    stol_reference.py vectors-v2 DIR     (re)write the version 2 test vectors into DIR
    stol_reference.py check-v2   DIR     verify every vector of DIR/vectors.json (version 2),
                                         then check that vectors-v2 reproduces DIR byte for byte

For vectors-v2 and check-v2, DIR is the version 2 directory (protocol/vectors/stol/v2);
given the version 1 directory (whose vectors.json has no "format_version": 2), its v2/
subdirectory is used.

`--public-key` is repeatable and takes key files and directories, like
STOL_TRUSTED_KEY (every *.pub of a directory, and its `revoked` list). `--now`
(`YYYY-MM-DDTHH:MM:SSZ`, default: the current time) is the moment expiry is
decided at. `build` writes format version 2 unless told `--format-version 1`.

`verify` prints `OK <content bytes> <content sha256>` and exits 0, or prints the
error code (e.g. `CHECKSUM_MISMATCH`; for a key error followed by
`key_id=… trusted_key_ids=…[,…] [not_after=…]`) and exits 1. It exits 2 when the
trusted keys cannot be read (a missing path, an unreadable `revoked` list) and
64 on a usage error (a delta without --base). Why a key file was skipped goes to
standard error.
"""
import ctypes
import ctypes.util
import datetime
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zlib

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

# Version 1 (the names the version 1 vectors were written with).
MAGIC = b"STOL\x00DB\x01"
HEADER_SIZE = 108
SIGNED_SIZE = 44
# Version 2.
MAGIC_V2 = b"STOL\x00DB\x02"
HEADER_SIZE_V2 = 288
SIGNED_SIZE_V2 = 224
HEADER_SIZES = {1: HEADER_SIZE, 2: HEADER_SIZE_V2}

MIN_FILE = 1
MAX_FILE = 2 * 1024 ** 3
MAX_DECOMPRESSED = 4 * 1024 ** 3
MAX_DELTA_RESULT = 2 * 1024 ** 3  # a delta's result is mapped whole: the largest database a delta yields
MAX_ZSTD_WINDOW = 2 ** 31
MAX_PATCHSET = 2 ** 31  # the largest patchset a row delta may decompress to (§10.2)
SCHEMA_COOKIE = 1000  # set just before VACUUM INTO, by the pipeline and by a row delta's application (§10.2)
CURRENT_SCHEMA = 3
PRIVATE_LABEL = "STOL-ED25519-PRIVATE-KEY-V1:"
PUBLIC_LABEL = "STOL-ED25519-PUBLIC-KEY-V1:"
TEXT_FIELD = re.compile(rb"[A-Za-z0-9][A-Za-z0-9._+\-]{0,31}")  # one grammar with PROTOCOL.md's release names
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"

# The TEST seed of the vectors: 32 ASCII bytes. Never use it to sign anything real.
TEST_SEED = b"STOL-TEST-KEY-DO-NOT-USE-0000001"


class Refused(Exception):
    def __init__(self, code, detail="", **details):
        super().__init__(code, detail)
        self.code = code
        self.detail = detail
        self.details = details  # key_id, trusted_key_ids, not_after (§6: checks 6 and 7)

    def line(self):
        parts = [self.code]
        for name in ("key_id", "trusted_key_ids", "not_after"):
            if name in self.details:
                value = self.details[name]
                parts.append(f"{name}={','.join(value) if isinstance(value, list) else value}")
        return " ".join(parts)


class TrustError(Exception):
    """The trusted keys cannot be read at all (a missing path, an unreadable revocation list)."""


class KeyFileError(ValueError):
    """A public key file that is unreadable (§7): its key is not trusted."""


# --- keys -----------------------------------------------------------------

def parse_key(text, label):
    line = text.strip()
    if not line.startswith(label):
        raise ValueError("not a key file with label " + label)
    hexpart = line[len(label):]
    if len(hexpart) != 64:
        raise ValueError("expected 64 hexadecimal digits")
    return bytes.fromhex(hexpart)


def private_key_text(seed):
    return PRIVATE_LABEL + seed.hex() + "\n"


def public_key_bytes(seed):
    return Ed25519PrivateKey.from_private_bytes(seed).public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)


def public_key_text(public, not_after=None):
    return PUBLIC_LABEL + public.hex() + "\n" + (f"not-after: {not_after}\n" if not_after else "")


def key_id(public):
    """§7: the first 8 bytes of SHA-256 of the 32-byte public key."""
    return hashlib.sha256(public).digest()[:8]


HEX64 = re.compile(r"[0-9A-Fa-f]{64}")
DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
DATE_TIME = re.compile(r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})Z")


class NotAfter:
    """A `not-after` value. A date covers that whole day (UTC); a time is the last trusted instant."""

    def __init__(self, text):
        self.text = text
        try:
            if DATE.fullmatch(text):
                y, m, d = (int(g) for g in DATE.fullmatch(text).groups())
                # Trusted through the end of that day: refused from the next midnight on.
                self.refused_from = datetime.datetime(y, m, d, tzinfo=datetime.timezone.utc) + datetime.timedelta(days=1)
                self.last_trusted = None
            elif DATE_TIME.fullmatch(text):
                self.last_trusted = parse_instant(text)
                self.refused_from = None
            else:
                raise KeyFileError(f"malformed date {text!r} (YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ)")
        except KeyFileError:
            raise
        except ValueError as error:  # month 13, 30 February, hour 24, second 60 …
            raise KeyFileError(f"malformed date {text!r}: {error}")

    def expired(self, now):
        """'A key past its not-after': at the not-after instant itself the key is still trusted."""
        if self.refused_from is not None:
            return now >= self.refused_from
        return now > self.last_trusted


def parse_instant(text):
    match = DATE_TIME.fullmatch(text)
    if not match:
        raise ValueError(f"not YYYY-MM-DDTHH:MM:SSZ: {text!r}")
    return datetime.datetime(*(int(g) for g in match.groups()), tzinfo=datetime.timezone.utc)


def parse_public_key_file(text):
    """§7: returns (public key, NotAfter or None) or raises KeyFileError.

    Lines are stripped of ASCII whitespace; the first line must be the key line (no
    blank line or comment before it); after it blank lines and lines starting with `#`
    are ignored, and the others must be `name: value` lines (a colon, then a space), of
    which `not-after` is the one known name (at most once).
    """
    key = None
    not_after = None
    for number, raw in enumerate(text.split("\n")):
        line = raw.strip(" \t\r\n\x0b\x0c")
        if number == 0 and not line.startswith(PUBLIC_LABEL):
            raise KeyFileError("the first line is not a public key line (" + PUBLIC_LABEL + "…)")
        if not line or line.startswith("#"):
            continue
        if line.startswith(PUBLIC_LABEL):
            if key is not None:
                raise KeyFileError("a second key line")
            hexpart = line[len(PUBLIC_LABEL):]
            if not HEX64.fullmatch(hexpart):
                raise KeyFileError("the key line needs 64 hexadecimal digits")
            key = bytes.fromhex(hexpart)
            continue
        if key is None:
            raise KeyFileError("the first line is not a public key line (" + PUBLIC_LABEL + "…)")
        name, colon, value = line.partition(":")
        if not colon or not value.startswith(" "):
            raise KeyFileError(f"not a `name: value` line: {line!r}")
        name, value = name.strip(), value.strip()
        if name != "not-after":
            raise KeyFileError(f"unknown name {name!r}")
        if not_after is not None:
            raise KeyFileError("a second not-after line")
        not_after = NotAfter(value)
    if key is None:
        raise KeyFileError("no public key line")
    return key, not_after


class TrustedKey:
    def __init__(self, public, not_after, source):
        self.public = public
        self.id = key_id(public).hex()
        self.not_after = not_after
        self.source = source


class Trust:
    """The trusted keys: a list of key files and directories (§7), read in order."""

    def __init__(self):
        self.keys = {}      # key id (hex) -> TrustedKey; a later location's entry with the same id wins
        self.revoked = {}   # key id (hex) -> the `revoked` file that lists it
        self.warnings = []  # why a key file was not trusted

    @staticmethod
    def single(public):
        trust = Trust()
        trust.keys[key_id(public).hex()] = TrustedKey(public, None, "(given)")
        return trust

    @staticmethod
    def load(paths):
        trust = Trust()
        for path in paths:
            found = {}  # this location's keys: one id in two of its files keeps the more restrictive
            if os.path.isdir(path):
                for name in sorted(os.listdir(path)):
                    full = os.path.join(path, name)
                    if name.endswith(".pub") and os.path.isfile(full):
                        trust._add_key_file(full, found)
                revoked = os.path.join(path, "revoked")
                if os.path.isfile(revoked):
                    trust._add_revocations(revoked)
            elif os.path.isfile(path) and os.path.basename(path) == "revoked":
                trust._add_revocations(path)  # a revocation list named directly is still one
            elif os.path.isfile(path):
                trust._add_key_file(path, found)
            else:
                raise TrustError(f"{path}: no such key file or directory")
            trust.keys.update(found)
        return trust

    def _add_key_file(self, path, found):
        try:
            with open(path, "rb") as f:
                text = f.read().decode("ascii")
            public, not_after = parse_public_key_file(text)
            Ed25519PublicKey.from_public_bytes(public)
        except (OSError, UnicodeDecodeError, ValueError) as error:
            self.warnings.append(f"{path}: not trusted: {error}")
            return
        key = TrustedKey(public, not_after, path)
        other = found.get(key.id)
        if other is None:
            found[key.id] = key
            return
        # Not an override but a mistake: the earlier not-after (none is the latest) wins.
        def end(k):
            if not k.not_after:
                return datetime.datetime.max.replace(tzinfo=datetime.timezone.utc)
            return k.not_after.refused_from or (k.not_after.last_trusted + datetime.timedelta(seconds=1))
        found[key.id] = other if end(other) <= end(key) else key
        self.warnings.append(f"{other.source} and {path} both hold key {key.id}: the more restrictive is used")

    def _add_revocations(self, path):
        try:
            with open(path, "rb") as f:
                text = f.read().decode("utf-8")  # ids are ASCII; a comment may be any UTF-8
        except (OSError, UnicodeDecodeError) as error:
            raise TrustError(f"{path}: unreadable revocation list: {error}")
        for number, raw in enumerate(text.split("\n"), 1):
            line = raw.split("#", 1)[0].strip(" \t\r\n\x0b\x0c")
            if not line:
                continue
            if not re.fullmatch(r"[0-9A-Fa-f]{16}", line):
                # Fail closed: a revocation list that cannot be read revokes nothing we could name.
                raise TrustError(f"{path}:{number}: not a key id (16 hexadecimal digits): {line!r}")
            self.revoked[line.lower()] = path

    def usable(self, now):
        """Keys neither revoked nor expired at `now`, by id."""
        return [k for i, k in sorted(self.keys.items())
                if i not in self.revoked and not (k.not_after and k.not_after.expired(now))]

    def usable_ids(self, now):
        return [k.id for k in self.usable(now)]


# --- the format -----------------------------------------------------------

def gzip_member(body):
    """One gzip member: zlib's deflate, level 9, MTIME 0, no name (what the Swift writer produces)."""
    c = zlib.compressobj(9, zlib.DEFLATED, 31, 8, zlib.Z_DEFAULT_STRATEGY)
    return c.compress(body) + c.flush()


def signed_message(version, digest):
    return MAGIC + version.to_bytes(4, "little") + digest


def assemble(seed, version, payload):
    """Version 1: header (108 bytes) ‖ payload."""
    digest = hashlib.sha256(payload).digest()
    message = signed_message(version, digest)
    signature = Ed25519PrivateKey.from_private_bytes(seed).sign(message)
    return message + signature + payload


def text_field(value):
    """A 32-byte text field: the bytes as given (valid or not: vectors need both), NUL-padded."""
    raw = value.encode("ascii") if isinstance(value, str) else bytes(value)
    if len(raw) > 32:
        raise ValueError("a text field holds at most 32 bytes")
    return raw.ljust(32, b"\x00")


def valid_text(value):
    return len(value) <= 32 and TEXT_FIELD.fullmatch(value) is not None


def valid_release(value):
    """A release (or base release): a text field that is not `bundled`, the name pinning the bundled database."""
    return valid_text(value) and value != b"bundled"


def header_v2(*, schema_version, kind, key_id, content_size, payload_digest, content_digest,
              base_digest=bytes(32), release, base_release=b"", id_namespace, reserved=bytes(3),
              magic=MAGIC_V2):
    """The 224 signed bytes of a version 2 header (§1.1, §2)."""
    message = (magic + schema_version.to_bytes(4, "little") + bytes([kind]) + reserved + key_id
               + content_size.to_bytes(8, "little") + payload_digest + content_digest + base_digest
               + text_field(release) + text_field(base_release) + text_field(id_namespace))
    assert len(message) == SIGNED_SIZE_V2
    return message


def assemble_v2(seed, payload, content, *, schema_version=CURRENT_SCHEMA, release="unknown",
                id_namespace="unknown", base=None, base_release=b"", kind=None, **overrides):
    """Version 2: header (288 bytes) ‖ payload, signed with `seed`.

    `content` is what the file yields (kind 1: the body; kind 2: the result); `base`
    makes it kind 2. Any header field may be overridden (vectors of wrong headers).
    """
    fields = dict(schema_version=schema_version,
                  kind=kind if kind is not None else (2 if base is not None else 1),
                  key_id=key_id(public_key_bytes(seed)),
                  content_size=len(content),
                  payload_digest=hashlib.sha256(payload).digest(),
                  content_digest=hashlib.sha256(content).digest(),
                  base_digest=hashlib.sha256(base).digest() if base is not None else bytes(32),
                  release=release, base_release=base_release, id_namespace=id_namespace)
    fields.update(overrides)
    message = header_v2(**fields)
    signature = Ed25519PrivateKey.from_private_bytes(seed).sign(message)
    return message + signature + payload


# --- gzip (kind 1 and version 1) ------------------------------------------

def gunzip_one_member(payload, max_decompressed, signed_size=None):
    """§4: exactly one gzip member, nothing after it, at most `max_decompressed` bytes out.

    Version 2 (`signed_size`): inflating stops one byte past the signed content size, which
    is CONTENT_HASH_MISMATCH (check 13) unless that byte is also past the limit (check 12)."""
    if signed_size is not None and signed_size < max_decompressed:
        try:
            return gunzip_one_member(payload, signed_size)
        except Refused as refused:
            if refused.code != "DECOMPRESSION_LIMIT":
                raise
            raise Refused("CONTENT_HASH_MISMATCH", f"it decompresses to more than the {signed_size} bytes signed")
    d = zlib.decompressobj(31)  # gzip wrapper only
    out = bytearray()
    pending = payload
    try:
        while True:
            # Never ask for more than one byte beyond the limit.
            chunk = d.decompress(pending, max_decompressed - len(out) + 1)
            out += chunk
            if len(out) > max_decompressed:
                raise Refused("DECOMPRESSION_LIMIT")
            pending = d.unconsumed_tail
            if d.eof or not pending:
                if not d.eof:
                    rest = d.flush()
                    out += rest
                    if len(out) > max_decompressed:
                        raise Refused("DECOMPRESSION_LIMIT")
                break
    except zlib.error as error:
        raise Refused("DATABASE_CORRUPT", str(error))
    if not d.eof:
        raise Refused("DATABASE_CORRUPT", "truncated gzip member")
    if d.unused_data:
        raise Refused("DATABASE_CORRUPT", "bytes after the gzip member")
    return bytes(out)


# --- zstd (kind 2) ----------------------------------------------------------

def zstd_frame(payload):
    """RFC 8878 §3.1.1: parse the one frame the payload must be (§10), without decompressing.

    Returns (content size or None, window size, frame end). Refuses (DATABASE_CORRUPT) a
    payload that does not start with a zstd frame, a reserved bit, a truncated frame, a
    reserved block type, and anything after the frame (a second frame, a skippable
    frame, any byte).
    """
    def corrupt(why):
        return Refused("DATABASE_CORRUPT", "zstd: " + why)

    if payload[:4] != ZSTD_MAGIC:
        raise corrupt("the payload is not a zstd frame (magic 28 b5 2f fd)")
    if len(payload) < 5:
        raise corrupt("truncated frame header")
    fhd = payload[4]
    fcs_flag, single_segment, reserved = fhd >> 6, (fhd >> 5) & 1, (fhd >> 3) & 1
    has_checksum, dict_flag = (fhd >> 2) & 1, fhd & 3
    if reserved:
        raise corrupt("reserved bit of the frame header descriptor set")
    position = 5
    window = None
    if not single_segment:
        if len(payload) < position + 1:
            raise corrupt("truncated frame header")
        descriptor = payload[position]
        position += 1
        window_log = 10 + (descriptor >> 3)
        window_base = 1 << window_log
        window = window_base + (window_base // 8) * (descriptor & 7)
    position += (0, 1, 2, 4)[dict_flag]
    fcs_size = (1 if single_segment else 0, 2, 4, 8)[fcs_flag]
    if len(payload) < position + fcs_size:
        raise corrupt("truncated frame header")
    content_size = None
    if fcs_size:
        content_size = int.from_bytes(payload[position:position + fcs_size], "little")
        if fcs_size == 2:
            content_size += 256
    position += fcs_size
    if single_segment:
        window = content_size
    while True:
        if len(payload) < position + 3:
            raise corrupt("truncated frame (a block header is missing)")
        block = int.from_bytes(payload[position:position + 3], "little")
        position += 3
        last, block_type, block_size = block & 1, (block >> 1) & 3, block >> 3
        if block_type == 3:
            raise corrupt("reserved block type")
        position += 1 if block_type == 1 else block_size
        if len(payload) < position:
            raise corrupt("truncated frame (a block is cut short)")
        if last:
            break
    if has_checksum:
        position += 4
        if len(payload) < position:
            raise corrupt("truncated frame (the content checksum is cut short)")
    if position != len(payload):
        rest = payload[position:position + 4]
        if rest == ZSTD_MAGIC or (len(rest) == 4 and (int.from_bytes(rest, "little") & 0xFFFFFFF0) == 0x184D2A50):
            raise corrupt("a second frame after the first")
        raise corrupt(f"{len(payload) - position} bytes after the frame")
    return content_size, window, position


def zstd_binary():
    return os.environ.get("STOL_ZSTD") or shutil.which("zstd") or "/usr/bin/zstd"


def unzstd_against(payload, base, expected_size, max_decompressed):
    """§10: one frame, content size present and equal to the header's (kind 3, `expected_size`
    None: at most MAX_PATCHSET, a patchset's), window ≤ 2^31, decompressed by the zstd CLI with the base as
    reference prefix (`zstd -d --patch-from=BASE`), never more than `max_decompressed` bytes
    read from it."""
    content_size, window, _ = zstd_frame(payload)
    if content_size is None:
        raise Refused("DATABASE_CORRUPT", "zstd: the frame has no content size field")
    if expected_size is None and content_size > MAX_PATCHSET:
        raise Refused("DATABASE_CORRUPT", f"zstd: a patchset of {content_size} bytes, over {MAX_PATCHSET}")
    if expected_size is not None and content_size != expected_size:
        raise Refused("DATABASE_CORRUPT",
                      f"zstd: the frame's content size {content_size} is not the header's {expected_size}")
    if window > MAX_ZSTD_WINDOW:
        raise Refused("DATABASE_CORRUPT", f"zstd: window of {window} bytes exceeds 2^31")
    with tempfile.TemporaryDirectory(prefix="stolref") as tmp:
        base_path, frame_path = os.path.join(tmp, "base"), os.path.join(tmp, "frame.zst")
        with open(base_path, "wb") as f:
            f.write(base)
        with open(frame_path, "wb") as f:
            f.write(payload)
        process = subprocess.Popen([zstd_binary(), "-d", "-q", "-c", "--no-progress", "--memory=2048MB",
                                    f"--patch-from={base_path}", frame_path],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
        out = bytearray()
        over = False
        while True:
            chunk = process.stdout.read(1 << 16)
            if not chunk:
                break
            out += chunk
            if len(out) > max_decompressed:
                over = True
                process.kill()
                break
        stderr = process.stderr.read().decode(errors="replace").strip()
        status = process.wait()
        process.stdout.close()
        process.stderr.close()
    if over:
        raise Refused("DECOMPRESSION_LIMIT")
    if status != 0:
        raise Refused("DATABASE_CORRUPT", f"zstd: {stderr or 'exit status %d' % status}")
    return bytes(out)


def zstd_delta(base, content, level=19):
    """A kind 2 payload: `zstd -q -19 --patch-from=BASE NEW -o OUT` (the frame has its content size)."""
    if len(base) > MAX_ZSTD_WINDOW or len(content) > MAX_ZSTD_WINDOW:
        raise ValueError("the base and the result are each at most 2 GiB (§10)")
    with tempfile.TemporaryDirectory(prefix="stolref") as tmp:
        paths = [os.path.join(tmp, name) for name in ("base", "new", "out.zst")]
        for path, data in zip(paths, (base, content)):
            with open(path, "wb") as f:
                f.write(data)
        command = [zstd_binary(), "-q", f"-{level}", "--single-thread", "--content-size"]
        if len(base) > (128 << 20) or len(content) > (128 << 20):
            command.append("--long=31")
        subprocess.run(command + [f"--patch-from={paths[0]}", paths[1], "-o", paths[2]],
                       check=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        with open(paths[2], "rb") as f:
            payload = f.read()
    content_size, window, _ = zstd_frame(payload)
    if content_size != len(content) or window > MAX_ZSTD_WINDOW:
        raise ValueError("zstd wrote a frame without the content size or with too large a window")
    return payload


# --- SQLite patchsets (kind 3), through the system library --------------------

class _SQLite:
    """The few calls of libsqlite3 a row delta needs: open, exec, the session extension's
    diff and patchset, and sqlite3changeset_apply (which applies patchsets too)."""
    CONFLICT = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p)
    SQLITE_CHANGESET_ABORT = 2

    def __init__(self):
        lib = ctypes.CDLL(ctypes.util.find_library("sqlite3") or "libsqlite3.so.0")
        p, i, c = ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p
        for name, restype, argtypes in (
                ("sqlite3_open_v2", i, [c, ctypes.POINTER(p), i, c]),
                ("sqlite3_close_v2", i, [p]),
                ("sqlite3_exec", i, [p, c, p, p, ctypes.POINTER(p)]),
                ("sqlite3_errmsg", c, [p]),
                ("sqlite3_free", None, [p]),
                ("sqlite3session_create", i, [p, c, ctypes.POINTER(p)]),
                ("sqlite3session_attach", i, [p, c]),
                ("sqlite3session_diff", i, [p, c, c, ctypes.POINTER(p)]),
                ("sqlite3session_patchset", i, [p, ctypes.POINTER(i), ctypes.POINTER(p)]),
                ("sqlite3session_delete", None, [p]),
                ("sqlite3changeset_apply", i, [p, i, p, p, self.CONFLICT, p])):
            function = getattr(lib, name)
            function.restype, function.argtypes = restype, argtypes
        self.lib = lib

    def open(self, path, readonly=False):
        db = ctypes.c_void_p()
        flags = 0x1 if readonly else 0x2  # SQLITE_OPEN_READONLY, SQLITE_OPEN_READWRITE
        if self.lib.sqlite3_open_v2(path.encode(), ctypes.byref(db), flags, None) != 0:
            raise RuntimeError(f"sqlite3_open_v2 {path}")
        return db

    def exec(self, db, sql):
        if self.lib.sqlite3_exec(db, sql.encode(), None, None, None) != 0:
            raise RuntimeError(self.lib.sqlite3_errmsg(db).decode())

    def patchset(self, base_path, target_path, tables):
        """The patchset that turns the database at base_path into the one at target_path."""
        db = self.open(target_path, readonly=True)
        try:
            self.exec(db, "ATTACH '%s' AS base" % base_path.replace("'", "''"))
            session = ctypes.c_void_p()
            assert self.lib.sqlite3session_create(db, b"main", ctypes.byref(session)) == 0
            try:
                for table in tables:
                    assert self.lib.sqlite3session_attach(session, table.encode()) == 0
                    assert self.lib.sqlite3session_diff(session, b"base", table.encode(), None) == 0
                size, buffer = ctypes.c_int(), ctypes.c_void_p()
                assert self.lib.sqlite3session_patchset(session, ctypes.byref(size), ctypes.byref(buffer)) == 0
                data = ctypes.string_at(buffer, size.value) if size.value else b""
                self.lib.sqlite3_free(buffer)
                return data
            finally:
                self.lib.sqlite3session_delete(session)
        finally:
            self.lib.sqlite3_close_v2(db)


def apply_row_delta(base, patchset):
    """§10.2: a byte copy of the base, the patchset applied to it (any conflict: the rows are
    not those the delta was made against), the schema cookie set, VACUUM INTO an empty file."""
    sqlite = _SQLite()
    conflicts = []

    def on_conflict(context, kind, iterator):
        conflicts.append(kind)
        return _SQLite.SQLITE_CHANGESET_ABORT

    with tempfile.TemporaryDirectory(prefix="stolrows") as tmp:
        work, out = os.path.join(tmp, "work.sqlite"), os.path.join(tmp, "out.sqlite")
        with open(work, "wb") as f:
            f.write(base)
        db = sqlite.open(work)
        try:
            sqlite.exec(db, "PRAGMA journal_mode = OFF; PRAGMA foreign_keys = OFF")
            buffer = ctypes.create_string_buffer(patchset, len(patchset))
            rc = sqlite.lib.sqlite3changeset_apply(db, len(patchset), ctypes.cast(buffer, ctypes.c_void_p), None,
                                                   _SQLite.CONFLICT(on_conflict), None)
            if rc != 0:
                why = f"conflict {conflicts[0]}" if conflicts else sqlite.lib.sqlite3_errmsg(db).decode()
                raise Refused("DATABASE_CORRUPT", f"the patchset does not apply to the base: {why}")
            sqlite.exec(db, f"PRAGMA schema_version = {SCHEMA_COOKIE}; VACUUM INTO '{out}'")
        finally:
            sqlite.lib.sqlite3_close_v2(db)
        with open(out, "rb") as f:
            return f.read()


def laid_out(path, out):
    """The database at `path` laid out as the pipeline writes one: the cookie, then VACUUM INTO `out`."""
    sqlite = _SQLite()
    db = sqlite.open(path)
    try:
        sqlite.exec(db, f"PRAGMA schema_version = {SCHEMA_COOKIE}; VACUUM INTO '{out}'")
    finally:
        sqlite.lib.sqlite3_close_v2(db)


# --- verification -------------------------------------------------------------

def verify(data, trust, supported=(1, 1), max_file=MAX_FILE, max_decompressed=MAX_DECOMPRESSED,
           now=None, base=None):
    """The checklist of STOL-FORMAT.md §6, in order, for both format versions.

    `trust` is a Trust (or, as before, one 32-byte public key). `base` is the bytes of
    the database a delta applies to. Returns the content (the database) or raises Refused.
    Check 1 (a readable regular file) belongs to whoever reads `data`.
    """
    if isinstance(trust, (bytes, bytearray)):
        trust = Trust.single(bytes(trust))
    if now is None:
        now = datetime.datetime.now(datetime.timezone.utc)
    size = len(data)
    # 2. size
    if size < MIN_FILE:
        raise Refused("FILE_TOO_SMALL")
    if size > max_file:
        raise Refused("FILE_TOO_LARGE")
    # 3. magic (a prefix of either version's)
    prefix = data[:8]
    if prefix != MAGIC[:min(size, 8)] and prefix != MAGIC_V2[:min(size, 8)]:
        raise Refused("NOT_A_STOL_FILE")
    # 4. the header is there (a prefix shorter than 8 bytes is of no version yet)
    if size < 8:
        raise Refused("FILE_TOO_SMALL")
    version = data[7]
    header_size = HEADER_SIZES[version]
    if size < header_size:
        raise Refused("FILE_TOO_SMALL")
    payload = data[header_size:]
    # 5. payload digest
    digest = data[12:44] if version == 1 else data[32:64]
    if hashlib.sha256(payload).digest() != digest:
        raise Refused("CHECKSUM_MISMATCH")
    usable = trust.usable_ids(now)
    if version == 2:
        # 6. the key id: not revoked, trusted, not expired
        found = data[16:24].hex()
        if found in trust.revoked:
            raise Refused("KEY_REVOKED", f"listed in {trust.revoked[found]}", key_id=found, trusted_key_ids=usable)
        key = trust.keys.get(found)
        if key is None:
            raise Refused("UNKNOWN_KEY", key_id=found, trusted_key_ids=usable)
        if key.not_after and key.not_after.expired(now):
            raise Refused("KEY_EXPIRED", key_id=found, trusted_key_ids=usable, not_after=key.not_after.text)
        # 7. the signature, with that key
        try:
            Ed25519PublicKey.from_public_bytes(key.public).verify(data[224:288], data[:SIGNED_SIZE_V2])
        except InvalidSignature:
            raise Refused("SIGNATURE_INVALID", key_id=found, trusted_key_ids=usable)
    else:
        # 7. version 1: any trusted key; else a revoked (then an expired) one that verifies it
        def verifies(key):
            try:
                Ed25519PublicKey.from_public_bytes(key.public).verify(data[44:108], data[:SIGNED_SIZE])
                return True
            except InvalidSignature:
                return False
        if not any(verifies(k) for k in trust.usable(now)):
            for key_id_hex, key in sorted(trust.keys.items()):
                if key_id_hex in trust.revoked and verifies(key):
                    raise Refused("KEY_REVOKED", f"listed in {trust.revoked[key_id_hex]}",
                                  key_id=key_id_hex, trusted_key_ids=usable)
            for key_id_hex, key in sorted(trust.keys.items()):
                if key.not_after and key.not_after.expired(now) and verifies(key):
                    raise Refused("KEY_EXPIRED", key_id=key_id_hex, trusted_key_ids=usable,
                                  not_after=key.not_after.text)
            raise Refused("SIGNATURE_INVALID", trusted_key_ids=usable)
    schema_version = int.from_bytes(data[8:12], "little")
    if version == 2:
        # 8. the header is well formed
        kind, reserved = data[12], data[13:16]
        content_size = int.from_bytes(data[24:32], "little")
        content_digest, base_digest = data[64:96], data[96:128]
        release, base_release, id_namespace = data[128:160], data[160:192], data[192:224]

        def text(field):
            return field.rstrip(b"\x00")

        if kind not in (1, 2, 3):
            raise Refused("DATABASE_CORRUPT", f"kind {kind}")
        if reserved != bytes(3):
            raise Refused("DATABASE_CORRUPT", "reserved bytes are not zero")
        for name, field, valid in (("release", release, valid_release), ("id namespace", id_namespace, valid_text)):
            if not valid(text(field)):
                raise Refused("DATABASE_CORRUPT", f"malformed {name} field")
        if kind == 1 and (base_digest != bytes(32) or base_release != bytes(32)):
            raise Refused("DATABASE_CORRUPT", "kind 1 with a base digest or base release")
        if kind in (2, 3) and not valid_release(text(base_release)):
            raise Refused("DATABASE_CORRUPT", f"kind {kind} without a well-formed base release")
    # 9. schema version
    if not supported[0] <= schema_version <= supported[1]:
        raise Refused("INCOMPATIBLE_SCHEMA")
    if version == 2:
        # 10. the signed content size
        if content_size > max_decompressed:
            raise Refused("DECOMPRESSION_LIMIT", f"content size {content_size} over {max_decompressed}")
        if kind in (2, 3) and content_size > MAX_DELTA_RESULT:
            raise Refused("DECOMPRESSION_LIMIT", f"a delta's result of {content_size} bytes, over {MAX_DELTA_RESULT}")
        if kind in (2, 3):
            # 11. the base
            if base is None:
                raise Refused("DELTA_BASE_MISMATCH", "a delta needs its base")
            if hashlib.sha256(base).digest() != base_digest:
                raise Refused("DELTA_BASE_MISMATCH", f"the base given is not release {text(base_release).decode()}")
            # 12. one zstd frame against the base (kind 3: a patchset, applied to a copy of it)
            if kind == 2:
                content = unzstd_against(payload, base, content_size, max_decompressed)
            else:
                content = apply_row_delta(base, unzstd_against(payload, base, None, MAX_PATCHSET))
        else:
            # 12. one gzip member, stopped one byte past the signed size
            content = gunzip_one_member(payload, max_decompressed, signed_size=content_size)
        # 13. content size and digest
        if len(content) != content_size or hashlib.sha256(content).digest() != content_digest:
            raise Refused("CONTENT_HASH_MISMATCH")
        return content
    # 12. (version 1)
    return gunzip_one_member(payload, max_decompressed)


# --- vectors (version 1) ------------------------------------------------------

BODY = b"STOL test vector: a tiny body, not a database.\n"


def vectors(directory):
    os.makedirs(directory, exist_ok=True)
    seed = TEST_SEED
    public = public_key_bytes(seed)
    payload = gzip_member(BODY)
    valid = assemble(seed, 1, payload)

    def write(name, data, mode="w"):
        with open(os.path.join(directory, name), mode) as f:
            f.write(data)

    write("test-key.seed.hex", seed.hex() + "\n")
    write("test-key.public.hex", public.hex() + "\n")
    write("test-key.private.key", private_key_text(seed))
    os.chmod(os.path.join(directory, "test-key.private.key"), 0o600)
    write("test-key.public.key", public_key_text(public))
    write("body.txt", BODY, "wb")
    write("payload.gz.hex", payload.hex() + "\n")
    write("signed-message.hex", valid[:SIGNED_SIZE].hex() + "\n")

    def flip(data, offset, mask=0xFF):
        b = bytearray(data)
        b[offset] ^= mask
        return bytes(b)

    other = gzip_member(b"a second member\n")
    cases = [
        ("valid", valid, "OK", {}),
        ("empty", b"", "FILE_TOO_SMALL", {}),
        ("bad-magic", flip(valid, 0), "NOT_A_STOL_FILE", {}),
        ("magic-prefix-only", valid[:5], "FILE_TOO_SMALL", {}),
        ("truncated-header", valid[:107], "FILE_TOO_SMALL", {}),
        ("header-only", valid[:108], "CHECKSUM_MISMATCH", {}),
        ("version-field-changed", flip(valid, 8, 0x03), "SIGNATURE_INVALID", {}),
        ("digest-changed", flip(valid, 12), "CHECKSUM_MISMATCH", {}),
        ("signature-changed", flip(valid, 44), "SIGNATURE_INVALID", {}),
        ("body-changed", flip(valid, len(valid) - 1), "CHECKSUM_MISMATCH", {}),
        ("truncated-body", valid[:-1], "CHECKSUM_MISMATCH", {}),
        ("schema-version-2", assemble(seed, 2, payload), "INCOMPATIBLE_SCHEMA", {}),
        ("schema-version-2-accepted", assemble(seed, 2, payload), "OK", {"max_schema_version": 2}),
        ("schema-version-0", assemble(seed, 0, payload), "INCOMPATIBLE_SCHEMA", {}),
        ("trailing-garbage", assemble(seed, 1, payload + b"\x00"), "DATABASE_CORRUPT", {}),
        ("two-members", assemble(seed, 1, payload + other), "DATABASE_CORRUPT", {}),
        ("truncated-gzip", assemble(seed, 1, payload[:-4]), "DATABASE_CORRUPT", {}),
        ("not-gzip", assemble(seed, 1, BODY), "DATABASE_CORRUPT", {}),
        ("bad-crc32", assemble(seed, 1, flip(payload, len(payload) - 8, 0x01)), "DATABASE_CORRUPT", {}),
        ("bomb-over-1mib", assemble(seed, 1, gzip_member(b"\x00" * (1024 * 1024 + 1))), "DECOMPRESSION_LIMIT",
         {"max_decompressed_bytes": 1024 * 1024}),
        ("exactly-1mib", assemble(seed, 1, gzip_member(b"\x00" * (1024 * 1024))), "OK",
         {"max_decompressed_bytes": 1024 * 1024}),
    ]
    manifest = []
    for name, data, expect, options in cases:
        write(name + ".stol.hex", data.hex() + "\n")
        entry = {"name": name, "file": name + ".stol.hex", "expect": expect}
        entry.update(options)
        manifest.append(entry)
    write("vectors.json", json.dumps({
        "public_key_file": "test-key.public.key",
        "body_file": "body.txt",
        "defaults": {"max_schema_version": 1, "max_decompressed_bytes": MAX_DECOMPRESSED},
        "vectors": manifest,
    }, indent=2) + "\n")


def check(directory):
    with open(os.path.join(directory, "vectors.json")) as f:
        manifest = json.load(f)
    with open(os.path.join(directory, manifest["public_key_file"])) as f:
        public = parse_key(f.read(), PUBLIC_LABEL)
    with open(os.path.join(directory, manifest["body_file"]), "rb") as f:
        body = f.read()
    failures = 0
    for vector in manifest["vectors"]:
        with open(os.path.join(directory, vector["file"])) as f:
            data = bytes.fromhex(f.read().strip())
        options = dict(manifest["defaults"])
        options.update(vector)
        try:
            out = verify(data, public, (1, options["max_schema_version"]),
                         max_decompressed=options["max_decompressed_bytes"])
            got = "OK"
            if vector["name"] == "valid" and out != body:
                got = "WRONG_BODY"
        except Refused as refused:
            got = refused.code
        status = "ok  " if got == vector["expect"] else "FAIL"
        failures += got != vector["expect"]
        print(f"{status} {vector['name']}: {got}")
    return 1 if failures else 0


# --- vectors (version 2) ------------------------------------------------------

V2_NOW = "2026-11-26T00:00:00Z"
V2_RELEASE = "2024.9.7"
V2_BASE_RELEASE = "2024.8.1"
V2_ID_NAMESPACE = "ncbi-taxid"
V2_DELTA_PAYLOAD = "delta-payload.zst.hex"
# The row delta vectors' given files: their bytes depend on the SQLite and zstd versions that
# made them, so, like the delta payload, they are read when present and made only when not.
V2_ROW_BASE, V2_ROW_RESULT = "row-delta-base.bin", "row-delta-result.bin"
V2_ROW_PAYLOAD, V2_ROW_CONFLICT = "row-delta-payload.zst.hex", "row-delta-conflict.zst.hex"

# The six TEST keys of the version 2 vectors: (name, seed, not-after, where its public key is).
V2_KEYS = [
    ("a", b"STOL-TEST-KEY-DO-NOT-USE-0000001", None, "keys"),
    ("b", b"STOL-TEST-KEY-DO-NOT-USE-0000002", "2027-06-30T23:59:59Z", "keys"),
    ("expired", b"STOL-TEST-KEY-DO-NOT-USE-0000003", "2020-01-01", "keys"),
    ("revoked-present", b"STOL-TEST-KEY-DO-NOT-USE-0000004", None, "keys"),
    ("revoked-absent", b"STOL-TEST-KEY-DO-NOT-USE-0000005", None, "untrusted"),
    ("unknown", b"STOL-TEST-KEY-DO-NOT-USE-0000006", None, "untrusted"),
]


def delta_bodies():
    """The base and the result of the delta vectors: deterministic text lines (about 4 KB each).
    The result changes three lines, deletes four, inserts five and appends three."""
    syllables = ["pan", "the", "ra", "leo", "ti", "gris", "fe", "lis", "ca", "nis", "lu", "pus",
                 "ur", "sus", "ar", "ctos", "vul", "pes"]
    ranks = ["species", "genus", "family", "order", "class", "phylum", "kingdom", "domain"]

    def s(i, a, b):
        return syllables[(i * a + b) % len(syllables)]

    def line(i, tag="2024.8.1"):
        name = (s(i, 7, 0) + s(i, 13, 5)).capitalize() + " " + s(i, 11, 3) + s(i, 17, 1) + s(i, 3, 2)
        return f"{i:05d}\t{(i * 7919) % 100003:06d}\t{name}\t{ranks[i % 8]}\t{tag}\n"

    base = [line(i) for i in range(1, 101)]
    result = list(base)
    result[9] = line(10, "2024.9.7 renamed")
    result[49] = line(50, "2024.9.7 moved")
    result[76] = line(77, "2024.9.7 status changed")
    result = result[:60] + [line(1000 + i, "2024.9.7 new") for i in range(5)] + result[60:]
    del result[29:33]
    result += [line(2000 + i, "2024.9.7 appended") for i in range(3)]
    return "".join(base).encode(), "".join(result).encode()


def row_delta_databases():
    """The base, the result and another build of the base release for the row delta vectors:
    small databases of the delta bodies' lines (a taxa table with a primary key and an index,
    and schema_version keyed by its version), each laid out as the pipeline lays one out. The
    result renames three taxa, deletes four, adds five and has its own applied_at; the other
    build lacks one taxon the base and the result have (a patchset made against it inserts it,
    and the base already has it)."""
    import sqlite3
    lines = [line.split("\t") for line in delta_bodies()[0].decode().splitlines()]

    def build(path, edit):
        db = sqlite3.connect(path)
        db.executescript("""
            CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL);
            CREATE TABLE taxa (id INTEGER PRIMARY KEY, parent_id INTEGER, scientific_name TEXT NOT NULL, rank TEXT NOT NULL);
            CREATE INDEX idx_taxa_name ON taxa(scientific_name);
            INSERT INTO schema_version VALUES (3, '2024-08-01T00:00:00Z');
            """)
        db.executemany("INSERT INTO taxa VALUES (?, ?, ?, ?)",
                       [(int(i), int(i) // 3 or None, name, rank) for i, _, name, rank, _ in lines])
        edit(db)
        db.commit()
        db.close()
        laid_out(path, path + ".laid-out")
        with open(path + ".laid-out", "rb") as f:
            return f.read()

    def result(db):
        db.execute("UPDATE schema_version SET applied_at = '2024-09-07T00:00:00Z'")
        db.execute("UPDATE taxa SET scientific_name = scientific_name || ' renamed' WHERE id IN (10, 50, 77)")
        db.execute("DELETE FROM taxa WHERE id BETWEEN 30 AND 33")
        db.executemany("INSERT INTO taxa VALUES (?, ?, ?, 'species')", [(1000 + i, 5, f"Novus species{i}") for i in range(5)])

    def other(db):
        db.execute("DELETE FROM taxa WHERE id = 20")

    with tempfile.TemporaryDirectory(prefix="stolrowvec") as tmp:
        return (build(os.path.join(tmp, "base.sqlite"), lambda db: None), build(os.path.join(tmp, "result.sqlite"), result),
                build(os.path.join(tmp, "other.sqlite"), other))


def patchset_between(base, result):
    """The patchset (schema_version, taxa) that turns the database `base` into `result` (bytes)."""
    with tempfile.TemporaryDirectory(prefix="stolrowcs") as tmp:
        paths = [os.path.join(tmp, name) for name in ("base.sqlite", "result.sqlite")]
        for path, data in zip(paths, (base, result)):
            with open(path, "wb") as f:
                f.write(data)
        return _SQLite().patchset(paths[0], paths[1], ["schema_version", "taxa"])


def zstd_raw_frame(data):
    """One single-segment zstd frame of one raw block holding `data` (< 256 bytes): no encoder needed."""
    assert len(data) < 256
    return ZSTD_MAGIC + bytes([0x20, len(data)]) + ((len(data) << 3) | 1).to_bytes(3, "little") + data


def zstd_without_content_size(frame):
    """The same frame without its content size field: a window descriptor instead (what
    `zstd --no-content-size` writes for the same input)."""
    content_size, window, _ = zstd_frame(frame)
    fhd = frame[4]
    assert fhd & 3 == 0, "no dictionary id expected"
    fcs_size = (1 if fhd & 0x20 else 0, 2, 4, 8)[fhd >> 6]
    window_log = max(10, (window - 1).bit_length())
    descriptor = bytes([(window_log - 10) << 3])
    header_end = 5 + (0 if fhd & 0x20 else 1) + fcs_size
    return ZSTD_MAGIC + bytes([fhd & 0x1C]) + descriptor + frame[header_end:]


def zstd_with_window_log(frame, window_log):
    """The same frame with a window descriptor of 2^window_log (Single_Segment cleared), its content size kept."""
    fhd = frame[4]
    fcs_flag = fhd >> 6
    fcs_size = (1 if fhd & 0x20 else 0, 2, 4, 8)[fcs_flag]
    header_end = 5 + (0 if fhd & 0x20 else 1) + fcs_size
    fcs = frame[header_end - fcs_size:header_end]
    if fcs_size == 1:  # a 1-byte FCS exists only with Single_Segment: widen to 4 bytes
        fcs_flag, fcs = 2, int.from_bytes(fcs, "little").to_bytes(4, "little")
    new_fhd = (fcs_flag << 6) | (fhd & 0x1C)
    return ZSTD_MAGIC + bytes([new_fhd, (window_log - 10) << 3]) + fcs + frame[header_end:]


# An empty frame (no content, one empty raw block): 28 b5 2f fd, FHD single segment, FCS 0, block "last, raw, 0".
EMPTY_ZSTD_FRAME = ZSTD_MAGIC + bytes([0x20, 0x00, 0x01, 0x00, 0x00])
# A skippable frame of 4 bytes.
SKIPPABLE_FRAME = (0x184D2A50).to_bytes(4, "little") + (4).to_bytes(4, "little") + b"skip"


def resolve_v2_directory(directory):
    manifest = os.path.join(directory, "vectors.json")
    if os.path.isfile(manifest):
        with open(manifest) as f:
            if json.load(f).get("format_version") != 2:
                return os.path.join(directory, "v2")
    return directory


def vectors_v2(directory, payload_source=None):
    """Write the version 2 vectors into `directory`. The delta payload (a zstd frame) is read from
    `payload_source`/delta-payload.zst.hex (default: `directory`) when present, else made with zstd."""
    os.makedirs(directory, exist_ok=True)
    payload_source = payload_source or directory

    def path(name):
        full = os.path.join(directory, name)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        return full

    def write(name, data):
        with open(path(name), "wb" if isinstance(data, bytes) else "w") as f:
            f.write(data)

    seeds = {name: seed for name, seed, _, _ in V2_KEYS}
    publics = {name: public_key_bytes(seed) for name, seed in seeds.items()}
    ids = {name: key_id(public).hex() for name, public in publics.items()}

    # Keys: keys/ is the trust of every vector; others/ holds the public keys trusted nowhere.
    key_table = []
    for name, seed, not_after, where in V2_KEYS:
        public_file = ("keys/" if where == "keys" else "others/") + name + ".pub"
        text = public_key_text(publics[name])
        if name == "b":
            text += "# TEST key 2: trusted until the end of June 2027 (a comment, then a blank line)\n\n"
        if not_after:
            text += f"not-after: {not_after}\n"
        write(public_file, text)
        write(f"private/{name}.key", private_key_text(seed))
        key_table.append({"name": name, "seed": seed.decode(), "seed_hex": seed.hex(),
                          "public_key": publics[name].hex(), "key_id": ids[name],
                          "public_key_file": public_file, "private_key_file": f"private/{name}.key",
                          "not_after": not_after,
                          "revoked": name.startswith("revoked"),
                          "trusted": name in ("a", "b")})
    write("keys/revoked", "# Revoked TEST key ids (STOL-FORMAT.md section 7): one per line.\n"
          "# Key 4: its key file is in this directory too; the list wins.\n"
          f"{ids['revoked-present']}\n\n"
          "# Key 5: no key file anywhere; revoking needs only the id.\n"
          f"{ids['revoked-absent']}\n")
    write("keys.json", json.dumps({"keys": key_table}, indent=2) + "\n")

    # Bodies and payloads.
    body = BODY
    base, result = delta_bodies()
    write("body.txt", body)
    write("delta-base.bin", base)
    write("delta-result.bin", result)
    source = os.path.join(payload_source, V2_DELTA_PAYLOAD)
    if os.path.isfile(source):
        with open(source) as f:
            delta = bytes.fromhex(f.read().strip())
    else:
        delta = zstd_delta(base, result)
    write(V2_DELTA_PAYLOAD, delta.hex() + "\n")
    gz = gzip_member(body)

    # Row delta (kind 3): its databases and payloads are given when present.
    def given(name, binary):
        source_path = os.path.join(payload_source, name)
        if not os.path.isfile(source_path):
            return None
        with open(source_path, "rb" if binary else "r") as f:
            data = f.read()
        return data if binary else bytes.fromhex(data.strip())

    row_base, row_result = given(V2_ROW_BASE, True), given(V2_ROW_RESULT, True)
    rows, conflict = given(V2_ROW_PAYLOAD, False), given(V2_ROW_CONFLICT, False)
    if None in (row_base, row_result, rows, conflict):
        row_base, row_result, row_other = row_delta_databases()
        rows = zstd_delta(row_base, patchset_between(row_base, row_result))
        conflict = zstd_delta(row_base, patchset_between(row_other, row_result))
    write(V2_ROW_BASE, row_base)
    write(V2_ROW_RESULT, row_result)
    write(V2_ROW_PAYLOAD, rows.hex() + "\n")
    write(V2_ROW_CONFLICT, conflict.hex() + "\n")

    a = seeds["a"]

    def v2(seed=a, payload=gz, content=body, **fields):
        fields.setdefault("release", V2_RELEASE)
        fields.setdefault("id_namespace", V2_ID_NAMESPACE)
        return assemble_v2(seed, payload, content, **fields)

    def delta_file(seed=a, payload=delta, **fields):
        fields.setdefault("base", base)
        fields.setdefault("base_release", V2_BASE_RELEASE)
        return v2(seed, payload, result, **fields)

    def row_file(seed=a, payload=rows, **fields):
        fields.setdefault("base", row_base)
        fields.setdefault("base_release", V2_BASE_RELEASE)
        fields.setdefault("kind", 3)
        return v2(seed, payload, row_result, **fields)

    def flip(data, offset, mask=0xFF):
        b = bytearray(data)
        b[offset] ^= mask
        return bytes(b)

    valid = v2()
    valid_delta = delta_file()
    write("valid-v2.signed-message.hex", valid[:SIGNED_SIZE_V2].hex() + "\n")
    mib = 1024 * 1024
    zeros_mib = b"\x00" * mib
    zeros_over = b"\x00" * (mib + 1)
    long_release = "2024.09.07-rc.1+build.0000000001"
    assert len(long_release) == 32
    delta_size = len(result)
    small = {"max_decompressed_bytes": mib}

    # (name, bytes, expected, note, extra manifest fields)
    cases = [
        # Accepted.
        ("valid-v2", valid, "OK", "kind 1 (gzip), signed by key a", {}),
        ("valid-v2-key-b", v2(seeds["b"]), "OK",
         "kind 1 signed by key b (its not-after, 2027-06-30T23:59:59Z, is after now)", {}),
        ("valid-v2-delta", valid_delta, "OK",
         "kind 2: delta-payload.zst.hex applied to delta-base.bin yields delta-result.bin",
         {"base_file": "delta-base.bin"}),
        ("valid-v2-row-delta", row_file(), "OK",
         "kind 3: row-delta-payload.zst.hex, a patchset framed against row-delta-base.bin, applied to a copy of it "
         "and laid out with VACUUM INTO yields row-delta-result.bin", {"base_file": V2_ROW_BASE}),
        ("valid-v1-key-a", assemble(a, 3, gz), "OK", "format version 1 signed by key a: version 1 is still read", {}),
        ("valid-v1-key-b", assemble(seeds["b"], 3, gz), "OK",
         "format version 1 signed by key b: any trusted key may verify a version 1 file", {}),
        ("v2-release-32-bytes", v2(release=long_release), "OK",
         "a release of exactly 32 bytes (no NUL after it) is well formed", {}),
        ("v2-content-size-at-limit", v2(payload=gzip_member(zeros_mib), content=zeros_mib), "OK",
         "1 MiB of zeros: content size and decompressed size exactly max_decompressed_bytes", dict(small)),
        ("v2-schema-4-accepted", v2(schema_version=4), "OK",
         "signed schema version 4, accepted by a verifier that reads up to 4", {"max_schema_version": 4}),
        # Checks 2-4: size, magic, header.
        ("v2-empty", b"", "FILE_TOO_SMALL", "0 bytes (check 2)", {}),
        ("v2-magic-prefix-only", valid[:7], "FILE_TOO_SMALL",
         "the first 7 bytes of the magic: a prefix of it (check 4)", {}),
        ("v2-magic-only", valid[:8], "FILE_TOO_SMALL", "the 8 bytes of the magic and nothing else (check 4)", {}),
        ("v2-bad-magic", flip(valid, 0), "NOT_A_STOL_FILE", "first magic byte changed (check 3)", {}),
        ("v2-magic-version-3", valid[:7] + b"\x03" + valid[8:], "NOT_A_STOL_FILE",
         "the version byte of the magic is 3: no such format version (check 3)", {}),
        ("v2-header-truncated-200", valid[:200], "FILE_TOO_SMALL",
         "version 2 header cut at 200 bytes (version 1's 108 are no longer enough; check 4)", {}),
        ("v2-header-truncated-287", valid[:287], "FILE_TOO_SMALL", "one byte short of the 288-byte header", {}),
        # Check 5: payload digest.
        ("v2-header-only", valid[:288], "CHECKSUM_MISMATCH", "the header without its payload (check 5)", {}),
        ("v2-payload-changed", flip(valid, len(valid) - 1), "CHECKSUM_MISMATCH", "last payload byte changed", {}),
        ("v2-payload-digest-changed", flip(valid, 32), "CHECKSUM_MISMATCH", "first payload digest byte changed", {}),
        ("v2-payload-truncated", valid[:-1], "CHECKSUM_MISMATCH", "last payload byte removed", {}),
        # Check 6: the key id.
        ("v2-key-unknown", v2(seeds["unknown"]), "UNKNOWN_KEY",
         "signed by key 6, whose id is trusted nowhere", {"key_id": ids["unknown"]}),
        ("v2-key-id-changed", flip(valid, 16, 0x01), "UNKNOWN_KEY",
         "first key id byte changed after signing: an id no trusted key has (checked before the signature)",
         {"key_id": flip(valid, 16, 0x01)[16:24].hex()}),
        ("v2-key-expired", v2(seeds["expired"]), "KEY_EXPIRED",
         "signed by the expired key (not-after: 2020-01-01)", {"key_id": ids["expired"]}),
        ("v2-key-revoked-present", v2(seeds["revoked-present"]), "KEY_REVOKED",
         "signed by key 4: its key file is in keys/ but keys/revoked lists it", {"key_id": ids["revoked-present"]}),
        ("v2-key-revoked-absent", v2(seeds["revoked-absent"]), "KEY_REVOKED",
         "signed by key 5: no key file, its id is in keys/revoked (checked before 'unknown')",
         {"key_id": ids["revoked-absent"]}),
        # Check 7: the signature.
        ("v2-key-id-of-b-signed-by-a", v2(key_id=bytes.fromhex(ids["b"])), "SIGNATURE_INVALID",
         "the header names key b (trusted) but key a signed it", {"key_id": ids["b"]}),
        ("v2-signature-changed", flip(valid, 224), "SIGNATURE_INVALID", "first signature byte changed", {}),
        ("v2-schema-field-changed", flip(valid, 8, 0x03), "SIGNATURE_INVALID",
         "schema version 3 -> 0 after signing: reported as the signature, not the schema", {}),
        ("v2-kind-changed", flip(valid, 12, 0x03), "SIGNATURE_INVALID", "kind 1 -> 2 after signing", {}),
        ("v2-content-size-changed", flip(valid, 24, 0x01), "SIGNATURE_INVALID", "content size byte changed after signing", {}),
        ("v2-content-digest-changed", flip(valid, 64), "SIGNATURE_INVALID", "content digest byte changed after signing", {}),
        ("v2-release-changed", flip(valid, 128, 0x01), "SIGNATURE_INVALID",
         "first release byte changed after signing ('2' -> '3')", {}),
        ("v2-id-namespace-changed", flip(valid, 192, 0x01), "SIGNATURE_INVALID",
         "first id namespace byte changed after signing", {}),
        # Checks 6 and 7 on version 1 files (which name no key).
        ("v1-key-revoked", assemble(seeds["revoked-present"], 3, gz), "KEY_REVOKED",
         "format version 1 signed by key 4: no trusted key verifies it, the revoked key 4 does",
         {"key_id": ids["revoked-present"]}),
        ("v1-key-expired", assemble(seeds["expired"], 3, gz), "KEY_EXPIRED",
         "format version 1 signed by the expired key", {"key_id": ids["expired"]}),
        ("v1-key-unknown", assemble(seeds["unknown"], 3, gz), "SIGNATURE_INVALID",
         "format version 1 signed by key 6: no key of keys/ verifies it", {}),
        ("v1-key-revoked-absent", assemble(seeds["revoked-absent"], 3, gz), "SIGNATURE_INVALID",
         "format version 1 signed by key 5: revoked, but with no key file nothing can tell it was key 5", {}),
        # Check 8: a well-formed header (all signed by key a).
        ("v2-kind-3", v2(kind=3), "DATABASE_CORRUPT", "signed kind 3 (a row delta) without a base release", {}),
        ("v2-kind-4", v2(kind=4), "DATABASE_CORRUPT", "signed kind 4", {}),
        ("v2-row-delta-no-base-release", row_file(base_release=b""), "DATABASE_CORRUPT",
         "signed kind 3 without a base release", {"base_file": V2_ROW_BASE}),
        ("v2-kind-0", v2(kind=0), "DATABASE_CORRUPT", "signed kind 0", {}),
        ("v2-reserved-nonzero", v2(reserved=b"\x00\x00\x01"), "DATABASE_CORRUPT", "signed reserved byte 15 = 1", {}),
        ("v2-release-slash", v2(release="2024/9/7"), "DATABASE_CORRUPT", "signed release `2024/9/7`", {}),
        ("v2-release-empty", v2(release=""), "DATABASE_CORRUPT", "signed release of 32 NUL bytes", {}),
        ("v2-release-leading-dot", v2(release=".2024"), "DATABASE_CORRUPT", "signed release `.2024`", {}),
        ("v2-release-leading-dash", v2(release="-v2test"), "DATABASE_CORRUPT",
         "signed release `-v2test`: a name starts with a letter or digit", {}),
        ("v2-release-bundled", v2(release="bundled"), "DATABASE_CORRUPT",
         "signed release `bundled`, the name that pins the bundled database", {}),
        ("v2-release-nul-inside", v2(release=b"2024\x009.7"), "DATABASE_CORRUPT",
         "signed release `2024` NUL `9.7`: a byte after the padding began", {}),
        ("v2-id-namespace-space", v2(id_namespace="ncbi taxid"), "DATABASE_CORRUPT",
         "signed id namespace `ncbi taxid`", {}),
        ("v2-id-namespace-empty", v2(id_namespace=""), "DATABASE_CORRUPT", "signed empty id namespace", {}),
        ("v2-kind-1-base-release", v2(base_release=V2_BASE_RELEASE), "DATABASE_CORRUPT",
         "signed kind 1 with a base release", {}),
        ("v2-kind-1-base-digest", v2(base_digest=hashlib.sha256(base).digest()), "DATABASE_CORRUPT",
         "signed kind 1 with a base digest", {}),
        ("v2-delta-no-base-release", delta_file(base_release=b""), "DATABASE_CORRUPT",
         "signed kind 2 without a base release", {"base_file": "delta-base.bin"}),
        ("v2-delta-base-release-malformed", delta_file(base_release="2024 8 1"), "DATABASE_CORRUPT",
         "signed kind 2 whose base release has spaces", {"base_file": "delta-base.bin"}),
        ("v2-order-header-before-schema", v2(kind=3, schema_version=0), "DATABASE_CORRUPT",
         "signed kind 3 and schema version 0: check 8 comes before check 9", {}),
        # Check 9: schema version.
        ("v2-schema-0", v2(schema_version=0), "INCOMPATIBLE_SCHEMA", "signed schema version 0", {}),
        ("v2-schema-4", v2(schema_version=4), "INCOMPATIBLE_SCHEMA", "signed schema version 4 (N = 3)", {}),
        ("v2-order-schema-before-size", v2(schema_version=4, content_size=MAX_DECOMPRESSED + 1), "INCOMPATIBLE_SCHEMA",
         "signed schema version 4 and content size over the limit: check 9 comes before check 10", {}),
        # Check 10: the signed content size.
        ("v2-content-size-over-limit", v2(content_size=MAX_DECOMPRESSED + 1), "DECOMPRESSION_LIMIT",
         "signed content size 4 GiB + 1 (the payload is the 47-byte body): refused before decompressing", {}),
        ("v2-content-size-over-small-limit", v2(content_size=mib + 1), "DECOMPRESSION_LIMIT",
         "signed content size 1 MiB + 1 over max_decompressed_bytes 1 MiB", dict(small)),
        ("v2-order-size-before-base", delta_file(content_size=MAX_DECOMPRESSED + 1), "DECOMPRESSION_LIMIT",
         "a delta with a signed content size over the limit, given a wrong base: check 10 before check 11",
         {"base_file": "delta-result.bin"}),
        ("v2-delta-result-over-2gib", delta_file(content_size=MAX_DELTA_RESULT + 1), "DECOMPRESSION_LIMIT",
         "a delta whose signed result is 2 GiB + 1 (the file is a few hundred bytes): over what a delta yields",
         {"base_file": "delta-base.bin"}),
        # Check 11: the base.
        ("v2-delta-wrong-base", valid_delta, "DELTA_BASE_MISMATCH",
         "the valid delta given delta-result.bin as its base", {"base_file": "delta-result.bin"}),
        ("v2-order-base-before-payload", delta_file(payload=gz), "DELTA_BASE_MISMATCH",
         "a delta with a gzip payload, given a wrong base: check 11 before check 12", {"base_file": "body.txt"}),
        # Check 12: decompression, kind 1.
        ("v2-gzip-bomb", v2(payload=gzip_member(zeros_over), content=zeros_over, content_size=mib), "DECOMPRESSION_LIMIT",
         "gzip of 1 MiB + 1 zero bytes, signed content size 1 MiB (passes check 10), max_decompressed_bytes 1 MiB",
         dict(small)),
        ("v2-gzip-bomb-under-signed-size", v2(payload=gzip_member(zeros_over), content=zeros_over, content_size=1000),
         "CONTENT_HASH_MISMATCH",
         "gzip of 1 MiB + 1 zero bytes signed as 1,000 bytes: inflating stops one byte past the signed size, "
         "under the limit (check 13, not 12)", {}),
        ("v2-gzip-bomb-under-signed-size-small-limit", v2(payload=gzip_member(zeros_over), content=zeros_over, content_size=1000),
         "CONTENT_HASH_MISMATCH",
         "the same with max_decompressed_bytes 1 MiB: what it would inflate to past the limit is never reached",
         dict(small)),
        ("v2-gzip-trailing-byte", v2(payload=gz + b"\x00"), "DATABASE_CORRUPT",
         "kind 1, signed: a zero byte after the gzip member", {}),
        ("v2-gzip-two-members", v2(payload=gz + gzip_member(b"")), "DATABASE_CORRUPT",
         "kind 1, signed: a second (empty) gzip member: would inflate to the right content", {}),
        ("v2-gzip-truncated", v2(payload=gz[:-4]), "DATABASE_CORRUPT", "kind 1, signed: ISIZE cut off", {}),
        ("v2-kind-1-zstd-payload", v2(payload=delta, content=result), "DATABASE_CORRUPT",
         "kind 1, signed, whose payload is a zstd frame", {}),
        # Check 12: decompression, kind 2 (all signed by key a, given the right base).
        ("v2-delta-gzip-payload", delta_file(payload=gzip_member(result)), "DATABASE_CORRUPT",
         "kind 2 whose payload is a gzip member of the result instead of a zstd frame", {"base_file": "delta-base.bin"}),
        ("v2-delta-two-frames", delta_file(payload=delta + EMPTY_ZSTD_FRAME), "DATABASE_CORRUPT",
         "the frame followed by a second (empty) frame: `zstd -d` would yield the right content",
         {"base_file": "delta-base.bin"}),
        ("v2-delta-skippable-frame", delta_file(payload=SKIPPABLE_FRAME + delta), "DATABASE_CORRUPT",
         "a skippable frame before the frame: `zstd -d` would yield the right content", {"base_file": "delta-base.bin"}),
        ("v2-delta-trailing-byte", delta_file(payload=delta + b"\x00"), "DATABASE_CORRUPT",
         "a zero byte after the frame", {"base_file": "delta-base.bin"}),
        ("v2-delta-no-content-size", delta_file(payload=zstd_without_content_size(delta)), "DATABASE_CORRUPT",
         "the same frame without its content size field (as `zstd --no-content-size` writes it): `zstd -d` would yield the right content",
         {"base_file": "delta-base.bin"}),
        ("v2-delta-frame-size-differs", delta_file(content_size=delta_size + 1), "DATABASE_CORRUPT",
         "signed content size one more than the frame's content size field (§10: they must be equal)",
         {"base_file": "delta-base.bin"}),
        ("v2-delta-window-too-large", delta_file(payload=zstd_with_window_log(delta, 32)), "DATABASE_CORRUPT",
         "the frame's window descriptor says 2^32 bytes (over 2^31)", {"base_file": "delta-base.bin"}),
        ("v2-delta-truncated", delta_file(payload=delta[:-5]), "DATABASE_CORRUPT",
         "the frame without its last 5 bytes, signed again", {"base_file": "delta-base.bin"}),
        ("v2-delta-corrupt-block", delta_file(payload=flip(delta, len(delta) - 10, 0x01)), "DATABASE_CORRUPT",
         "a byte inside the last block changed, signed again: zstd fails (checksum or decoding)",
         {"base_file": "delta-base.bin"}),
        # Check 12: decompression and application, kind 3 (signed by key a, given the right base).
        ("v2-row-delta-conflict", row_file(payload=conflict), "DATABASE_CORRUPT",
         "kind 3 whose patchset was made against another build of the base release, which lacks a taxon: "
         "inserting it conflicts with the base's (row-delta-conflict.zst.hex)", {"base_file": V2_ROW_BASE}),
        ("v2-row-delta-not-a-patchset", row_file(payload=zstd_raw_frame(b"not a patchset!")), "DATABASE_CORRUPT",
         "kind 3 whose frame (one raw block) holds 15 bytes that are not a patchset", {"base_file": V2_ROW_BASE}),
        ("v2-row-delta-trailing-byte", row_file(payload=rows + b"\x00"), "DATABASE_CORRUPT",
         "kind 3: a zero byte after the frame", {"base_file": V2_ROW_BASE}),
        ("v2-row-delta-wrong-base", row_file(), "DELTA_BASE_MISMATCH",
         "the valid row delta given row-delta-result.bin as its base", {"base_file": V2_ROW_RESULT}),
        # Check 13: content size and digest.
        ("v2-content-digest-wrong", v2(content_digest=hashlib.sha256(b"another body\n").digest()),
         "CONTENT_HASH_MISMATCH", "kind 1, signed content digest of another body", {}),
        ("v2-content-size-wrong", v2(content_size=len(body) + 1), "CONTENT_HASH_MISMATCH",
         "kind 1, signed content size 48 (the body has 47 bytes), right digest", {}),
        ("v2-content-size-short", v2(content_size=len(body) - 1), "CONTENT_HASH_MISMATCH",
         "kind 1, signed content size 46, right digest", {}),
        ("v2-row-delta-content-digest-wrong", row_file(content_digest=hashlib.sha256(row_base).digest()),
         "CONTENT_HASH_MISMATCH", "kind 3, signed content digest of the base instead of the result",
         {"base_file": V2_ROW_BASE}),
        ("v2-delta-content-digest-wrong", delta_file(content_digest=hashlib.sha256(base).digest()),
         "CONTENT_HASH_MISMATCH", "kind 2, signed content digest of the base instead of the result",
         {"base_file": "delta-base.bin"}),
    ]
    manifest = []
    names = set()
    for name, data, expect, note, extra in cases:
        assert name not in names, name
        names.add(name)
        write(name + ".stol.hex", data.hex() + "\n")
        entry = {"name": name, "file": name + ".stol.hex", "expect": expect}
        for field in ("base_file", "max_schema_version", "max_decompressed_bytes"):
            if field in extra:
                entry[field] = extra[field]
        if expect == "OK":
            content = (row_result if extra.get("base_file") == V2_ROW_BASE else result if extra.get("base_file")
                       else zeros_mib if name == "v2-content-size-at-limit" else body)
            entry["content_sha256"] = hashlib.sha256(content).hexdigest()
        if "key_id" in extra:
            entry["key_id"] = extra["key_id"]
        entry["note"] = note
        manifest.append(entry)
    write("vectors.json", json.dumps({
        "format_version": 2,
        "now": V2_NOW,
        "trust": ["keys"],
        "defaults": {"max_schema_version": CURRENT_SCHEMA, "max_decompressed_bytes": MAX_DECOMPRESSED},
        "vectors": manifest,
    }, indent=2) + "\n")

    # Public key files on their own: which are readable, their ids and expiry at "now".
    a_hex = publics["a"].hex()
    key_line = PUBLIC_LABEL + a_hex + "\n"
    key_files = [
        ("ok-plain", key_line, True, None, True, "the key line alone"),
        ("ok-comments", "  " + PUBLIC_LABEL + a_hex.upper() + "  \r\n# a comment\n\n   \n"
         "not-after: 2030-01-01\n# another\n", True, "2030-01-01", True,
         "upper-case hex, whitespace around lines, CRLF, comments and blank lines after the key line"),
        ("ok-date-today", key_line + "not-after: 2026-11-26\n", True, "2026-11-26", True,
         "a date is trusted through the end of that day (now is its first second)"),
        ("expired-date-yesterday", key_line + "not-after: 2026-11-25\n", True, "2026-11-25", False,
         "the day before now: expired"),
        ("ok-time-equal", key_line + "not-after: 2026-11-26T00:00:00Z\n", True, "2026-11-26T00:00:00Z", True,
         "not-after equal to now: not yet past it"),
        ("expired-time-before", key_line + "not-after: 2026-11-25T23:59:59Z\n", True, "2026-11-25T23:59:59Z", False,
         "one second before now: expired"),
        ("bad-unknown-name", key_line + "comment: hello\n", False, None, False, "an unknown name"),
        ("bad-date-invalid", key_line + "not-after: 2027-02-30\n", False, None, False, "30 February"),
        ("bad-date-format", key_line + "not-after: 30/06/2027\n", False, None, False, "not YYYY-MM-DD"),
        ("bad-time-no-z", key_line + "not-after: 2027-06-30T12:00:00\n", False, None, False, "a time without Z"),
        ("bad-second-key", key_line + PUBLIC_LABEL + publics["b"].hex() + "\n", False, None, False, "a second key line"),
        ("bad-short-hex", PUBLIC_LABEL + a_hex[:-1] + "\n", False, None, False, "63 hexadecimal digits"),
        ("bad-private-label", PRIVATE_LABEL + a_hex + "\n", False, None, False, "a private key label"),
        ("bad-empty", "", False, None, False, "an empty file"),
        ("bad-leading-comment", "# the release key\n" + key_line, False, None, False, "a comment before the key line"),
        ("bad-leading-blank", "\n" + key_line, False, None, False, "a blank line before the key line"),
        ("bad-not-after-no-space", key_line + "not-after:2030-01-01\n", False, None, False,
         "not-after: without the space of `name: value`"),
    ]
    entries = []
    for name, text, readable, not_after, trusted, note in key_files:
        write(f"key-files/{name}.pub", text)
        entry = {"file": f"key-files/{name}.pub", "readable": readable}
        if readable:
            entry.update({"key_id": ids["a"], "not_after": not_after, "trusted_at_now": trusted})
        entry["note"] = note
        entries.append(entry)
    write("key-files.json", json.dumps({"now": V2_NOW, "key_files": entries}, indent=2) + "\n")


def check_v2(directory, regenerate=True):
    directory = resolve_v2_directory(directory)
    with open(os.path.join(directory, "vectors.json")) as f:
        manifest = json.load(f)
    assert manifest["format_version"] == 2
    now = parse_instant(manifest["now"])
    trust = Trust.load([os.path.join(directory, p) for p in manifest["trust"]])
    for warning in trust.warnings:
        print("warning:", warning)
    failures = 0
    for vector in manifest["vectors"]:
        with open(os.path.join(directory, vector["file"])) as f:
            data = bytes.fromhex(f.read().strip())
        options = dict(manifest["defaults"])
        options.update(vector)
        base = None
        if "base_file" in vector:
            with open(os.path.join(directory, vector["base_file"]), "rb") as f:
                base = f.read()
        shown = ""
        try:
            out = verify(data, trust, (1, options["max_schema_version"]),
                         max_decompressed=options["max_decompressed_bytes"], now=now, base=base)
            got = "OK"
            if "content_sha256" in vector and hashlib.sha256(out).hexdigest() != vector["content_sha256"]:
                got = "WRONG_CONTENT"
        except Refused as refused:
            got = refused.code
            shown = refused.line()[len(got):] + (f" ({refused.detail})" if refused.detail else "")
            if "key_id" in vector and refused.details.get("key_id") != vector["key_id"]:
                got += "/WRONG_KEY_ID"
        ok = got == vector["expect"]
        failures += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {vector['name']}: {got}{shown}")

    with open(os.path.join(directory, "key-files.json")) as f:
        key_files = json.load(f)
    key_now = parse_instant(key_files["now"])
    for entry in key_files["key_files"]:
        with open(os.path.join(directory, entry["file"])) as f:
            text = f.read()
        try:
            public, not_after = parse_public_key_file(text)
            got = {"readable": True, "key_id": key_id(public).hex(),
                   "not_after": not_after.text if not_after else None,
                   "trusted_at_now": not (not_after and not_after.expired(key_now))}
        except KeyFileError as error:
            got = {"readable": False}
            why = str(error)
        expected = {k: v for k, v in entry.items() if k not in ("file", "note")}
        ok = got == expected
        failures += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {entry['file']}: "
              + (f"key {got['key_id']}, trusted at now: {got['trusted_at_now']}" if got["readable"] else f"unreadable ({why})"))

    if regenerate:
        with tempfile.TemporaryDirectory(prefix="stolv2") as tmp:
            vectors_v2(tmp, payload_source=directory)
            made = sorted(os.path.relpath(os.path.join(r, n), tmp) for r, _, ns in os.walk(tmp) for n in ns)
            have = sorted(os.path.relpath(os.path.join(r, n), directory) for r, _, ns in os.walk(directory) for n in ns)
            for name in sorted(set(made) | set(have)):
                if name not in made:
                    print(f"FAIL {name}: in the directory but not written by vectors-v2")
                    failures += 1
                elif name not in have:
                    print(f"FAIL {name}: written by vectors-v2 but missing")
                    failures += 1
                else:
                    with open(os.path.join(tmp, name), "rb") as x, open(os.path.join(directory, name), "rb") as y:
                        if x.read() != y.read():
                            print(f"FAIL {name}: vectors-v2 writes different bytes")
                            failures += 1
            print(f"{'ok  ' if not failures else '    '} vectors-v2 reproduces {len(made)} files")
    print(f"{failures} failed" if failures else "all passed")
    return 1 if failures else 0


# --- command line -------------------------------------------------------------

def load_trust_or_exit(paths):
    try:
        trust = Trust.load(paths)
    except TrustError as error:
        print(f"stol_reference: {error}", file=sys.stderr)
        sys.exit(2)
    for warning in trust.warnings:
        print(f"stol_reference: {warning}", file=sys.stderr)
    return trust


def main(argv):
    import argparse
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build")
    b.add_argument("--key", required=True)
    b.add_argument("--body", required=True)
    b.add_argument("--out", required=True)
    b.add_argument("--schema-version", type=int, default=1)
    b.add_argument("--format-version", type=int, choices=(1, 2), default=2)
    b.add_argument("--release", default="unknown")
    b.add_argument("--id-namespace", default="unknown")
    b.add_argument("--base", help="kind 2: the database the delta applies to")
    b.add_argument("--base-release", help="kind 2: the release of the base")

    def verifier_options(p):
        p.add_argument("--public-key", action="append", required=True, help="a key file or directory (repeatable)")
        p.add_argument("--base")
        p.add_argument("--now", help="YYYY-MM-DDTHH:MM:SSZ (default: now)")
        p.add_argument("--max-schema-version", type=int, default=1)
        p.add_argument("--max-decompressed-bytes", type=int, default=MAX_DECOMPRESSED)

    v = sub.add_parser("verify")
    verifier_options(v)
    v.add_argument("--extract")
    v.add_argument("file")
    k = sub.add_parser("classify")
    verifier_options(k)
    k.add_argument("files", nargs="+")
    for name in ("vectors", "check", "vectors-v2", "check-v2"):
        sub.add_parser(name).add_argument("directory")
    args = parser.parse_args(argv)

    if args.command == "build":
        with open(args.key) as f:
            seed = parse_key(f.read(), PRIVATE_LABEL)
        with open(args.body, "rb") as f:
            body = f.read()
        if args.format_version == 1:
            if args.base:
                parser.error("a delta needs --format-version 2")
            data = assemble(seed, args.schema_version, gzip_member(body))
        else:
            for name, value in (("--release", args.release), ("--id-namespace", args.id_namespace)):
                if not (valid_release if name == "--release" else valid_text)(value.encode()):
                    parser.error(f"{name} must be 1-32 bytes of A-Z a-z 0-9 . _ + -, starting with a letter or digit"
                                 + (", and not 'bundled'" if name == "--release" else ""))
            if args.base:
                if not args.base_release or not valid_release(args.base_release.encode()):
                    parser.error("a delta needs a well-formed --base-release")
                with open(args.base, "rb") as f:
                    base = f.read()
                payload = zstd_delta(base, body)
            else:
                if args.base_release:
                    parser.error("--base-release needs --base")
                base, payload = None, gzip_member(body)
            if len(body) > MAX_DECOMPRESSED or HEADER_SIZE_V2 + len(payload) > MAX_FILE:
                print("stol_reference: over the limits of §5", file=sys.stderr)
                return 1
            data = assemble_v2(seed, payload, body, schema_version=args.schema_version, release=args.release,
                               id_namespace=args.id_namespace, base=base, base_release=args.base_release or b"")
        with open(args.out, "wb") as f:
            f.write(data)
        if args.format_version == 2:
            print("key id", key_id(public_key_bytes(seed)).hex(), file=sys.stderr)
        return 0
    if args.command in ("verify", "classify"):
        trust = load_trust_or_exit(args.public_key)
        try:
            now = parse_instant(args.now) if args.now else None
        except ValueError as error:
            parser.error(str(error))
        base = None
        if args.base:
            with open(args.base, "rb") as f:
                base = f.read()
        supported = (1, args.max_schema_version)
        files = [args.file] if args.command == "verify" else args.files
        for name in files:
            try:
                if not os.path.isfile(name):  # check 1
                    raise Refused("FILE_UNREADABLE", "not a regular file")
                try:
                    with open(name, "rb") as f:
                        data = f.read()
                except OSError as error:
                    raise Refused("FILE_UNREADABLE", str(error))
                out = verify(data, trust, supported, max_decompressed=args.max_decompressed_bytes, now=now, base=base)
            except Refused as refused:
                if args.command == "classify":
                    print(refused.code)
                    continue
                print(refused.line())
                if refused.detail:
                    print(f"stol_reference: {refused.code}: {refused.detail}", file=sys.stderr)
                if refused.code == "DELTA_BASE_MISMATCH" and base is None:
                    return 64
                return 1
            if args.command == "classify":
                print("OK")
                continue
            if args.extract:
                with open(args.extract, "wb") as f:
                    f.write(out)
            print("OK", len(out), hashlib.sha256(out).hexdigest())
        return 0
    if args.command == "vectors":
        vectors(args.directory)
        return 0
    if args.command == "check":
        return check(args.directory)
    if args.command == "vectors-v2":
        vectors_v2(resolve_v2_directory(args.directory))
        return 0
    return check_v2(args.directory)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/env python3
"""Independent reference implementation of the .stol format (protocol/STOL-FORMAT.md).

Written from the specification only, with the Python standard library (zlib,
hashlib) and the `cryptography` package (OpenSSL's Ed25519), so that it shares
no code with the Swift implementation (STOLFormat: libsodium + zlib via Swift).

    stol_reference.py build   --key PRIVATE.key --body FILE --out FILE.stol [--schema-version N]
    stol_reference.py verify  --public-key PUBLIC.key FILE.stol [--extract OUT]
                              [--max-schema-version N] [--max-decompressed-bytes N]
    stol_reference.py classify --public-key PUBLIC.key FILE.stol...   one result per line
    stol_reference.py vectors DIR        (re)write the test vectors into DIR
    stol_reference.py check   DIR        verify every vector of DIR/vectors.json

`verify` prints `OK <sqlite bytes> <sqlite sha256>` and exits 0, or prints the
error code (e.g. `CHECKSUM_MISMATCH`) and exits 1.
"""
import hashlib
import json
import os
import sys
import zlib

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

MAGIC = b"STOL\x00DB\x01"
HEADER_SIZE = 108
SIGNED_SIZE = 44
MIN_FILE = 1
MAX_FILE = 2 * 1024 ** 3
MAX_DECOMPRESSED = 4 * 1024 ** 3
PRIVATE_LABEL = "STOL-ED25519-PRIVATE-KEY-V1:"
PUBLIC_LABEL = "STOL-ED25519-PUBLIC-KEY-V1:"

# The TEST seed of the vectors: 32 ASCII bytes. Never use it to sign anything real.
TEST_SEED = b"STOL-TEST-KEY-DO-NOT-USE-0000001"


class Refused(Exception):
    def __init__(self, code, detail=""):
        super().__init__(code, detail)
        self.code = code


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


def public_key_text(public):
    return PUBLIC_LABEL + public.hex() + "\n"


# --- the format -----------------------------------------------------------

def gzip_member(body):
    """One gzip member: zlib's deflate, level 9, MTIME 0, no name (what the Swift writer produces)."""
    c = zlib.compressobj(9, zlib.DEFLATED, 31, 8, zlib.Z_DEFAULT_STRATEGY)
    return c.compress(body) + c.flush()


def signed_message(version, digest):
    return MAGIC + version.to_bytes(4, "little") + digest


def assemble(seed, version, payload):
    digest = hashlib.sha256(payload).digest()
    message = signed_message(version, digest)
    signature = Ed25519PrivateKey.from_private_bytes(seed).sign(message)
    return message + signature + payload


def verify(data, public, supported=(1, 1), max_file=MAX_FILE, max_decompressed=MAX_DECOMPRESSED):
    """The checklist of STOL-FORMAT.md §6, in order. Returns the decompressed body or raises Refused."""
    size = len(data)
    if size < MIN_FILE:
        raise Refused("FILE_TOO_SMALL")
    if size > max_file:
        raise Refused("FILE_TOO_LARGE")
    if data[:8] != MAGIC[:min(size, 8)]:
        raise Refused("NOT_A_STOL_FILE")
    if size < HEADER_SIZE:
        raise Refused("FILE_TOO_SMALL")
    version = int.from_bytes(data[8:12], "little")
    digest, signature, payload = data[12:44], data[44:108], data[108:]
    if hashlib.sha256(payload).digest() != digest:
        raise Refused("CHECKSUM_MISMATCH")
    try:
        Ed25519PublicKey.from_public_bytes(public).verify(signature, data[:SIGNED_SIZE])
    except InvalidSignature:
        raise Refused("SIGNATURE_INVALID")
    if not supported[0] <= version <= supported[1]:
        raise Refused("INCOMPATIBLE_SCHEMA")
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


# --- vectors --------------------------------------------------------------

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


def main(argv):
    import argparse
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build")
    b.add_argument("--key", required=True)
    b.add_argument("--body", required=True)
    b.add_argument("--out", required=True)
    b.add_argument("--schema-version", type=int, default=1)
    v = sub.add_parser("verify")
    v.add_argument("--public-key", required=True)
    v.add_argument("--extract")
    v.add_argument("--max-schema-version", type=int, default=1)
    v.add_argument("--max-decompressed-bytes", type=int, default=MAX_DECOMPRESSED)
    v.add_argument("file")
    k = sub.add_parser("classify")
    k.add_argument("--public-key", required=True)
    k.add_argument("--max-schema-version", type=int, default=1)
    k.add_argument("--max-decompressed-bytes", type=int, default=MAX_DECOMPRESSED)
    k.add_argument("files", nargs="+")
    g = sub.add_parser("vectors")
    g.add_argument("directory")
    c = sub.add_parser("check")
    c.add_argument("directory")
    args = parser.parse_args(argv)

    if args.command == "build":
        with open(args.key) as f:
            seed = parse_key(f.read(), PRIVATE_LABEL)
        with open(args.body, "rb") as f:
            body = f.read()
        with open(args.out, "wb") as f:
            f.write(assemble(seed, args.schema_version, gzip_member(body)))
        return 0
    if args.command == "verify":
        with open(args.public_key) as f:
            public = parse_key(f.read(), PUBLIC_LABEL)
        with open(args.file, "rb") as f:
            data = f.read()
        try:
            out = verify(data, public, (1, args.max_schema_version), max_decompressed=args.max_decompressed_bytes)
        except Refused as refused:
            print(refused.code)
            return 1
        if args.extract:
            with open(args.extract, "wb") as f:
                f.write(out)
        print("OK", len(out), hashlib.sha256(out).hexdigest())
        return 0
    if args.command == "classify":
        with open(args.public_key) as f:
            public = parse_key(f.read(), PUBLIC_LABEL)
        for name in args.files:
            with open(name, "rb") as f:
                data = f.read()
            try:
                verify(data, public, (1, args.max_schema_version), max_decompressed=args.max_decompressed_bytes)
                print("OK")
            except Refused as refused:
                print(refused.code)
        return 0
    if args.command == "vectors":
        vectors(args.directory)
        return 0
    return check(args.directory)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

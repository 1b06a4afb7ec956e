"""test_results.py: what it reads from XCTest's and unittest's runs, and when the summary fails.

    python3 -m unittest discover -s Tests/tools -p 'test_*.py'     (make test runs it)
"""
from __future__ import annotations

import io
import json
import os
import re
import sys
import tempfile
import textwrap
import unittest
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import test_results  # noqa: E402

# Lines as swift-corelibs-xctest 6.3 prints them (a skip, a pass, a failure).
XCTEST_RUN = """\
Test Suite 'Selected tests' started at 2026-11-28 14:33:11.699
Test Case 'SystemdBootTests.testBoots' started at 2026-11-28 14:33:11.699
/repo/Tests/STOLIntegrationTests/SystemdBootTests.swift:16: SystemdBootTests.testBoots : Test skipped - no installed tree to boot
Test Case 'SystemdBootTests.testBoots' skipped (0.008 seconds)
Test Case 'StackTests.testA' started at 2026-11-28 14:33:11.710
a line the test printed
the test's last words, without a newlineTest Case 'StackTests.testA' passed (0.100 seconds)
Test Case 'StackTests.testB' started at 2026-11-28 14:33:11.810
/repo/Tests/X.swift:9: error: StackTests.testB : XCTAssertEqual failed: ("1") is not equal to ("2") -
Test Case 'StackTests.testB' failed (0.001 seconds)
Test Case 'BootTests.testDeb' started at 2026-11-28 14:33:12.000
/repo/Tests/BootScriptRun.swift:31: BootTests.testDeb : Test skipped - systemd cannot run as PID 1 here: first line
second line of the reason
Test Case 'BootTests.testDeb' skipped (0.002 seconds)
\t Executed 4 tests, with 2 tests skipped and 1 failure (0 unexpected) in 0.111 (0.111) seconds
"""


def parse(text: str, status: int = 1) -> dict:
    output = test_results.XCTestOutput()
    for line in text.splitlines():
        output.consume(line)
    return output.record("shard", status)


class XCTestOutputTests(unittest.TestCase):
    def test_passesFailuresAndSkipsWithTheirReasons_areCounted(self):
        record = parse(XCTEST_RUN)
        self.assertEqual(record["ran"], 2)
        self.assertEqual(record["failed"], ["StackTests.testB"])
        self.assertEqual(record["skipped"], [
            {"test": "SystemdBootTests.testBoots", "reason": "no installed tree to boot"},
            {"test": "BootTests.testDeb", "reason": "systemd cannot run as PID 1 here: first line\nsecond line of the reason"},
        ])

    def test_aTestThatNeverEnds_isAFailure_namingIt(self):
        record = parse("Test Case 'StackTests.testHangs' started at 2026-11-28 14:33:11.810\nFatal error\n", status=132)
        self.assertEqual(record["failed"], ["StackTests.testHangs (did not end: the bundle exited 132)"])

    def test_aBundleThatFailsWithoutAFailedTest_isAFailure(self):
        self.assertEqual(parse("no tests at all\n", status=1)["failed"], ["(the bundle exited 1 with no failed test)"])
        self.assertEqual(parse("no tests at all\n", status=0)["failed"], [])


def summary_of(records: list[dict], expect: list[str], allowlist: str = "", conditions=None):
    path = Path(tempfile.mkdtemp()) / "expected-skips.tsv"
    path.write_text(allowlist)
    out = io.StringIO()
    original = test_results.condition_holds
    test_results.condition_holds = lambda name: (conditions or {}).get(name, False)
    try:
        status = test_results.summarize({r["suite"]: r for r in records}, expect, test_results.read_allowlist(path), out)
    finally:
        test_results.condition_holds = original
    return status, out.getvalue()


class SummaryTests(unittest.TestCase):
    ALLOW = "# condition\treason\twhy\nnot-root\tneeds root\tonly root can\n"

    def test_allPassed_noSkip_isZero_andPrintsTheTotalsLine(self):
        status, text = summary_of([test_results.result("a", ran=3), test_results.result("b", ran=2)], ["a", "b"])
        self.assertEqual(status, 0, text)
        self.assertIn("\ntests: 5 passed, 0 failed, 0 skipped\n", text)
        self.assertRegex(text, re.compile(r"^a +3 +0 +0 +- +-$", re.M))

    def test_stepsPrintTheirTime_andAreNoSuite(self):
        timed = dict(test_results.result("a", ran=3), wall_seconds=12.0, cpu_seconds=20.4)
        build = dict(test_results.result("build-debug"), step=True, wall_seconds=300.2, cpu_seconds=590.7)
        status, text = summary_of([timed, build], ["a"])
        self.assertEqual(status, 0, text)
        self.assertRegex(text, re.compile(r"^a +3 +0 +0 +12 +20$", re.M))
        self.assertIn("\nstep build-debug: 300 s wall, 591 CPU-s\n", text)
        self.assertIn("\ntests: 3 passed, 0 failed, 0 skipped\n", text)
        failed = dict(build, status=2)
        status, text = summary_of([timed, failed], ["a"])
        self.assertEqual(status, 1)
        self.assertIn("build-debug: exited 2", text)

    def test_aSkipOutsideTheAllowlist_failsTheRun_namingTestAndReason(self):
        skipped = [{"test": "T.testX", "reason": "pandas is not installed"}]
        status, text = summary_of([test_results.result("python", ran=1, skipped=skipped)], ["python"], self.ALLOW)
        self.assertEqual(status, 1)
        self.assertIn("python: unexpected skip of T.testX: pandas is not installed", text)
        self.assertIn("1 × pandas is not installed", text)

    def test_anAllowedSkip_isExpectedOnlyWhereItsConditionHolds(self):
        skipped = [{"test": "T.testRoot", "reason": "needs root to run clients as other uids"}]
        records = [test_results.result("xctest-1", ran=1, skipped=skipped)]
        self.assertEqual(summary_of(records, ["xctest-1"], self.ALLOW, {"not-root": True})[0], 0)
        status, text = summary_of(records, ["xctest-1"], self.ALLOW, {"not-root": False})
        self.assertEqual(status, 1, "as root, a root-only test must run")
        self.assertIn("unexpected skip of T.testRoot", text)

    def test_aSuiteWithoutAResult_orWithAFailure_failsTheRun(self):
        status, text = summary_of([test_results.result("a", ran=1)], ["a", "boot-tree"])
        self.assertEqual(status, 1)
        self.assertIn("boot-tree: no result", text)
        status, text = summary_of([test_results.result("a", ran=1, failed=["T.testY"], status=1)], ["a"])
        self.assertEqual(status, 1)
        self.assertIn("a: failed: T.testY", text)

    def test_theAllowlistOfTheRepository_namesKnownConditionsOnly(self):
        entries = test_results.read_allowlist(test_results.ALLOWLIST)
        self.assertTrue(entries)
        self.assertLessEqual(len(entries), 3, "keep the expected skips few")
        for condition, pattern, why in entries:
            self.assertIn(condition, test_results.CONDITIONS)
            self.assertTrue(why.strip())
        reasons = {"needs root to run clients as other uids with setpriv": "not-root",
                   "systemd cannot run as PID 1 here: test-under-systemd.sh: SKIPPED: no overlayfs": "no-namespaces",
                   "systemd cannot run as PID 1 here: test-under-systemd.sh: SKIPPED: needs root to boot": "not-root"}
        for reason, condition in reasons.items():
            self.assertEqual(test_results.expected(reason, entries, {"not-root": True, "no-namespaces": True}), condition)
        for reason in ["python3 with the cryptography package is not installed", "pandas is not installed (optional)",
                       "STOL is installed on this machine"]:
            self.assertIsNone(test_results.expected(reason, entries, {"not-root": True, "no-namespaces": True}), reason)


class JobTests(unittest.TestCase):
    def setUp(self):
        self.directory = tempfile.mkdtemp(prefix="stol-test-results-")

    def read(self, suite: str) -> dict:
        return json.loads((Path(self.directory) / f"{suite}.json").read_text())

    def test_unittest_recordsRunsFailuresAndEachSkipsReason_alsoOfAWholeClass(self):
        tests = Path(self.directory) / "tests"
        tests.mkdir()
        (tests / "test_sample.py").write_text(textwrap.dedent("""\
            import unittest
            class Plain(unittest.TestCase):
                def test_passes(self): self.assertTrue(True)
                def test_fails(self): self.assertEqual(1, 2)
                def test_skips(self): self.skipTest("no frobnicator")
            class Whole(unittest.TestCase):
                @classmethod
                def setUpClass(cls): raise unittest.SkipTest("no daemons")
                def test_needs_daemons(self): pass
            """))
        results = Path(self.directory) / "results"
        with open(os.devnull, "w") as quiet:
            stderr, sys.stderr = sys.stderr, quiet
            try:
                status = test_results.main(["--results", str(results), "unittest", "--suite", "sample", "-s", str(tests)])
            finally:
                sys.stderr = stderr
        self.directory = str(results)
        record = self.read("sample")
        self.assertEqual(status, 1)
        self.assertEqual(record["ran"], 2)
        self.assertEqual(len(record["failed"]), 1)
        self.assertIn("test_fails", record["failed"][0])
        self.assertEqual(sorted(s["reason"] for s in record["skipped"]), ["no daemons", "no frobnicator"])

    def test_aJob_recordsItsWallAndCPUSeconds_includingItsChildren(self):
        burn = [sys.executable, "-c", "import time\nend = time.process_time() + 0.3\nwhile time.process_time() < end: pass"]
        test_results.STARTED_AT.update(wall=test_results.time.monotonic(), cpu=test_results.cpu_seconds())
        self.assertEqual(test_results.main(["--results", self.directory, "step", "--suite", "burn", "--", *burn]), 0)
        record = self.read("burn")
        self.assertTrue(record["step"])
        self.assertGreaterEqual(record["cpu_seconds"], 0.3, "the child's CPU time is counted")
        self.assertGreaterEqual(record["wall_seconds"], 0.3)

    def test_check_countsTheCasesItsOutputNames(self):
        command = [sys.executable, "-c", "print('fuzz-a   ok  2000'); print('fuzz-b   FAILED (1)  12'); raise SystemExit(1)"]
        stdout, sys.stdout = sys.stdout, io.TextIOWrapper(io.BytesIO())
        try:
            status = test_results.main(["--results", self.directory, "check", "--suite", "fuzz",
                                        "--cases", r"^(fuzz-\S+)\s+(ok|FAILED)", "--", *command])
        finally:
            sys.stdout = stdout
        self.assertEqual(status, 1)
        record = self.read("fuzz")
        self.assertEqual((record["ran"], record["failed"]), (2, ["fuzz-b"]))


if __name__ == "__main__":
    unittest.main()

#!/usr/bin/env python3
"""Runs independent test suites side by side and reports them one after another (`make test`).

    Tests/tools/run_suites.py --logs DIR NAME='COMMAND' NAME='COMMAND' ...

Every suite is a shell command that owns nothing another suite uses (its own
scratch directories, sockets and build directory), so they run at once: on a
2-core machine the XCTest shards wait on sockets and child processes much of
the time, which the fuzz build and the Python suites fill. Each suite's output
goes to DIR/NAME.log; when a suite ends, a line says so with its time, and its
whole log is printed then, so the output reads suite by suite. The exit status
is 0 only when every suite exited 0; the suites that failed are named last.
Ctrl-C (or a SIGTERM) stops every suite's process group.
"""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--logs", required=True, type=Path, help="directory for each suite's NAME.log")
    parser.add_argument("suites", nargs="+", metavar="NAME=COMMAND")
    args = parser.parse_args()
    args.logs.mkdir(parents=True, exist_ok=True)

    suites = []
    for spec in args.suites:
        name, sep, command = spec.partition("=")
        if not sep or not name or not command:
            parser.error(f"not NAME=COMMAND: {spec!r}")
        suites.append((name, command))

    started = time.monotonic()
    running: dict[int, tuple[str, subprocess.Popen, float, Path]] = {}
    for name, command in suites:
        log = args.logs / f"{name}.log"
        handle = log.open("wb")
        # A process group per suite, so that stopping one stops what it started.
        process = subprocess.Popen(["/bin/bash", "-o", "pipefail", "-c", command], stdout=handle, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
        handle.close()
        running[process.pid] = (name, process, time.monotonic(), log)
        print(f"[suites] started {name}: {command}", flush=True)

    def stop_all(signum, _frame):
        for _, process, _, _ in running.values():
            try:
                os.killpg(process.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        sys.exit(128 + signum)

    signal.signal(signal.SIGINT, stop_all)
    signal.signal(signal.SIGTERM, stop_all)

    failed: list[str] = []
    results: list[str] = []
    while running:
        pid, status = os.wait()
        if pid not in running:
            continue
        name, process, began, log = running.pop(pid)
        code = os.waitstatus_to_exitcode(status)
        process.returncode = code
        seconds = time.monotonic() - began
        verdict = "passed" if code == 0 else f"FAILED (exit {code})"
        if code != 0:
            failed.append(name)
        results.append(f"{name:<24} {verdict:<18} {seconds:7.1f} s")
        sys.stdout.write(f"\n===== {name}: {verdict} in {seconds:.1f} s; its output ({log}) =====\n")
        sys.stdout.flush()
        with log.open("rb") as handle:
            sys.stdout.buffer.write(handle.read())
        sys.stdout.write(f"===== end of {name} =====\n")
        sys.stdout.flush()

    total = time.monotonic() - started
    print("\n[suites] " + "\n[suites] ".join(results))
    print(f"[suites] {len(suites)} suites side by side in {total:.1f} s; "
          + (f"FAILED: {', '.join(failed)}" if failed else "all passed"), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

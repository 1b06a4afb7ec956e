"""A one-off job on STOL from nothing running: the user's private stack started on DATABASE, the whole
lineage of every taxid of INPUT, the stack stopped, as a batch job that starts and ends with nothing
left behind writes it (issues 37 and 38: "one-off job: start + 100 k lineages").

    stol_one_off.py cli|python CLIENT DATABASE INPUT OUTPUT HWM_FILE

Environment: the job's own XDG_RUNTIME_DIR, XDG_STATE_HOME and XDG_CACHE_HOME (the benchmark's scratch),
no STOL_RUNTIME_DIR; for python, PYTHONPATH naming clients/python.

  cli     `stol-client serve --detach --database DATABASE`, `stol-client lineage --ranks all --ids
          --no-header` (INPUT on stdin, its TSV into OUTPUT, normalised by the benchmark as the STOL row's),
          `stol-client serve --stop`
  python  `stol.Taxonomy(database=DATABASE)` (which starts the stack), `lineage(ids, ranks="all",
          names=False)` written in the normalised form, `stol.private.stop()`

Before the stop it writes the taxonomy daemon's VmHWM (KiB) into HWM_FILE: the stack is the job's, not
the benchmark's shared one. When no image of the tree ships beside DATABASE (DATABASE.tree, which
`stol-pipeline build` writes) and the cache holds none yet (the first start of DATABASE, the benchmark's
probe), it waits until the daemon has written one before the stop, so that each timed job starts as every
job after the first does: the tree read from its image. Exit 0, or 3 when some
query names nothing (as stol-client); anything else is a failure.
"""
import glob
import os
import subprocess
import sys
import time

mode, client, database, source, target, hwm_file = sys.argv[1:7]
runtime = os.path.join(os.environ["XDG_RUNTIME_DIR"], "stol")
images = os.path.join(os.environ["XDG_CACHE_HOME"], "stol", "taxonomy", "*.tree")
first_start = not glob.glob(images) and not os.path.exists(database + ".tree")


def taxonomy_daemon_hwm_kb() -> int:
    """VmHWM of the stol-taxonomyd serving this job's sockets (its environment names them), 0 if none runs."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if not os.readlink(f"/proc/{pid}/exe").endswith("stol-taxonomyd"):
                continue
            with open(f"/proc/{pid}/environ", "rb") as f:
                if f"STOL_RUNTIME_DIR={runtime}".encode() not in f.read().split(b"\0"):
                    continue
            with open(f"/proc/{pid}/status") as f:
                return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
        except (OSError, StopIteration, ValueError):
            continue
    return 0


def finish() -> None:
    with open(hwm_file, "w") as f:
        f.write(f"{taxonomy_daemon_hwm_kb()}\n")
    if first_start:
        deadline = time.monotonic() + 300
        while not glob.glob(images):
            if time.monotonic() > deadline:
                sys.exit("no tree image was written within 300 s")
            time.sleep(0.1)


status = 0
if mode == "cli":
    subprocess.run([client, "serve", "--detach", "--database", database], check=True, stdin=subprocess.DEVNULL,
                   stdout=subprocess.DEVNULL)
    with open(source, "rb") as stdin, open(target, "wb") as stdout:
        status = subprocess.run([client, "lineage", "--ranks", "all", "--ids", "--no-header"], stdin=stdin,
                                stdout=stdout).returncode
    finish()
    subprocess.run([client, "serve", "--stop"], check=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
elif mode == "python":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    os.environ["PATH"] = os.path.dirname(client) + os.pathsep + os.environ.get("PATH", "")
    import stol
    import stol.private
    from normalise import Err, lineage_line, read_lines

    with stol.Taxonomy(database=database) as tx, open(target, "w", encoding="utf-8") as out:
        for lineage in tx.lineage(read_lines(source), ranks="all", names=False):
            out.write(lineage_line(lineage.query, Err(lineage.error.code_name) if lineage.error else lineage.ids))
    finish()
    stol.private.stop()
else:
    sys.exit(f"unknown mode {mode}: cli or python")
sys.exit(status if status in (0, 3) else 1)

#!/usr/bin/env python3
"""Independent check of `compare` on a real database (issue 4).

Reads every (id, parent_id) of a built database with Python's own sqlite3,
computes the lowest common ancestor, distance and LCA depth of random pairs by
walking parent pointers (nothing shared with the Swift code), and asks the real
`stol-taxonomyd` (started here under the real `systemd-socket-activate`) the same
through `stol-client compare --json`. Prints one line per disagreement and a
summary; exits 1 if any pair disagrees.

    Pipeline/scripts/check_lca.py --bin .build/release --database out/reference.sqlite --pairs 500
"""
import argparse
import json
import os
import random
import sqlite3
import subprocess
import sys
import tempfile
import time


def load_parents(path):
    parents = {}
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        for taxon_id, parent_id in db.execute("SELECT id, parent_id FROM taxa"):
            parents[taxon_id] = parent_id
    return parents


def lineage(parents, taxon_id):
    """The taxon and its ancestors, taxon first, root last."""
    chain = [taxon_id]
    while parents.get(chain[-1]) is not None:
        chain.append(parents[chain[-1]])
    return chain


def expected(parents, a, b):
    line_a, line_b = lineage(parents, a), lineage(parents, b)
    ancestors_b = {taxon: steps for steps, taxon in enumerate(line_b)}
    for steps_a, taxon in enumerate(line_a):
        if taxon in ancestors_b:
            depth = len(lineage(parents, taxon)) - 1
            return {"lca": taxon, "distance": steps_a + ancestors_b[taxon], "lca_depth": depth}
    return {"lca": None}


def start_server(binaries, database, scratch):
    socket = os.path.join(scratch, "taxonomy.sock")
    os.makedirs(os.path.join(scratch, "state"), exist_ok=True)
    log = open(os.path.join(scratch, "daemon.log"), "w")
    process = subprocess.Popen([
        "/usr/bin/systemd-socket-activate", f"--listen={socket}", "--fdname=taxonomy",
        "-E", f"STOL_BUNDLED_DB={database}", "-E", f"STOL_STATE_DIR={scratch}/state",
        "-E", f"STOL_RUNTIME_DIR={scratch}", "-E", "STOL_LOG_LEVEL=warning",
        os.path.join(binaries, "stol-taxonomyd")], stdout=log, stderr=log)
    for _ in range(500):
        if os.path.exists(socket):
            break
        time.sleep(0.01)
    return process


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", required=True, help="directory with stol-taxonomyd and stol-client (release build)")
    parser.add_argument("--database", required=True, help="the built database to check (e.g. out/reference.sqlite)")
    parser.add_argument("--pairs", type=int, default=500, help="random pairs to check (default 500)")
    parser.add_argument("--seed", type=int, default=2024, help="random seed (default 2024)")
    args = parser.parse_args()

    started = time.time()
    parents = load_parents(args.database)
    ids = list(parents)
    print(f"read {len(ids):,} taxa in {time.time() - started:.1f} s", flush=True)
    rng = random.Random(args.seed)
    pairs = [(rng.choice(ids), rng.choice(ids)) for _ in range(args.pairs)]
    # Also pairs that share a close ancestor, where off-by-one errors show: siblings and a taxon with its grandparent.
    children = {}
    for taxon, parent in parents.items():
        if parent is not None:
            children.setdefault(parent, []).append(taxon)
    families = [kids for kids in children.values() if len(kids) > 1]
    for _ in range(args.pairs // 5):
        kids = rng.choice(families)
        pairs.append(tuple(rng.sample(kids, 2)))
        leaf = rng.choice(ids)
        pairs.append((leaf, lineage(parents, leaf)[min(2, len(lineage(parents, leaf)) - 1)]))

    with tempfile.TemporaryDirectory(prefix="stol-check-lca.") as scratch:
        server = start_server(args.bin, os.path.abspath(args.database), scratch)
        client = os.path.join(args.bin, "stol-client")
        disagreements = 0
        related = 0
        try:
            for a, b in pairs:
                want = expected(parents, a, b)
                run = subprocess.run([client, "compare", "--json", "--runtime-dir", scratch, str(a), str(b)],
                                     capture_output=True, text=True)
                if run.returncode != 0:
                    print(f"DISAGREE {a} {b}: stol-client exit {run.returncode}: {run.stderr.strip()}")
                    disagreements += 1
                    continue
                got = json.loads(run.stdout)
                lca = got.get("lca", {}).get("id")
                if want["lca"] is None:
                    ok = lca is None
                else:
                    related += 1
                    ok = (lca == want["lca"] and got.get("distance", 0) == want["distance"]
                          and got.get("lca_depth", 0) == want["lca_depth"])
                if not ok:
                    disagreements += 1
                    print(f"DISAGREE {a} {b}: expected {want}, server lca {lca} distance {got.get('distance')} "
                          f"lca_depth {got.get('lca_depth')}")
        finally:
            server.terminate()
            server.wait()
    print(f"{len(pairs)} pairs ({related} with a common ancestor): {disagreements} disagreements")
    sys.exit(1 if disagreements else 0)


if __name__ == "__main__":
    main()

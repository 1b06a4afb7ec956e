#!/usr/bin/env python3
"""Independent check of `compare`, lineages and children on a real database (issues 4, 14, 20).

On a database with NCBI's whole tree (schema 3's `taxa`, or schema 2's
`tree_nodes`): reads every (id, parent, rank) of NCBI's own nodes.dmp
(--nodes-dmp; checking first that the database holds the same tree; without
it, the database's own with Python's sqlite3) and checks
`stol-client compare --batch` in both rank modes for --pairs random pairs and as
many near pairs (common ancestor 1-4 levels up, ancestor/descendant pairs, a
taxon with itself), as PROTOCOL.md's *One comparison* defines them: with --ranks
all the LCA is NCBI's and distance_all the edges between the two; with --ranks
main the LCA is the deepest taxon of both main lineages (NCBI's own when they
share none), and distance_main the taxa of the two main lineages below it, where
a node's main lineage is its main-rank ancestors, each of a rank above the one
below it (taxonkit's reformat), then itself if of a main rank. Every pair must
have a common ancestor. A sample of the pairs (--singles) is asked again one at
a time (`compare A B --json`, both views) and as sets of two (`lca`, both views):
the same common ancestor and distances. Then the lineages of 20 nodes of every
rank and --pairs random nodes in both rank modes (`lineage --ids`: NCBI's chain;
on the main ranks the main lineage, the node last), and NCBI's own children of
300 random nodes (`children --ranks all`: in name order, bytes then id, with the
right total). And issue 34's answers: NCBI's parent and direct-children count of
300 random nodes (`taxon --json`: source_parent_id, source_child_count), the
descendants of 100 random nodes at their most frequent rank (`descendants --rank
R --ids`: preorder, children in id order, as ete4's get_descendant_taxa), and the
ids per rank of --pairs random nodes (`lineage --ids --format
'{k};{K};{p};{c};{o};{f};{g};{s}'` on the whole tree: each the lowest node of
its rank's spellings on the lineage, taxonkit's reformat -t).

Otherwise (schema 1, or a database without the whole tree), the eight-rank check:

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


MAIN_RANKS = {"superkingdom", "domain", "kingdom", "phylum", "division", "class", "order", "family", "genus", "species"}
# The main ranks' levels from the top; "acellular root" is NCBI's rank of Viruses since 2025.
MAIN_LEVEL = {"superkingdom": 0, "domain": 0, "acellular root": 0, "kingdom": 1, "phylum": 2, "division": 2, "class": 3,
              "order": 4, "family": 5, "genus": 6, "species": 7}
MAIN_RANKS = set(MAIN_LEVEL)


def main_lineage(parents, ranks, taxon):
    """The taxon's main lineage, root first: each main-rank ancestor of a rank above the
    last one kept (taxonkit's reformat skips a rank inversion), then the taxon itself
    when it is of a main rank."""
    level = MAIN_LEVEL.get(ranks[taxon], 99)
    kept = [taxon] if ranks[taxon] in MAIN_LEVEL else []
    for ancestor in lineage(parents, taxon)[1:]:
        if MAIN_LEVEL.get(ranks[ancestor], 99) < level:
            kept.append(ancestor)
            level = MAIN_LEVEL[ranks[ancestor]]
    return list(reversed(kept))


def shared_prefix(a, b):
    count = 0
    while count < min(len(a), len(b)) and a[count] == b[count]:
        count += 1
    return count


def expected_pair(parents, ranks, a, b):
    """(NCBI's LCA, the common ancestor on the main ranks, distance_main, distance_all)."""
    line_a, line_b = lineage(parents, a), lineage(parents, b)
    on_b = set(line_b)
    lca = next(taxon for taxon in line_a if taxon in on_b)
    main_a, main_b = main_lineage(parents, ranks, a), main_lineage(parents, ranks, b)
    shared = shared_prefix(main_a, main_b)
    main_lca = main_a[shared - 1] if shared else lca
    return lca, main_lca, len(main_a) + len(main_b) - 2 * shared, line_a.index(lca) + line_b.index(lca)


def load_nodes_dmp(path):
    """Parents and ranks straight from NCBI's nodes.dmp (the root is its own parent there)."""
    parents, ranks = {}, {}
    with open(path, encoding="utf-8", errors="replace") as nodes:
        for line in nodes:
            fields = line.split("\t|\t")
            if len(fields) < 3:
                continue
            taxon, parent, rank = int(fields[0]), int(fields[1]), fields[2].strip()
            parents[taxon] = None if parent == taxon else parent
            ranks[taxon] = rank
    return parents, ranks


def load_full_tree(path):
    """The database's whole tree: schema 2's `tree_nodes`, or schema 3's `taxa` (every node)."""
    parents, ranks = {}, {}
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        if db.execute("SELECT 1 FROM sqlite_master WHERE name = 'tree_nodes'").fetchone():
            table = "tree_nodes"
        elif any(row[1] == "main_rank" for row in db.execute("PRAGMA table_info(taxa)")):
            table = "taxa"
        else:
            return None, None
        for taxon_id, parent_id, rank in db.execute(f"SELECT id, parent_id, rank FROM {table}"):
            parents[taxon_id] = parent_id
            ranks[taxon_id] = rank
    return (parents, ranks) if parents else (None, None)


def check_lineages_and_children(args, parents, ranks, rng, scratch, client):
    """Lineages of random nodes of every rank in both views, and pages of NCBI's own
    children (name order, totals), against the parent chains of the file."""
    by_rank = {}
    for taxon, rank in ranks.items():
        by_rank.setdefault(rank, []).append(taxon)
    ids = [t for members in by_rank.values() for t in rng.sample(members, min(len(members), 20))]
    ids += rng.sample(list(parents), min(len(parents), args.pairs))
    disagreements = 0
    query = "".join(f"{t}\n" for t in ids)
    for mode in ("all", "main"):
        run = subprocess.run([client, "lineage", "--ranks", mode, "--ids", "--no-header", "--runtime-dir", scratch, "--timeout", "600"],
                             input=query, capture_output=True, text=True)
        answers = run.stdout.splitlines()
        if run.returncode != 0 or len(answers) != len(ids):
            print(f"DISAGREE: lineage --ranks {mode}: exit {run.returncode}, {len(answers)} answers for {len(ids)}")
            disagreements += 1
            continue
        for taxon, answer in zip(ids, answers):
            chain = list(reversed(lineage(parents, taxon)))  # root first, the taxon last
            want = chain if mode == "all" else main_lineage(parents, ranks, taxon)
            if mode == "main" and ranks[taxon] not in MAIN_RANKS:
                want = want + [taxon]  # `lineage` shows the taxon last, of a main rank or not
            got = [int(x) for x in answer.split("\t")[-1].split(";") if x]
            if got != want:
                disagreements += 1
                if disagreements <= 20:
                    print(f"DISAGREE lineage --ranks {mode} {taxon} ({ranks[taxon]}): expected {want}, got {answer}")
    print(f"lineages of {len(ids):,} nodes of {len(by_rank)} ranks in both rank modes: {disagreements} disagreements", flush=True)
    children = {}
    for taxon, parent in parents.items():
        if parent is not None:
            children.setdefault(parent, []).append(taxon)
    names = {}
    with sqlite3.connect(f"file:{os.path.abspath(args.database)}?mode=ro", uri=True) as db:
        table = "tree_nodes" if db.execute("SELECT 1 FROM sqlite_master WHERE name = 'tree_nodes'").fetchone() else "taxa"
        names = dict(db.execute(f"SELECT id, scientific_name FROM {table}"))
    checked = 0
    for parent in rng.sample(sorted(children), min(len(children), 300)):
        run = subprocess.run([client, "children", str(parent), "--ranks", "all", "--json", "--limit", "500",
                              "--runtime-dir", scratch], capture_output=True, text=True)
        page = json.loads(run.stdout or "{}")
        want = sorted(children[parent], key=lambda t: (names[t].encode(), t))[:500]
        got = [t["id"] for t in page.get("taxa", [])]
        checked += 1
        if got != want or page.get("total", 0) != len(children[parent]):
            disagreements += 1
            if disagreements <= 20:
                print(f"DISAGREE children --ranks all {parent}: {page.get('total')} of {len(children[parent])}, "
                      f"first {got[:5]} expected {want[:5]}")
    print(f"children of {checked} nodes on NCBI's tree (name order, totals): checked", flush=True)
    disagreements += check_lab_habits(args, parents, ranks, children, rng, scratch, client)
    return disagreements


#: The placeholders of a --format template and the NCBI rank spellings each takes (PROTOCOL.md §4.2).
TEMPLATE_RANKS = [("k", {"superkingdom", "domain", "acellular root"}), ("K", {"kingdom"}), ("p", {"phylum", "division"}),
                  ("c", {"class"}), ("o", {"order"}), ("f", {"family"}), ("g", {"genus"}), ("s", {"species"})]


def check_lab_habits(args, parents, ranks, children, rng, scratch, client):
    """Issue 34: both trees' parent and child count, descendants at a rank, ids per rank."""
    disagreements = 0
    nodes = sorted(parents)
    for taxon in rng.sample(nodes, min(len(nodes), 300)):
        run = subprocess.run([client, "taxon", str(taxon), "--json", "--runtime-dir", scratch], capture_output=True, text=True)
        got = json.loads(run.stdout or "{}")
        want = (parents[taxon], len(children.get(taxon, [])))
        if (got.get("source_parent_id"), got.get("source_child_count", 0)) != want:
            disagreements += 1
            if disagreements <= 20:
                print(f"DISAGREE taxon {taxon}: NCBI parent and children {want}, got {run.stdout[:200]}")
    print(f"NCBI's parent and child count of 300 nodes: checked", flush=True)

    def preorder(top):
        stack, order = sorted(children.get(top, []), reverse=True), []
        while stack:
            node = stack.pop()
            order.append(node)
            stack.extend(sorted(children.get(node, []), reverse=True))
        return order
    inner = [t for t in nodes if t in children]
    checked = 0
    for top in rng.sample(inner, min(len(inner), 100)):
        below = preorder(top)
        if len(below) > 200_000:
            continue
        counts = {}
        for node in below:
            counts[ranks[node]] = counts.get(ranks[node], 0) + 1
        rank = max(sorted(counts), key=lambda r: counts[r])
        want = [node for node in below if ranks[node] == rank]
        run = subprocess.run([client, "descendants", str(top), "--rank", rank, "--ids", "--runtime-dir", scratch, "--timeout", "600"],
                             capture_output=True, text=True)
        got = [int(x) for x in run.stdout.split()]
        checked += 1
        if run.returncode != 0 or got != want:
            disagreements += 1
            if disagreements <= 20:
                print(f"DISAGREE descendants {top} --rank {rank!r}: {len(got)} of {len(want)}, first {got[:5]} expected {want[:5]}")
    print(f"descendants of {checked} nodes at their most frequent rank (preorder, id order): checked", flush=True)

    ids = rng.sample(nodes, min(len(nodes), args.pairs))
    template = ";".join("{%s}" % letter for letter, _ in TEMPLATE_RANKS)
    run = subprocess.run([client, "lineage", "--ranks", "all", "--ids", "--format", template, "--no-header",
                          "--runtime-dir", scratch, "--timeout", "600"],
                         input="".join(f"{t}\n" for t in ids), capture_output=True, text=True)
    answers = run.stdout.splitlines()
    if len(answers) != len(ids):
        print(f"DISAGREE: lineage --ids --format: exit {run.returncode}, {len(answers)} answers for {len(ids)}")
        return disagreements + 1
    for taxon, answer in zip(ids, answers):
        chain = lineage(parents, taxon)  # the taxon first: the lowest node of a rank comes first
        want = [next((str(n) for n in chain if ranks[n] in spellings), "") for _, spellings in TEMPLATE_RANKS]
        if answer.split("\t")[-1].split(";") != want:
            disagreements += 1
            if disagreements <= 20:
                print(f"DISAGREE lineage --ids --format {taxon}: expected {';'.join(want)}, got {answer}")
    print(f"ids per rank of {len(ids):,} nodes (lineage --ids --format): checked", flush=True)
    return disagreements


def check_singles_and_sets(args, parents, ranks, pairs, rng, scratch, client):
    """A sample of the pairs one at a time (`compare A B --json`) and as sets of two
    (`lca`), in both views: the same answers as the batch's definition."""
    sample = rng.sample(pairs, min(len(pairs), args.singles))
    disagreements = 0
    for mode in ("main", "all"):
        sets = subprocess.run([client, "lca", "--ranks", mode, "--no-header", "--runtime-dir", scratch, "--timeout", "600"],
                              input="".join(f"{a}\t{b}\n" for a, b in sample), capture_output=True, text=True)
        set_answers = sets.stdout.splitlines()
        if sets.returncode != 0 or len(set_answers) != len(sample):
            print(f"DISAGREE: lca --ranks {mode}: exit {sets.returncode}, {len(set_answers)} answers for {len(sample)}")
            disagreements += 1
            continue
        for (a, b), set_answer in zip(sample, set_answers):
            lca, main_lca, main_steps, all_steps = expected_pair(parents, ranks, a, b)
            shown = main_lca if mode == "main" else lca
            run = subprocess.run([client, "compare", str(a), str(b), "--ranks", mode, "--json", "--runtime-dir", scratch],
                                 capture_output=True, text=True)
            got = json.loads(run.stdout or "{}")
            single = (got.get("lca", {}).get("id"), got.get("distance_main", 0), got.get("distance_all", 0))
            from_set = int(set_answer.split("\t")[1]) if len(set_answer.split("\t")) > 1 else None
            if single != (shown, main_steps, all_steps) or from_set != shown:
                disagreements += 1
                if disagreements <= 20:
                    print(f"DISAGREE {mode} {a} {b}: expected lca {shown} main {main_steps} all {all_steps}; "
                          f"compare gave {single}, lca gave {set_answer}")
    print(f"{len(sample):,} pairs through compare and lca in both rank modes: {disagreements} disagreements", flush=True)
    return disagreements


def near_pairs(parents, count, rng):
    """Pairs whose common ancestor is 1-4 levels up, ancestor/descendant pairs and self pairs."""
    children = {}
    for taxon, parent in parents.items():
        if parent is not None:
            children.setdefault(parent, []).append(taxon)
    ids = list(parents)

    def descend(node, levels):
        for _ in range(levels):
            kids = children.get(node)
            if not kids:
                break
            node = rng.choice(kids)
        return node

    pairs = []
    while len(pairs) < count:
        kind = rng.randrange(3)
        leaf = rng.choice(ids)
        chain = lineage(parents, leaf)
        if kind == 0:  # common ancestor k levels up: another path down from it
            k = rng.randint(1, 4)
            top = chain[min(k, len(chain) - 1)]
            pairs.append((leaf, descend(top, rng.randint(1, 4))))
        elif kind == 1:  # ancestor and descendant
            pairs.append((leaf, chain[rng.randrange(len(chain))]))
        else:
            pairs.append((leaf, leaf))
    return pairs


def check_full_tree(args, parents, ranks, rng):
    ids = list(parents)
    pairs = [(rng.choice(ids), rng.choice(ids)) for _ in range(args.pairs)] + near_pairs(parents, args.pairs, rng)
    lines = "".join(f"{a}\t{b}\n" for a, b in pairs)
    disagreements = 0
    with tempfile.TemporaryDirectory(prefix="stol-check-lca.") as scratch:
        server = start_server(args.bin, os.path.abspath(args.database), scratch)
        client = os.path.join(args.bin, "stol-client")
        try:
            for mode in ("all", "main"):
                started = time.time()
                run = subprocess.run([client, "compare", "--batch", "--ranks", mode, "--no-header", "--runtime-dir", scratch,
                                      "--timeout", "600"], input=lines, capture_output=True, text=True)
                if run.returncode != 0:
                    print(f"stol-client compare --batch --ranks {mode} exit {run.returncode}: {run.stderr.strip()}")
                    return 1
                answers = run.stdout.splitlines()
                print(f"--ranks {mode}: {len(answers):,} answers in {time.time() - started:.2f} s", flush=True)
                if len(answers) != len(pairs):
                    print(f"DISAGREE: {len(pairs)} pairs sent, {len(answers)} answers")
                    disagreements += 1
                    continue
                for (a, b), answer in zip(pairs, answers):
                    fields = answer.split("\t")
                    lca, main_lca, main_steps, all_steps = expected_pair(parents, ranks, a, b)
                    shown = main_lca if mode == "main" else lca
                    want = [str(a), str(b), str(shown), None, None, str(main_steps), str(all_steps)]
                    if len(fields) != 7 or any(w is not None and w != f for w, f in zip(want, fields)):
                        disagreements += 1
                        if disagreements <= 20:
                            print(f"DISAGREE --ranks {mode} {a} {b}: expected lca {shown} main {main_steps} "
                                  f"all {all_steps}, got {answer}")
            disagreements += check_singles_and_sets(args, parents, ranks, pairs, rng, scratch, client)
            disagreements += check_lineages_and_children(args, parents, ranks, rng, scratch, client)
        finally:
            server.terminate()
            server.wait()
    print(f"{len(pairs):,} pairs ({args.pairs:,} random, {args.pairs:,} near) in both rank modes on NCBI's whole "
          f"tree ({len(parents):,} nodes): {disagreements} disagreements")
    return 1 if disagreements else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", required=True, help="directory with stol-taxonomyd and stol-client (release build)")
    parser.add_argument("--database", required=True, help="the built database to check (e.g. out/reference.sqlite)")
    parser.add_argument("--pairs", type=int, default=None,
                        help="random pairs to check (default 10,000 plus as many near pairs on the whole tree; 500 otherwise)")
    parser.add_argument("--seed", type=int, default=2024, help="random seed (default 2024)")
    parser.add_argument("--singles", type=int, default=500,
                        help="pairs of the whole-tree check also asked one at a time and as sets of two (default 500)")
    parser.add_argument("--nodes-dmp", default=None,
                        help="NCBI's nodes.dmp: the expected answers come from it (and tree_nodes must equal it)")
    args = parser.parse_args()

    started = time.time()
    full_parents, full_ranks = load_full_tree(args.database)
    if full_parents is not None and args.nodes_dmp and os.path.exists(args.nodes_dmp):
        # Independent of the pipeline: the expected answers come from NCBI's own file,
        # and the database must hold the same tree.
        dmp_parents, dmp_ranks = load_nodes_dmp(args.nodes_dmp)
        if dmp_parents != full_parents or dmp_ranks != full_ranks:
            differing = [t for t in dmp_parents if full_parents.get(t, -1) != dmp_parents[t] or full_ranks.get(t) != dmp_ranks[t]]
            print(f"DISAGREE: the database's tree differs from {args.nodes_dmp} for {len(differing) + abs(len(dmp_parents) - len(full_parents))} "
                  f"nodes, e.g. {differing[:5]}")
            sys.exit(1)
        print(f"read {len(dmp_parents):,} nodes of {args.nodes_dmp}: the database holds the same tree", flush=True)
        full_parents, full_ranks = dmp_parents, dmp_ranks
    if full_parents is not None:
        args.pairs = args.pairs or 10000
        print(f"read {len(full_parents):,} nodes of the whole tree in {time.time() - started:.1f} s", flush=True)
        sys.exit(check_full_tree(args, full_parents, full_ranks, random.Random(args.seed)))
    parents = load_parents(args.database)
    args.pairs = args.pairs or 500
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

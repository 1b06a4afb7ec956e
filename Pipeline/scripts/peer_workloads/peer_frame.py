"""The pandas frame the peers' frame programs build, as `stol.lineage_frame(ids, ranks="all")` builds STOL's.

Issue 38's row "STOL python frame" compared like for like (`make bench-peers`): each peer's
program looks its lineages up its own fastest way, then fills the same columns through
`PeerFrame` (query, id, rank, name, lineage, the eight main ranks' names, error: one list per
column, then one DataFrame, the id column pandas' nullable Int64, as the package builds its
frame) and writes it with `write_frame`, with which stol_python_lineage_frame.py writes STOL's
too. pandas is the importing interpreter's: the peers' virtual environment's (bench_peers.py's
PINS), Debian's python3-pandas for STOL's.
"""
import pandas as pd

COLUMNS = ("domain", "kingdom", "phylum", "class", "order", "family", "genus", "species")
# NCBI spells the top rank superkingdom (domain since 2025): a peer's user reads either.
SPELLINGS = {"domain": ("superkingdom", "domain")}


class PeerFrame:
    """The frame's columns, appended to one lineage at a time."""

    def __init__(self):
        self.names = ["query", "id", "rank", "name", "lineage", *COLUMNS, "error"]
        self.columns = {name: [] for name in self.names}

    def add(self, query, taxid, rank, name, lineage_names, rank_names):
        """A lineage: its names root first, and {rank: name} of its nodes."""
        c = self.columns
        c["query"].append(query)
        c["id"].append(taxid)
        c["rank"].append(rank)
        c["name"].append(name)
        c["lineage"].append(";".join(lineage_names))
        for column in COLUMNS:  # no generator per cell where a column has one spelling, as the package fills them
            if column in SPELLINGS:
                c[column].append(next((rank_names[r] for r in SPELLINGS[column] if r in rank_names), None))
            else:
                c[column].append(rank_names.get(column))
        c["error"].append(None)

    def missing(self, query):
        c = self.columns
        c["query"].append(query)
        for column in ("id", "rank", "name", "lineage", *COLUMNS):
            c[column].append(None)
        c["error"].append("NOT_FOUND")

    def frame(self):
        frame = pd.DataFrame(self.columns, columns=self.names)
        frame["id"] = frame["id"].astype("Int64")
        return frame


def write_frame(frame, target):
    """One line per row as `stol-client lineage --ranks all --no-header` writes it, or query and the error."""
    with open(target, "w", encoding="utf-8") as out:
        for row in frame.itertuples(index=False):
            if row.error is not None:
                out.write(f"{row.query}\t{row.error}\t\n")
            else:
                out.write(f"{row.query}\t{row.id}\t{row.rank}\t{row.name}\t{row.lineage}\n")

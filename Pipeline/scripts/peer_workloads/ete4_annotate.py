"""ete4: taxonomy on the nodes of a Newick tree with NCBITaxa.annotate_tree, written back as Newick with NHX.

    python ete4_annotate.py TAXDUMP_DIR ETE_DB INPUT OUTPUT [--props PROPS]   (TAXDUMP_DIR unused)
    python ete4_annotate.py --read NEWICK PROPS [NEWICK PROPS ...]

The annotate workload of `make bench-peers`: one process opens ETE_DB (the taxa.sqlite that bench_peers.py builds
once from the same taxdump), reads the one Newick tree of INPUT with Tree(text, parser=1) (labels on leaves and
inner nodes are names; here taxids, and a few unknown labels), calls annotate_tree(t, taxid_attr="name",
ignore_unclassified=True) once and writes the tree to OUTPUT as a user would: t.write(parser=1, props=None), every
property of every node in NHX, keys sorted (common_name, lineage, named_lineage, rank, sci_name, taxid), the root
without its content (ete4's default, format_root_node=False).

--props PROPS (bench_peers.py's check run after the timed ones, not timed): the same, then also the properties the
annotated tree holds in memory (the root's included), one JSON object per node in preorder:
{"node": i, "parent": j or null, "label": name or "", "leaf": bool, "props": {common_name, lineage, named_lineage,
rank, sci_name, taxid: the values as ete4 holds them}}.

--read (also not timed; no database): each NEWICK (STOL's output) read with ete4's own parser, Tree(text,
parser=1), and its nodes written to PROPS in the same form: the properties as ete4 reads them from NHX (strings; a
node without them has none).
"""
import json
import sys

from ete4 import Tree

PROPS = ("common_name", "lineage", "named_lineage", "rank", "sci_name", "taxid")


def write_props(tree, path: str) -> None:
    index = {}
    with open(path, "w", encoding="utf-8") as out:
        for i, node in enumerate(tree.traverse("preorder")):
            index[id(node)] = i
            parent = node.up
            record = {"node": i, "parent": None if parent is None else index[id(parent)],
                      "label": node.name or "", "leaf": node.is_leaf,
                      "props": {key: node.props[key] for key in PROPS if key in node.props}}
            out.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")


def read_text(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read().strip()


if sys.argv[1:2] == ["--read"]:
    pairs = sys.argv[2:]
    if not pairs or len(pairs) % 2:
        sys.exit("usage: ete4_annotate.py --read NEWICK PROPS [NEWICK PROPS ...]")
    for newick, props in zip(pairs[0::2], pairs[1::2]):
        write_props(Tree(read_text(newick), parser=1), props)
    sys.exit(0)

from ete4 import NCBITaxa  # noqa: E402

_taxdump, ete_db, source, target = sys.argv[1:5]
ncbi = NCBITaxa(dbfile=ete_db, update=False)
tree = Tree(read_text(source), parser=1)
ncbi.annotate_tree(tree, taxid_attr="name", ignore_unclassified=True)
with open(target, "w", encoding="utf-8") as out:
    out.write(tree.write(parser=1, props=None) + "\n")
if sys.argv[5:6] == ["--props"]:
    write_props(tree, sys.argv[6])

#!/usr/bin/env python3
"""Check the curated ColDP source in Pipeline/curated/ against NCBI Taxonomy.

Structural checks (always):
  * each file is UTF-8 with '\\n' line ends, a header row with exactly the
    expected columns, no quoting, the same number of fields on every row;
  * NameUsage: unique IDs, numeric IDs for accepted rows and syn-N for
    synonyms, rows sorted by ID numerically (accepted first, then synonyms),
    each accepted row's parent present (the superkingdoms have an empty
    parentID), each synonym points to an accepted row and has its rank;
  * VernacularName: taxonID is an accepted ID, language from the allowed list,
    exactly one preferred name per (taxon, language), no duplicate names,
    rows sorted by taxonID;
  * TaxonProperty: taxonID is an accepted ID, known property, controlled
    values, numeric body_length with unit mm or m, reference in Reference.tsv;
  * Reference: unique IDs, type from the allowed list;
  * OtherName: numeric taxonID (any NCBI taxon, not only the curated ones: the
    acronyms of viruses the bundled selection then keeps), a class of NCBI's
    names.dmp that is no scientific or common name, a source for every row, no
    duplicate (taxon, name, class), rows sorted by taxonID.

NCBI checks (unless --structure-only): every accepted ID exists in the NCBI
taxdump converted by ncbi_taxdump_from_pypi.py, with the same parent taxid,
rank and scientific name; a row with an empty parentID must be an NCBI
superkingdom directly below 'cellular organisms' (131567); every OtherName
taxonID exists in NCBI.

Exit status: 0 if every check passes, 1 if any fails, 2 if an input is missing.
"""

from __future__ import annotations

import argparse
import collections
import re
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]

COLUMNS = {
    "NameUsage.tsv": ["ID", "parentID", "status", "rank", "scientificName", "authorship"],
    "VernacularName.tsv": ["taxonID", "name", "language", "preferred"],
    "TaxonProperty.tsv": ["taxonID", "property", "value", "unit", "reference"],
    "Reference.tsv": ["ID", "citation", "link", "type"],
    "OtherName.tsv": ["taxonID", "name", "class", "source"],
}
#: names.dmp classes OtherName.tsv may carry (the pipeline's ColDPReader reads the same).
OTHER_NAME_CLASSES = {"acronym", "genbank acronym", "equivalent name", "synonym", "genbank synonym", "anamorph",
                      "genbank anamorph", "teleomorph", "includes", "in-part", "misspelling", "misnomer"}
LANGUAGES = {"eng", "spa", "fra", "deu", "ita", "por", "nld", "rus", "zho", "jpn", "ara", "hin"}
REFERENCE_TYPES = {"taxonomy", "ecology", "morphology", "conservation", "other"}
IUCN = {"LC", "NT", "VU", "EN", "CR", "EW", "EX", "DD"}
HABITATS = {"forest", "savanna", "grassland", "desert", "marine", "freshwater", "wetland", "mountain",
            "tundra", "urban", "soil", "host-associated"}
DIETS = {"carnivore", "herbivore", "omnivore", "insectivore", "piscivore", "photosynthetic", "saprotroph",
         "chemoautotroph", "parasite"}
CELLULAR_ORGANISMS = 131567


class Checker:
    def __init__(self) -> None:
        self.errors: list[str] = []

    def error(self, msg: str) -> None:
        self.errors.append(msg)
        if len(self.errors) <= 200:
            print(f"ERROR: {msg}", file=sys.stderr)


def read_tsv(path: Path, chk: Checker) -> list[dict[str, str]]:
    name = path.name
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        chk.error(f"{name}: not UTF-8 ({e})")
        return []
    if raw.startswith(b"\xef\xbb\xbf"):
        chk.error(f"{name}: has a byte-order mark")
    if "\r" in text:
        chk.error(f"{name}: contains carriage returns (lines must end with \\n)")
    if not text.endswith("\n"):
        chk.error(f"{name}: last line does not end with \\n")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not lines:
        chk.error(f"{name}: empty file")
        return []
    header = lines[0].split("\t")
    if header != COLUMNS[name]:
        chk.error(f"{name}: header {header} != {COLUMNS[name]}")
        return []
    rows = []
    for n, line in enumerate(lines[1:], start=2):
        fields = line.split("\t")
        if len(fields) != len(header):
            chk.error(f"{name}:{n}: {len(fields)} fields, expected {len(header)}")
            continue
        if any(f != f.strip() for f in fields):
            chk.error(f"{name}:{n}: leading or trailing whitespace in a field")
        if any('"' in f for f in fields):
            chk.error(f"{name}:{n}: double quote in a field (files are unquoted)")
        row = dict(zip(header, fields))
        row["_line"] = str(n)
        rows.append(row)
    return rows


def id_sort_key(value: str) -> tuple[int, int]:
    if value.isdigit():
        return (0, int(value))
    m = re.fullmatch(r"syn-(\d+)", value)
    if m:
        return (1, int(m.group(1)))
    return (2, 0)


def check_sorted(rows: list[dict[str, str]], column: str, fname: str, chk: Checker) -> None:
    keys = [id_sort_key(r[column]) for r in rows]
    for i in range(1, len(keys)):
        if keys[i] < keys[i - 1]:
            chk.error(f"{fname}:{rows[i]['_line']}: rows not sorted by {column} numerically "
                      f"({rows[i - 1][column]} before {rows[i][column]})")
            return


def load_ncbi(taxdump: Path, wanted: set[int]) -> tuple[dict[int, tuple[int, str]], dict[int, str]]:
    nodes: dict[int, tuple[int, str]] = {}
    with open(taxdump / "nodes.dmp", encoding="utf-8") as fh:
        for line in fh:
            f = line.rstrip("\n").removesuffix("\t|").split("\t|\t")
            tid = int(f[0])
            if tid in wanted:
                nodes[tid] = (int(f[1]), f[2])
    names: dict[int, str] = {}
    with open(taxdump / "names.dmp", encoding="utf-8") as fh:
        for line in fh:
            f = line.rstrip("\n").removesuffix("\t|").split("\t|\t")
            if f[3] == "scientific name":
                tid = int(f[0])
                if tid in wanted:
                    names[tid] = f[1]
    return nodes, names


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(
        description="Check Pipeline/curated/ (ColDP TSV) for consistency and against the NCBI taxdump "
                    "produced by Pipeline/scripts/ncbi_taxdump_from_pypi.py.")
    ap.add_argument("--curated", type=Path, default=REPO_ROOT / "Pipeline" / "curated",
                    help="directory with the ColDP TSV files (default: %(default)s)")
    ap.add_argument("--taxdump", type=Path, default=REPO_ROOT / ".cache" / "ncbi" / "taxdump",
                    help="directory with nodes.dmp and names.dmp (default: %(default)s)")
    ap.add_argument("--structure-only", action="store_true",
                    help="skip the comparison with NCBI (no taxdump needed)")
    args = ap.parse_args(argv)

    chk = Checker()
    tables = {}
    for fname in COLUMNS:
        path = args.curated / fname
        if not path.exists():
            print(f"ERROR: missing {path}", file=sys.stderr)
            return 2
        tables[fname] = read_tsv(path, chk)

    # --- Reference
    refs = tables["Reference.tsv"]
    ref_ids = set()
    for r in refs:
        if r["ID"] in ref_ids:
            chk.error(f"Reference.tsv:{r['_line']}: duplicate ID {r['ID']}")
        ref_ids.add(r["ID"])
        if r["type"] not in REFERENCE_TYPES:
            chk.error(f"Reference.tsv:{r['_line']}: type {r['type']!r} not in {sorted(REFERENCE_TYPES)}")
        if not r["citation"]:
            chk.error(f"Reference.tsv:{r['_line']}: empty citation")

    # --- NameUsage
    usage = tables["NameUsage.tsv"]
    check_sorted(usage, "ID", "NameUsage.tsv", chk)
    accepted: dict[int, dict[str, str]] = {}
    synonyms = []
    seen_ids = set()
    for r in usage:
        loc = f"NameUsage.tsv:{r['_line']}"
        if r["ID"] in seen_ids:
            chk.error(f"{loc}: duplicate ID {r['ID']}")
        seen_ids.add(r["ID"])
        if not r["scientificName"] or not r["rank"]:
            chk.error(f"{loc}: empty scientificName or rank")
        if r["status"] == "accepted":
            if not r["ID"].isdigit():
                chk.error(f"{loc}: accepted ID {r['ID']!r} is not an NCBI taxid")
                continue
            if r["parentID"] and not r["parentID"].isdigit():
                chk.error(f"{loc}: parentID {r['parentID']!r} is not numeric")
            accepted[int(r["ID"])] = r
        elif r["status"] == "synonym":
            if not re.fullmatch(r"syn-\d+", r["ID"]):
                chk.error(f"{loc}: synonym ID {r['ID']!r} is not syn-<number>")
            synonyms.append(r)
        else:
            chk.error(f"{loc}: status {r['status']!r} is neither accepted nor synonym")
    roots = []
    for tid, r in accepted.items():
        if not r["parentID"]:
            roots.append(tid)
            if r["rank"] != "superkingdom":
                chk.error(f"NameUsage.tsv:{r['_line']}: {tid} has no parent but rank {r['rank']!r}")
        elif int(r["parentID"]) not in accepted:
            chk.error(f"NameUsage.tsv:{r['_line']}: parent {r['parentID']} of {tid} is not an accepted row")
    # every accepted row must reach a root without cycles
    for tid in accepted:
        seen, cur = set(), tid
        while accepted.get(cur) and accepted[cur]["parentID"]:
            if cur in seen:
                chk.error(f"NameUsage.tsv: cycle through {tid}")
                break
            seen.add(cur)
            cur = int(accepted[cur]["parentID"])
    acc_names = collections.Counter((r["scientificName"], r["rank"]) for r in accepted.values())
    for (n, rank), c in acc_names.items():
        if c > 1:
            chk.error(f"NameUsage.tsv: accepted name {n!r} ({rank}) appears {c} times")
    acc_name_set = {r["scientificName"] for r in accepted.values()}
    syn_names = set()
    for r in synonyms:
        loc = f"NameUsage.tsv:{r['_line']}"
        if not r["parentID"].isdigit() or int(r["parentID"]) not in accepted:
            chk.error(f"{loc}: synonym {r['scientificName']!r} points to {r['parentID']!r}, not an accepted ID")
            continue
        target = accepted[int(r["parentID"])]
        if r["rank"] != target["rank"]:
            chk.error(f"{loc}: synonym rank {r['rank']!r} != accepted rank {target['rank']!r}")
        if r["scientificName"] in acc_name_set:
            chk.error(f"{loc}: synonym {r['scientificName']!r} is also an accepted name")
        if r["scientificName"] in syn_names:
            chk.error(f"{loc}: duplicate synonym {r['scientificName']!r}")
        syn_names.add(r["scientificName"])

    # --- VernacularName
    vern = tables["VernacularName.tsv"]
    check_sorted(vern, "taxonID", "VernacularName.tsv", chk)
    preferred = collections.Counter()
    groups = collections.Counter()
    seen_v = set()
    for r in vern:
        loc = f"VernacularName.tsv:{r['_line']}"
        if not r["taxonID"].isdigit() or int(r["taxonID"]) not in accepted:
            chk.error(f"{loc}: taxonID {r['taxonID']!r} is not an accepted ID")
            continue
        if r["language"] not in LANGUAGES:
            chk.error(f"{loc}: language {r['language']!r} not in {sorted(LANGUAGES)}")
        if r["preferred"] not in ("true", ""):
            chk.error(f"{loc}: preferred must be 'true' or empty, got {r['preferred']!r}")
        if not r["name"]:
            chk.error(f"{loc}: empty name")
        key = (r["taxonID"], r["language"])
        groups[key] += 1
        if r["preferred"] == "true":
            preferred[key] += 1
        if (key, r["name"]) in seen_v:
            chk.error(f"{loc}: duplicate name {r['name']!r}")
        seen_v.add((key, r["name"]))
    for key in groups:
        if preferred[key] != 1:
            chk.error(f"VernacularName.tsv: taxon {key[0]} language {key[1]} has {preferred[key]} preferred names")

    # --- TaxonProperty
    props = tables["TaxonProperty.tsv"]
    check_sorted(props, "taxonID", "TaxonProperty.tsv", chk)
    single = collections.Counter()
    seen_p = set()
    for r in props:
        loc = f"TaxonProperty.tsv:{r['_line']}"
        if not r["taxonID"].isdigit() or int(r["taxonID"]) not in accepted:
            chk.error(f"{loc}: taxonID {r['taxonID']!r} is not an accepted ID")
            continue
        p, v, u = r["property"], r["value"], r["unit"]
        if (r["taxonID"], p, v) in seen_p:
            chk.error(f"{loc}: duplicate row")
        seen_p.add((r["taxonID"], p, v))
        if p == "iucn":
            ok = v in IUCN and u == ""
        elif p == "habitat":
            ok = v in HABITATS and u == ""
        elif p == "diet":
            ok = v in DIETS and u == ""
        elif p == "body_length":
            try:
                ok = float(v) > 0 and u in ("mm", "m")
            except ValueError:
                ok = False
        else:
            chk.error(f"{loc}: unknown property {p!r}")
            continue
        if not ok:
            chk.error(f"{loc}: bad value/unit {v!r}/{u!r} for {p}")
        if p in ("iucn", "diet", "body_length"):
            single[(r["taxonID"], p)] += 1
            if single[(r["taxonID"], p)] > 1:
                chk.error(f"{loc}: more than one {p} for {r['taxonID']}")
        if r["reference"] and r["reference"] not in ref_ids:
            chk.error(f"{loc}: reference {r['reference']!r} not in Reference.tsv")

    # --- OtherName
    others = tables["OtherName.tsv"]
    check_sorted(others, "taxonID", "OtherName.tsv", chk)
    other_ids: set[int] = set()
    seen_others = set()
    for r in others:
        loc = f"OtherName.tsv:{r['_line']}"
        if not r["taxonID"].isdigit():
            chk.error(f"{loc}: taxonID {r['taxonID']!r} is not an NCBI taxid")
            continue
        other_ids.add(int(r["taxonID"]))
        if r["class"] not in OTHER_NAME_CLASSES:
            chk.error(f"{loc}: class {r['class']!r} not in {sorted(OTHER_NAME_CLASSES)}")
        if not r["name"] or not r["source"]:
            chk.error(f"{loc}: empty name or source")
        key = (r["taxonID"], r["name"], r["class"])
        if key in seen_others:
            chk.error(f"{loc}: duplicate {key}")
        seen_others.add(key)

    # --- NCBI
    if not args.structure_only:
        if not (args.taxdump / "nodes.dmp").exists() or not (args.taxdump / "names.dmp").exists():
            print(f"ERROR: no nodes.dmp/names.dmp in {args.taxdump}; run "
                  f"Pipeline/scripts/ncbi_taxdump_from_pypi.py first (or use --structure-only)", file=sys.stderr)
            return 2
        wanted = set(accepted) | {CELLULAR_ORGANISMS} | other_ids
        nodes, names = load_ncbi(args.taxdump, wanted)
        for tid in sorted(other_ids - set(nodes)):
            chk.error(f"OtherName.tsv: taxid {tid} not in NCBI")
        for tid, r in accepted.items():
            loc = f"NameUsage.tsv:{r['_line']}"
            if tid not in nodes:
                chk.error(f"{loc}: taxid {tid} not in NCBI")
                continue
            parent, rank = nodes[tid]
            if r["parentID"]:
                if int(r["parentID"]) != parent:
                    chk.error(f"{loc}: {tid} parent {r['parentID']} != NCBI parent {parent}")
            elif parent != CELLULAR_ORGANISMS:
                chk.error(f"{loc}: {tid} has empty parentID but NCBI parent is {parent}")
            if r["rank"] != rank:
                chk.error(f"{loc}: {tid} rank {r['rank']!r} != NCBI rank {rank!r}")
            if r["scientificName"] != names.get(tid):
                chk.error(f"{loc}: {tid} name {r['scientificName']!r} != NCBI name {names.get(tid)!r}")

    n_species = sum(1 for r in accepted.values() if r["rank"] == "species")
    print(f"NameUsage.tsv: {len(accepted)} accepted ({n_species} species, {len(roots)} superkingdoms), "
          f"{len(synonyms)} synonyms")
    print(f"VernacularName.tsv: {len(vern)} names, {len(groups)} taxon/language pairs")
    print(f"TaxonProperty.tsv: {len(props)} rows; Reference.tsv: {len(refs)} rows; OtherName.tsv: {len(others)} names "
          f"of {len(other_ids)} taxa")
    if not args.structure_only:
        print(f"NCBI: compared {len(accepted)} accepted taxa with {args.taxdump}")
    if chk.errors:
        print(f"check_curated: FAILED with {len(chk.errors)} error(s)", file=sys.stderr)
        return 1
    print("check_curated: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

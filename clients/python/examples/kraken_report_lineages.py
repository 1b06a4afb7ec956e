#!/usr/bin/env python3
"""Adds a lineage column to a Kraken-style report, from the STOL taxonomy service.

A Kraken (Kraken 2, Bracken, KrakenUniq) report is tab-separated: percent, clade
reads, direct reads, rank code, taxid, name (indented), with optional columns
before the rank code (``--report-minimizer-data``). This prints every line with
one more column: the lineage of its taxid, root first, the taxon last,
``;``-separated (``Eukaryota;Metazoa;...;Panthera;Panthera leo``). Unclassified
(taxid 0) and taxids the database lacks get an empty column; lines that are not
data (``#`` comments, a header) are printed unchanged.

    python3 kraken_report_lineages.py sample.kreport > sample.lineages.tsv
    python3 kraken_report_lineages.py --ranks all --ids sample.kreport
    python3 kraken_report_lineages.py --release 2024.9.7 - < sample.kreport
    python3 kraken_report_lineages.py --database /shared/stol/reference.sqlite sample.kreport

The lineages of the whole report are fetched in batches of 1000 with several
requests in flight, all from one release (named on standard error).
"""

import argparse
import sys

import stol


def is_data(fields):
    """Whether a report line is a data line: at least six columns, a taxid before the name."""
    return len(fields) >= 6 and fields[-2].strip().isdigit()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("report", help="the Kraken report ('-' for standard input)")
    parser.add_argument("--ranks", choices=("main", "all"), default="main",
                        help="main: the eight main ranks (default); all: NCBI's whole tree")
    parser.add_argument("--ids", action="store_true", help="the lineage as taxids instead of names")
    parser.add_argument("--release", help="answer from this installed release (default: the default release)")
    parser.add_argument("--database", help="a .sqlite database: answer from your private stack on it, started when "
                        "none runs (no root, no system service: a cluster node, CI)")
    args = parser.parse_args(argv)

    source = sys.stdin if args.report == "-" else open(args.report, encoding="utf-8")
    with source:
        rows = [line.rstrip("\n").split("\t") for line in source]
    taxids = [fields[-2].strip() for fields in rows if is_data(fields)]

    not_found = 0
    release = None
    try:
        with stol.Taxonomy(release=args.release, database=args.database) as taxonomy:
            lineages = taxonomy.lineage(taxids, ranks=args.ranks)  # an iterator, in report order
            out = sys.stdout
            for fields in rows:
                if not is_data(fields):
                    out.write("\t".join(fields) + "\n")
                    continue
                lineage = next(lineages)
                release = lineage.release
                if lineage.error is None:
                    column = ";".join(str(i) for i in lineage.ids) if args.ids else str(lineage)
                else:
                    column = ""
                    not_found += lineage.query != "0"  # 0 is Kraken's "unclassified"
                out.write("\t".join(fields + [column]) + "\n")
    except stol.StolError as error:  # the service is not running, a release not installed, ...
        print("kraken_report_lineages: %s" % error, file=sys.stderr)
        return 5 if isinstance(error, (stol.StolConnectionError, stol.UnavailableError, stol.BusyError)) else 1
    print("# lineages from STOL release %s; %d of %d taxids not found"
          % (release or "-", not_found, len(taxids)), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

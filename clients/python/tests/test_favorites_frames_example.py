"""``stol.Favorites``, the pandas helper and the Kraken example against the real
daemons, checked against ``stol-client``."""

from __future__ import annotations

import datetime
import os
import subprocess
import sys
import tempfile
import time
import unittest

import _stack

import stol

STACK = None


def setUpModule():
    global STACK
    STACK = _stack.start()


def tearDownModule():
    if STACK is not None:
        STACK.close()


class FavoritesRoundTrip(unittest.TestCase):
    def setUp(self):
        self.favorites = stol.Favorites(runtime_dir=STACK.runtime)
        self.addCleanup(self.favorites.close)
        self.favorites.clear()

    def test_add_list_remove(self):
        favorites = self.favorites
        self.assertEqual(favorites.list(), [])
        self.assertTrue(favorites.add(9689))
        self.assertFalse(favorites.add(9689))  # already there: no change
        time.sleep(0.01)  # times have milliseconds; equal times list by id
        self.assertTrue(favorites.add(9694))
        time.sleep(0.01)
        self.assertTrue(favorites.add(123456789))  # ids are not checked against the taxonomy

        listed = favorites.list()
        self.assertEqual([f.taxon_id for f in listed], [123456789, 9694, 9689])  # newest first
        cli = STACK.cli_json("fav", "list")
        self.assertEqual([e["taxon_id"] for e in cli["entries"]], [f.taxon_id for f in listed])
        self.assertEqual([e["created_at"] for e in cli["entries"]],
                         [f.created_at.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (f.created_at.microsecond // 1000)
                          for f in listed])
        self.assertTrue(all(f.created_at.tzinfo is datetime.timezone.utc for f in listed))
        self.assertIn(9689, favorites)
        self.assertEqual(len(favorites), 3)
        self.assertEqual(STACK.cli_json("fav", "count")["count"], 3)

        with stol.Taxonomy(runtime_dir=STACK.runtime) as taxonomy:
            named = favorites.list(taxonomy)
        self.assertEqual([f.taxon.name if f.taxon else None for f in named], [None, "Panthera tigris", "Panthera leo"])
        self.assertEqual([e.get("scientific_name") for e in cli["entries"]], [None, "Panthera tigris", "Panthera leo"])

        self.assertTrue(favorites.remove(9689))
        self.assertFalse(favorites.remove(9689))
        self.assertFalse(STACK.cli_json("fav", "is", "9689")["is_favorite"])
        self.assertNotIn(9689, favorites)
        self.assertEqual(favorites.ids(), [123456789, 9694])
        self.assertGreater(favorites.storage_bytes(), 0)
        self.assertEqual(favorites.clear(), 2)
        self.assertEqual(favorites.count(), 0)

    def test_changes_by_the_cli_are_seen_and_toggle(self):
        self.assertEqual(STACK.cli("fav", "add", "9690").returncode, 0)
        self.assertEqual(list(self.favorites), [9690])
        self.assertFalse(self.favorites.toggle(9690))
        self.assertTrue(self.favorites.toggle(9690))
        self.assertTrue(STACK.cli_json("fav", "is", "9690")["is_favorite"])

    def test_invalid_ids_are_typed_errors(self):
        for bad in (0, -1, (1 << 53) + 1, 1 << 70):
            with self.subTest(taxon_id=bad):
                with self.assertRaises(stol.InvalidRequestError) as caught:
                    self.favorites.add(bad)
                self.assertEqual(caught.exception.code, 1)
        self.assertEqual(self.favorites.count(), 0)  # the connection stays usable

    def test_a_name_or_other_non_id_is_a_typed_error_saying_how_to_find_the_id(self):
        with self.assertRaises(stol.InvalidRequestError) as caught:
            self.favorites.add("lion")
        self.assertIn("resolve_name('lion')", str(caught.exception))
        for bad in ("9689.5", None, [9689], True):
            with self.subTest(value=bad), self.assertRaises(stol.InvalidRequestError):
                self.favorites.toggle(bad)
        # Ids as text or as an integral float (a pandas column with a missing value) are ids.
        self.assertTrue(self.favorites.add(" 9689 "))
        self.assertTrue(self.favorites.add(9694.0))
        self.assertEqual(sorted(self.favorites), [9689, 9694])
        self.assertTrue(self.favorites.remove("9694"))
        self.assertEqual(list(self.favorites), [9689])

    def test_forget_me(self):
        self.favorites.add(9689)
        self.favorites.forget_me()
        self.assertEqual(self.favorites.storage_bytes(), 0)
        self.assertEqual(self.favorites.list(), [])


class LineageFrame(unittest.TestCase):
    """pandas is optional for the package, not for its tests: `make test` installs python3-pandas."""

    def test_a_column_of_ids_in_a_frame_of_lineages_out(self):
        import pandas as pd
        ids = pd.Series([9689, 9694, 424242, 9688], index=["a", "b", "c", "d"], name="taxid")
        with stol.Taxonomy(runtime_dir=STACK.runtime) as taxonomy:
            frame = stol.lineage_frame(ids, taxonomy)
            expected = [taxonomy.lineage(i) for i in (9689, 9694)]
        self.assertEqual(list(frame.index), ["a", "b", "c", "d"])
        self.assertEqual(frame.loc["a", "lineage"], str(expected[0]))
        self.assertEqual(frame.loc["b", "genus"], "Panthera")
        self.assertEqual(frame.loc["b", "species"], "Panthera tigris")
        self.assertEqual(frame.loc["c", "error"], "NOT_FOUND")
        self.assertTrue(pd.isna(frame.loc["c", "id"]))
        self.assertTrue(pd.isna(frame.loc["d", "species"]))
        self.assertEqual(frame.loc["d", "rank"], "genus")
        self.assertEqual(str(frame["id"].dtype), "Int64")
        self.assertEqual(set(frame["release"]), {expected[0].release})

    def test_columns_are_read_through_the_rank_table_and_one_that_names_no_rank_is_an_error(self):
        with stol.Taxonomy(runtime_dir=STACK.runtime) as taxonomy:
            main = stol.lineage_frame([9694], taxonomy)
            spelled = stol.lineage_frame([9694], taxonomy, columns=["superkingdom", "Genus", "species"])
            self.assertIsNotNone(main.loc[0, "domain"])
            self.assertEqual(spelled.loc[0, "superkingdom"], main.loc[0, "domain"], "superkingdom is the domain's spelling")
            self.assertEqual(spelled.loc[0, "Genus"], "Panthera", "rank names in any case")
            for bad in (["genuss"], ["strain"], ["species", "famly"]):
                with self.subTest(columns=bad), self.assertRaises(stol.InvalidRequestError) as caught:
                    stol.lineage_frame([9694], taxonomy, columns=bad)
                self.assertIn("domain, kingdom", str(caught.exception), "the valid columns are listed")
            whole = stol.lineage_frame([9694], taxonomy, ranks="all", columns=["domain", "superkingdom", "genus"])
            self.assertIsNotNone(whole.loc[0, "domain"])
            self.assertEqual(whole.loc[0, "domain"], whole.loc[0, "superkingdom"], "one level, either spelling")
            self.assertEqual(whole.loc[0, "genus"], "Panthera")
            with self.assertRaises(stol.InvalidRequestError):
                stol.lineage_frame([9694], taxonomy, ranks="all", columns=["genuss"])
            twice = stol.lineage_frame([9694, 9689], taxonomy, columns=["genus", "species", "genus"])
            self.assertEqual(list(twice.columns).count("genus"), 1, "a column named twice is one column")
            self.assertEqual(list(twice["species"]), ["Panthera tigris", "Panthera leo"])

    def test_the_columns_are_the_services_rule_checked_before_any_row_also_for_no_ids(self):
        """Which rank fills a column is the service's (`lineage_batch`'s `columns`): a bad column is
        refused by it, also when there is no id to look up; an answer without the column ids (a
        service older than the package) is said to be one, not read as empty columns."""
        from stol._proto import taxonomy_pb2 as pb
        from stol.frames import _FrameRows
        with stol.Taxonomy(runtime_dir=STACK.runtime) as taxonomy:
            with self.assertRaises(stol.InvalidRequestError) as caught:
                stol.lineage_frame([], taxonomy, columns=["genus", "genuss"])
            self.assertEqual(caught.exception.details.get("column"), "genuss")
            empty = stol.lineage_frame([], taxonomy, ranks="all", columns=["superkingdom", "genus"])
        self.assertEqual(len(empty), 0)
        self.assertEqual(list(empty.columns), ["query", "id", "rank", "name", "lineage", "superkingdom", "genus",
                                               "release", "error"])
        answer = pb.LineageBatchResponse()
        result = answer.results.add(query="9689")
        result.taxon.id, result.taxon.scientific_name, result.taxon.source_rank = 9689, "Panthera leo", "species"
        rows = _FrameRows(2, False)
        with self.assertRaises(stol.ProtocolViolationError) as caught:
            rows.reader(answer)(result, "bundled")
        self.assertIn("0 column ids for 2 columns", str(caught.exception))

    def test_rank_ids_gives_each_ranks_taxon_id_beside_its_name(self):
        import pandas as pd
        with stol.Taxonomy(runtime_dir=STACK.runtime) as taxonomy:
            frame = stol.lineage_frame([9694, 10090, "no such taxon"], taxonomy, rank_ids=True)
            for row in range(2):
                for rank in stol.MAIN_RANKS:
                    taxon_id, name = frame.loc[row, rank + "_id"], frame.loc[row, rank]
                    with self.subTest(row=row, rank=rank):
                        self.assertFalse(pd.isna(taxon_id))
                        self.assertEqual(taxonomy.taxon(int(taxon_id)).name, name, "the id names the column's taxon")
            self.assertEqual(int(frame.loc[0, "genus_id"]), 9688)
            self.assertTrue(pd.isna(frame.loc[2, "genus_id"]))
            self.assertEqual(str(frame["genus_id"].dtype), "Int64")
            self.assertNotIn("genus_id", stol.lineage_frame([9694], taxonomy).columns, "only when asked for")


    def test_each_row_is_the_lineage_the_lineage_objects_give_on_every_taxon(self):
        """Every taxon of the database on both rank views, columns of one and of several
        spellings (domain and superkingdom are one level: the default `domain` column on the
        whole tree was empty on NCBI's superkingdom), ranks a lineage lacks, rank ids, a
        name, an unknown id, a bad query and Kraken's 0: each row's cells are the ones the
        Lineage objects give."""
        import pandas as pd
        with stol.Taxonomy(runtime_dir=STACK.runtime) as taxonomy:
            every, todo = [], [t.id for t in taxonomy.roots()]
            while todo:
                taxon_id = todo.pop()
                every.append(taxon_id)
                todo.extend(t.id for t in taxonomy.children(taxon_id, ranks="all"))
            self.assertGreater(len(every), 1500, "the curated tree, ranks in between included")
            queries = every + ["Panthera leo", "424242", "0", "not an id;", "0"]
            for ranks, columns in (("all", None), ("all", ["domain", "superkingdom", "genus", "subfamily", "strain"]),
                                   ("main", None), ("main", ["superkingdom", "Genus"])):
                with self.subTest(ranks=ranks, columns=columns):
                    frame = stol.lineage_frame(queries, taxonomy, ranks=ranks, columns=columns, rank_ids=True)
                    names = list(dict.fromkeys(stol.MAIN_RANKS if columns is None else columns))
                    for position, lineage in enumerate(taxonomy.lineage(queries, ranks=ranks)):
                        row = frame.iloc[position]
                        self.assertEqual(row["query"], lineage.query)
                        if lineage.error is not None:
                            self.assertEqual(row["error"], lineage.error.code_name)
                            self.assertTrue(pd.isna(row["id"]) and row["lineage"] is None)
                            continue
                        got = (int(row["id"]), row["rank"], row["name"], row["lineage"], row["release"])
                        self.assertEqual(got, (lineage.taxon.id, lineage.taxon.rank, lineage.taxon.name, str(lineage),
                                               lineage.release), lineage.query)
                        for column in names:
                            spelled = ("superkingdom", "domain") if column.lower() in ("domain", "superkingdom") \
                                else (column.lower(),)
                            rank = next((r for r in spelled if r in lineage.rank_names), None)
                            cell, cell_id = row[column], row[column + "_id"]
                            self.assertEqual(None if pd.isna(cell) else cell, lineage.rank_names.get(rank),
                                             (lineage.query, column))
                            self.assertEqual(None if pd.isna(cell_id) else int(cell_id), lineage.rank_ids.get(rank),
                                             (lineage.query, column))
                    genus = next(column for column in names if column.lower() == "genus")
                    self.assertGreater(frame[genus].notna().sum(), 300, "columns are filled")
                    self.assertGreater(frame[names[0]].notna().sum(), 1000, "the top level too, in either spelling")


class KrakenExample(unittest.TestCase):
    SCRIPT = os.path.join(_stack.PACKAGE_ROOT, "examples", "kraken_report_lineages.py")

    def test_adds_the_lineage_column(self):
        report = ("# a comment line\n"
                  " 40.00\t400\t400\tU\t0\tunclassified\n"
                  " 30.00\t300\t10\tG\t9688\t          Panthera\n"
                  " 20.00\t200\t200\tS\t9689\t            Panthera leo\n"
                  " 10.00\t100\t100\tS\t424242\t            Unknownia nihil\n"
                  "  5.00\t50\t50\t500\t40\t2\tS\t9694\t            Panthera tigris\n")  # minimizer columns
        with tempfile.NamedTemporaryFile("w", suffix=".kreport", delete=False) as file:
            file.write(report)
        self.addCleanup(os.unlink, file.name)
        env = dict(STACK.env, PYTHONPATH=_stack.PACKAGE_ROOT)
        result = subprocess.run([sys.executable, self.SCRIPT, file.name], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
        self.assertEqual(result.returncode, 0, result.stderr)
        lines = result.stdout.splitlines()
        self.assertEqual(len(lines), 6)
        self.assertEqual(lines[0], "# a comment line")
        columns = [line.split("\t") for line in lines[1:]]
        with stol.Taxonomy(runtime_dir=STACK.runtime) as taxonomy:
            expected = {i: str(taxonomy.lineage(i)) for i in (9688, 9689, 9694)}
        self.assertEqual(columns[0][-1], "")
        self.assertEqual(columns[1][-1], expected[9688])
        self.assertEqual(columns[2][-1], expected[9689])
        self.assertEqual(columns[3][-1], "")
        self.assertEqual(columns[4][-1], expected[9694])
        self.assertEqual(columns[2][:-1], report.splitlines()[3].split("\t"))
        self.assertIn("1 of 5 taxids not found", result.stderr)

        cli = STACK.cli("lineage", "--no-header", stdin="9689\n")
        self.assertEqual(cli.stdout.rstrip("\n").split("\t")[-1], expected[9689])

    def test_no_service_is_one_sentence(self):
        env = dict(os.environ, PYTHONPATH=_stack.PACKAGE_ROOT, STOL_RUNTIME_DIR=tempfile.gettempdir() + "/nowhere")
        result = subprocess.run([sys.executable, self.SCRIPT, "-"], input=" 1\t1\t1\tS\t9689\tx\n", env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
        self.assertEqual(result.returncode, 5)
        self.assertIn("is not running", result.stderr)
        self.assertNotIn("Traceback", result.stderr)


if __name__ == "__main__":
    unittest.main()

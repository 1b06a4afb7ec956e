"""``Taxonomy.resolve_name`` against the real daemons: what a person typed to name one
taxon, resolved by the service (``resolve_name``) as ``stol-client fav`` resolves the
names it is given: the same taxon, the same candidates of an ambiguous name, the same
suggestions of a name no taxon carries, for names of every rank the served database
has, their common names, misspellings and unfinished last words. The rules themselves
are pinned on the server (``ResolveNameTests``)."""

from __future__ import annotations

import json
import random
import unittest

import _samples
import _stack

import stol

STACK = None
TX = None


def setUpModule():
    global STACK, TX
    STACK, TX = _stack.module_setup()  # a StackUnavailable in STACK: the daemon classes fail, the others run


def tearDownModule():
    _stack.module_teardown(STACK, TX)


class Offline(unittest.TestCase):
    def test_anUnknownMainRank_raisesBeforeAnyRequest(self):
        tx = stol.Taxonomy(socket_path="/nonexistent/stol-taxonomy.sock", timeout=5)
        with self.assertRaises(stol.InvalidRequestError):
            tx.resolve_name("lion", rank="subfamily")


class AgainstTheClient(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not isinstance(STACK, _stack.Stack):
            raise STACK

    def names(self):
        """Names people type: scientific names of every rank, common names, a letter
        dropped, the last word cut short, and a few made up."""
        rng = random.Random(12)
        nodes = _samples.tree_nodes(TX)
        ids = _samples.sample_ids(TX, per_rank=3)
        names = [nodes[i][1] for i in ids if i in nodes]
        common = [t.common_name for t in TX.taxa([i for i in ids if i in nodes]).values() if t.common_name]
        typos = [name[:k] + name[k + 1:] for name in rng.sample(names, min(15, len(names))) for k in [len(name) // 2]]
        started = [name[:-2] for name in names if " " in name and len(name.split()[-1]) > 3][:10]
        return names + common + typos + started + ["mouse", "oak", "zzqqxxvv", "9606", " 9689 ", "424242"]

    def test_sameTaxonCandidatesAndSuggestions_asTheClientsFav(self):
        seen = {"one": 0, "ambiguous": 0, "not_found": 0}
        for name in self.names():
            words = name.split()
            if not words:
                continue
            cli = STACK.cli("fav", "is", *words, "--json")
            ours = TX.resolve_name(name)
            with self.subTest(name=name):
                seen[ours.resolution] += 1
                if cli.returncode == 0:
                    self.assertEqual(ours.resolution, "one")
                    self.assertEqual(ours.taxon_id, json.loads(cli.stdout)["taxon_id"])
                    continue
                details = json.loads(cli.stderr)["error"].get("details", {})
                if cli.returncode == 6:
                    self.assertEqual(ours.resolution, "ambiguous")
                    self.assertEqual([c.id for c in ours.candidates], [int(i) for i in details["candidates"].split(",")])
                    self.assertGreater(ours.total_candidates, 1)
                else:
                    self.assertEqual(cli.returncode, 3, cli.stderr)
                    self.assertEqual(ours.resolution, "not_found")
                    suggested = [int(i) for i in details["suggestions"].split(",")] if "suggestions" in details else []
                    self.assertEqual([c.id for c in ours.candidates][:5], suggested)
        self.assertGreater(seen["one"], 20)
        self.assertGreater(seen["ambiguous"], 0)
        self.assertGreater(seen["not_found"], 0)

    def test_digitsAreTheIdAsTyped_andARankNarrowsAName(self):
        elsewhere = TX.resolve_name(424242)
        self.assertEqual((elsewhere.resolution, elsewhere.taxon_id, elsewhere.taxon), ("one", 424242, None))
        human = TX.resolve_name("9606")
        self.assertEqual((human.taxon_id, human.taxon.name), (9606, "Homo sapiens"))
        self.assertEqual(TX.resolve_name("Homo", rank="genus").taxon_id, 9605)
        self.assertNotEqual(TX.resolve_name("Homo", rank="family").resolution, "one")
        for text in ("", "   ", "!!!"):
            with self.assertRaises(stol.InvalidRequestError):
                TX.resolve_name(text)


if __name__ == "__main__":
    unittest.main()

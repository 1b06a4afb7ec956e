"""How batches are cut, without daemons: every request stays under the protocol's
64 KiB, every batch is as full as the limits allow (1000 queries, or fewer when
they are long), and nothing is reordered or lost.

``taxonomy._chunks`` first checks a whole batch against an upper bound of its size
(the fast path that 100,000 ids take) and measures value by value only when the
bound says it might not fit. These tests build the real requests the package
sends and measure them, so a bound that is not an upper bound, or a cut in the
wrong place, fails here.
"""

from __future__ import annotations

import unittest

import _stack  # noqa: F401 - puts the package on sys.path, fails without protobuf

from stol import _transport
from stol import taxonomy as tx
from stol._proto import taxonomy_pb2

LIMIT = _transport.MAX_REQUEST_BYTES


def lineage_request(batch):
    """The request ``Taxonomy.lineage`` sends for ``batch``, with the largest
    envelope it ever has (an id, a release name, a language)."""
    request = taxonomy_pb2.TaxonomyRequest(id=(1 << 63) - 1, release="2024.9.7-with-a-long-name")
    request.lineage_batch.queries.extend(batch)
    request.lineage_batch.language = "zh-Hant-TW"
    request.lineage_batch.ranks = taxonomy_pb2.RANK_VIEW_ALL
    request.lineage_batch.form = taxonomy_pb2.LINEAGE_FORM_IDS
    return request


def pairs_request(batch):
    request = taxonomy_pb2.TaxonomyRequest(id=(1 << 63) - 1, release="2024.9.7-with-a-long-name")
    request.compare_batch.ranks = taxonomy_pb2.RANK_VIEW_ALL
    for a, b in batch:
        request.compare_batch.pairs.add(a=a, b=b)
    return request


class Batches(unittest.TestCase):
    def check(self, values, cost=tx._string_cost, bound=tx._strings_size, build=lineage_request):
        """Cuts ``values`` and checks every batch: in order, whole, under the limit, and full."""
        batches = list(tx._chunks(iter(values), cost, bound=bound))
        self.assertEqual([v for batch in batches for v in batch], list(values))
        budget = LIMIT - tx._ENVELOPE_BYTES
        for index, batch in enumerate(batches):
            self.assertTrue(1 <= len(batch) <= tx.BATCH_SIZE)
            size = len(build(batch).SerializeToString())
            if len(batch) > 1:
                self.assertLessEqual(size, LIMIT, "batch %d of %d values" % (index, len(batch)))
                self.assertLessEqual(sum(map(cost, batch)), budget)
            if index + 1 < len(batches) and len(batch) < tx.BATCH_SIZE:
                # Cut early only because the next value would not have fitted.
                self.assertGreater(sum(map(cost, batch)) + cost(batches[index + 1][0]), budget)
        return batches

    def test_100000_ids_go_1000_to_a_request(self):
        ids = [str(i) for i in range(3_000_000, 3_100_000)]
        batches = self.check(ids)
        self.assertEqual(len(batches), 100)

    def test_names_the_bound_doubts_but_that_fit_are_not_cut(self):
        # 1000 names of 62 bytes: the bound (bytes + 11 per field) says 73,000, the exact size
        # 64,000 fits the budget: one request, not two.
        names = ["Name %057d" % i for i in range(1000)]
        self.assertGreater(tx._strings_size(names), LIMIT - tx._ENVELOPE_BYTES)
        self.assertEqual([len(b) for b in self.check(names)], [1000])

    def test_long_names_are_cut_where_the_next_would_overflow(self):
        names = ["Nonexistent name %04d %s" % (i, "x" * 180) for i in range(2500)]
        batches = self.check(names)
        self.assertGreater(len(batches), 7)
        self.assertTrue(all(len(batch) < tx.BATCH_SIZE for batch in batches))

    def test_multibyte_names_count_their_utf8_bytes(self):
        # 3 bytes per character: 1000 names of 25 characters are 75 KB, not 25 KB.
        names = ["漢字の名前" * 5 + str(i) for i in range(1000)]
        batches = self.check(names)
        self.assertGreater(len(batches), 1)

    def test_mixed_lengths_keep_order_across_cuts(self):
        values = [str(i) if i % 3 else "Long name %d %s" % (i, "y" * (i % 400)) for i in range(5000)]
        self.check(values)

    def test_a_value_too_large_for_any_request_is_left_alone(self):
        huge = "z" * (LIMIT + 10)
        batches = list(tx._chunks(["1", "2", huge, "3"]))
        self.assertEqual(batches, [["1", "2"], [huge], ["3"]])

    def test_pairs(self):
        pairs = [(str(i), str(i + 1)) for i in range(10_000)]
        self.assertEqual(len(self.check(pairs, tx._pair_cost, tx._pairs_size, pairs_request)), 10)
        named = [("Panthera leo %s" % ("q" * (i % 90)), "Panthera tigris %d" % i) for i in range(3000)]
        self.assertGreater(len(self.check(named, tx._pair_cost, tx._pairs_size, pairs_request)), 3)

    def test_the_bounds_are_upper_bounds(self):
        for batch in (["1"], ["é" * 200] * 3, ["x" * 20000], [str(i) for i in range(1000)]):
            self.assertGreaterEqual(tx._strings_size(batch), sum(map(tx._string_cost, batch)))
        for batch in ([("1", "2")], [("é" * 100, "x" * 20000)], [(str(i), str(-i)) for i in range(1000)]):
            self.assertGreaterEqual(tx._pairs_size(batch), sum(map(tx._pair_cost, batch)))


if __name__ == "__main__":
    unittest.main()

"""The cluster recipe (examples/snakemake): a Snakemake workflow whose parallel jobs
annotate Kraken reports with lineages, each job reaching STOL through the user's
private stack on a database file (no root, no system service). Run for real with
Snakemake from PyPI (``$STOL_SNAKEMAKE``, which ``make test`` installs into a venv of
its own): every report annotated with the lineages the service gives, and the stack
started once and shared by all the jobs."""

import glob
import os
import shutil
import subprocess
import tempfile
import unittest

import _stack

EXAMPLE = os.path.join(_stack.PACKAGE_ROOT, "examples", "snakemake")

#: Kraken report lines: percent, clade reads, direct reads, rank code, taxid, name.
REPORTS = {
    "human": [("U", 0, "unclassified"), ("S", 9606, "            Homo sapiens")],
    "lion": [("S", 9689, "            Panthera leo"), ("G", 9688, "          Panthera")],
    "tiger": [("S", 9694, "            Panthera tigris"), ("S", 99999999, "            not in the database")],
    "dog": [("S", 9612, "            Canis lupus"), ("F", 9608, "        Canidae")],
    "mixed": [("S", 9606, "            Homo sapiens"), ("S", 9689, "            Panthera leo")],
}


class SnakemakeRecipeTest(unittest.TestCase):
    def setUp(self):
        self.snakemake = os.environ.get("STOL_SNAKEMAKE", "")
        if not os.access(self.snakemake, os.X_OK):
            self.fail("STOL_SNAKEMAKE does not name snakemake (make test-python installs it into a venv): %r"
                      % self.snakemake)
        self.root = tempfile.mkdtemp(prefix="stolsmk")
        self.work = os.path.join(self.root, "work")
        os.makedirs(os.path.join(self.work, "reports"))
        for sample, lines in REPORTS.items():
            with open(os.path.join(self.work, "reports", sample + ".kreport"), "w") as report:
                for rank, taxid, name in lines:
                    report.write("10.00\t100\t50\t%s\t%d\t%s\n" % (rank, taxid, name))
        self.client = os.path.join(_stack.binaries(), "stol-client")
        self.env = dict(os.environ, XDG_RUNTIME_DIR=self.root, HOME=self.root, TMPDIR=self.root,
                        PATH=os.path.dirname(self.client) + os.pathsep + os.environ.get("PATH", ""),
                        PYTHONPATH=_stack.PACKAGE_ROOT)
        self.env.pop("STOL_RUNTIME_DIR", None)

    def tearDown(self):
        subprocess.run([self.client, "serve", "--stop"], env=self.env, capture_output=True, timeout=60)
        shutil.rmtree(self.root, ignore_errors=True)

    def lineages_from_the_service(self, ids):
        """What stol-client itself answers for ``ids`` (the oracle for the workflow's column)."""
        out = subprocess.run([self.client, "lineage", "--no-header"], input="".join("%d\n" % i for i in ids),
                             env=self.env, capture_output=True, text=True, timeout=60)
        return {int(line.split("\t")[0]): line.split("\t")[-1] for line in out.stdout.splitlines() if "\t" in line}

    def test_parallel_jobs_annotate_every_report_through_one_private_stack(self):
        run = subprocess.run([self.snakemake, "--snakefile", os.path.join(EXAMPLE, "Snakefile"), "--cores", "4",
                              "--config", "database=" + _stack.database(), "--quiet"],
                             cwd=self.work, env=self.env, capture_output=True, text=True, timeout=600)
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        outputs = sorted(glob.glob(os.path.join(self.work, "lineages", "*.tsv")))
        self.assertEqual([os.path.basename(p)[:-4] for p in outputs], sorted(REPORTS))

        # One supervisor for all five jobs: its log has one start, and it still runs.
        log = open(os.path.join(self.root, ".local", "state", "stol", "serve.log")).read()
        self.assertEqual(log.count("STOL private stack (pid"), 1, log)
        status = subprocess.run([self.client, "status"], env=self.env, capture_output=True, text=True, timeout=60)
        self.assertIn("your private stack at " + os.path.join(self.root, "stol"), status.stdout)

        expected = self.lineages_from_the_service(
            sorted({taxid for lines in REPORTS.values() for _, taxid, _ in lines} - {0, 99999999}))
        self.assertIn("Homo sapiens", expected[9606])
        for path in outputs:
            sample = os.path.basename(path)[:-4]
            rows = [line.rstrip("\n").split("\t") for line in open(path)]
            self.assertEqual(len(rows), len(REPORTS[sample]), path)
            for row, (_, taxid, _) in zip(rows, REPORTS[sample]):
                self.assertEqual(len(row), 7, row)  # the report's six columns and the lineage
                self.assertEqual(int(row[4]), taxid)
                # Unclassified and an id the database lacks: an empty column.
                self.assertEqual(row[6], expected.get(taxid, "") if taxid not in (0, 99999999) else "", row)


if __name__ == "__main__":
    unittest.main()

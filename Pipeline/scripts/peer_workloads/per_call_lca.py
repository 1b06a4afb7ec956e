"""One lowest common ancestor per call, timed call by call (issue 38: "where a per-call API cannot
batch, its round trip is at least as fast as the fastest in-process peer's call").

    python per_call_lca.py TOOL TAXDUMP_DIR ETE_DB INPUT OUTPUT [CALLS]

TOOL: stol (`stol.Taxonomy().lca([a, b], ranks="all")`: one lca_batch round trip to the running
stack per call, Debian's python3 with PYTHONPATH naming clients/python), taxoniq (the two
`Taxon(id).lineage`s, as its LCA workload), ete4 (`get_lineage(a)`, `get_lineage(b)`) or taxopy
(`find_lca([Taxon(a), Taxon(b)], db)`), the peers in their venv. The data is loaded and the first
200 pairs called untimed; then CALLS pairs (default 2,000) of INPUT, each call timed alone with
perf_counter_ns. OUTPUT gets the LCA of each timed pair in the normalised form; stdout one line of
JSON: tool, calls, p50_us, p99_us, max_us.
"""
import json
import os
import sys
import time

from normalise import NOT_FOUND, lca_line, lca_of_lineages, read_lines

tool, taxdump, ete_db, source, target = sys.argv[1:6]
calls = int(sys.argv[6]) if len(sys.argv) > 6 else 2000
pairs = [line.split() for line in read_lines(source)]
warm, timed = pairs[:200], pairs[200:200 + calls]

if tool == "stol":
    import stol
    tx = stol.Taxonomy()

    def lca(a, b):
        try:
            node = tx.lca([int(a), int(b)], ranks="all")
        except (stol.NotFoundError, stol.TaxonDeletedError):
            return NOT_FOUND
        return None if node is None else node.id
elif tool == "taxoniq":
    import taxoniq

    def lca(a, b):
        try:
            la, lb = ([t.tax_id for t in taxoniq.Taxon(int(x)).lineage][::-1] for x in (a, b))
        except KeyError:
            return NOT_FOUND
        return lca_of_lineages(la, lb)
elif tool == "ete4":
    from ete4 import NCBITaxa
    ncbi = NCBITaxa(dbfile=ete_db, update=False)

    def lca(a, b):
        try:
            return lca_of_lineages(ncbi.get_lineage(int(a)), ncbi.get_lineage(int(b)))
        except ValueError:
            return NOT_FOUND
elif tool == "taxopy":
    import taxopy
    db = taxopy.TaxDb(nodes_dmp=os.path.join(taxdump, "nodes.dmp"), names_dmp=os.path.join(taxdump, "names.dmp"),
                      keep_files=True)

    def lca(a, b):
        try:
            return taxopy.find_lca([taxopy.Taxon(int(a), db), taxopy.Taxon(int(b), db)], db).taxid
        except taxopy.exceptions.TaxidError:
            return NOT_FOUND
else:
    sys.exit(f"unknown tool {tool}")

for a, b in warm:
    lca(a, b)
times, answers = [], []
for a, b in timed:
    started = time.perf_counter_ns()
    answer = lca(a, b)
    times.append((time.perf_counter_ns() - started) / 1000)
    answers.append(lca_line(a, b, answer))
with open(target, "w", encoding="utf-8") as out:
    out.writelines(answers)
times.sort()
print(json.dumps({"tool": tool, "calls": len(times), "p50_us": round(times[len(times) // 2], 1),
                  "p99_us": round(times[min(len(times) - 1, int(len(times) * 0.99))], 1), "max_us": round(times[-1], 1)}))

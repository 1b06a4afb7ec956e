#!/usr/bin/env python3
"""Print the size of every table and index of a SQLite database (dbstat), largest first.

Used by `make bench-pipeline`. Usage: table_sizes.py DATABASE
"""
import sqlite3
import sys

db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
rows = db.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC").fetchall()
total = sum(size for _, size in rows)
print(f"{'table or index':<36} {'bytes':>14} {'share':>6}")
for name, size in rows:
    if size >= 4096 * 4:
        print(f"{name:<36} {size:>14,} {100 * size / total:>5.1f}%")
print(f"{'total':<36} {total:>14,}")

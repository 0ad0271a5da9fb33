"""Build times of the big groups (Cayley table + conjugacy classes + character table).

    python benchmarks/bench_groups.py                 # A7, S7, Z1009; 3 repeats
    python benchmarks/bench_groups.py S6 PSL(2,13) --repeats 1 --json

Each measurement runs `get_group(name)`, `.class_sizes`, `.characters` in a fresh Python process
(so nothing is warm in memory) with GROKRAY_CACHE pointing at a temporary directory:
- cold:    empty cache directory: the full build;
- disk:    a second process, same directory: loaded from the on-disk cache;
- memory:  a second get_group in the same process: the lru_cache hit.
Reported: the median over --repeats of the seconds spent in those calls (imports excluded).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

CHILD = r"""
import json, sys, time
from grokray.groups import get_group
name = sys.argv[1]
t0 = time.perf_counter()
G = get_group(name)
t1 = time.perf_counter()
sizes = G.class_sizes
t2 = time.perf_counter()
X = G.characters
t3 = time.perf_counter()
H = get_group(name); H.class_sizes; H.characters
t4 = time.perf_counter()
print(json.dumps({"name": G.name, "order": G.order, "classes": len(sizes),
                  "table_s": t1 - t0, "classes_s": t2 - t1, "characters_s": t3 - t2,
                  "total_s": t3 - t0, "memory_s": t4 - t3}))
"""


def measure(name: str, cache_dir: str) -> dict:
    env = {**os.environ, "GROKRAY_CACHE": cache_dir}
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, name], capture_output=True, text=True, env=env, check=True
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])


def bench(name: str, repeats: int) -> dict:
    cold, disk = [], []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory(prefix="grokray-bench-") as tmp:
            cold.append(measure(name, tmp))
            disk.append(measure(name, tmp))
    med = lambda rows, key: statistics.median(r[key] for r in rows)  # noqa: E731
    return {
        "name": cold[0]["name"],
        "order": cold[0]["order"],
        "classes": cold[0]["classes"],
        "cold_s": med(cold, "total_s"),
        "cold_table_s": med(cold, "table_s"),
        "cold_classes_s": med(cold, "classes_s"),
        "cold_characters_s": med(cold, "characters_s"),
        "disk_s": med(disk, "total_s"),
        "memory_s": med(cold, "memory_s"),
        "repeats": repeats,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("names", nargs="*", default=["A7", "S7", "Z1009"])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--json", action="store_true", help="one JSON object per group")
    args = p.parse_args(argv)
    rows = [bench(name, args.repeats) for name in args.names]
    if args.json:
        for row in rows:
            print(json.dumps(row))
        return 0
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"group build times, seconds (median of {args.repeats})")
    for col in ("group", "order", "classes", "cold", "table", "classes", "chars", "disk", "mem"):
        table.add_column(col, justify="right")
    for r in rows:
        table.add_row(
            r["name"], str(r["order"]), str(r["classes"]),
            *(f"{r[k]:.3f}" for k in ("cold_s", "cold_table_s", "cold_classes_s",
                                      "cold_characters_s", "disk_s", "memory_s")),
        )  # fmt: skip
    Console().print(table)
    print("cold = table + classes + chars in a fresh process with an empty cache; disk = fresh")
    print("process with the on-disk cache; mem = second get_group in the same process")
    return 0


if __name__ == "__main__":
    sys.exit(main())

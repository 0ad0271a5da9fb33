"""Structure figures of grokray's import graph (grimp, as import-linter builds it: lazy and
type-only imports included):

    python scripts/import_structure.py [MODULE ...]

prints the modules (files) of the grokray package, the import cycles between two modules, the
longest import chain (the longest of the shortest chains between two modules), the imports that
run up the layers of pyproject.toml's layer contract (each declared exception among them), and
for each MODULE given, the grokray modules it imports directly.
"""

from __future__ import annotations

import collections
import sys
from pathlib import Path

import grimp
import tomllib

import grokray

ROOT = Path(grokray.__file__).resolve().parents[1]
"""the checkout of the grokray imported (its pyproject.toml holds the layers)"""


def layers() -> tuple[list[list[str]], list[str]]:
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    contract = next(c for c in conf["contracts"] if c["type"] == "layers")
    # "a | b": independent siblings, "a : b": siblings that may import each other
    return ([[m.strip() for m in layer.replace(":", "|").split("|")]
             for layer in contract["layers"]],
            contract.get("ignore_imports", []))


def layer_of(module: str, stack: list[list[str]]) -> int | None:
    for i, group in enumerate(stack):
        if any(module == m or module.startswith(m + ".") for m in group):
            return i
    return None


def longest_chain(graph: grimp.ImportGraph, mods: list[str]) -> list[str]:
    adj = {m: sorted(n for n in graph.find_modules_directly_imported_by(m) if n in mods)
           for m in mods}
    best: list[str] = []
    for start in mods:
        prev = {start: None}
        queue = collections.deque([start])
        last = start
        while queue:
            m = queue.popleft()
            last = m
            for n in adj[m]:
                if n not in prev:
                    prev[n] = m
                    queue.append(n)
        path = [last]
        while prev[path[-1]] is not None:
            path.append(prev[path[-1]])
        if len(path) > len(best):
            best = path[::-1]
    return best


def main() -> int:
    graph = grimp.build_graph("grokray", include_external_packages=False,
                              exclude_type_checking_imports=False, cache_dir=None)
    mods = sorted(m for m in graph.modules if m.startswith("grokray"))
    cycles = sorted({tuple(sorted((m, n))) for m in mods
                     for n in graph.find_modules_directly_imported_by(m)
                     if graph.chain_exists(importer=n, imported=m)})
    chain = longest_chain(graph, mods)
    stack, ignored = layers()
    up = []
    for m in mods:
        lm = layer_of(m, stack)
        for n in sorted(graph.find_modules_directly_imported_by(m)):
            ln = layer_of(n, stack)
            if lm is not None and ln is not None and ln < lm:
                up.append(f"{m} -> {n}")
    print(f"modules (files) in grokray: {len(mods)}")
    print(f"import cycles: {len(cycles)}" + (f" {cycles}" if cycles else ""))
    print(f"longest import chain: {len(chain)} modules: " + " -> ".join(chain))
    print(f"imports up the layers: {len(up)}; declared exceptions: {len(ignored)}")
    for line in up:
        print("  " + line)
    for pattern in ignored:
        print("  declared: " + pattern)
    for m in sys.argv[1:]:
        print(f"{m} imports: " + ", ".join(
            sorted(n for n in graph.find_modules_directly_imported_by(m) if n in mods)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

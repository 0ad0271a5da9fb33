"""`grokray groups [NAME] [--json]`: the group families, or one group's classes and characters."""

from __future__ import annotations

import argparse
import json
import math

import numpy as np
from rich.console import Console
from rich.table import Table

from grokray.groups import FAMILIES, GRAMMAR, get_group

# without --all: --json holds the characters up to MAX_JSON classes; the printed table shows at
# most MAX_COLS classes (columns) and MAX_ROWS irreps, the size and degree lists MAX_ROWS values
MAX_JSON = 100
MAX_COLS = 30
MAX_ROWS = 40


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "groups",
        help="list the group families, or show one group's classes and character table",
        description="Without NAME: the families, the name grammar and examples. With NAME "
        "(e.g. S4, D4, Z2xZ4, PSL(2,7)): order, abelian, class sizes, irrep degrees and the "
        "character table (omega_m = exp(2 pi i / m)).",
    )
    p.add_argument("name", nargs="?", help="a group name, e.g. S4, Q8, Z2xZ4, 'PSL(2,7)'")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument(
        "--all",
        action="store_true",
        help=f"the whole character table, even above {MAX_COLS} classes ({MAX_JSON} in --json)",
    )
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    if not args.name:
        return _list_families(args.json)
    G = get_group(args.name)
    info = describe(G, full=args.all)
    if args.json:
        print(json.dumps(info))
        return 0
    _print_group(G, info, full=args.all)
    return 0


def describe(G, full: bool = False) -> dict:
    """The facts `grokray groups NAME --json` prints, as plain values."""
    k = len(G.class_sizes)
    out = {
        "name": G.name,
        "order": G.order,
        "abelian": G.is_abelian,
        "num_classes": k,
        "class_sizes": list(G.class_sizes),
        "class_orders": class_orders(G),
        "class_reps": [G.labels[r] for r in G.class_reps],
        "irrep_degrees": list(G.irrep_degrees),
    }
    if full or k <= MAX_JSON:
        X = G.characters
        out["characters"] = [
            [[round(float(z.real), 10), round(float(z.imag), 10)] for z in row] for row in X
        ]
        e = math.lcm(*out["class_orders"])
        out["characters_text"] = [[format_value(z, e) for z in row] for row in X]
    return out


def class_orders(G) -> list[int]:
    """Element order of each class representative."""
    T = G.table.numpy()
    reps = np.asarray(G.class_reps)
    order = np.zeros(len(reps), dtype=np.int64)
    x = reps.copy()
    for step in range(1, G.order + 1):
        order[(order == 0) & (x == 0)] = step
        if (order > 0).all():
            break
        x = T[x, reps]
    return order.tolist()


def format_value(z: complex, exponent: int = 60, tol: float = 1e-9) -> str:
    """Compact text for a character value: 2, -1, 0.618, i, ω3, -ω5^2, 2ω3, -0.5+1.323i.

    exponent: a multiple of the order of any root of unity to recognize (the group exponent).
    """
    re, im = float(z.real), float(z.imag)
    if abs(im) < tol:
        return _real(re)
    if abs(re) < tol:
        return {"1": "i", "-1": "-i"}.get(_real(im), f"{_real(im)}i")
    r = abs(z)
    turn = math.atan2(im, re) / (2 * math.pi) % 1.0 * exponent
    if abs(r - round(r)) < tol and round(r) >= 1 and abs(turn - round(turn)) < 1e-6:
        g = math.gcd(round(turn), exponent)  # z = r ω_m^j with j/m in lowest terms
        j, m = round(turn) // g, exponent // g
        sign = ""
        if m % 2 == 0 and j > m // 2:  # ω_m^j = -ω_m^(j - m/2), in lowest terms
            j, sign = j - m // 2, "-"
            g = math.gcd(j, m)
            j, m = j // g, m // g
        mag = "" if round(r) == 1 else str(round(r))
        power = "" if j == 1 else f"^{j}"
        return f"{sign}{mag}ω{m}{power}"
    return f"{_real(re)}{'+' if im >= 0 else '-'}{_real(abs(im))}i"


def _real(x: float) -> str:
    if abs(x - round(x)) < 1e-9:
        return str(int(round(x)))
    return f"{x:.4g}"


def _class_names(orders: list[int]) -> list[str]:
    """ATLAS-style class names: element order then a letter, e.g. 1a 2a 2b 3a."""
    seen: dict[int, int] = {}
    names = []
    for o in orders:
        i = seen.get(o, 0)
        seen[o] = i + 1
        letters = ""
        i += 1
        while i:
            i, rem = divmod(i - 1, 26)
            letters = chr(97 + rem) + letters
        names.append(f"{o}{letters}")
    return names


def _print_group(G, info: dict, full: bool = False) -> None:
    console = Console()
    k = info["num_classes"]
    kind = "abelian" if G.is_abelian else "non-abelian"
    console.print(f"[bold]{G.name}[/bold]: order {G.order}, {kind}, {k} conjugacy classes")
    rows = k if full else min(k, MAX_ROWS)
    more = "" if rows == k else f" ... ({k - rows} more)"
    console.print(f"class sizes: {_join(info['class_sizes'][:rows])}{more}")
    console.print(f"irrep degrees: {_join(info['irrep_degrees'][:rows])}{more}")
    names = _class_names(info["class_orders"])
    exponent = math.lcm(*info["class_orders"])
    X = G.characters
    cells = [
        [names[j], str(info["class_sizes"][j])] + [format_value(z, exponent) for z in X[:rows, j]]
        for j in range(k if full else min(k, MAX_COLS))
    ]  # per class: header, size, values
    widths = np.cumsum([max(map(len, c)) + 3 for c in cells]) + max(4, len(f"χ{rows}")) + 4
    cols = len(cells) if full else max(1, int((widths <= console.width).sum()))
    if full:
        console = Console(width=max(console.width, int(widths[-1])))
    part = "" if (rows, cols) == (k, k) else f" ({rows} of {k} irreps, {cols} of {k} classes)"
    table = Table(title=f"character table of {G.name}{part}")
    table.add_column("", style="bold")
    for j in range(cols):
        table.add_column(cells[j][0], justify="right")
    table.add_row("size", *[cells[j][1] for j in range(cols)], style="dim")
    for i in range(rows):
        table.add_row(f"χ{i + 1}", *[cells[j][2 + i] for j in range(cols)])
    console.print(table)
    if part:
        console.print("--all prints every class and irrep")
    if any("ω" in cells[j][2 + i] for i in range(rows) for j in range(cols)):
        console.print("ωm = exp(2πi/m)")


def _join(values: list[int]) -> str:
    return ", ".join(str(v) for v in values)


def _list_families(as_json: bool) -> int:
    if as_json:
        fams = [
            {"family": f.key, "description": f.title, "examples": list(f.examples)}
            for f in FAMILIES.values()
        ]
        print(json.dumps({"grammar": GRAMMAR, "families": fams}))
        return 0

    table = Table(title="group families (names are case-insensitive)")
    table.add_column("family")
    table.add_column("description")
    table.add_column("examples")
    for f in FAMILIES.values():
        table.add_row(f.key, f.title, ", ".join(f.examples))
    table.add_row("AxB", "direct product of any of the above", "Z2xZ4, S3xZ3, D4xZ2")
    console = Console()
    console.print(table)
    console.print(f"grammar: {GRAMMAR}")
    console.print("show one: grokray groups S4   (--json for machine-readable output)")
    return 0

"""`grokray cprank GROUP [--json] [--out DIR] [--field C|R] [--time-limit S] ...`.

Bounds on the CP rank of the multiplication tensor T_G (trivial |G|^2, Wedderburn sum_i R(d_i)
from grokray's character tables, Alder-Strassen lower bound 2|G| - k) with the matrix
multiplication ranks and their sources, then a numerical ALS search at decreasing R
(`grokray.cprank.search`). Results go to OUT/GROUP/ (`grokray.cprank.store`).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys

from rich.console import Console
from rich.table import Table

from grokray.cprank.bounds import bounds, matmul_rank
from grokray.cprank.faithful import smallest_faithful
from grokray.cprank.search import SearchResult, mult_tensor, search
from grokray.errors import ConfigError
from grokray.groups import get_group


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "cprank",
        help="CP-rank bounds of a group's multiplication tensor, and a numerical CP search",
        description="Bounds on rank_CP(T_G), T_G[a,b,c] = 1 iff ab = c: trivial |G|^2, the "
        "Wedderburn bound sum_i R(d_i) over the irreps (R(d): best known rank of d x d matrix "
        "multiplication, sources cited), the Alder-Strassen lower bound 2|G| - k; then ALS "
        "(tensorly) with restarts from the Wedderburn bound down. All bounds are over C.",
    )
    p.add_argument("group", help="a group name, e.g. S4, Z5, D4")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--out", default="results/cprank", metavar="DIR",
                   help="where OUT/GROUP/cprank.parquet and the .npz go (default results/cprank)")
    p.add_argument("--field", choices=("C", "R"), default="C",
                   help="coefficients of the numerical search (default C, the bounds' field)")
    p.add_argument("--start", type=int, metavar="R", help="first rank tried (default: Wedderburn)")
    p.add_argument("--restarts", type=int, default=4, help="seeds per rank (default 4)")
    p.add_argument("--seed", type=int, default=0, help="first seed (default 0)")
    p.add_argument("--tol", type=float, default=1e-5,
                   help="success: max |T - T_hat| below this (default 1e-5)")
    p.add_argument("--iters", type=int, default=1000, help="ALS iterations per run (default 1000)")
    p.add_argument("--time-limit", type=float, default=60.0, metavar="S",
                   help="seconds for the whole search (default 60; 0 skips it)")
    p.set_defaults(func=main)


def _check(args: argparse.Namespace) -> None:
    bad = []
    if args.restarts < 1:
        bad.append(f"--restarts must be >= 1, got {args.restarts}")
    if not args.tol > 0:
        bad.append(f"--tol must be > 0, got {args.tol}")
    if args.iters < 1:
        bad.append(f"--iters must be >= 1, got {args.iters}")
    if args.time_limit < 0:
        bad.append(f"--time-limit must be >= 0, got {args.time_limit}")
    if args.start is not None and args.start < 1:
        bad.append(f"--start must be >= 1, got {args.start}")
    if bad:
        raise ConfigError("; ".join(bad))


def main(args: argparse.Namespace) -> int:
    _check(args)
    # lazy: loads pandas, kept out of `grokray --help`
    from grokray.cprank.store import save

    G = get_group(args.group)
    if G.order > 120:
        raise ConfigError(
            f"cprank searches groups of order <= 120 (T_G has n^3 entries); {G.name} has "
            f"order {G.order}"
        )
    info = {"group": G.name, **bounds(G.order, list(G.irrep_degrees))}
    info["faithful"] = smallest_faithful(G)
    degrees = sorted(set(info["irrep_degrees"]) | set(range(1, 7)))
    info["matmul_ranks"] = [
        {"d": m.d, "rank": m.rank, "exact": m.exact, "source": m.source, "field": m.field}
        for m in (matmul_rank(d) for d in degrees)
    ]
    table = G.table.numpy()
    T = mult_tensor(table)
    start = args.start or info["wedderburn_bound"]
    floor = info["lower_bound"] if args.field == "C" else G.order  # flattening rank n over R

    def progress(a) -> None:
        if not args.json:
            mark = "ok" if a.ok else "--"
            print(f"  R={a.rank:4d} seed={a.seed:3d} max|T-T_hat|={a.residual:.2e} "
                  f"iters={a.iterations:5d} {a.seconds:6.2f}s {mark}", file=sys.stderr)

    if args.time_limit > 0:
        if not args.json:
            print(f"ALS search over {args.field} from R={start} (floor {floor}, "
                  f"{args.restarts} seeds per rank, {args.time_limit:g} s):", file=sys.stderr)
        res = search(T, start, floor=floor, restarts=args.restarts, seed=args.seed,
                     field=args.field, tol=args.tol, iters=args.iters,
                     time_limit=args.time_limit, on_attempt=progress)
    else:
        res = SearchResult(field=args.field, tol=args.tol, attempts=(), best_rank=None,
                           best_seed=None, stopped="skipped")
    settings = {"restarts": args.restarts, "iters": args.iters, "time_limit": args.time_limit}
    paths = save(args.out, info, res, table, settings)
    info["search"] = {
        "field": res.field, "tol": res.tol, "start": start, "floor": floor,
        "best_rank": res.best_rank, "best_seed": res.best_seed, "seconds": round(res.seconds, 3),
        "attempts": len(res.attempts), "stopped": res.stopped,
        "seeds": list(range(args.seed, args.seed + args.restarts)),
        "max_factor_norm": next(
            (a.max_factor_norm for a in res.attempts
             if a.ok and a.rank == res.best_rank and a.seed == res.best_seed), None),
    }
    info["files"] = paths
    info["command"] = shlex.join(["grokray", "cprank", *sys.argv[2:]]) if len(sys.argv) > 2 \
        else f"grokray cprank {G.name}"
    if args.json:
        print(json.dumps(info))
        return 0
    _print(info)
    return 0


def _print(info: dict) -> None:
    con = Console()
    n, k = info["order"], info["num_classes"]
    con.print(f"[bold]{info['group']}[/bold]: order {n}, {k} irreps of degrees "
              f"{', '.join(map(str, info['irrep_degrees']))}")
    t = Table(title=f"rank_CP(T_{info['group']}) over C")
    t.add_column("bound")
    t.add_column("value", justify="right")
    t.add_column("how")
    t.add_row("trivial (upper)", str(info["trivial_bound"]), f"|G|^2 = {n}^2")
    terms = " + ".join(map(str, info["wedderburn_terms"]))
    t.add_row("Wedderburn (upper)", str(info["wedderburn_bound"]),
              f"sum_i R(d_i) = {terms}")
    t.add_row("Alder-Strassen (lower)", str(info["lower_bound"]), f"2|G| - k = 2*{n} - {k}")
    con.print(t)
    f = info["faithful"]
    if f is not None:
        con.print(f"smallest faithful real Wedderburn sum: {' + '.join(f['components'])}, "
                  f"dimension {f['dim']}, real rank <= {f['rank']}: an exact FORGE product on "
                  f"it needs d >= {f['dim']} and R >= its rank; R = {f['rank']}, d = {f['dim']} "
                  f"(R*d = {f['capacity']}) suffices")
    m = Table(title="best known rank R(d) of d x d matrix multiplication")
    for c in ("d", "R(d)", "exact", "field", "source"):
        m.add_column(c, justify="right" if c in ("d", "R(d)") else "left")
    for r in info["matmul_ranks"]:
        m.add_row(str(r["d"]), str(r["rank"]), "yes" if r["exact"] else "upper bound",
                  r["field"], r["source"])
    con.print(m)
    s = info["search"]
    if s["stopped"] == "skipped":
        con.print("numerical search: skipped (--time-limit 0)")
    elif s["best_rank"] is None:
        con.print(f"numerical search (ALS over {s['field']}, max|T - T_hat| < {s['tol']:g}): "
                  f"no decomposition reached from R={s['start']} in {s['attempts']} runs, "
                  f"{s['seconds']:.1f} s (stopped: {s['stopped']})")
    else:
        con.print(f"numerical search (ALS over {s['field']}, max|T - T_hat| < {s['tol']:g}): "
                  f"smallest R = [bold]{s['best_rank']}[/bold] (seed {s['best_seed']}, largest "
                  f"factor norm {s['max_factor_norm']:.3g}); seeds {s['seeds'][0]}.."
                  f"{s['seeds'][-1]} per rank, {s['attempts']} runs, {s['seconds']:.1f} s, "
                  f"stopped: {s['stopped']}")
    for kind, path in info["files"].items():
        con.print(f"{kind}: {path}")

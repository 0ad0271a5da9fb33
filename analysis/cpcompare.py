"""The capacity-lift threshold beside the CP-rank bounds of the same group.

Inputs: a `PhaseDiagram` (from the sweep's Parquet) and the rows `grokray cprank GROUP --out DIR`
wrote to DIR/GROUP/cprank.parquet (bounds and the numerical search; read here, nothing
recomputed, no training code imported).

What is compared. FORGE's logits are logits[a, b, c] = <Unembed_c, W((U E_a) * (V E_b))>, a CP
tensor of rank <= R whose factor matrices have rank <= d. Two exactness levels:
  - reproducing all of T_G as the logit tensor needs R >= rank_CP(T_G) >= 2|G| - k
    (Alder-Strassen, over C; a real model's rank is >= that) and d >= |G| (each flattening of
    T_G has rank |G|): R*d >= (2|G| - k)|G|, the "T_G floor" (S4: 43 * 24 = 1032);
  - an exact product in the embedding space, mu(E_a, E_b) = E_ab, decoded by the nearest
    embedding (FORGE's tied_dist), needs only a faithful real Wedderburn sum of R[G]: d >= its
    dimension and R >= its real rank (`grokray.cprank.faithful`); the cheapest known one gives the
    "faithful capacity" (S4: M_3(R), rank <= 23, dimension 9: 207).

What it can mean: C* below the T_G floor says the grokked models do not reproduce T_G as logits.
C* near the faithful capacity is consistent with FORGE learning the multiplication of the smallest
faithful component; C* below it would need a bilinear scheme cheaper than the known upper bound
(the rank of 3 x 3 matrix multiplication is only known to lie in [19, 23]) or an inexact one.

What it cannot mean: the bounds are about exact rank; grokking is about held-out argmax accuracy
under training dynamics and a finite budget, so C* moves with the sweep's steps, lr, weight decay
and train fraction, which no CP bound depends on. The capacity sweep varies R*d as a product,
while the bounds constrain R and d separately. Upper bounds (Wedderburn, faithful, ALS) can be
beaten; only the Alder-Strassen and flattening bounds are lower bounds.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass

import numpy as np
import pandas as pd

from grokray_analysis.errors import AnalysisError
from grokray_analysis.phase import PhaseDiagram

NEEDED = ("group", "order", "num_classes", "lower_bound", "wedderburn_bound", "trivial_bound",
          "field", "best_rank", "tol")


@dataclass(frozen=True)
class CPComparison:
    """The threshold of one group's capacity sweep beside that group's CP-rank bounds."""

    group: str
    order: int
    arm: str
    """The arm of the phase diagram ("all" when pooled or single)."""
    threshold: float
    """Measured capacity threshold C* = R*d (NaN when all runs agree)."""
    threshold_ci: tuple[float, float]
    min_rank_grokked: float
    """Smallest R with at least one grokked run (NaN: none grokked)."""
    min_capacity_grokked: float
    """Smallest R*d with at least one grokked run."""
    lower_bound: int
    """Alder-Strassen 2|G| - k."""
    wedderburn_bound: int
    trivial_bound: int
    numerical: tuple[tuple[str, float], ...]
    """(field, smallest ALS rank below its tolerance; NaN when none)."""
    exact_floor: int
    """(2|G| - k) * |G|: the least R*d that reproduces all of T_G as logits."""
    faithful: str
    """The cheapest faithful real Wedderburn sum ("" when the rows lack it)."""
    faithful_capacity: float
    """Its real rank bound * dimension: R*d of a known exact embedding-space product."""
    wedderburn_capacity: int
    """wedderburn_bound * |G|: a capacity where an exact factorization exists over C."""
    verdict: str
    """One sentence: what the comparison says for these numbers."""


def load_cprank(path: str) -> pd.DataFrame:
    """The cprank rows under DIR (DIR/*/cprank.parquet or DIR/cprank.parquet)."""
    files = sorted(glob.glob(os.path.join(path, "*", "cprank.parquet")))
    if os.path.isfile(os.path.join(path, "cprank.parquet")):
        files.append(os.path.join(path, "cprank.parquet"))
    if not files:
        raise AnalysisError(f"no cprank.parquet under {path}; run `grokray cprank GROUP --out "
                            f"{path}` first")
    frames = []
    for f in files:
        try:
            frames.append(pd.read_parquet(f))
        except Exception as exc:  # noqa: BLE001 - any unreadable file is the user's to fix
            raise AnalysisError(f"{f}: unreadable Parquet ({type(exc).__name__})") from None
    df = pd.concat(frames, ignore_index=True)
    missing = [c for c in NEEDED if c not in df.columns]
    if missing:
        raise AnalysisError(f"{path}: cprank table lacks columns {missing}")
    return df


def cp_compare(phase: PhaseDiagram, cp: pd.DataFrame, group: str) -> CPComparison:
    """Compare the phase diagram of `group` with its cprank rows."""
    rows = cp[cp["group"].astype(str).str.lower() == group.lower()]
    if rows.empty:
        have = sorted(set(cp["group"].astype(str)))
        raise AnalysisError(f"no cprank row for {group}; have {have}")
    r0 = rows.iloc[0]
    n, lo, wb = int(r0["order"]), int(r0["lower_bound"]), int(r0["wedderburn_bound"])
    grokked = [c for c in phase.cells if c.k > 0]
    min_r = float(min(c.rank for c in grokked)) if grokked else float("nan")
    min_c = float(min(c.rank * c.d for c in grokked)) if grokked else float("nan")
    numerical = tuple(
        (str(r["field"]), float(r["best_rank"]) if pd.notna(r["best_rank"]) else float("nan"))
        for _, r in rows.iterrows()
    )
    floor = lo * n
    fcap = (float(r0["faithful_capacity"]) if "faithful_capacity" in rows
            and pd.notna(r0["faithful_capacity"]) else float("nan"))
    fname = str(r0["faithful_components"]) if "faithful_components" in rows \
        and pd.notna(r0["faithful_components"]) else ""
    c = phase.threshold
    ref = c if not np.isnan(c) else min_c
    if np.isnan(ref):
        verdict = "no run grokked: nothing to compare"
    else:
        parts = []
        if ref < floor:
            parts.append(f"below the T_G floor {floor:g}: the grokked models do not reproduce "
                         f"T_{r0['group']} as logits")
        if not np.isnan(fcap):
            rel = "below" if ref < fcap else "at or above"
            parts.append(f"{rel} the faithful capacity {fcap:g} ({fname})")
        verdict = f"C* = {ref:.4g} is " + "; ".join(parts) if parts else f"C* = {ref:.4g}"
    if not np.isnan(min_r) and min_r < lo:
        verdict += f"; smallest grokking R = {min_r:g} < T_G lower bound {lo}"
    return CPComparison(
        group=str(r0["group"]), order=n, arm=str(getattr(phase, "arm", "all")), threshold=c,
        threshold_ci=phase.threshold_ci,
        min_rank_grokked=min_r, min_capacity_grokked=min_c, lower_bound=lo,
        wedderburn_bound=wb, trivial_bound=int(r0["trivial_bound"]), numerical=numerical,
        exact_floor=floor, faithful=fname, faithful_capacity=fcap,
        wedderburn_capacity=wb * n, verdict=verdict,
    )

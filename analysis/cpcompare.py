"""The capacity-lift threshold beside the CP-rank bounds of the same group.

Inputs: a `PhaseDiagram` (from the sweep's Parquet) and the rows `grokray cprank GROUP --out DIR`
wrote to DIR/GROUP/cprank.parquet (bounds and the numerical search; read here, nothing
recomputed, no training code imported).

What is compared. FORGE's logits are logits[a, b, c] = <Unembed_c, W((U E_a) * (V E_b))>, a CP
tensor of rank <= R whose three factor matrices (E U^T, E V^T, Unembed W) have rank <= d. An
*exact* factorization of T_G needs
  - R >= rank_CP(T_G) >= 2|G| - k (Alder-Strassen; over C, and a real model's rank is >= that), and
  - d >= |G|, since every flattening of T_G has rank |G| (it is a permutation per slice),
so its capacity R*d is at least (2|G| - k) * |G| ("exact floor"). The Wedderburn bound times |G|
is a capacity at which an exact factorization is known to exist over C.

What it can mean: when the measured threshold C* (or the smallest grokking R) lies below the
exact floor, the grokked models are *not* exact CP factorizations of T_G: they only need the
argmax of each logit fiber right, a much weaker condition than T_hat = T. When C* lies above it,
the data are consistent with an exact factorization but do not show one.

What it cannot mean: the CP bounds are about exact (or border) rank of a 0/1 tensor; grokking is
about held-out argmax accuracy under training dynamics and a finite step budget. C* depends on
the steps, lr, weight decay and train fraction of the sweep; a CP bound depends on none. The
Wedderburn bound is an upper bound (the true rank of T_S4 may be below 55); the numerical ALS rank
is an upper bound too (a local search that failed proves nothing).
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.errors import AnalysisError
from analysis.phase import PhaseDiagram

NEEDED = ("group", "order", "num_classes", "lower_bound", "wedderburn_bound", "trivial_bound",
          "field", "best_rank", "tol")


@dataclass(frozen=True)
class CPComparison:
    """The threshold of one group's capacity sweep beside that group's CP-rank bounds."""

    group: str
    order: int
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
    """(2|G| - k) * |G|: the least R*d of an exact factorization through width d."""
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
    c = phase.threshold
    if np.isnan(c) and np.isnan(min_c):
        verdict = "no run grokked: nothing to compare"
    elif (not np.isnan(c) and c < floor) or min_c < floor:
        verdict = (f"grokking at R*d below the exact floor {floor} (= (2|G|-k)|G|): those models "
                   f"are not exact CP factorizations of T_{r0['group']}; argmax suffices")
    else:
        verdict = (f"threshold at or above the exact floor {floor}: consistent with an exact "
                   f"factorization, which these data do not show")
    if not np.isnan(min_r) and min_r < lo:
        verdict += f"; smallest grokking R = {min_r:g} < lower bound {lo}"
    return CPComparison(
        group=str(r0["group"]), order=n, threshold=c, threshold_ci=phase.threshold_ci,
        min_rank_grokked=min_r, min_capacity_grokked=min_c, lower_bound=lo,
        wedderburn_bound=wb, trivial_bound=int(r0["trivial_bound"]), numerical=numerical,
        exact_floor=floor, wedderburn_capacity=wb * n, verdict=verdict,
    )

"""A claim's verdict: which of the verdicts' regions the measured value's 95% interval lies in.

With the paper's value p, the claim's tolerance band around it (p / (1 + tol) .. p (1 + tol) on
the log scale for ratios and steps, p +- tol |p| linearly; or the paper's own range, such as
20-150,000x) and the claim's null (the no-effect value: 1 for a ratio, 0 for a difference or a
rate), every possible true value falls in one region:
- reproduced: inside the band;
- opposite: outside it, on the other side of the null from p;
- same direction, different size: outside it, on p's side of the null (or at the null).
The verdict is the region the 95% interval [lo, hi] lies in. An interval that meets two or more
regions is **inconclusive**: the data are compatible with verdicts that disagree (an interval
holding the paper's value and also the null, or values far outside the band), so they do not
decide between them; `regions_met` names them. A wider interval therefore never makes a verdict
easier: it can only make it inconclusive. A measure with no interval (NaN bounds) is judged by
its point value's region; no measured value is `not run`.
A qualitative claim (a rate of 0 or 1 over the tested groups) decides its own verdict in its
measure.
"""

from __future__ import annotations

import math

REPRODUCED = "reproduced"
SAME_DIRECTION = "same direction, different size"
OPPOSITE = "opposite"
INCONCLUSIVE = "inconclusive"
NOT_RUN = "not run"
VERDICTS = (REPRODUCED, SAME_DIRECTION, OPPOSITE, INCONCLUSIVE, NOT_RUN)
REGIONS = (REPRODUCED, SAME_DIRECTION, OPPOSITE)
"""the verdicts a true value can have (the regions of the line)"""


def tolerance_band(paper: float, *, log: bool, tol: float) -> tuple[float, float]:
    """The values the claim counts as the paper's size: p / (1 + tol) .. p (1 + tol) on the
    log scale (a positive p), p - tol |p| .. p + tol |p| otherwise."""
    if log and paper > 0:
        return paper / (1.0 + tol), paper * (1.0 + tol)
    return paper - tol * abs(paper), paper + tol * abs(paper)


def region(x: float, paper: float, band: tuple[float, float], *, null: float) -> str:
    """The verdict a true value `x` would have: inside `band`, on the null's other side from
    `paper`, or on its side."""
    if band[0] <= x <= band[1]:
        return REPRODUCED
    side_p = _sign(paper - null)
    if side_p != 0 and _sign(x - null) == -side_p:
        return OPPOSITE
    return SAME_DIRECTION


def regions_met(lo: float, hi: float, paper: float, band: tuple[float, float], *,
                null: float) -> tuple[str, ...]:
    """The regions the interval [lo, hi] meets, in REGIONS order. The regions change only at
    the band's ends and the null, so the interval's ends, those points inside it and one point
    between each consecutive pair decide it."""
    cuts = sorted(x for x in (*band, null) if math.isfinite(x) and lo < x < hi)
    ends = [x for x in (lo, hi) if math.isfinite(x)]
    pts = sorted({*ends, *cuts})
    if not pts:  # (-inf, inf): every region the line has
        pts = [0.0]
    probes = list(pts) + [(a + b) / 2 for a, b in zip(pts, pts[1:], strict=False)]
    if math.isinf(lo):
        probes.append(pts[0] - 1.0 - abs(pts[0]))
    if math.isinf(hi):
        probes.append(pts[-1] + 1.0 + abs(pts[-1]))
    met = {region(x, paper, band, null=null) for x in probes}
    return tuple(r for r in REGIONS if r in met)


def verdict_of(paper: float, value: float, ci: tuple[float, float], *, null: float,
               log: bool, tol: float, band: tuple[float, float] | None = None) -> str:
    """The verdict (see the module docstring); `band` replaces the tolerance band (a claim
    stated as a range)."""
    if not math.isfinite(paper) or math.isnan(value):
        return NOT_RUN
    b = band if band is not None else tolerance_band(paper, log=log, tol=tol)
    lo, hi = ci
    if math.isnan(lo) or math.isnan(hi):
        return region(value, paper, b, null=null)
    met = regions_met(min(lo, hi), max(lo, hi), paper, b, null=null)
    return met[0] if len(met) == 1 else INCONCLUSIVE


def _sign(x: float) -> int:
    return (x > 0) - (x < 0)

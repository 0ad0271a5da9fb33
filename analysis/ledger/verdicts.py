"""A claim's verdict: one rule for every claim, which of the regions its 95% interval lies in.

With the paper's value p, the claim's tolerance band around it (p / (1 + tol) .. p (1 + tol) on
the log scale for ratios and steps, p +- tol |p| linearly; or the claim's own `band`, such as the
paper's range 20-150,000x or a rate of at most 0.1) and the claim's null (the no-effect value:
1 for a ratio, 0 for a difference, the other end for a rate), every possible true value falls in
one region:
- reproduced: inside the band;
- opposite: outside it, on the other side of the null from p;
- same direction, different size: outside it, on p's side of the null (or at the null).

The rule, in order, the same for every claim (qualitative ones included: a rate of 0 or 1 is a
rate with its exact binomial interval, judged like any other value):
1. no value from no runs: **not run** (runs that give no value, such as a ratio of two arms that
   are both censored, go on to the rules below: a result, judged like any other);
2. a band that holds the null: **untestable at this tolerance** (no data can tell the paper's
   size from no effect);
3. fewer runs than the measure's interval needs (an order-statistic median below 6 runs, a
   ratio of medians below 7 per arm): **too few runs**, with the n it would need;
4. no interval (NaN bounds): **inconclusive** (a point value decides nothing);
5. the region the whole interval [lo, hi] lies in; an interval that meets two or more regions is
   **inconclusive** (`regions_met` names them), unless the interval is an exact binomial one
   whose n could not give an interval inside the point's region for any count: then **too few
   runs**, with the n that could (`rate_n_needed`).
A wider interval therefore never makes a verdict easier, and no row is reproduced unless its
whole interval lies in the band.
"""

from __future__ import annotations

import math

REPRODUCED = "reproduced"
SAME_DIRECTION = "same direction, different size"
OPPOSITE = "opposite"
INCONCLUSIVE = "inconclusive"
TOO_FEW = "too few runs"
UNTESTABLE = "untestable at this tolerance"
NOT_RUN = "not run"
VERDICTS = (REPRODUCED, SAME_DIRECTION, OPPOSITE, INCONCLUSIVE, TOO_FEW, UNTESTABLE, NOT_RUN)
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


def band_of(paper: float, *, log: bool, tol: float,
            band: tuple[float, float] | None = None) -> tuple[float, float]:
    """The claim's band: its own (`band`) or the tolerance band around the paper's value."""
    return tuple(band) if band is not None else tolerance_band(paper, log=log, tol=tol)


def untestable(band: tuple[float, float], null: float) -> bool:
    """Whether the band holds the null: reproduced would then not exclude no effect."""
    return band[0] <= null <= band[1]


def rate_decides(n: int, region_of: str, paper: float, band: tuple[float, float], *,
                 null: float) -> bool:
    """Whether some count k of n gives an exact binomial interval inside `region_of` alone."""
    from grokray_analysis.intervals import clopper_pearson_all

    return any(regions_met(lo, hi, paper, band, null=null) == (region_of,)
               for lo, hi in clopper_pearson_all(n))



def rate_n_needed(n: int, value: float, paper: float, band: tuple[float, float], *,
                  null: float, cap: int = 5000) -> int:
    """The smallest n' >= n at which an exact binomial interval could lie inside the region of
    the measured rate `value` (0 if none up to `cap`)."""
    want = region(value, paper, band, null=null)
    m = max(n, 1)
    while m <= cap:
        if rate_decides(m, want, paper, band, null=null):
            return m
        m = m + 1 if m < 64 else int(m * 1.1)
    return 0


def verdict_of(paper: float, value: float, ci: tuple[float, float], *, null: float,
               log: bool, tol: float, band: tuple[float, float] | None = None,
               n: int = 0, n_needed: int = 0, rate_n: int = 0) -> str:
    """The verdict (the module docstring's rule). `band` replaces the tolerance band (a claim
    stated as a range); `n_needed` > `n`: the measure's interval needs more runs than it had;
    `rate_n` > 0: `ci` is an exact binomial interval over that many units."""
    if not math.isfinite(paper) or (math.isnan(value) and n == 0):
        return NOT_RUN
    b = band_of(paper, log=log, tol=tol, band=band)
    if untestable(b, null):
        return UNTESTABLE
    if n_needed > n:
        return TOO_FEW
    lo, hi = ci
    if math.isnan(lo) or math.isnan(hi):
        return INCONCLUSIVE
    met = regions_met(min(lo, hi), max(lo, hi), paper, b, null=null)
    if len(met) == 1:
        return met[0]
    if rate_n and not rate_decides(rate_n, region(value, paper, b, null=null), paper, b,
                                   null=null):
        return TOO_FEW
    return INCONCLUSIVE


def _sign(x: float) -> int:
    return (x > 0) - (x < 0)

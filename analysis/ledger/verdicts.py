"""A claim's verdict: how the measured value and its interval compare with the paper's number.

With the paper's value p, the measured value m, its 95% interval [lo, hi] and the claim's null
(the no-effect value: 1 for a ratio, 0 for a difference or a rate):
- reproduced: p lies in [lo, hi], or m is within the claim's tolerance of p (relative, on the
  log scale for ratios);
- opposite: m lies on the other side of the null from p;
- same direction, different size: otherwise;
- not run: no paper value or no measured value.
A qualitative claim (a rate of 0 or 1, a range) decides its own verdict in its measure.
"""

from __future__ import annotations

import math

import numpy as np

REPRODUCED = "reproduced"
SAME_DIRECTION = "same direction, different size"
OPPOSITE = "opposite"
NOT_RUN = "not run"
VERDICTS = (REPRODUCED, SAME_DIRECTION, OPPOSITE, NOT_RUN)


def verdict_of(paper: float, value: float, ci: tuple[float, float], *, null: float,
               log: bool, tol: float) -> str:
    """The generic verdict (see the module docstring)."""
    if not math.isfinite(paper) or math.isnan(value):
        return NOT_RUN
    lo, hi = ci
    if not (math.isnan(lo) or math.isnan(hi)) and lo <= paper <= hi:
        return REPRODUCED
    if math.isfinite(value):
        if log and value > 0 and paper > 0:
            close = abs(math.log(value / paper)) <= math.log1p(tol)
        else:
            close = abs(value - paper) <= tol * max(abs(paper), 1e-12)
        if close:
            return REPRODUCED
    side_p = np.sign(paper - null)
    side_m = np.sign(value - null)
    if side_p != 0 and side_m == -side_p:
        return OPPOSITE
    return SAME_DIRECTION

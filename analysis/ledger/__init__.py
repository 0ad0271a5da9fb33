"""The reproduction ledger: every headline claim of the three papers beside what grokray measured.

Where each part lives:
- claims.yaml: the claims as data (paper value, tolerance, sweep spec and output dir, rows,
  measure and its parameters; per scale, cpu and paper, its own sweep), read by the ledger and
  by `grokray reproduce`;
- claims.py: `Claim` and the loader that checks the data against the measures;
- measures.py: the measurements (trials -> `Measured`), through the shared estimators;
- verdicts.py: the verdict of a measured value against the paper's;
- sweeps.py: which rows of a sweep dir a claim reads (the dir's plan.json);
- build.py: `ledger(out)`, one row per claim and scale; output.py: the table (the CPU column,
  the paper-scale column beside it) and its files.
"""

from grokray_analysis.intervals import NAN2
from grokray_analysis.ledger.build import Ledger, LedgerRow, judge, ledger, measure
from grokray_analysis.ledger.claims import (
    BASE_SCALE,
    CLAIMS,
    SCALES,
    Claim,
    load_claims,
)
from grokray_analysis.ledger.measures import (
    MEASURES,
    Measured,
    all_grok,
    axiom_lead,
    capacity,
    conserves,
    drift_ratio,
    eff_modes,
    median_grok_step,
    mlp_fails,
    never_groks,
    no_delay,
    scaling_alpha,
    speedup,
    wedderburn,
)
from grokray_analysis.ledger.output import ledger_table, write_ledger
from grokray_analysis.ledger.verdicts import (
    INCONCLUSIVE,
    NOT_RUN,
    OPPOSITE,
    REGIONS,
    REPRODUCED,
    SAME_DIRECTION,
    TOO_FEW,
    UNTESTABLE,
    VERDICTS,
    regions_met,
    tolerance_band,
    verdict_of,
)

__all__ = [
    "BASE_SCALE", "CLAIMS", "INCONCLUSIVE", "MEASURES", "NAN2", "NOT_RUN", "OPPOSITE",
    "REGIONS", "REPRODUCED", "SAME_DIRECTION", "SCALES", "TOO_FEW", "UNTESTABLE", "VERDICTS",
    "Claim", "Ledger", "LedgerRow", "Measured", "all_grok", "axiom_lead", "capacity", "claim",
    "conserves", "drift_ratio", "eff_modes", "judge", "ledger", "ledger_table", "load_claims",
    "measure", "median_grok_step", "mlp_fails", "never_groks", "no_delay", "regions_met",
    "scaling_alpha", "speedup", "tolerance_band", "verdict_of", "wedderburn", "write_ledger",
]


def claim(key: str) -> Claim:
    """The claim with this key."""
    for c in CLAIMS:
        if c.key == key:
            return c
    raise KeyError(f"no claim {key!r}; claims: {', '.join(c.key for c in CLAIMS)}")

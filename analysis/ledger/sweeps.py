"""A claim's rows: the trials of its sweep dir that the sweep's last run planned, then `where`.

"Current" rows are those whose identity (config_hash, seed) the sweep dir's plan.json names:
`grokray sweep` and `grokray reproduce` write it whenever they run something (its
`config_hashes`, every config of the spec at the code's defaults then, and `seeds`), so rows of
an older default that share the dir are left out without loading the spec. A dir without a plan
(trials copied in by hand, `grokray run --out`) or whose plan names no configs (a search) has
every row read, and the claim's detail says so. Anything else that keeps a claim from its rows
comes back as the reason, a string: the claim is then a "not run" row, never an error.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from grokray.errors import GrokrayError
from grokray.reader import PLAN, read_plan
from grokray_analysis.errors import AnalysisError
from grokray_analysis.load import load

NO_PLAN = f"every row read: no {PLAN} names the configs this dir's sweep runs"
"""the note a claim's detail carries when its dir has no plan"""


def sweep_rows(d: Path, *, current_only: bool = True) -> tuple[pd.DataFrame | None, str]:
    """(the trials of sweep dir `d`, a note) or (None, why there are none)."""
    if not (d / "trials").is_dir():
        return None, f"no rows in {d}"
    try:
        T = load([d]).trials
    except GrokrayError as exc:  # a damaged or foreign file: that sweep's claims are not run
        return None, f"cannot read {d}: {exc}"
    if T.empty:
        return None, f"no rows in {d}"
    if not current_only:
        return T, ""
    try:
        planned = planned_identities(d)
    except (OSError, ValueError) as exc:
        return None, f"cannot read {d / PLAN}: {exc}"
    if planned is None:
        return T, NO_PLAN
    ids = zip(T["config_hash"].astype(str), T["seed"].astype(int), strict=True)
    keep = pd.Series([i in planned for i in ids], index=T.index)
    if not keep.any():
        return None, (f"the {len(T)} rows in {d} are of other configs than its {PLAN} names "
                      "(older defaults?): run the sweep again")
    return T[keep], ""


def planned_identities(d: Path) -> set[tuple[str, int]] | None:
    """The (config_hash, seed) pairs the last run of sweep dir `d` planned; None when its
    plan.json is missing or names no configs."""
    plan = read_plan(d)
    if plan is None or not plan.get("config_hashes"):
        return None
    try:
        return {(str(h), int(s)) for h in plan["config_hashes"] for s in plan["seeds"]}
    except (KeyError, TypeError) as exc:
        raise ValueError(f"not a sweep plan ({exc!r})") from None


def select(T: pd.DataFrame, where: dict) -> pd.DataFrame:
    """Rows whose columns hold the given value (or one of a list of values), as strings."""
    for col, want in where.items():
        if col not in T:
            raise AnalysisError(f"no {col} column")
        values = [str(v) for v in (want if isinstance(want, list) else [want])]
        T = T[T[col].astype(str).isin(values)]
        if T.empty:
            raise AnalysisError(f"no runs with {col} " + (f"in {', '.join(values)}"
                                                          if len(values) > 1 else
                                                          f"= {values[0]}"))
    return T


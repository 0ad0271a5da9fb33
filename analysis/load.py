"""Load sweep outputs (the Parquet contract) into pandas, checking the schema version.

A sweep output dir (a local path or a URL such as s3://bucket/results/smoke) holds
`trials/*.parquet` and `curves/*.parquet` (and `recomputed/<metric>/*.parquet`, metrics that
`grokray recompute` computed at snapshots: merged into the curves, grokray.reader). Each file is
read on its own through the one reader (`grokray.reader.read_dir`) and the frames are
concatenated: columns may differ between files (metric columns appear as they are computed),
missing cells become NaN/NA. A damaged file
is named with how to repair it (SchemaError, exit 2); rows of one identity written twice (two
drivers on one dir) are counted once, with a warning.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from grokray import reader
from grokray.errors import SchemaError
from grokray.schema import CURVE_READ_REQUIRED_COLUMNS as CURVE_REQUIRED
from grokray.schema import SCHEMA_VERSION, STATUSES
from grokray.schema import TRIAL_REQUIRED_COLUMNS as TRIAL_REQUIRED
from grokray_analysis.errors import AnalysisError

__all__ = ["CURVE_REQUIRED", "SCHEMA_VERSION", "STATUSES", "TRIAL_REQUIRED", "Sweep", "load",
           "parse_where", "select", "require_columns", "require_arms"]


@dataclass(frozen=True)
class Sweep:
    """The tables of one or several sweep output dirs, concatenated."""

    paths: tuple[Path, ...]
    """The output dirs that were read."""
    trials: pd.DataFrame = field(repr=False)
    """One row per (config, seed); `grok_step` is float with NaN for censored runs."""
    curves: pd.DataFrame = field(repr=False)
    """One row per (config, seed, eval step); empty when no curves were written. Values that
    `grokray recompute` computed at snapshots sit beside the online columns (an online value
    wins where there is one: grokray.reader.merge_recomputed)."""
    recomputed: pd.DataFrame = field(default_factory=pd.DataFrame, repr=False)
    """The recomputed rows the curves use (every metric, one row per metric, config, seed and
    snapshot step: the trials' current runs, each metric's newest version), with `metric`,
    `metric_version` and `recompute_id`; empty when nothing was recomputed."""

    @property
    def name(self) -> str:
        """The sweep names found in the trials (or the dir names), joined by '+'."""
        if "sweep" in self.trials and self.trials["sweep"].notna().any():
            return "+".join(sorted(self.trials["sweep"].dropna().astype(str).unique()))
        return "+".join(p.name for p in self.paths)


def normalize_trials(df: pd.DataFrame) -> pd.DataFrame:
    """The trials as analysis reads them: grok_step float (NaN when censored), an `arm`
    column; SchemaError when a grokked row has no grok_step."""
    df = df.copy()
    df["grok_step"] = pd.to_numeric(df["grok_step"], errors="coerce").astype(float)
    df["status"] = df["status"].astype(str)
    df["seed"] = pd.to_numeric(df["seed"]).astype(np.int64)
    if "arm" not in df.columns:
        df["arm"] = df["arch"].astype(str) if "arch" in df.columns else "all"
    df["arm"] = df["arm"].astype(str)
    bad = df["status"].eq("grokked") & df["grok_step"].isna()
    if bad.any():
        raise SchemaError(f"{int(bad.sum())} grokked row(s) have no grok_step")
    return df


def load(paths: str | Path | Iterable[str | Path]) -> Sweep:
    """Read one or several sweep output dirs (local paths or URLs).

    Raises SchemaError naming every damaged file (with how to repair it), or a missing dir."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    dirs = tuple(Path(p) if "://" not in str(p) else p for p in paths)
    if not dirs:
        raise AnalysisError("no sweep output dir given")
    trials, curves, damaged = [], [], []
    recomputed: dict[str, list[pd.DataFrame]] = {}
    for d in dirs:
        out = str(d)
        try:
            loc = reader.Location.of(out)
            is_dir = loc.is_dir()
        except (OSError, ValueError) as exc:
            raise SchemaError(f"cannot open {out}: {' '.join(str(exc).split())[:200]}") from None
        if not is_dir:
            raise SchemaError(f"no such sweep output dir: {out}")
        if not loc.is_dir("trials"):
            raise SchemaError(f"{out} has no trials/ dir; is it a sweep output dir "
                              "(OUT/<sweep>)?")
        t = reader.read_dir(loc, "trials", required=TRIAL_REQUIRED)
        c = reader.read_dir(loc, "curves", required=CURVE_REQUIRED)
        r, r_damaged = reader.read_recomputed(loc)
        damaged += [x.line(out) for x in t.damaged + c.damaged + r_damaged]
        for metric, df in r.items():
            recomputed.setdefault(metric, []).append(df)
        if not t.damaged and t.frame.empty:
            raise SchemaError(f"{out}/trials holds no rows")
        trials.append(t.frame.drop(columns="file"))
        if not c.frame.empty:
            curves.append(c.frame.drop(columns="file"))
    if damaged:
        raise SchemaError("\n".join(damaged))
    T = pd.concat(trials, ignore_index=True, sort=False)
    T, dropped, n_ids = reader.dedupe(T)
    if dropped:
        print(f"warning: {dropped} duplicate row(s) of {n_ids} identities (config_hash, seed) "
              "were counted once, the newest run kept (two drivers wrote one dir?); "
              "`grokray status --repair DIR` removes them on disk", file=sys.stderr)
    T = normalize_trials(T)
    C = pd.concat(curves, ignore_index=True, sort=False) if curves else pd.DataFrame()
    if dropped and not C.empty and "run_id" in C.columns:  # the kept rows' curves only
        C = C.merge(T[["config_hash", "seed", "run_id"]], on=["config_hash", "seed", "run_id"])
    if not C.empty and "arm" not in C.columns:
        C = C.merge(T[["config_hash", "arm"]].drop_duplicates(), on="config_hash", how="left")
    R = reader.current_recomputed({m: pd.concat(v, ignore_index=True, sort=False)
                                  for m, v in recomputed.items()}, T)
    if R:
        C = reader.merge_recomputed(C, R)
        T = reader.fill_trial_metrics(T, R)
    rec = pd.concat(R.values(), ignore_index=True, sort=False) if R else pd.DataFrame()
    return Sweep(paths=dirs, trials=T, curves=C, recomputed=rec)


def parse_where(items: Sequence[str] | None) -> dict[str, str]:
    """Parse `KEY=VALUE` filters (from `--where`)."""
    out: dict[str, str] = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise AnalysisError(f"bad filter {item!r}: expected KEY=VALUE, e.g. group=S4")
        out[key.strip()] = value.strip()
    return out


def select(df: pd.DataFrame, where: dict[str, str]) -> pd.DataFrame:
    """Rows whose columns equal the given values (as strings, and numerically for numbers)."""
    for key, value in where.items():
        require_columns(df, [key])
        col = df[key]
        mask = col.astype(str) == value
        num = pd.to_numeric(pd.Series([value]), errors="coerce").iloc[0]
        if not np.isnan(num) and pd.api.types.is_numeric_dtype(col):
            mask |= col.astype(float) == float(num)
        df = df[mask]
        if df.empty:
            raise AnalysisError(f"no rows with {key}={value}")
    return df


def require_columns(df: pd.DataFrame, columns: Iterable[str]) -> None:
    """Raise AnalysisError naming the first missing column and listing the valid ones."""
    for c in columns:
        if c not in df.columns:
            valid = ", ".join(sorted(map(str, df.columns)))
            raise AnalysisError(f"no column {c!r}; columns are: {valid}")


def require_arms(df: pd.DataFrame, arms: Iterable[str]) -> None:
    """Raise AnalysisError when an arm is not present."""
    present = sorted(df["arm"].astype(str).unique())
    for a in arms:
        if a not in present:
            raise AnalysisError(f"arm {a!r} not present; arms are: {', '.join(present)}")

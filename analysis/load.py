"""Load sweep outputs (the Parquet contract) into pandas, checking the schema version.

A sweep output dir holds `trials/*.parquet` and `curves/*.parquet`. Each file is read on its own
and the frames are concatenated: columns may differ between files (metric columns appear as they
are computed), missing cells become NaN/NA.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.errors import AnalysisError
from grokray.errors import SchemaError

try:  # the writer side owns the constant; the reader falls back to its own copy
    from grokray.schema import SCHEMA_VERSION
except ImportError:  # pragma: no cover - only until grokray/schema.py lands
    SCHEMA_VERSION = 1

TRIAL_REQUIRED = ("schema_version", "config_hash", "seed", "status", "grok_step")
CURVE_REQUIRED = ("schema_version", "config_hash", "seed", "step")

STATUSES = ("grokked", "not_grokked", "diverged", "failed")


@dataclass(frozen=True)
class Sweep:
    """The tables of one or several sweep output dirs, concatenated."""

    paths: tuple[Path, ...]
    """The output dirs that were read."""
    trials: pd.DataFrame = field(repr=False)
    """One row per (config, seed); `grok_step` is float with NaN for censored runs."""
    curves: pd.DataFrame = field(repr=False)
    """One row per (config, seed, eval step); empty when no curves were written."""

    @property
    def name(self) -> str:
        """The sweep names found in the trials (or the dir names), joined by '+'."""
        if "sweep" in self.trials and self.trials["sweep"].notna().any():
            return "+".join(sorted(self.trials["sweep"].dropna().astype(str).unique()))
        return "+".join(p.name for p in self.paths)


def _read_dir(table_dir: Path, required: Sequence[str]) -> pd.DataFrame:
    frames = []
    for f in sorted(table_dir.glob("*.parquet")):
        try:
            df = pd.read_parquet(f)
        except Exception as exc:  # pyarrow raises several types for a bad file
            raise SchemaError(f"cannot read {f}: {type(exc).__name__}: {exc}") from None
        _check_schema(df, f, required)
        if len(df):
            frames.append(df)
    return pd.concat(frames, ignore_index=True, sort=False) if frames else pd.DataFrame()


def _check_schema(df: pd.DataFrame, path: Path, required: Sequence[str]) -> None:
    missing = [c for c in required if c not in df.columns]
    if missing:
        raise SchemaError(
            f"{path}: missing column(s) {', '.join(missing)}; not a grokray schema "
            f"v{SCHEMA_VERSION} table"
        )
    versions = pd.to_numeric(df["schema_version"], errors="coerce")
    if versions.isna().any():
        raise SchemaError(f"{path}: schema_version has missing or non-integer values")
    newest = int(versions.max()) if len(versions) else SCHEMA_VERSION
    oldest = int(versions.min()) if len(versions) else SCHEMA_VERSION
    if newest > SCHEMA_VERSION:
        raise SchemaError(
            f"{path}: schema_version {newest} is newer than this analysis reads "
            f"({SCHEMA_VERSION}); upgrade grokray"
        )
    if oldest < 1:
        raise SchemaError(f"{path}: schema_version {oldest} is not valid (>= 1 expected)")


def _normalize_trials(df: pd.DataFrame) -> pd.DataFrame:
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
    """Read one or several sweep output dirs. Raises SchemaError on a missing/newer schema."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    dirs = tuple(Path(p) for p in paths)
    if not dirs:
        raise AnalysisError("no sweep output dir given")
    trials, curves = [], []
    for d in dirs:
        if not d.is_dir():
            raise SchemaError(f"no such sweep output dir: {d}")
        if not (d / "trials").is_dir():
            raise SchemaError(f"{d} has no trials/ dir; is it a sweep output dir (OUT/<sweep>)?")
        t = _read_dir(d / "trials", TRIAL_REQUIRED)
        if t.empty:
            raise SchemaError(f"{d}/trials holds no rows")
        trials.append(t)
        if (d / "curves").is_dir():
            curves.append(_read_dir(d / "curves", CURVE_REQUIRED))
    T = _normalize_trials(pd.concat(trials, ignore_index=True, sort=False))
    C = pd.concat(curves, ignore_index=True, sort=False) if curves else pd.DataFrame()
    if not C.empty and "arm" not in C.columns:
        C = C.merge(T[["config_hash", "arm"]].drop_duplicates(), on="config_hash", how="left")
    return Sweep(paths=dirs, trials=T, curves=C)


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

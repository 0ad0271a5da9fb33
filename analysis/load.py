"""Load sweep outputs (the Parquet contract) into pandas, checking the schema version.

A sweep output dir (a local path or a URL such as s3://bucket/results/smoke) holds
`trials/*.parquet` and `curves/*.parquet` (per-trial files, or compacted parts; and
`recomputed/<metric>/*.parquet`, metrics that `grokray recompute` computed at snapshots: merged
into the curves, grokray.reader). Every file is read through the one reader
(`grokray.reader.read_dir`) and the tables are concatenated: columns may differ between files
(metric columns appear as they are computed), missing cells become NaN/NA. The trials are read
at once; the curves, the bulk of a store, when asked for (`Sweep.curves`, or a filter read by
`Sweep.curves_of`). A damaged file is named with how to repair it (SchemaError, exit 2); rows of
one identity written twice (two drivers on one dir) are counted once, with a warning.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
class _Source:
    """Where one dir's curves are read from when they are asked for."""

    out: str
    loc: reader.Location


@dataclass(frozen=True)
class Sweep:
    """The tables of one or several sweep output dirs, concatenated: the trials read at once,
    the curves when they are asked for (`curves`, all of them; `curves_of`, those of some
    trials only: a filter read, so memory follows what is asked, not the store)."""

    paths: tuple[Path, ...]
    """The output dirs that were read."""
    trials: pd.DataFrame = field(repr=False)
    """One row per (config, seed); `grok_step` is float with NaN for censored runs."""
    _sources: tuple[_Source, ...] = field(default=(), repr=False)
    _current: dict[str, pd.DataFrame] = field(default_factory=dict, repr=False)
    _dropped: bool = field(default=False, repr=False)
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def curves(self) -> pd.DataFrame:
        """One row per (config, seed, eval step) of every trial; empty when no curves were
        written. Values that `grokray recompute` computed at snapshots sit beside the online
        columns (an online value wins where there is one: grokray.reader.merge_recomputed).
        Read on first use and kept; `curves_of` reads only some trials' curves."""
        if "curves" not in self._cache:
            self._cache["curves"] = self._read_curves(None, None)
        return self._cache["curves"]

    def curves_of(self, where: dict[str, Any] | None = None,
                  columns: Sequence[str] | None = None) -> pd.DataFrame:
        """The curves of the trials whose columns hold the given values (`{"arm": "forge"}`,
        `{"group": ["S4", "D8"]}`; compared as strings, as `select`), only `columns` (and the
        key columns) when given. Reads only the rows of those trials' config hashes
        (pyarrow.dataset: row groups that cannot hold one are skipped), nothing when none
        matches. The string columns (config_hash, run_id, arm, group, ...) are Categoricals
        of the values present: one arm of 10^5 trials is 10^7 rows, a few distinct keys."""
        T = self.trials
        for key, values in (where or {}).items():
            require_columns(T, [key])
            vals = [str(v) for v in (values if isinstance(values, (list, tuple, set))
                                     else [values])]
            T = T[T[key].astype(str).isin(vals)]
        if T.empty:
            return pd.DataFrame(columns=list(CURVE_REQUIRED))
        return self._read_curves(T, columns, categorical=True)

    def _read_curves(self, T: pd.DataFrame | None, columns: Sequence[str] | None,
                     categorical: bool = False) -> pd.DataFrame:
        hashes = None if T is None else {"config_hash": sorted(T["config_hash"].unique())}
        cols = None if columns is None else list(dict.fromkeys(
            [*CURVE_REQUIRED, "run_id", "arm", *columns]))
        frames, damaged = [], []
        for src in self._sources:
            c = reader.read_dir(src.loc, "curves", columns=cols, required=CURVE_REQUIRED,
                                where=hashes, categorical=categorical)
            damaged += [x.line(src.out) for x in c.damaged]
            if not c.frame.empty:
                c.frame.pop("file")  # in place: no copy of 10^7 rows
                frames.append(c.frame)
            del c
        if damaged:
            raise SchemaError("\n".join(damaged))
        if categorical and len(frames) > 1:
            _same_categories(frames)
        C = pd.concat(frames, ignore_index=True, sort=False) if len(frames) > 1 else \
            frames[0] if frames else pd.DataFrame()
        runs = self.trials if T is None else T
        whole = T is None or len(T) == int(self.trials["config_hash"].isin(
            hashes["config_hash"]).sum())  # every row of the selected configs: no seed left out
        if (self._dropped or not whole) and not C.empty and "run_id" in C.columns:
            keep = _like(runs[["config_hash", "seed", "run_id"]], C)  # the kept rows' curves
            C = C.merge(keep.assign(seed=keep["seed"].astype(C["seed"].dtype)),
                        on=["config_hash", "seed", "run_id"])
        if not C.empty and "arm" not in C.columns:
            C = C.merge(_like(runs[["config_hash", "arm"]].drop_duplicates(), C),
                        on="config_hash", how="left")
        if self._current:
            C = reader.merge_recomputed(C, self._current)
        return C

    @property
    def recomputed(self) -> pd.DataFrame:
        """The recomputed rows the curves use (every metric, one row per metric, config, seed
        and snapshot step: the trials' current runs, each metric's newest version), with
        `metric`, `metric_version` and `recompute_id`; empty when nothing was recomputed."""
        R = self._current
        return pd.concat(R.values(), ignore_index=True, sort=False) if R else pd.DataFrame()

    @property
    def name(self) -> str:
        """The sweep names found in the trials (or the dir names), joined by '+'."""
        if "sweep" in self.trials and self.trials["sweep"].notna().any():
            return "+".join(sorted(self.trials["sweep"].dropna().astype(str).unique()))
        return "+".join(reader.display_name(p) for p in self.paths)


def _same_categories(frames: list[pd.DataFrame]) -> None:
    """Give each Categorical column the union of its categories in every frame (in place), so
    that their concatenation stays Categorical."""
    cats: dict[str, set] = {}
    for f in frames:
        for c in f.columns:
            if isinstance(f[c].dtype, pd.CategoricalDtype):
                cats.setdefault(c, set()).update(f[c].cat.categories)
    for f in frames:
        for c, values in cats.items():
            if c in f.columns and isinstance(f[c].dtype, pd.CategoricalDtype):
                f[c] = f[c].cat.set_categories(sorted(values))


def _like(keys: pd.DataFrame, C: pd.DataFrame) -> pd.DataFrame:
    """`keys` with each column that is Categorical in `C` cast to C's categories (a value not
    among them has no curve row), so that a merge on them keeps C's Categoricals."""
    cast = {c: C[c].dtype for c in keys.columns
            if c in C.columns and isinstance(C[c].dtype, pd.CategoricalDtype)}
    return keys.astype(cast) if cast else keys


def normalize_trials(df: pd.DataFrame, *, copy: bool = True) -> pd.DataFrame:
    """The trials as analysis reads them: grok_step float (NaN when censored), an `arm`
    column; SchemaError when a grokked row has no grok_step. `copy=False` changes `df` in
    place (a caller that owns it: no second copy of a big table)."""
    if copy:
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
    """Read one or several sweep output dirs (local paths or URLs): the trials now, the curves
    when `Sweep.curves` or `Sweep.curves_of` asks (every curves file's footer is checked now).

    Raises SchemaError naming every damaged file (with how to repair it), or a missing dir."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    dirs = tuple(Path(p) if "://" not in str(p) else p for p in paths)
    if not dirs:
        raise AnalysisError("no sweep output dir given")
    trials, damaged, sources = [], [], []
    recomputed: dict[str, list[pd.DataFrame]] = {}
    for d in dirs:
        out = str(d)
        shown = reader.strip_query(out)
        try:
            loc = reader.Location.of(out)
            is_dir = loc.is_dir()
        except (OSError, ValueError) as exc:
            raise SchemaError(f"cannot open {shown}: {' '.join(str(exc).split())[:200]}"
                              ) from None
        if not is_dir:
            raise SchemaError(f"no such sweep output dir: {shown}")
        if not loc.is_dir("trials"):
            raise SchemaError(f"{shown} has no trials/ dir; is it a sweep output dir "
                              "(OUT/<sweep>)?")
        t = reader.read_dir(loc, "trials", required=TRIAL_REQUIRED)
        c = reader.check_dir(loc, "curves", required=CURVE_REQUIRED)
        r, r_damaged = reader.read_recomputed(loc)
        damaged += [x.line(shown) for x in t.damaged + c.damaged + r_damaged]
        for metric, df in r.items():
            recomputed.setdefault(metric, []).append(df)
        if not t.damaged and t.frame.empty:
            raise SchemaError(f"{shown}/trials holds no rows")
        frame = t.frame
        del t
        frame.pop("file")
        trials.append(frame)
        sources.append(_Source(shown, loc))
    if damaged:
        raise SchemaError("\n".join(damaged))
    T = pd.concat(trials, ignore_index=True, sort=False) if len(trials) > 1 else trials[0]
    trials.clear()
    T, dropped, n_ids = reader.dedupe(T)
    if dropped:
        print(f"warning: {dropped} duplicate row(s) of {n_ids} identities (config_hash, seed) "
              "were counted once, the newest run kept (two drivers wrote one dir?); "
              "`grokray status --repair DIR` removes them on disk", file=sys.stderr)
    T = normalize_trials(T, copy=False)  # T is this function's own
    R = reader.current_recomputed({m: pd.concat(v, ignore_index=True, sort=False)
                                  for m, v in recomputed.items()}, T)
    if R:
        T = reader.fill_trial_metrics(T, R)
    return Sweep(paths=dirs, trials=T, _sources=tuple(sources), _current=R,
                 _dropped=bool(dropped))


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

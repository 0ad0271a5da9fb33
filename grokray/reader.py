"""The one reader of a results dir's Parquet files, and where they live: local paths and URLs
alike (the writer's rules, atomic writes, the done-manifest and repair, are grokray.sweep.store).

`Location` is a directory on a pyarrow filesystem (local disk, or any URL pyarrow opens: s3://,
gs://, hdfs://). `read_dir` reads every result file of a table directory (`trials/` or `curves/`)
and never stops at a damaged one: each unreadable, foreign or too-new file comes back as a
`Damage` naming it and how to repair it, and the caller decides (status and analyze report them
all and exit 2). Both `grokray.sweep.store` and `grokray_analysis.load` read through here; every
column name and status they check comes from `grokray.schema`.

No torch, no Ray: `analysis/` imports this module.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from grokray.schema import (
    METRIC_PREFIX,
    RECOMPUTED,
    RECOMPUTED_KEY_COLUMNS,
    RECOMPUTED_REQUIRED_COLUMNS,
    SCHEMA_VERSION,
)

QUARANTINE = "quarantine"
TMP_PREFIX = ".tmp-"
PLAN = "plan.json"
"""a sweep dir's plan: what its last run meant to run (`grokray.sweep.writer.run_plan`)"""


@dataclass(frozen=True)
class Location:
    """A directory on a pyarrow filesystem (local disk or object store)."""

    fs: pafs.FileSystem
    """the filesystem"""
    path: str
    """the directory path on `fs` (no scheme)"""

    @classmethod
    def of(cls, uri: str | os.PathLike) -> Location:
        """Open a local path or a URL that pyarrow understands."""
        s = os.fspath(uri)
        if "://" in s and not s.startswith("file://"):
            fs, path = pafs.FileSystem.from_uri(s)
            return cls(fs, path.rstrip("/"))
        if s.startswith("file://"):
            s = s[len("file://"):]
        return cls(pafs.LocalFileSystem(), os.path.abspath(s))

    @property
    def is_local(self) -> bool:
        """True for a local disk (where rename is atomic)."""
        return isinstance(self.fs, pafs.LocalFileSystem)

    def join(self, *parts: str) -> str:
        """Path of a child."""
        return "/".join([self.path, *parts])

    def child(self, *parts: str) -> Location:
        """Location of a child directory."""
        return Location(self.fs, self.join(*parts))

    def listdir(self, sub: str) -> list[pafs.FileInfo]:
        """Files directly under `sub` (empty when it does not exist)."""
        sel = pafs.FileSelector(self.join(sub), allow_not_found=True)
        return [i for i in self.fs.get_file_info(sel) if i.type == pafs.FileType.File]

    def subdirs(self, sub: str = "") -> list[str]:
        """Names of the directories directly under `sub` (none hidden), sorted; empty when it
        does not exist."""
        sel = pafs.FileSelector(self.join(sub) if sub else self.path, allow_not_found=True)
        return sorted(i.base_name for i in self.fs.get_file_info(sel)
                      if i.type == pafs.FileType.Directory and not i.base_name.startswith("."))

    def exists(self, *parts: str) -> bool:
        """Does this file or directory exist?"""
        return self.fs.get_file_info(self.join(*parts)).type != pafs.FileType.NotFound

    def is_dir(self, *parts: str) -> bool:
        """Is this a directory?"""
        return self.fs.get_file_info(self.join(*parts)).type == pafs.FileType.Directory

    def read_table(self, path: str, columns: list[str] | None = None) -> pd.DataFrame:
        """Read one Parquet file (only `columns` that it has, when given; the Arrow schema's
        names, so that a list column such as a snapshot's `values` is one of them)."""
        with self.fs.open_input_file(path) as f:
            pf = pq.ParquetFile(f)
            names = pf.schema_arrow.names
            cols = None if columns is None else [c for c in columns if c in names]
            return pf.read(columns=cols).to_pandas()

    def move_aside(self, path: str, sub: str = QUARANTINE) -> str:
        """Move a file into `<dir>/<sub>/` (never deleted); returns its new path."""
        self.fs.create_dir(self.join(sub), recursive=True)
        dest = self.join(sub, path.rsplit("/", 1)[-1])
        self.fs.move(path, dest)
        return dest


def join_uri(uri: str, *parts: str) -> str:
    """A child of a local path or URL, keeping a URL's query (`s3://b/x?region=r` + `s` ->
    `s3://b/x/s?region=r`)."""
    base, sep, query = uri.partition("?") if "://" in uri else (uri, "", "")
    return "/".join([base.rstrip("/"), *parts]) + sep + query


def result_file(name: str) -> bool:
    """Is `name` read as a result file (any `*.parquet` that is not hidden: the writer names
    them `<config_hash>-<run_id>.parquet`; a foreign one is read, and reported if foreign)?"""
    return not name.startswith(".") and name.endswith(".parquet")


@dataclass(frozen=True)
class Damage:
    """One file that could not be used."""

    path: str
    """the file"""
    why: str
    """what is wrong with it"""
    repairable: bool = True
    """`grokray status --repair` moves it aside (False: a newer schema; upgrade instead)"""

    def line(self, out_dir: str) -> str:
        """`PATH: why; repair: ...` (one line)."""
        fix = (f"repair: grokray status --repair {out_dir} (moves it to "
               f"{out_dir.rstrip('/')}/{QUARANTINE}/; its trials run again on the next sweep)"
               if self.repairable else "upgrade grokray to read it")
        return f"{self.path}: {self.why}; {fix}"


@dataclass
class Tables:
    """The rows of one table directory, and the files that could not be read."""

    frame: pd.DataFrame
    """every readable file's rows, concatenated (a `file` column names each row's file)"""
    damaged: list[Damage] = field(default_factory=list)
    """files that could not be used"""
    files: list[str] = field(default_factory=list)
    """the names of the files read"""


def read_dir(out_dir: str | os.PathLike | Location, sub: str, *,
             columns: list[str] | None = None, required: tuple[str, ...] | list[str] = ()
             ) -> Tables:
    """Read every result file of `out_dir/sub`: Parquet, with the `required` columns and a
    schema version this grokray reads. Damaged files are listed, not raised."""
    loc = out_dir if isinstance(out_dir, Location) else Location.of(out_dir)
    frames: list[pd.DataFrame] = []
    damaged: list[Damage] = []
    files: list[str] = []
    want = None if columns is None else list(dict.fromkeys([*columns, *required]))
    for info in sorted(loc.listdir(sub), key=lambda i: i.base_name):
        if not result_file(info.base_name):
            continue
        df = read_file(loc, info.path, sub, columns=want, required=required)
        if isinstance(df, Damage):
            damaged.append(df)
            continue
        df["file"] = info.base_name
        files.append(info.base_name)
        if len(df):
            frames.append(df)
    frame = pd.concat(frames, ignore_index=True, sort=False) if frames else \
        pd.DataFrame(columns=[*(want or required), "file"])
    return Tables(frame, damaged, files)


def read_plan(out_dir: str | os.PathLike) -> dict[str, Any] | None:
    """The plan of a sweep dir's last run (sweep, spec, run_id, config_hashes, seeds), or None
    when it has none."""
    loc = Location.of(out_dir)
    if not loc.exists(PLAN):
        return None
    with loc.fs.open_input_stream(loc.join(PLAN)) as f:
        return json.loads(f.readall().decode())


def read_arrow(loc: Location, path: str, sub: str, *, columns: list[str] | None = None,
               required: tuple[str, ...] | list[str] = (), exclude: tuple[str, ...] = (),
               use_threads: bool = True) -> pa.Table | Damage:
    """One result file of `sub` (`trials` or `curves`) as an Arrow table (only the `columns`
    it has, when given; never those in `exclude`), or the `Damage` that keeps it from being
    read. `use_threads=False` decodes in the calling thread: faster for a small file (a caller
    reading many files in a few threads of its own)."""
    try:
        with loc.fs.open_input_file(path) as f:
            pf = pq.ParquetFile(f)
            names = pf.schema_arrow.names
            missing = [c for c in required if c not in names]
            if missing:
                return Damage(path, f"missing column(s) {', '.join(missing)}: "
                                    f"not a grokray {sub} table")
            cols = None if columns is None else [c for c in columns if c in names]
            if exclude:
                cols = [c for c in (cols or names) if c not in exclude]
            table = pf.read(columns=cols, use_threads=use_threads)
    except Exception as exc:  # noqa: BLE001 - pyarrow raises several types for a bad file
        text = " ".join(str(exc).split())[:200]
        return Damage(path, f"cannot read: not a Parquet file, or a truncated one "
                            f"({type(exc).__name__}: {text})")
    if "schema_version" in table.column_names and table.num_rows:
        v = table.column("schema_version")
        ok = pa.types.is_integer(v.type) and not v.null_count and (  # the usual case, no pandas
            1 <= pc.min(v).as_py() and pc.max(v).as_py() <= SCHEMA_VERSION)
        bad = None if ok else _version_problem(table.select(["schema_version"]).to_pandas())
        if bad is not None:
            return Damage(path, bad[0], repairable=bad[1])
    return table


def read_file(loc: Location, path: str, sub: str, *, columns: list[str] | None = None,
              required: tuple[str, ...] | list[str] = ()) -> pd.DataFrame | Damage:
    """`read_arrow` as a DataFrame."""
    t = read_arrow(loc, path, sub, columns=columns, required=required)
    return t if isinstance(t, Damage) else t.to_pandas()


def _version_problem(df: pd.DataFrame) -> tuple[str, bool] | None:
    if "schema_version" not in df.columns or not len(df):
        return None
    v = pd.to_numeric(df["schema_version"], errors="coerce")
    if v.isna().any() or (v < 1).any() or (v != v.round()).any():
        return "schema_version has missing or invalid values (not a grokray table)", True
    if int(v.max()) > SCHEMA_VERSION:
        return (f"schema_version {int(v.max())} is newer than this grokray reads "
                f"({SCHEMA_VERSION})", False)
    return None


def dedupe(df: pd.DataFrame) -> tuple[pd.DataFrame, int, int]:
    """One row per identity (config_hash, seed): the newest run_id wins.

    Returns (rows, rows dropped, identities that had more than one row)."""
    if df.empty or not {"config_hash", "seed"} <= set(df.columns):
        return df, 0, 0
    key = ["config_hash", "seed"]
    order = df.sort_values("run_id", kind="stable") if "run_id" in df.columns else df
    dup = order.duplicated(key, keep="last")
    if not dup.any():
        return df, 0, 0
    n_ids = int(order[dup][key].drop_duplicates().shape[0])
    kept = order[~dup].sort_index()
    return kept.reset_index(drop=True), int(dup.sum()), n_ids


def problems_error(out_dir: str, damaged: list[Damage]) -> str:
    """The message of a SchemaError listing every damaged file, one per line."""
    return "\n".join(d.line(out_dir) for d in damaged)


def summary(damaged: list[Damage]) -> list[dict[str, Any]]:
    """Damaged files as plain values (for --json)."""
    return [{"path": d.path, "why": d.why, "repairable": d.repairable} for d in damaged]


# ----------------------------------------------------------------------------- recomputed


def recomputed_metrics(out_dir: str | os.PathLike | Location) -> list[str]:
    """The metrics with a directory under `recomputed/` (`grokray recompute`), sorted."""
    loc = out_dir if isinstance(out_dir, Location) else Location.of(out_dir)
    return loc.subdirs(RECOMPUTED)


def read_recomputed(out_dir: str | os.PathLike | Location, *,
                    columns: list[str] | None = None
                    ) -> tuple[dict[str, pd.DataFrame], list[Damage]]:
    """Every recomputed table of `out_dir`, by metric (rows of every version and run; a `file`
    column names each row's file), and the files that could not be read."""
    loc = out_dir if isinstance(out_dir, Location) else Location.of(out_dir)
    out: dict[str, pd.DataFrame] = {}
    damaged: list[Damage] = []
    for metric in recomputed_metrics(loc):
        t = read_dir(loc, f"{RECOMPUTED}/{metric}", columns=columns,
                     required=RECOMPUTED_REQUIRED_COLUMNS)
        damaged += t.damaged
        out[metric] = t.frame
    return out, damaged


def recomputed_values(df: pd.DataFrame) -> list[str]:
    """The value columns of a recomputed table (named as curve columns)."""
    return [c for c in df.columns if c not in RECOMPUTED_KEY_COLUMNS and c != "file"]


def current_recomputed(tables: dict[str, pd.DataFrame], trials: pd.DataFrame
                       ) -> dict[str, pd.DataFrame]:
    """What the readers use of each metric's recomputed rows: those of the trials' current
    runs (`config_hash, seed, run_id` of a row of `trials`), at the newest `metric_version` on
    disk, one row per (config_hash, seed, step) (the newest recompute run's)."""
    out: dict[str, pd.DataFrame] = {}
    key = ["config_hash", "seed", "run_id"]
    runs = None
    if set(key) <= set(trials.columns):
        runs = trials[key].drop_duplicates()
        runs = runs.assign(seed=pd.to_numeric(runs["seed"]).astype("int64"))
    for metric, df in tables.items():
        if df.empty:
            continue
        df = df.drop(columns="file", errors="ignore").copy()
        df["seed"] = pd.to_numeric(df["seed"]).astype("int64")
        df["step"] = pd.to_numeric(df["step"]).astype("int64")
        if runs is not None:
            df = df.merge(runs, on=key, how="inner")
        if df.empty:
            continue
        df = df[df["metric_version"] == df["metric_version"].max()]
        df = df.sort_values("recompute_id", kind="stable")
        df = df.drop_duplicates(["config_hash", "seed", "step"], keep="last")
        out[metric] = df.sort_values(["config_hash", "seed", "step"]).reset_index(drop=True)
    return out


def merge_recomputed(curves: pd.DataFrame, current: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The curves with the recomputed values beside the online ones, by (config_hash, seed,
    run_id, step). A column computed online keeps its online value wherever it has one (the
    recomputed value agrees there: the same function on the same parameters); the recomputed
    value fills its empty cells (steps where a costly metric was not due) and a new column
    where it was never computed online. Curves define the rows: every snapshot step is an eval
    step, so every recomputed row finds its curve row."""
    if curves.empty or not current:
        return curves
    key = ["config_hash", "seed", "run_id", "step"]
    out = curves.copy()
    out["seed"] = pd.to_numeric(out["seed"]).astype("int64")
    out["step"] = pd.to_numeric(out["step"]).astype("int64")
    for df in current.values():
        vals = recomputed_values(df)
        if not vals:
            continue
        right = df[key + vals].rename(columns={c: f"{c}\0rec" for c in vals})
        out = out.merge(right, on=key, how="left")
        for c in vals:
            rec = out.pop(f"{c}\0rec")
            out[c] = rec if c not in out.columns else out[c].where(out[c].notna(), rec)
    return out


def fill_trial_metrics(trials: pd.DataFrame, current: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The trials with each recomputed `metric_<name>` column's seed summary where the trials
    table has none: the last finite value of the seed's curve, as the trainer summarizes an
    online metric (grokray.metrics.mechanism.summarize; the last snapshot is the seed's end).
    Other value columns (`loss_assoc`) have no trials column online and get none here."""
    if trials.empty or not current:
        return trials
    key = ["config_hash", "seed", "run_id"]
    out = trials
    for df in current.values():
        vals = [c for c in recomputed_values(df) if c.startswith(METRIC_PREFIX)]
        if not vals:
            continue
        d = df.sort_values("step")
        last = d.groupby(key)[vals].agg(lambda s: s.dropna().iloc[-1] if s.notna().any()
                                        else float("nan")).reset_index()
        last["seed"] = last["seed"].astype(out["seed"].dtype)
        merged = out[key].merge(last, on=key, how="left")
        if out is trials:
            out = trials.copy()
        for c in vals:
            v = pd.to_numeric(merged[c], errors="coerce").to_numpy()
            out[c] = v if c not in out.columns else out[c].where(out[c].notna(), v)
    return out

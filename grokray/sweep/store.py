"""Results on disk: atomic Parquet writes and the done-manifest.

Layout of one output dir (a sweep's `OUT/<sweep>/`, or `grokray run --out DIR`):

    trials/<config_hash>-<run_id>.parquet   one row per (config, seed)
    curves/<config_hash>-<run_id>.parquet   one row per (config, seed, eval step)
    plan.json                               what the last `grokray sweep` meant to run

Every file is written whole or not at all: on a local disk to a hidden temporary name in the same
directory, then renamed; on an object store (`s3://`, `gs://`, anything pyarrow's filesystems
open) by a single PUT, which is all-or-nothing. Only the driver writes. The curves file of a trial
is written before its trials file, so a trials file is the "done" mark of its rows.

The row identity is `(config_hash, seed)`. `Manifest` reads the identity columns of every trials
file; `repair` removes what an interrupted writer may have left (temporary files, curves without
their trials, a row superseded by a newer run of the same identity), so that after it each
identity has exactly one row on disk.
"""

from __future__ import annotations

import json
import os
import secrets
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from grokray.errors import SchemaError
from grokray.schema import CONFIG_JSON_COLUMN as CONFIG_JSON
from grokray.schema import SCHEMA_VERSION

TRIALS = "trials"
CURVES = "curves"
PLAN = "plan.json"
ID_COLUMNS = ["config_hash", "seed", "status", "run_id"]
_TMP_PREFIX = ".tmp-"


def new_run_id() -> str:
    """A unique run id that sorts by time: UTC time to the microsecond, 4 random hex chars."""
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ") + "-" + secrets.token_hex(2)


# ----------------------------------------------------------------------------- filesystem


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
        if "://" in s:
            fs, path = pafs.FileSystem.from_uri(s)
            return cls(fs, path.rstrip("/"))
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

    def exists(self, *parts: str) -> bool:
        """Does this file or directory exist?"""
        return self.fs.get_file_info(self.join(*parts)).type != pafs.FileType.NotFound

    def write_bytes_atomic(self, path: str, write) -> None:
        """Write a file whole: `write(stream)` fills it; local disks get temp + rename."""
        parent = path.rsplit("/", 1)[0]
        self.fs.create_dir(parent, recursive=True)
        if not self.is_local:
            with self.fs.open_output_stream(path) as out:  # a single PUT: all or nothing
                write(out)
            return
        name = path.rsplit("/", 1)[1]
        tmp = f"{parent}/{_TMP_PREFIX}{name}.{uuid.uuid4().hex[:8]}"
        try:
            with open(tmp, "wb") as out:
                write(out)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        _fsync_dir(parent)

    def write_table(self, path: str, df: pd.DataFrame) -> None:
        """Write a DataFrame as one Parquet file, atomically."""
        table = pa.Table.from_pandas(df, preserve_index=False)
        self.write_bytes_atomic(path, lambda out: pq.write_table(table, out))

    def read_table(self, path: str, columns: list[str] | None = None) -> pd.DataFrame:
        """Read one Parquet file (only `columns` that it has, when given)."""
        with self.fs.open_input_file(path) as f:
            pf = pq.ParquetFile(f)
            cols = None if columns is None else [c for c in columns if c in pf.schema.names]
            return pf.read(columns=cols).to_pandas()


def _fsync_dir(path: str) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _file_key(name: str) -> tuple[str, str] | None:
    """(config_hash, run_id) of a result file name, or None for anything else."""
    if name.startswith(".") or not name.endswith(".parquet"):
        return None
    stem = name[: -len(".parquet")]
    h, sep, run_id = stem.partition("-")
    return (h, run_id) if sep else None


# ----------------------------------------------------------------------------- writing


def result_file_name(config_hash: str, run_id: str) -> str:
    """`<config_hash>-<run_id>.parquet`."""
    return f"{config_hash}-{run_id}.parquet"


def write_frames(
    out_dir: str | os.PathLike | Location,
    trials: pd.DataFrame,
    curves: pd.DataFrame | None,
    *,
    config_hash: str,
    run_id: str,
) -> str:
    """Write one trial's tables (curves, then trials; each atomic); returns the trials path."""
    loc = out_dir if isinstance(out_dir, Location) else Location.of(out_dir)
    name = result_file_name(config_hash, run_id)
    if curves is not None and len(curves):
        loc.write_table(loc.join(CURVES, name), curves)
    path = loc.join(TRIALS, name)
    loc.write_table(path, trials)
    return path


def write_result(result: Any, out_dir: str | os.PathLike, *, sweep: str, run_id: str) -> str:
    """Write a `TrialResult` as its trials and curves files; returns the trials file's path."""
    from grokray.schema import curve_frame, trial_frame

    trials = trial_frame(result, sweep, run_id)
    curves = curve_frame(result, sweep, run_id)
    return write_frames(
        out_dir, trials, curves, config_hash=result.config.config_hash(), run_id=run_id
    )


def write_plan(out_dir: str | os.PathLike, plan: dict[str, Any]) -> None:
    """Write `plan.json` (what a sweep means to run) atomically."""
    loc = Location.of(out_dir)
    data = json.dumps(plan, indent=1, sort_keys=True).encode()
    loc.write_bytes_atomic(loc.join(PLAN), lambda out: out.write(data))


def read_plan(out_dir: str | os.PathLike) -> dict[str, Any] | None:
    """The last sweep's plan, or None."""
    loc = Location.of(out_dir)
    if not loc.exists(PLAN):
        return None
    with loc.fs.open_input_stream(loc.join(PLAN)) as f:
        return json.loads(f.readall().decode())


# ----------------------------------------------------------------------------- manifest


@dataclass
class Manifest:
    """The identities already on disk: one row per trials-file row."""

    rows: pd.DataFrame = field(repr=False)
    """columns config_hash, seed, status, run_id, file (the trials file's name)"""

    @classmethod
    def load(cls, out_dir: str | os.PathLike) -> Manifest:
        """Read the identity columns of every trials file in `out_dir` (v1 rows: their v2
        identity, `current_identity`)."""
        loc = Location.of(out_dir)
        frames = []
        for info in loc.listdir(TRIALS):
            if _file_key(info.base_name) is None:
                continue
            try:
                df = loc.read_table(info.path, [*ID_COLUMNS, "schema_version"])
                if (df["schema_version"] < SCHEMA_VERSION).any():  # v1 rows: read config_json
                    df = loc.read_table(info.path)
                    df["config_hash"] = current_identity(df)
            except Exception as exc:  # pyarrow raises several types for a bad file
                msg = f"cannot read {info.path}: {type(exc).__name__}: {exc}"
                raise SchemaError(msg) from None
            df = df[ID_COLUMNS].copy()
            df["file"] = info.base_name
            frames.append(df)
        if not frames:
            return cls(pd.DataFrame(columns=[*ID_COLUMNS, "file"]))
        rows = pd.concat(frames, ignore_index=True)
        rows["seed"] = rows["seed"].astype(int)
        return cls(rows)

    def done(self, include_failed: bool = True) -> set[tuple[str, int]]:
        """Identities with a row (failed ones only when `include_failed`)."""
        rows = self.rows if include_failed else self.rows[self.rows["status"] != "failed"]
        return set(zip(rows["config_hash"], rows["seed"].astype(int), strict=False))

    def __len__(self) -> int:
        return len(self.rows)


def repair(out_dir: str | os.PathLike) -> dict[str, int]:
    """Make the directory hold exactly one row per identity; returns what was removed.

    Removes temporary files left by a killed writer, curves files whose trials file is missing
    (the writer died between the two), and rows superseded by a newer run id of the same
    (config_hash, seed) (an interrupted `--rerun-failed` or `--force`).
    """
    loc = Location.of(out_dir)
    removed = {"temp_files": 0, "orphan_curves": 0, "superseded_rows": 0}
    for sub in (TRIALS, CURVES):
        for info in loc.listdir(sub):
            if info.base_name.startswith(_TMP_PREFIX):
                loc.fs.delete_file(info.path)
                removed["temp_files"] += 1
    trial_files = {i.base_name for i in loc.listdir(TRIALS) if _file_key(i.base_name)}
    for info in loc.listdir(CURVES):
        if _file_key(info.base_name) and info.base_name not in trial_files:
            loc.fs.delete_file(info.path)
            removed["orphan_curves"] += 1
    rows = Manifest.load(out_dir).rows
    if rows.empty:
        return removed
    newest = rows.groupby(["config_hash", "seed"])["run_id"].transform("max")
    stale = rows[rows["run_id"] < newest]
    for fname, grp in stale.groupby("file"):
        drop = set(zip(grp["config_hash"], grp["seed"].astype(int), strict=False))
        removed["superseded_rows"] += len(drop)
        for sub in (CURVES, TRIALS):  # trials last: it is the done mark
            path = loc.join(sub, fname)
            if not loc.exists(sub, fname):
                continue
            df = loc.read_table(path)
            ids = zip(current_identity(df), df["seed"], strict=True)
            keep = [(h, int(s)) not in drop for h, s in ids]
            if all(keep):
                continue
            if any(keep):
                loc.write_table(path, df[keep].reset_index(drop=True))
            else:
                loc.fs.delete_file(path)
    return removed


def current_identity(df: pd.DataFrame) -> list[str]:
    """The config_hash of each row under the current schema: as stored for v2 rows; for v1
    rows recomputed from their stored config (config_json holds every v1 section, so the
    effective config is rebuilt exactly). A v1 dir is read, resumed and repaired in place:
    no v1 file is rewritten and no finished v1 row runs again."""
    from grokray.config import TrialConfig

    out, cache = [], {}
    for h, v, cj in zip(df["config_hash"], df["schema_version"],
                        df[CONFIG_JSON] if CONFIG_JSON in df else [None] * len(df), strict=True):
        if int(v) >= SCHEMA_VERSION or cj is None:
            out.append(h)
            continue
        if cj not in cache:
            cache[cj] = TrialConfig.from_dict(json.loads(cj)).config_hash()
        out.append(cache[cj])
    return out


def read_trials(out_dir: str | os.PathLike, columns: list[str] | None = None) -> pd.DataFrame:
    """Concatenate every trials file (only `columns` when given)."""
    loc = Location.of(out_dir)
    frames = []
    for info in loc.listdir(TRIALS):
        if _file_key(info.base_name) is None:
            continue
        frames.append(loc.read_table(info.path, columns))
    frames = [f for f in frames if len(f)]
    if not frames:
        return pd.DataFrame(columns=columns or ID_COLUMNS)
    return pd.concat(frames, ignore_index=True, sort=False)

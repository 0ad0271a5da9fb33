"""Results on disk: atomic Parquet writes and the done-manifest.

Layout of one output dir (a sweep's `OUT/<sweep>/`, or `grokray run --out DIR`):

    trials/<config_hash>-<run_id>.parquet      one row per (config, seed)
    curves/<config_hash>-<run_id>.parquet      one row per (config, seed, eval step)
    trials/part-<id>.parquet, curves/part-<id>.parquet
                                               the same rows of many trials, compacted
                                               (grokray.sweep.compact)
    snapshots/<config_hash>-<run_id>.parquet   one row per (config, seed, step, tensor)
    recomputed/<metric>/<config_hash>-<recompute_id>.parquet
                                               one row per (config, seed, snapshot step)
    plan.json                                  what the last `grokray sweep` meant to run

Every file is written whole or not at all: on a local disk to a hidden temporary name in the same
directory, then renamed; on an object store (`s3://`, `gs://`, anything pyarrow's filesystems
open) by a single PUT, which is all-or-nothing. Only the driver writes. A trial's snapshots and
curves files are written before its trials file, so a trials file is the "done" mark of its rows.
A full disk raises `DiskFullError` (one line: which file, how much the sweep still needs, free
space and run the same command to resume).

The row identity is `(config_hash, seed)`. `Manifest` reads the identity columns of every live
trials file (`grokray.reader.live_files`; compacted parts are few and large, so this is the
identity index a dry run, a resume and status look up); `repair` settles a compaction a
killed process left (`settle_compactions`), then removes what an interrupted writer may have
left (temporary files, curves without
their trials, a row superseded by a newer run of the same identity), so that after it each
identity has exactly one row on disk.
"""

from __future__ import annotations

import errno
import json
import os
import re
import secrets
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from grokray import reader
from grokray.config import TrialConfig
from grokray.errors import GrokrayError, SchemaError
from grokray.schema import CONFIG_JSON_COLUMN as CONFIG_JSON
from grokray.schema import (
    ID_COLUMNS,
    IDENTITY_VERSION,
    RECOMPUTED,
    RECOMPUTED_REQUIRED_COLUMNS,
    curve_frame,
    snapshot_frame,
    trial_frame,
)

TRIALS = "trials"
CURVES = "curves"
SNAPSHOTS = "snapshots"
_TMP_PREFIX = reader.TMP_PREFIX


OUT_SCHEMES = ("file", "s3", "gs", "gcs", "hdfs", "viewfs", "abfs", "abfss")
"""URL schemes an output dir may have (pyarrow filesystems)"""


def check_writable(out_dir: str, *, create: bool = True) -> None:
    """Fail early, in one line (GrokrayError, exit 2), when results cannot be written to
    `out_dir`: a file in the way, a directory that is not writable, an unsupported or
    unreachable URL. With `create`, the directory is created and a probe file written and
    removed (the only honest test of a read-only mount or a bucket's permissions)."""
    where = f"output {out_dir}"
    m = re.match(r"^([A-Za-z][A-Za-z0-9+.-]*)://", out_dir)
    if m and m.group(1).lower() not in OUT_SCHEMES:
        raise GrokrayError(f"{where}: unsupported URL scheme '{m.group(1)}'; valid: a local "
                           "path or " + ", ".join(f"{s}://" for s in OUT_SCHEMES))
    try:
        loc = Location.of(out_dir)
    except (OSError, ValueError) as exc:
        raise GrokrayError(f"{where}: cannot open: {_one(exc)}; check the URL and the "
                           "credentials") from None
    if loc.is_local:
        _check_local(loc.path, where)
    else:
        try:
            kind = loc.fs.get_file_info(loc.path).type
        except (OSError, ValueError) as exc:
            raise GrokrayError(f"{where}: unreachable: {_one(exc)}; check the URL, the "
                               "network and the credentials") from None
        if kind == pafs.FileType.File:
            raise GrokrayError(f"{where}: is a file; give a directory")
    if not create:
        return
    probe = loc.join(f".write-test-{secrets.token_hex(4)}")
    try:
        loc.fs.create_dir(loc.path, recursive=True)
        with loc.fs.open_output_stream(probe) as out:
            out.write(b"ok")
        loc.fs.delete_file(probe)
    except (OSError, ValueError) as exc:
        raise GrokrayError(f"{where}: cannot write there: {_one(exc)}; --out takes a writable "
                           "directory (on a cluster one every node mounts at that path) or an "
                           "object store URI such as s3://bucket/dir") from None


def _check_local(path: str, where: str) -> None:
    p = path
    while not os.path.exists(p):
        parent = os.path.dirname(p)
        if parent == p:
            break
        p = parent
    if os.path.exists(p) and not os.path.isdir(p):
        what = "is a file" if p == path else f"has a file in the way ({p})"
        raise GrokrayError(f"{where}: {what}; give a directory")
    if not os.access(p, os.W_OK | os.X_OK):
        raise GrokrayError(f"{where}: {p} is not writable; give a writable directory (--out)")


def _one(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200] or type(exc).__name__


def new_run_id() -> str:
    """A unique run id that sorts by time: UTC time to the microsecond, 4 random hex chars."""
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ") + "-" + secrets.token_hex(2)


# ----------------------------------------------------------------------------- filesystem


class Location(reader.Location):
    """A directory on a pyarrow filesystem (`grokray.reader.Location`) that writes whole."""

    @classmethod
    def of(cls, uri: str | os.PathLike) -> Location:
        loc = reader.Location.of(uri)
        return cls(loc.fs, loc.path)

    def child(self, *parts: str) -> Location:
        return Location(self.fs, self.join(*parts))

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
        except OSError as exc:
            if is_disk_full(exc):
                raise DiskFullError(path) from None
            raise
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        _fsync_dir(parent)

    def write_table(self, path: str, df: pd.DataFrame) -> None:
        """Write a DataFrame as one Parquet file, atomically."""
        table = pa.Table.from_pandas(df, preserve_index=False)
        self.write_bytes_atomic(path, lambda out: pq.write_table(table, out))


class DiskFullError(GrokrayError):
    """A write ran out of space. Nothing partial is left (the temporary file is removed, and a
    trial's curves file with it when its trials file did not fit); what is on disk is whole, so
    the same command resumes. The writer fills in how much the sweep still needs."""

    def __init__(self, path: str, trial_bytes: int = 0, trials_left: int = 0) -> None:
        super().__init__(path)
        self.path, self.trial_bytes, self.trials_left = path, trial_bytes, trials_left

    def __str__(self) -> str:
        need = ""
        if self.trial_bytes and self.trials_left:
            need = (f"; the sweep still needs about {_size(self.trial_bytes * self.trials_left)}"
                    f" ({self.trials_left} trial(s) of ~{_size(self.trial_bytes)})")
        return (f"no space left on the device writing {self.path}{need}; free space and run the "
                "same command to resume")


def is_disk_full(exc: BaseException) -> bool:
    """An OSError that means the disk (or the user's quota) is full."""
    return isinstance(exc, OSError) and (exc.errno in (errno.ENOSPC, errno.EDQUOT)
                                         or "No space left on device" in str(exc))


def _size(n: int) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return ""  # pragma: no cover


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
    snapshots: pd.DataFrame | None = None,
) -> str:
    """Write one trial's tables (snapshots, curves, then trials; each atomic); returns the
    trials path. When one does not fit, the ones written before it go too (no orphans)."""
    loc = out_dir if isinstance(out_dir, Location) else Location.of(out_dir)
    name = result_file_name(config_hash, run_id)
    parts = [(sub, df) for sub, df in ((SNAPSHOTS, snapshots), (CURVES, curves), (TRIALS, trials))
             if df is not None and (len(df) or sub == TRIALS)]
    written = []
    try:
        for sub, df in parts:
            loc.write_table(loc.join(sub, name), df)
            written.append(sub)
    except DiskFullError as exc:
        for sub in written:  # their done mark did not fit
            loc.fs.delete_file(loc.join(sub, name))
        exc.trial_bytes = sum(_parquet_size(df) for _, df in parts)
        raise
    return loc.join(TRIALS, name)


def _parquet_size(df: pd.DataFrame) -> int:
    """Bytes of `df` as a Parquet file (computed in memory)."""
    sink = pa.BufferOutputStream()
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), sink)
    return sink.getvalue().size


def write_result(result: Any, out_dir: str | os.PathLike, *, sweep: str, run_id: str) -> str:
    """Write a `TrialResult` as its trials and curves files; returns the trials file's path."""
    trials = trial_frame(result, sweep, run_id)
    curves = curve_frame(result, sweep, run_id)
    snaps = snapshot_frame(result, sweep, run_id) if result.snapshots else None
    return write_frames(out_dir, trials, curves, config_hash=result.config.config_hash(),
                        run_id=run_id, snapshots=snaps)


def write_plan(out_dir: str | os.PathLike, plan: dict[str, Any]) -> None:
    """Write `plan.json` (what a sweep means to run) atomically."""
    loc = Location.of(out_dir)
    data = json.dumps(plan, indent=1, sort_keys=True).encode()
    loc.write_bytes_atomic(loc.join(reader.PLAN), lambda out: out.write(data))


# ----------------------------------------------------------------------------- manifest


@dataclass
class Manifest:
    """The identities already on disk: one row per trials-file row."""

    rows: pd.DataFrame = field(repr=False)
    """columns config_hash, seed, status, run_id, file (the trials file's name)"""

    @classmethod
    def load(cls, out_dir: str | os.PathLike) -> Manifest:
        """Read the identity columns of every trials file in `out_dir` (SchemaError naming
        every damaged file and how to repair it; v1 and v2 rows: their current identity,
        `current_identity`)."""
        t = reader.read_dir(os.fspath(out_dir), TRIALS, columns=[*ID_COLUMNS, "schema_version"],
                           required=ID_COLUMNS)
        if t.damaged:
            raise SchemaError(reader.problems_error(os.fspath(out_dir), t.damaged))
        rows = t.frame
        if len(rows) and "schema_version" in rows and (rows["schema_version"] < IDENTITY_VERSION
                                                       ).any():
            rows = rows.copy()
            rows["config_hash"] = reidentified(out_dir, rows)
        rows = rows[[*ID_COLUMNS, "file"]].copy()
        rows["seed"] = rows["seed"].astype(int)
        return cls(rows.reset_index(drop=True))

    def where(self, config_hash: str, seed: int) -> str | None:
        """The trials file that holds the row of an identity (None: no row)."""
        hit = self.rows[(self.rows["config_hash"] == config_hash) & (self.rows["seed"] == seed)]
        return None if hit.empty else str(hit["file"].iloc[-1])

    def done(self, include_failed: bool = True) -> set[tuple[str, int]]:
        """Identities with a row (failed ones only when `include_failed`)."""
        rows = self.rows if include_failed else self.rows[self.rows["status"] != "failed"]
        return set(zip(rows["config_hash"], rows["seed"].astype(int), strict=False))

    def __len__(self) -> int:
        return len(self.rows)


def settle_compactions(out_dir: str | os.PathLike | Location) -> dict[str, int]:
    """Finish every compaction a killed process left (grokray.sweep.compact): forward when its
    trials part is there (the rest of its sources deleted), back when not (its curves part
    deleted); returns how many went forward and back."""
    loc = out_dir if isinstance(out_dir, Location) else Location.of(out_dir)
    done = {"forward": 0, "back": 0}
    infos = loc.listdir(reader.TRIALS)
    flight = reader.compactions(loc, infos)
    names = {i.base_name for i in infos}
    for part, sources in flight.items():
        if part in names:
            for name in sources:
                delete_result(loc, name)
            done["forward"] += 1
        else:
            if loc.exists(reader.CURVES, part):
                loc.fs.delete_file(loc.join(reader.CURVES, part))
            done["back"] += 1
        loc.fs.delete_file(compaction_record(loc, part))
    return done


def compaction_record(loc: Location, part: str) -> str:
    """The `trials/.compact-<id>.json` of a part."""
    cid = part[len(reader.PART_PREFIX):-len(".parquet")]
    return loc.join(reader.TRIALS, f"{reader.COMPACTING_PREFIX}{cid}.json")


def delete_result(loc: Location, name: str) -> None:
    """Delete the curves and trials files of one name (trials last: the done mark)."""
    for sub in (reader.CURVES, reader.TRIALS):
        path = loc.join(sub, name)
        if loc.exists(sub, name):
            loc.fs.delete_file(path)


def repair(out_dir: str | os.PathLike) -> dict[str, int]:
    """Make the directory hold exactly one row per identity; returns what was removed.

    Removes temporary files left by a killed writer, curves and snapshots files whose trials
    file is missing (the writer died between them), and rows superseded by a newer run id of
    the same (config_hash, seed) (an interrupted `--rerun-failed` or `--force`); then the
    recomputed rows whose trial run is gone, and rows recomputed twice (`grokray recompute`).
    """
    loc = Location.of(out_dir)
    settle_compactions(loc)
    removed = {"temp_files": 0, "orphan_curves": 0, "orphan_snapshots": 0, "superseded_rows": 0}
    for sub in (TRIALS, CURVES, SNAPSHOTS):
        for info in loc.listdir(sub):
            if info.base_name.startswith(_TMP_PREFIX):
                loc.fs.delete_file(info.path)
                removed["temp_files"] += 1
    trial_files = {i.base_name for i in loc.listdir(TRIALS) if _file_key(i.base_name)}
    for info in loc.listdir(CURVES):
        if _file_key(info.base_name) and info.base_name not in trial_files:
            loc.fs.delete_file(info.path)
            removed["orphan_curves"] += 1
    snaps = [i for i in loc.listdir(SNAPSHOTS)
             if _file_key(i.base_name) and i.base_name not in trial_files]
    if snaps:  # a compacted trial's snapshots keep their name: its row names them
        t = reader.read_dir(loc, TRIALS, columns=["config_hash", "run_id"],
                            required=("config_hash", "run_id"))
        runs = None if t.damaged else {result_file_name(h, r) for h, r in zip(
            t.frame["config_hash"], t.frame["run_id"], strict=True)}
        for info in snaps if runs is not None else []:
            if info.base_name not in runs:
                loc.fs.delete_file(info.path)
                removed["orphan_snapshots"] += 1
    rows = Manifest.load(out_dir).rows
    if rows.empty:
        return _repair_recomputed(loc, removed)
    newest = rows.groupby(["config_hash", "seed"])["run_id"].transform("max")
    stale = rows[rows["run_id"] < newest]
    for fname, grp in stale.groupby("file"):
        drop = set(zip(grp["config_hash"], grp["seed"].astype(int), grp["run_id"],
                       strict=True))  # current identity and run: a part may hold the newest too
        removed["superseded_rows"] += len(drop)
        tpath = loc.join(TRIALS, fname)
        trials = loc.read_table(tpath)
        tkeep = [(h, int(s), r) not in drop for h, s, r in zip(
            current_identity(trials), trials["seed"], trials["run_id"], strict=True)]
        gone = trials[[not k for k in tkeep]]
        stored = set(zip(gone["config_hash"], gone["seed"].astype(int), gone["run_id"],
                         strict=True))  # as the curves and snapshots rows name them
        snaps = sorted({result_file_name(h, r) for h, _, r in stored})
        for sub, name in [*((SNAPSHOTS, n) for n in snaps), (CURVES, fname)]:
            if not loc.exists(sub, name):
                continue
            path = loc.join(sub, name)
            df = loc.read_table(path)
            keep = [(h, int(s), r) not in stored for h, s, r in zip(
                df["config_hash"], df["seed"], df["run_id"], strict=True)]
            if all(keep):
                continue
            if any(keep):
                loc.write_table(path, df[keep].reset_index(drop=True))
            else:
                loc.fs.delete_file(path)
        if any(tkeep):  # trials last: it is the done mark
            loc.write_table(tpath, trials[tkeep].reset_index(drop=True))
        else:
            loc.fs.delete_file(tpath)
    return _repair_recomputed(loc, removed)


def _repair_recomputed(loc: Location, removed: dict[str, int]) -> dict[str, int]:
    """`repair`'s part for `grokray recompute`'s files (grokray.sweep.recompute): temporary files,
    rows whose trial run is no longer on disk (its sweep ran it again: the snapshot they were
    computed from is gone), and a row computed twice (same metric, version, trial run, seed and
    step: two recompute runs at once), the newest recompute run's kept. A file is rewritten
    without its rows, or removed when none is left; an older metric version is kept (readers
    use the newest)."""
    removed = {**removed, "orphan_recomputed": 0, "duplicate_recomputed": 0}
    metrics = reader.recomputed_metrics(loc)
    for m in metrics:
        for info in loc.listdir(f"{RECOMPUTED}/{m}"):
            if info.base_name.startswith(_TMP_PREFIX):
                loc.fs.delete_file(info.path)
                removed["temp_files"] += 1
    if not metrics:
        return removed
    t = reader.read_dir(loc, TRIALS, columns=["config_hash", "seed", "run_id"],
                       required=("config_hash", "seed", "run_id"))
    runs = None if t.damaged else set(zip(  # unreadable trials: keep every recomputed row
        t.frame["config_hash"], t.frame["seed"].astype(int), t.frame["run_id"], strict=True))
    key = ["config_hash", "seed", "run_id", "step", "metric_version"]
    tables, _ = reader.read_recomputed(loc, columns=[*key, "recompute_id"])
    for m, df in tables.items():
        if df.empty:
            continue
        df = df.reset_index(drop=True)
        drop = pd.Series(False, index=df.index)
        if runs is not None:
            drop |= np.array([(h, int(s), r) not in runs for h, s, r in
                              zip(df["config_hash"], df["seed"], df["run_id"], strict=True)],
                             dtype=bool)
        removed["orphan_recomputed"] += int(drop.sum())
        order = df[~drop].sort_values("recompute_id", kind="stable")
        dup = order.index[order.duplicated(key, keep="last")]
        removed["duplicate_recomputed"] += len(dup)
        drop[dup] = True
        for fname, g in df[drop].groupby("file"):
            path = loc.join(RECOMPUTED, m, fname)
            full = loc.read_table(path)
            bad = set(zip(g["config_hash"], g["seed"].astype(int), g["run_id"],
                          g["step"].astype(int), g["recompute_id"], strict=True))
            keep = [(h, int(s), r, int(st), rid) not in bad for h, s, r, st, rid in
                    zip(full["config_hash"], full["seed"], full["run_id"], full["step"],
                        full["recompute_id"], strict=True)]
            if any(keep):
                loc.write_table(path, full[keep].reset_index(drop=True))
            else:
                loc.fs.delete_file(path)
    return removed


def reidentified(out_dir: str | os.PathLike, rows: pd.DataFrame) -> list[str]:
    """`current_identity` of `rows` (config_hash, schema_version), reading config_json only for
    the rows older than IDENTITY_VERSION (a stored hash names one config, so one config_json per
    old stored hash is enough)."""
    old = rows["schema_version"] < IDENTITY_VERSION
    hashes = sorted(set(rows.loc[old, "config_hash"]))
    t = reader.read_dir(os.fspath(out_dir), TRIALS,
                        columns=["config_hash", "schema_version", CONFIG_JSON],
                        required=ID_COLUMNS, where={"config_hash": hashes})
    cj = t.frame[t.frame["schema_version"] < IDENTITY_VERSION].drop_duplicates("config_hash")
    new = dict(zip(cj["config_hash"], current_identity(cj), strict=True))
    return [new.get(h, h) if o else h for h, o in zip(rows["config_hash"], old, strict=True)]


def current_identity(df: pd.DataFrame) -> list[str]:
    """The config_hash of each row under the current schema: as stored for current rows; for
    older rows (v1, v2) recomputed from their stored config (config_json holds every section
    the identity can read, so the effective config is rebuilt exactly). An old dir is read,
    resumed and repaired in place: no old file is rewritten and no finished row runs again."""
    out, cache = [], {}
    for h, v, cj in zip(df["config_hash"], df["schema_version"],
                        df[CONFIG_JSON] if CONFIG_JSON in df else [None] * len(df), strict=True):
        if int(v) >= IDENTITY_VERSION or not isinstance(cj, str):
            out.append(h)
            continue
        if cj not in cache:
            cache[cj] = TrialConfig.from_dict(json.loads(cj)).config_hash()
        out.append(cache[cj])
    return out


def read_trials(out_dir: str | os.PathLike, columns: list[str] | None = None) -> pd.DataFrame:
    """Concatenate every trials file (only `columns` when given); SchemaError on damage."""
    t = reader.read_dir(os.fspath(out_dir), TRIALS, columns=columns, required=ID_COLUMNS)
    if t.damaged:
        raise SchemaError(reader.problems_error(os.fspath(out_dir), t.damaged))
    return t.frame.drop(columns="file")


def missing_curves(out_dir: str | os.PathLike, trials: pd.DataFrame | None = None) -> list[str]:
    """Trials files with a finished (not failed) row but no curves file of the same name."""
    loc = Location.of(out_dir)
    if trials is None:
        trials = reader.read_dir(loc, TRIALS, columns=ID_COLUMNS, required=ID_COLUMNS).frame
    have = {i.base_name for i in loc.listdir(CURVES)}
    ran = trials[trials["status"] != "failed"]["file"].unique() if len(trials) else []
    return sorted(f for f in ran if f not in have)


def repair_damaged(out_dir: str | os.PathLike) -> dict[str, list[str]]:
    """`grokray status --repair`: make a damaged output dir readable again, losing nothing.

    Moves into `quarantine/` every trials, curves, snapshots or recomputed file that cannot be
    read (or is not a grokray table), and every trials file whose curves file is missing (its
    trials run again on the next `grokray sweep`); then `repair` (temporary files, curves and
    snapshots without trials, and duplicate rows of one identity: the newest run is kept).
    Files of a newer schema are left."""
    out = os.fspath(out_dir)
    loc = Location.of(out)
    moved: dict[str, list[str]] = {"damaged": [], "missing_curves": []}
    subs = [(TRIALS, ID_COLUMNS), (CURVES, ("config_hash", "seed", "step")),
            (SNAPSHOTS, ("config_hash", "seed", "step"))]
    subs += [(f"{RECOMPUTED}/{m}", RECOMPUTED_REQUIRED_COLUMNS)
             for m in reader.recomputed_metrics(loc)]
    for sub, required in subs:
        for d in reader.read_dir(loc, sub, columns=list(required), required=required).damaged:
            if d.repairable:
                moved["damaged"].append(loc.move_aside(d.path, f"{reader.QUARANTINE}/{sub}"))
    for name in missing_curves(out):
        moved["missing_curves"].append(loc.move_aside(loc.join(TRIALS, name),
                                                      f"{reader.QUARANTINE}/{TRIALS}"))
    removed = repair(out)
    return {**moved, **{k: [str(v)] for k, v in removed.items()}}

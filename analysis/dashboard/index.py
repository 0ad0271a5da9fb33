"""A sweep output dir's trials held in memory, its curves read per view: reread only what changed.

`SweepIndex.refresh()` lists the live `trials/` and `curves/` files (`grokray.reader.live_files`:
per-trial files and compacted parts, a compaction in flight never shown twice) and reads each
new or rewritten trials file on its own (through `grokray.reader.read_arrow`, the one reader),
so a refresh after a sweep wrote a few trials costs those few files, not the dir. Of a curves
file only its footer is read then (its columns, its schema version); a view reads the columns
and the runs it draws (`read_curves`: pyarrow.dataset skips the row groups of other config
hashes), so resident memory is the trials table plus one view's curves, whatever the store
holds. Nothing here writes. A dir may be a local path or a URL (`s3://...`).

Only files under a local dir are read: a symlink whose target lies outside it is named as a
problem and skipped, like a damaged file.
"""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from grokray import reader
from grokray.errors import SchemaError
from grokray.schema import CONFIG_JSON_COLUMN, CURVE_READ_REQUIRED_COLUMNS, TRIAL_REQUIRED_COLUMNS
from grokray_analysis.load import normalize_trials

TRIALS, CURVES = "trials", "curves"
_CURVE_STRINGS = ("schema_version", "sweep", "run_id", "config_hash", "group", "arch", "arm")
_READERS = 4  # pyarrow decodes outside the GIL: a few threads read files side by side
FID = "_file"
"""the column naming each row's file (an int): a file's rows go when it is removed or rewritten"""


def inside(root: str, path: str) -> bool:
    """Does `path`, symlinks resolved, lie under the real path of `root`?"""
    real_root = os.path.realpath(root)
    real = os.path.realpath(path)
    return os.path.commonpath([real_root, real]) == real_root


@dataclass
class _Stamp:
    mtime_ns: int
    size: int


@dataclass
class SweepIndex:
    """The trials and curves of one sweep output dir, and what could not be read."""

    path: str
    """the dir as given on the command line"""
    name: str
    """the name shown on the page (the dir's base name)"""
    version: int = 0
    """bumped whenever the rows change"""
    changed_at: float = 0.0
    """time.time() of the last change"""
    plan: dict | None = None
    """plan.json, when a sweep wrote one"""
    problems: dict[str, str] = field(default_factory=dict)
    """file path -> one line: why it was not read and how to repair it"""
    last_read: int = 0
    """files read by the last refresh"""
    _stamps: dict[tuple[str, str], _Stamp] = field(default_factory=dict, repr=False)
    _fids: dict[tuple[str, str], int] = field(default_factory=dict, repr=False)
    _codes: dict[str, int] = field(default_factory=dict, repr=False)
    _hashes: list[str] = field(default_factory=list, repr=False)
    _trials: pd.DataFrame | None = field(default=None, repr=False)
    _raw_trials: pd.DataFrame | None = field(default=None, repr=False)
    _curve_cols: dict[str, list[str]] = field(default_factory=dict, repr=False)
    _curve_files: list[str] = field(default_factory=list, repr=False)
    _loc: reader.Location | None = field(default=None, repr=False)
    _next_fid: int = field(default=0, repr=False)
    lock: threading.RLock = field(default_factory=threading.RLock, repr=False)

    # ------------------------------------------------------------------ reading

    @property
    def loc(self) -> reader.Location:
        """Where the dir lives (a local path or a URL)."""
        if self._loc is None:
            self._loc = reader.Location.of(self.path)
        return self._loc

    def _listing(self, sub: str) -> dict[str, tuple[str, _Stamp | str]]:
        """name -> (path, stamp) of the live result files of `sub`; a str instead of a stamp
        says why the file is refused (a symlink out of the dir)."""
        out: dict[str, tuple[str, _Stamp | str]] = {}
        loc = self.loc
        for info in reader.live_files(loc, sub):
            if loc.is_local and os.path.islink(info.path) and not inside(self.path, info.path):
                out[info.base_name] = (info.path, "a symlink to a file outside the dir: not read")
                continue
            out[info.base_name] = (info.path, _Stamp(info.mtime_ns or 0, info.size or 0))
        return out

    def _read_trials(self, path: str) -> pa.Table | reader.Damage:
        return reader.read_arrow(self.loc, path, TRIALS, required=TRIAL_REQUIRED_COLUMNS,
                                 exclude=(CONFIG_JSON_COLUMN,), use_threads=False)  # unshown

    def _read_curves(self, path: str) -> pa.Table | reader.Damage:
        """A curves file's footer only (its columns and schema version): no rows, or the
        damage. A view reads the rows it draws (`read_curves`)."""
        bad = reader.footer_problem(self.loc, path, CURVES, CURVE_READ_REQUIRED_COLUMNS)
        if bad is not None:
            return bad
        with self.loc.fs.open_input_file(path) as f:
            schema = pq.ParquetFile(f).schema_arrow
        self._curve_cols[path] = [f.name for f in schema if f.name not in _CURVE_STRINGS and (
            pa.types.is_integer(f.type) or pa.types.is_floating(f.type))]
        return pa.table({"config_hash": pa.array([], pa.string())})

    def refresh(self) -> bool:
        """Read what changed since the last call; True when the rows changed."""
        with self.lock:
            changed = False
            self.last_read = 0
            for sub, read in ((TRIALS, self._read_trials), (CURVES, self._read_curves)):
                changed |= self._refresh_sub(sub, read)
            try:
                self.plan = reader.read_plan(self.path)
            except (OSError, ValueError):
                self.plan = None
            if changed:
                self.version += 1
                self.changed_at = time.time()
            return changed

    def _refresh_sub(self, sub: str, read) -> bool:
        """Drop the rows of files gone or rewritten, append those of new or rewritten ones."""
        listing = self._listing(sub)
        gone = [n for (s, n) in self._stamps if s == sub and n not in listing]
        drop = []
        for n in gone:
            self._stamps.pop((sub, n))
            drop.append(self._fids.pop((sub, n), -1))
            self.problems.pop(self.loc.join(sub, n), None)
            self._curve_cols.pop(self.loc.join(sub, n), None)
        todo = []
        for name, (path, stamp) in listing.items():
            if isinstance(stamp, str):
                self.problems[path] = f"{path}: {stamp}"
                continue
            if self._stamps.get((sub, name)) != stamp:
                todo.append((name, path, stamp))
        if not todo and not gone:
            return False
        self.last_read += len(todo)
        with ThreadPoolExecutor(_READERS) as pool:
            results = list(pool.map(lambda t: read(t[1]), todo))
        tables = []
        for (name, path, stamp), t in zip(todo, results, strict=True):
            self._stamps[(sub, name)] = stamp
            drop.append(self._fids.pop((sub, name), -1))
            if isinstance(t, reader.Damage):
                self.problems[path] = t.line(self.path)
                self._curve_cols.pop(path, None)
                continue
            self.problems.pop(path, None)
            fid = self._next_fid
            self._next_fid += 1
            self._fids[(sub, name)] = fid
            tables.append(t.append_column(FID, pa.array(np.full(t.num_rows, fid, np.int32))))
        self._merge(sub, [f for f in drop if f >= 0], tables)
        return True

    def _merge(self, sub: str, drop: list[int], tables: list[pa.Table]) -> None:
        """The rows of `sub` without the files `drop`, with the `tables` appended (one Arrow
        concatenation and one conversion to pandas per refresh, whatever the file count).
        Curves are kept in parts, joined when a view asks: a refresh costs the new files,
        not a copy of 10^6 rows."""
        new = reader.concat_frames(tables) if tables else None
        if sub == TRIALS:
            old = self._raw_trials
            if old is not None and drop:
                old = old[~old[FID].isin(drop)]
            parts = [p for p in (old, new) if p is not None and len(p)]
            self._raw_trials = pd.concat(parts, ignore_index=True, sort=False) if parts \
                else None
            self._trials = None
        else:
            self._curve_files = sorted(p for p in self._curve_cols)
        pa.default_memory_pool().release_unused()  # the files' Arrow buffers are pandas' now

    def read_curves(self, metrics: list[str] | None = None, runs: pd.DataFrame | None = None
                    ) -> pd.DataFrame:
        """Curve rows: cfg (the run code), seed, step and the `metrics` columns (every numeric
        column when None), of the runs in `runs` (rows with a config_hash; all runs when None;
        their row groups only, pyarrow.dataset), read batch by batch (no column of strings
        held whole). A file found damaged now is named in `problems` and skipped."""
        with self.lock:
            files = list(self._curve_files)
        want = None if metrics is None else ["config_hash", "seed", "step", *metrics]
        expr = None if runs is None else reader.where_expr(
            {"config_hash": sorted(set(runs["config_hash"]))})
        frames = []
        for path in files:
            try:
                d = ds.dataset(path, filesystem=self.loc.fs, format="parquet")
                cols = None if want is None else [c for c in want if c in d.schema.names]
                for batch in d.to_batches(columns=cols, filter=expr, use_threads=False,
                                          batch_size=1 << 18):
                    if batch.num_rows:
                        frames.append(self._coded(pa.Table.from_batches([batch])))
            except (OSError, pa.ArrowException) as exc:
                with self.lock:
                    self.problems[path] = reader.Damage(
                        path, f"cannot read: {type(exc).__name__}: "
                              f"{' '.join(str(exc).split())[:200]}").line(self.path)
        pa.default_memory_pool().release_unused()
        if not frames:
            return pd.DataFrame(columns=["cfg", "seed", "step", *(metrics or [])])
        out = frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True,
                                                            sort=False)
        for m in metrics or []:
            if m not in out.columns:
                out[m] = np.nan
        return out

    def _coded(self, t: pa.Table) -> pd.DataFrame:
        """config_hash -> an int32 run code (the page asks for runs by code and seed)."""
        h = t.column("config_hash").combine_chunks().dictionary_encode()
        with self.lock:
            codes = np.array([self._code(x) for x in h.dictionary.to_pylist()], dtype=np.int32)
        keep = [f.name for f in t.schema if f.name not in _CURVE_STRINGS and (
            pa.types.is_integer(f.type) or pa.types.is_floating(f.type))]
        df = t.select(keep).to_pandas()
        for c in ("seed", "step"):  # int32: half the memory of a view over every run
            if c in df and pd.api.types.is_integer_dtype(df[c]):
                df[c] = df[c].astype(np.int32)
        idx = h.indices.to_numpy(zero_copy_only=False)
        df.insert(0, "cfg", codes[idx] if len(codes) else np.zeros(len(df), np.int32))
        return df

    @property
    def curve_columns(self) -> list[str]:
        """The numeric curve columns some live curves file has (from the footers)."""
        with self.lock:
            return sorted({c for cols in self._curve_cols.values() for c in cols})

    # ------------------------------------------------------------------ tables

    @property
    def trials(self) -> pd.DataFrame:
        """One row per (config_hash, seed) (the newest run of an identity), as analysis reads
        them (`grokray_analysis.load.normalize_trials`); a `cfg` column holds the run code."""
        with self.lock:
            if self._trials is None:
                raw = self._raw_trials
                if raw is None or raw.empty:
                    self._trials = pd.DataFrame(columns=[*TRIAL_REQUIRED_COLUMNS, "arm", "cfg"])
                else:
                    df, _, _ = reader.dedupe(raw)  # raw itself when no identity repeats
                    try:  # in place: the raw rows are kept as analysis reads them, one copy
                        df = normalize_trials(df, copy=df is not raw)
                    except SchemaError as exc:
                        self.problems[os.path.join(self.path, TRIALS)] = f"{self.path}: {exc}"
                        df = normalize_trials(df[~(df["status"].astype(str).eq("grokked")
                                                   & df["grok_step"].isna())])
                    idx, uniq = pd.factorize(df["config_hash"].astype(str))
                    df["cfg"] = np.array([self._code(h) for h in uniq], np.int32)[idx] \
                        if len(uniq) else np.zeros(len(df), np.int32)  # a code per config
                    self._trials = df if isinstance(df.index, pd.RangeIndex) and \
                        df.index.start == 0 and df.index.step == 1 else \
                        df.reset_index(drop=True)
            return self._trials

    def _code(self, h: str) -> int:
        c = self._codes.get(h)
        if c is None:
            c = self._codes[h] = len(self._hashes)
            self._hashes.append(h)
        return c

    @property
    def curves(self) -> pd.DataFrame:
        """Every curve row (cfg, seed, step and the numeric columns), read now: a view reads
        only what it draws (`read_curves`)."""
        return self.read_curves()

    def config_hash(self, code: int) -> str:
        """The config_hash of a run code."""
        return self._hashes[code]

    @property
    def n_files(self) -> int:
        """Result files read (trials and curves)."""
        return len(self._fids)


def sweep_dirs(path: str) -> list[str]:
    """The sweep output dirs of `path` (a local path or a URL): itself when it has trials/,
    else its subdirs that do (an output root such as the ledger's)."""
    loc = reader.Location.of(path)
    if loc.is_dir(TRIALS):
        return [path]
    subs = [reader.join_uri(path, n) if "://" in path else os.path.join(path, n)
            for n in loc.subdirs() if loc.is_dir(n, TRIALS)]
    return [d for d in subs if "://" in path or inside(path, d)]

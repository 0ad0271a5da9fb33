"""A sweep output dir's trials held in memory, its curves read per view: reread only what changed.

`SweepIndex.refresh()` lists the live `trials/` and `curves/` files (`grokray.reader.live_files`:
per-trial files and compacted parts, a compaction in flight never shown twice) and reads each
new or rewritten trials file on its own (through `grokray.reader.read_arrow`, the one reader),
so a refresh after a sweep wrote a few trials costs those few files, not the dir. The trials
are kept as Arrow tables, one per file, their strings as dictionaries (an int per cell; every
column but config_json), each row's config_hash also as an int run code (`cfg`, looked up once
per distinct hash as the file is read: identities compare as ints); a view converts only the
columns it shows (`frame`), and the swept columns are found in Arrow on the dictionaries'
used values and the columns' min and max (`swept`). Of a curves file only its footer is read
then (its columns, its schema version); a view reads the columns and the runs it draws
(`read_curves`: the row groups whose config_hash statistics can hold one, the other runs' rows
dropped before they are converted). Resident memory is then the
trials' Arrow columns (about 0.8 kB per seed-row of the ledger's shape, `config_json` left
out), a few views' columns, and one view's curves, whatever the store holds. Nothing here
writes. A dir may be a local path or a URL (`s3://...`).

Only files under a local dir are read: a symlink whose target lies outside it is named as a
problem and skipped, like a damaged file.
"""

from __future__ import annotations

import bisect
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from grokray import reader
from grokray.errors import SchemaError
from grokray.schema import (
    CONFIG_JSON_COLUMN,
    CURVE_READ_REQUIRED_COLUMNS,
    IDENTITY_COLUMNS,
    METRIC_PREFIX,
    OPTIONAL_PROVENANCE_COLUMNS,
    OUTCOME_COLUMNS,
    PROVENANCE_COLUMNS,
    TRIAL_REQUIRED_COLUMNS,
)
from grokray_analysis.load import normalize_trials

TRIALS, CURVES = "trials", "curves"
_CURVE_STRINGS = ("schema_version", "sweep", "run_id", "config_hash", "group", "arch", "arm")
_READERS = 4  # pyarrow decodes outside the GIL: a few threads read files side by side
FID = "_file"
"""the column naming each row's file (an int): a file's rows go when it is removed or rewritten"""
CFG = "cfg"
"""the column holding each row's run code (an int32 per config_hash, made when its file is read)"""
NOT_SWEPT = {*IDENTITY_COLUMNS, *OUTCOME_COLUMNS, *PROVENANCE_COLUMNS,
             *OPTIONAL_PROVENANCE_COLUMNS, FID, "file", CFG,
             "config_json", "group_order"}
"""columns that are never a swept axis (identity, outcome, provenance, bookkeeping)"""
BASE = ("config_hash", "seed", "status", "grok_step", "run_id", "arm", "arch")
"""the columns every `frame` holds (what analysis's normalization and the run codes read)"""
FRAMES_KEPT = 8
"""column selections `frame` keeps converted per data version"""
GROUPS_READ = 16
"""row groups of a curves file read and converted at once (about 10^6 rows at compaction's
65,536 a group): what a view holds of a file before its other runs' rows are dropped"""
CHUNKS_KEPT = 64
"""files whose rows `table` keeps as chunks of their own; beyond, one chunk per column (many
small per-trial files: each column's operations then run once, not once per file)"""


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
    _base: pd.DataFrame | None = field(default=None, repr=False)
    _rows: np.ndarray | None = field(default=None, repr=False)
    _columns: dict[str, pd.Series] = field(default_factory=dict, repr=False)
    _parts: dict[int, pa.Table] = field(default_factory=dict, repr=False)
    _table: pa.Table | None = field(default=None, repr=False)
    _frames: dict[tuple, pd.DataFrame] = field(default_factory=dict, repr=False)
    _swept: list[str] | None = field(default=None, repr=False)
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
        t = reader.read_arrow(self.loc, path, TRIALS, required=TRIAL_REQUIRED_COLUMNS,
                              exclude=(CONFIG_JSON_COLUMN,), use_threads=False,  # unshown
                              dictionary=True)
        return t if isinstance(t, reader.Damage) else _plain_strings(t)

    def _read_curves(self, path: str) -> pa.Table | reader.Damage:
        """A curves file's footer only (its columns and schema version): no rows, or the
        damage. A view reads the rows it draws (`read_curves`)."""
        bad = reader.footer_problem(self.loc, path, CURVES, CURVE_READ_REQUIRED_COLUMNS)
        if bad is not None:
            return bad
        with self.loc.fs.open_input_file(path) as f:
            schema = pq.ParquetFile(f).schema_arrow
        self._curve_cols[path] = [f.name for f in schema if f.name not in _CURVE_STRINGS and
                                  _numeric(f)]
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
            t = t.append_column(FID, pa.array(np.full(t.num_rows, fid, np.int32)))
            if sub == TRIALS and "config_hash" in t.column_names:
                t = t.append_column(CFG, pa.array(self._run_codes(t.column("config_hash"))))
            tables.append(t)
        self._merge(sub, [f for f in drop if f >= 0], tables)
        return True

    def _run_codes(self, col: pa.ChunkedArray) -> np.ndarray:
        """A run code (int32) per config_hash cell: one lookup per distinct hash, not per row
        (a missing hash is coded as the text 'None', as the frame's strings would read it)."""
        with self.lock:
            return _per_value(col, lambda words: [self._code(str(h)) for h in [*words, None]],
                              np.int32)

    def _merge(self, sub: str, drop: list[int], tables: list[pa.Table]) -> None:
        """The trials without the files `drop`, with the `tables` added (kept per file: a
        refresh costs the new files; their concatenation is made when a view asks). Of the
        curves only the file list changes: a view reads the rows it draws."""
        if sub == TRIALS:
            for fid in drop:
                self._parts.pop(fid, None)
            for t in tables:
                if t.num_rows:
                    self._parts[int(t.column(FID)[0].as_py())] = t
            self._table, self._base, self._rows, self._swept = None, None, None, None
            self._frames.clear()
            self._columns.clear()
        else:
            self._curve_files = sorted(p for p in self._curve_cols)
        pa.default_memory_pool().release_unused()

    def read_curves(self, metrics: list[str] | None = None, runs: pd.DataFrame | None = None
                    ) -> pd.DataFrame:
        """Curve rows: cfg (the run code), seed, step and the `metrics` columns (every numeric
        column when None), of the runs in `runs` (rows with a config_hash; all runs when None).
        Each file is read `GROUPS_READ` row groups at a time, only the row groups whose
        config_hash statistics can hold a wanted run, config_hash as Parquet's dictionary (a
        code per distinct hash, no string per row); other runs' rows are dropped before the
        conversion. A file found damaged now is named in `problems` and skipped."""
        with self.lock:
            files = list(self._curve_files)
        want = None if metrics is None else ["config_hash", "seed", "step", *metrics]
        hashes = None if runs is None else sorted(set(runs["config_hash"].astype(str)))
        frames = []
        for path in files:
            try:
                frames += self._curves_of_file(path, want, hashes)
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

    def _curves_of_file(self, path: str, want: list[str] | None, hashes: list[str] | None
                        ) -> list[pd.DataFrame]:
        """`read_curves` of one file: its `want` columns (every one when None) of the runs
        whose config_hash is in `hashes` (sorted; every run when None), a frame per batch of
        row groups that holds some."""
        with self.loc.fs.open_input_file(path) as f:
            pf = pq.ParquetFile(f, read_dictionary=["config_hash"])
            schema = pf.schema_arrow
            cols = [c for c in (want or schema.names) if c in schema.names and (
                c == "config_hash" or c not in _CURVE_STRINGS and _numeric(schema.field(c)))]
            groups = _groups_holding(pf, hashes)
            wanted = None if hashes is None else set(hashes)
            out = []
            for i in range(0, len(groups), GROUPS_READ):
                t = pf.read_row_groups(groups[i:i + GROUPS_READ], columns=cols,
                                       use_threads=False)
                df = self._coded(t, wanted)
                del t
                if len(df):
                    out.append(df)
            return out

    def _coded(self, t: pa.Table, wanted: set[str] | None = None) -> pd.DataFrame:
        """config_hash (a dictionary column) -> an int32 run code (the page asks for runs by
        code and seed); the numeric columns as they are, seed and step as int32; only the
        rows whose config_hash is in `wanted` (every row when None), kept before any other
        work is done per row."""
        if wanted is not None:
            t = t.filter(_rows_in(t.column("config_hash"), wanted))
        cfg = self._run_codes(t.column("config_hash"))
        df = t.select([f.name for f in t.schema if f.name not in _CURVE_STRINGS and
                       _numeric(f)]).to_pandas()
        for c in ("seed", "step"):  # int32: half the memory of a view over every run
            if c in df and pd.api.types.is_integer_dtype(df[c]):
                df[c] = df[c].astype(np.int32)
        df.insert(0, "cfg", cfg)
        return df

    @property
    def curve_columns(self) -> list[str]:
        """The numeric curve columns some live curves file has (from the footers)."""
        with self.lock:
            return sorted({c for cols in self._curve_cols.values() for c in cols})

    # ------------------------------------------------------------------ tables

    @property
    def table(self) -> pa.Table:
        """Every trials row as Arrow, one per identity (config_hash, seed; the newest run_id
        wins, as `grokray.reader.dedupe`), strings as dictionaries, a `_file` and a `cfg`
        column: the files' tables side by side (no copy), one chunk per column beyond
        `CHUNKS_KEPT` files."""
        with self.lock:
            if self._table is None:
                parts = list(self._parts.values())
                if not parts:
                    return pa.table({c: pa.array([], pa.string()) for c in BASE})
                t = _concat(parts)
                if len(parts) > CHUNKS_KEPT:
                    t = t.unify_dictionaries().combine_chunks()
                keep = _newest(t)
                self._table = t if keep is None else t.filter(keep)
            return self._table

    @property
    def n_rows(self) -> int:
        """Trials rows (one per identity)."""
        return self.table.num_rows

    def frame(self, columns: list[str] | None = None) -> pd.DataFrame:
        """The trials as analysis reads them (`grokray_analysis.load.normalize_trials`), only
        the `columns` given (those the rows have) beside `BASE`, and a `cfg` column holding
        the run code; every column when None (`trials`). Made of columns converted once per
        data version (`_base`, `_column`); kept per data version for the last `FRAMES_KEPT`
        column selections."""
        with self.lock:
            t = self.table
            names = t.column_names
            want = names if columns is None else list(dict.fromkeys(
                c for c in [*BASE, *columns, CFG] if c in names))
            key = tuple(want)
            if key in self._frames:
                return self._frames[key]
            df = self._assembled(want, keep=True)
            self._frames[key] = df
            while len(self._frames) > FRAMES_KEPT:
                self._frames.pop(next(iter(self._frames)))
            return df

    def _assembled(self, want: list[str], keep: bool) -> pd.DataFrame:
        """The normalized frame of the table's columns `want` (and `arm`, last, when the table
        has none): `BASE` from `_base`, the others converted now (and kept for the next frame
        when `keep`)."""
        t = self.table
        if not t.num_rows or "status" not in t.column_names:
            return pd.DataFrame(columns=[*TRIAL_REQUIRED_COLUMNS, "arm", CFG])
        base = self._base_frame()
        other = [c for c in want if c not in base.columns]
        fresh = self._converted([c for c in other if c not in self._columns])
        if keep:
            self._columns.update(fresh)
        cols = {c: base[c] if c in base.columns else self._columns.get(c, fresh.get(c))
                for c in want}
        if "arm" not in cols:
            cols["arm"] = base["arm"]
        return pd.DataFrame(cols, copy=False)

    def _base_frame(self) -> pd.DataFrame:
        """The `BASE` columns and `cfg` of the table, normalized (`normalize_trials`) once per
        data version: a grokked row without grok_step is dropped (its rows then `_rows`) and
        named in `problems`."""
        if self._base is None:
            t = self.table
            df = _pandas(t.select([c for c in [*BASE, CFG] if c in t.column_names]))
            self._rows = None
            try:  # in place: the frame is this function's own
                df = normalize_trials(df, copy=False)
            except SchemaError as exc:
                self.problems[os.path.join(self.path, TRIALS)] = f"{self.path}: {exc}"
                ok = ~(df["status"].astype(str).eq("grokked") & df["grok_step"].isna())
                self._rows = np.flatnonzero(ok.to_numpy())
                df = normalize_trials(df[ok]).reset_index(drop=True)
            if CFG not in df:  # a table without config_hash
                df[CFG] = np.zeros(len(df), np.int32)
            self._base = df
        return self._base

    def _converted(self, names: list[str]) -> dict[str, pd.Series]:
        """The table's columns `names` as pandas (strings as Python strings), the rows of
        `_base` only."""
        if not names:
            return {}
        t = self.table.select(names)
        if self._rows is not None:
            t = t.take(self._rows)
        df = _pandas(t)
        return {c: df[c] for c in names}

    @property
    def trials(self) -> pd.DataFrame:
        """Every column of every trials row but `_file` and `cfg`, as `frame(None)` would hold
        them: what the analysis views read, made now and not kept (a page's views ask `frame`
        for their columns only)."""
        with self.lock:
            names = [c for c in self.table.column_names if c not in (FID, CFG)]
            return self._assembled(names, keep=False)

    def swept(self) -> list[str]:
        """The config columns whose value varies across the rows (the swept axes), arm first:
        counted in Arrow (a missing value counts as one value), kept per data version."""
        with self.lock:
            if self._swept is None:
                t = self.table
                out = []
                for name in t.column_names:
                    if name in NOT_SWEPT or name.startswith(METRIC_PREFIX):
                        continue
                    if _varies(t.column(name)):
                        out.append(name)
                if "arm" not in t.column_names and "arch" in out:
                    out.append("arm")  # the arm is the arch's (normalize_trials)
                self._swept = sorted(out, key=lambda c: (c != "arm", c != "group", c))
            return list(self._swept)

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


def _plain_strings(t: pa.Table) -> pa.Table:
    """A file's table with each string dictionary as dictionary<int32, string> (schema 1
    wrote large strings): every file's columns then concatenate."""
    for i, f in enumerate(t.schema):
        if pa.types.is_dictionary(f.type) and pa.types.is_large_string(f.type.value_type):
            t = t.set_column(i, f.name, t.column(i).cast(pa.dictionary(pa.int32(),
                                                                        pa.string())))
        elif pa.types.is_large_string(f.type):
            t = t.set_column(i, f.name, t.column(i).cast(pa.string()))
    return t


def _concat(parts: list[pa.Table]) -> pa.Table:
    """The tables one after the other, no copy: as they are when their schemas are one (the
    usual case, and 8x cheaper over many small files), else each column promoted to a type
    that holds every file's (`promote_options="permissive"`)."""
    try:
        return pa.concat_tables(parts)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return pa.concat_tables(parts, promote_options="permissive")


def _pandas(t: pa.Table) -> pd.DataFrame:
    """The table as pandas, its dictionary columns as plain strings (object columns, as
    `grokray.load` reads): each chunk's dictionary made Python strings once, then spread over
    its rows (no string per row decoded)."""
    dicts = {f.name for f in t.schema if pa.types.is_dictionary(f.type)}
    rest = t.drop_columns(list(dicts)).to_pandas() if len(dicts) < t.num_columns else None
    return pd.DataFrame({c: _objects(t.column(c)) if c in dicts else rest[c]
                         for c in t.column_names}, index=pd.RangeIndex(t.num_rows),
                        copy=False)


def _objects(col: pa.ChunkedArray) -> np.ndarray:
    """A dictionary column's cells as an object array (None where missing)."""
    return _per_value(col, lambda words: [*words, None], object)


def _per_value(col: pa.ChunkedArray, lut_of, dtype) -> np.ndarray:
    """Each cell of a (dictionary) string column mapped through `lut_of`, which is given a
    chunk's distinct values (its dictionary, as a list) and returns a result per value and,
    last, one for a missing cell; spread over the rows by the dictionary's indices (Python
    work per distinct value, none per row)."""
    out = np.empty(len(col), dtype)
    at = 0
    for chunk in col.chunks:
        if not pa.types.is_dictionary(chunk.type):
            chunk = chunk.dictionary_encode()
        lut = np.empty(len(chunk.dictionary) + 1, dtype)
        lut[:] = lut_of(chunk.dictionary.to_pylist())
        idx = pc.fill_null(chunk.indices, len(lut) - 1).to_numpy(zero_copy_only=False)
        out[at:at + len(chunk)] = lut[idx]
        at += len(chunk)
    return out


def _newest(t: pa.Table) -> np.ndarray | None:
    """Which rows to keep so that each identity (config_hash, seed) has one, the newest
    run_id's (`grokray.reader.dedupe`'s rule); None when no identity repeats. The hashes are
    compared by their run codes (`CFG`)."""
    if not {CFG, "seed"} <= set(t.column_names) or not t.num_rows:
        return None
    key = pd.DataFrame({"h": t.column(CFG).to_numpy(), "s": t.column("seed").to_pandas()})
    if not key.duplicated().any():
        return None
    run = t.column("run_id").cast(pa.string()).to_pandas() if "run_id" in t.column_names \
        else pd.Series(np.zeros(len(key)))
    order = key.assign(r=run).sort_values("r", kind="stable")
    drop = order.duplicated(["h", "s"], keep="last").sort_index()
    return ~drop.to_numpy()


def _varies(col: pa.ChunkedArray) -> bool:
    """Does the column hold more than one value (a missing value, NaN included, is one)?
    Missing cells are counted; a dictionary column compares the values its rows use (per
    chunk: no string per row), any other its min and max; cells that do not order (lists)
    are hashed, or compared as text."""
    n, missing = len(col), col.null_count
    if pa.types.is_floating(col.type):
        missing += pc.sum(pc.is_nan(col)).as_py() or 0
    if missing:
        return missing < n  # a value and a missing one, or every cell missing
    if pa.types.is_dictionary(col.type):
        used = [c.dictionary.take(pc.unique(c.indices)) for c in col.chunks if len(c)]
        return _distinct(pa.chunked_array(used, col.type.value_type)) > 1
    try:
        lo_hi = pc.min_max(col)
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError):
        return _distinct(col) > 1
    return not lo_hi["min"].equals(lo_hi["max"])


def _distinct(col: pa.ChunkedArray) -> int:
    """Distinct values of a column, a missing one counted as one."""
    try:
        return pc.count_distinct(col, mode="all").as_py()
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError):
        return col.to_pandas().astype(str).nunique()  # cells that do not hash (lists)


def _rows_in(col: pa.ChunkedArray, wanted: set[str]) -> pa.Array:
    """Which cells of a string column hold one of `wanted`: each chunk's distinct values
    looked up once (its dictionary), then spread over its rows."""
    return pa.array(_per_value(col, lambda words: [x in wanted for x in words] + [False],
                               np.bool_))


def _numeric(f: pa.Field) -> bool:
    """An integer or floating column (a curve's value, its seed or step)."""
    return pa.types.is_integer(f.type) or pa.types.is_floating(f.type)


def _groups_holding(pf: pq.ParquetFile, hashes: list[str] | None) -> list[int]:
    """The row groups of a curves file that may hold a row of one of `hashes` (sorted): those
    whose config_hash min and max enclose one, or that have no such statistics; all of them
    when `hashes` is None."""
    md = pf.metadata
    if hashes is None:
        return list(range(md.num_row_groups))
    col = [md.schema.column(j).path for j in range(md.num_columns)].index("config_hash")
    out = []
    for g in range(md.num_row_groups):
        st = md.row_group(g).column(col).statistics
        lo, hi = (st.min, st.max) if st is not None and st.has_min_max else (None, None)
        if not isinstance(lo, str) or not isinstance(hi, str):
            out.append(g)
            continue
        k = bisect.bisect_left(hashes, lo)
        if k < len(hashes) and hashes[k] <= hi:
            out.append(g)
    return out

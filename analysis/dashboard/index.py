"""A sweep output dir held in memory: read whole once, then only the files that changed.

`SweepIndex.refresh()` lists `trials/` and `curves/` and reads each new or rewritten file on its
own (through `grokray.files.read_file`, the one reader), so a refresh after a sweep wrote a few
trials costs those few files, not the dir. Curves are kept compact (a run code, seed, step and
the numeric columns) so that 10^6 curve rows fit in tens of MB. Nothing here writes.

Only files under the dir are read: a symlink whose target lies outside it is named as a problem
and skipped, like a damaged file.
"""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from analysis.load import normalize_trials
from grokray import files
from grokray.errors import SchemaError
from grokray.schema import CONFIG_JSON_COLUMN, CURVE_READ_REQUIRED_COLUMNS, TRIAL_REQUIRED_COLUMNS

TRIALS, CURVES = "trials", "curves"
_CURVE_STRINGS = ("schema_version", "sweep", "run_id", "config_hash", "group", "arch", "arm")
_READERS = 4  # pyarrow decodes outside the GIL: a few threads read files side by side


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
    _trial_files: dict[str, pd.DataFrame] = field(default_factory=dict, repr=False)
    _curve_files: dict[str, pd.DataFrame] = field(default_factory=dict, repr=False)
    _codes: dict[str, int] = field(default_factory=dict, repr=False)
    _hashes: list[str] = field(default_factory=list, repr=False)
    _trials: pd.DataFrame | None = field(default=None, repr=False)
    _curves: pd.DataFrame | None = field(default=None, repr=False)
    _raw_trials: pd.DataFrame | None = field(default=None, repr=False)
    lock: threading.RLock = field(default_factory=threading.RLock, repr=False)

    # ------------------------------------------------------------------ reading

    def _listing(self, sub: str) -> dict[str, tuple[str, _Stamp | str]]:
        """name -> (path, stamp) of the result files of `sub`; a str instead of a stamp says
        why the file is refused (a symlink out of the dir)."""
        d = os.path.join(self.path, sub)
        out: dict[str, tuple[str, _Stamp | str]] = {}
        try:
            entries = list(os.scandir(d))
        except (FileNotFoundError, NotADirectoryError):
            return out
        for e in entries:
            if not files.result_file(e.name):
                continue
            if e.is_symlink() and not inside(self.path, e.path):
                out[e.name] = (e.path, "a symlink to a file outside the dir: not read")
                continue
            try:
                st = e.stat()
            except OSError:
                continue  # removed between the listing and the stat (repair moved it)
            if not os.path.isfile(e.path):
                continue
            out[e.name] = (e.path, _Stamp(st.st_mtime_ns, st.st_size))
        return out

    def _read_trials(self, path: str) -> pd.DataFrame | files.Damage:
        loc = files.Location.of(os.path.dirname(path))
        df = files.read_file(loc, path, TRIALS, required=TRIAL_REQUIRED_COLUMNS)
        if isinstance(df, pd.DataFrame) and CONFIG_JSON_COLUMN in df:
            df = df.drop(columns=CONFIG_JSON_COLUMN)  # the page never shows it; it is large
        return df

    def _read_curves(self, path: str) -> pd.DataFrame | files.Damage:
        loc = files.Location.of(os.path.dirname(path))
        df = files.read_file(loc, path, CURVES, required=CURVE_READ_REQUIRED_COLUMNS)
        if isinstance(df, files.Damage):
            return df
        hashes = df["config_hash"].astype(str).to_numpy()
        num = df.drop(columns=[c for c in _CURVE_STRINGS if c in df])
        num = num.apply(pd.to_numeric, errors="coerce")
        num["seed"] = num["seed"].astype(np.int64)
        num["step"] = num["step"].astype(np.int64)
        num["config_hash"] = hashes
        return num

    def refresh(self) -> bool:
        """Read what changed since the last call; True when the rows changed."""
        with self.lock:
            changed = False
            self.last_read = 0
            for sub, reader, store in ((TRIALS, self._read_trials, self._trial_files),
                                       (CURVES, self._read_curves, self._curve_files)):
                changed |= self._refresh_sub(sub, reader, store)
            try:
                from grokray.sweep.store import read_plan

                self.plan = read_plan(self.path)
            except (OSError, ValueError):
                self.plan = None
            if changed:
                self.version += 1
                self.changed_at = time.time()
            return changed

    def _refresh_sub(self, sub: str, reader, store: dict[str, pd.DataFrame]) -> bool:
        listing = self._listing(sub)
        gone = [n for (s, n) in self._stamps if s == sub and n not in listing]
        for n in gone:
            self._stamps.pop((sub, n))
            store.pop(n, None)
            self.problems.pop(os.path.join(self.path, sub, n), None)
        todo = []
        for name, (path, stamp) in listing.items():
            if isinstance(stamp, str):
                self.problems[path] = f"{path}: {stamp}"
                continue
            old = self._stamps.get((sub, name))
            if old != stamp:
                todo.append((name, path, stamp))
        if not todo and not gone:
            return False
        self.last_read += len(todo)
        with ThreadPoolExecutor(_READERS) as pool:
            results = list(pool.map(lambda t: reader(t[1]), todo))
        appended = not gone and all((sub, n) not in self._stamps for n, _, _ in todo)
        fresh = []
        for (name, path, stamp), df in zip(todo, results, strict=True):
            self._stamps[(sub, name)] = stamp
            if isinstance(df, files.Damage):
                self.problems[path] = df.line(self.path)
                store.pop(name, None)
                continue
            self.problems.pop(path, None)
            df["file"] = name
            if sub == CURVES:
                df = self._compact(df)
            store[name] = df
            fresh.append(df)
        self._merge(sub, fresh if appended else None)
        return True

    def _compact(self, df: pd.DataFrame) -> pd.DataFrame:
        """config_hash -> an int32 run code (the page asks for runs by code and seed)."""
        uniq, inv = np.unique(df["config_hash"].to_numpy(dtype=str), return_inverse=True)
        codes = np.array([self._code(h) for h in uniq], dtype=np.int32)[inv]
        df = df.drop(columns=["config_hash", "file"])
        df.insert(0, "cfg", codes)
        return df

    def _merge(self, sub: str, fresh: list[pd.DataFrame] | None) -> None:
        """Concatenate the files' rows: only the new ones onto the old when nothing was
        removed or rewritten (a refresh costs the new files), else all again."""
        old = self._raw_trials if sub == TRIALS else self._curves
        store = self._trial_files if sub == TRIALS else self._curve_files
        parts = [old, *fresh] if fresh is not None and old is not None else (
            fresh if fresh is not None else list(store.values()))
        parts = [p for p in parts if len(p)]
        frame = pd.concat(parts, ignore_index=True, sort=False) if parts else None
        if sub == TRIALS:
            self._raw_trials, self._trials = frame, None
        else:
            self._curves = frame

    # ------------------------------------------------------------------ tables

    @property
    def trials(self) -> pd.DataFrame:
        """One row per (config_hash, seed) (the newest run of an identity), as analysis reads
        them (`analysis.load.normalize_trials`); a `cfg` column holds the run code."""
        with self.lock:
            if self._trials is None:
                raw = self._raw_trials
                if raw is None or raw.empty:
                    self._trials = pd.DataFrame(columns=[*TRIAL_REQUIRED_COLUMNS, "arm", "cfg"])
                else:
                    df, _, _ = files.dedupe(raw)
                    try:
                        df = normalize_trials(df)
                    except SchemaError as exc:
                        self.problems[os.path.join(self.path, TRIALS)] = f"{self.path}: {exc}"
                        df = normalize_trials(df[~(df["status"].astype(str).eq("grokked")
                                                   & df["grok_step"].isna())])
                    df["cfg"] = [self._code(h) for h in df["config_hash"].astype(str)]
                    self._trials = df.reset_index(drop=True)
            return self._trials

    def _code(self, h: str) -> int:
        c = self._codes.get(h)
        if c is None:
            c = self._codes[h] = len(self._hashes)
            self._hashes.append(h)
        return c

    @property
    def curves(self) -> pd.DataFrame:
        """Every curve row: cfg (run code), seed, step and the numeric columns."""
        with self.lock:
            return self._curves if self._curves is not None else pd.DataFrame(
                columns=["cfg", "seed", "step"])

    def config_hash(self, code: int) -> str:
        """The config_hash of a run code."""
        return self._hashes[code]

    @property
    def n_files(self) -> int:
        """Result files read (trials and curves)."""
        return len(self._trial_files) + len(self._curve_files)


def sweep_dirs(path: str) -> list[str]:
    """The sweep output dirs of `path`: itself when it has trials/, else its subdirs that do
    (an output root such as the ledger's)."""
    if os.path.isdir(os.path.join(path, TRIALS)):
        return [path]
    subs = sorted(os.path.join(path, n) for n in os.listdir(path)
                  if os.path.isdir(os.path.join(path, n, TRIALS))
                  and inside(path, os.path.join(path, n)))
    return subs

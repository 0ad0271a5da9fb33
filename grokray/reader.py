"""The one reader of a results dir's Parquet files, and where they live: local paths and URLs
alike (the writer's rules, atomic writes, the done-manifest and repair, are grokray.sweep.store).

`Location` is a directory on a pyarrow filesystem (local disk, or any URL pyarrow opens: s3://,
gs://, hdfs://). `read_dir` reads every live result file of a table directory (`trials/` or
`curves/`; `live_files`: a compacted part hides the per-trial files it replaced, and a part not
yet committed is not read) and never stops at a damaged one: each unreadable, foreign or
too-new file comes back as a `Damage` naming it and how to repair it, and the caller decides
(status and analyze report them all and exit 2). `check_dir` checks the files from their footers
alone. Both `grokray.sweep.store` and `grokray_analysis.load` read through here; every
column name and status they check comes from `grokray.schema`.

No torch, no Ray: `analysis/` imports this module.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
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
TRIALS, CURVES = "trials", "curves"
PART_PREFIX = "part-"
"""a compacted file: `trials/part-<id>.parquet` and `curves/part-<id>.parquet` (same name)"""
COMPACTING_PREFIX = ".compact-"
"""`trials/.compact-<id>.json`: a compaction in flight, `{"part": NAME, "sources": [NAME, ...]}`
(grokray.sweep.compact): while it exists, its trials part, once there, hides its sources"""
T = TypeVar("T")

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


def copy_into(local_dir: str | os.PathLike, uri: str) -> list[str]:
    """Copy the files directly under a local dir into the dir `uri` (a URL: one PUT each);
    returns their URLs, shown without the query. What writes a report next to a sweep in a
    bucket uses this: a URL is never a local path."""
    loc = Location.of(uri)
    loc.fs.create_dir(loc.path, recursive=True)
    out = []
    for name in sorted(os.listdir(local_dir)):
        src = os.path.join(local_dir, name)
        if not os.path.isfile(src):
            continue
        with open(src, "rb") as f, loc.fs.open_output_stream(loc.join(name)) as dst:
            dst.write(f.read())
        out.append(strip_query(join_uri(uri, name)))
    return out


def strip_query(uri: str | os.PathLike) -> str:
    """A local path or URL without the URL's query (`s3://b/x?endpoint_override=h` ->
    `s3://b/x`): what to show a user (the query may carry an endpoint or credentials)."""
    s = os.fspath(uri)
    return s.partition("?")[0] if "://" in s else s


def display_name(uri: str | os.PathLike) -> str:
    """The last name of a local path or URL, without a URL's query (`s3://b/x/smoke?r=1` ->
    `smoke`)."""
    return strip_query(uri).rstrip("/").rsplit("/", 1)[-1]


def result_file(name: str) -> bool:
    """Is `name` read as a result file (any `*.parquet` that is not hidden: the writer names
    them `<config_hash>-<run_id>.parquet`; a foreign one is read, and reported if foreign)?"""
    return not name.startswith(".") and name.endswith(".parquet")


def is_part(name: str) -> bool:
    """Is `name` a compacted part (`part-<id>.parquet`)?"""
    return name.startswith(PART_PREFIX) and name.endswith(".parquet")


def compactions(loc: Location, trial_infos: list[pafs.FileInfo] | None = None
                ) -> dict[str, list[str]]:
    """The compactions in flight in `loc` (their `trials/.compact-<id>.json`): part name ->
    the source names it replaces (trials and curves files of those names)."""
    infos = loc.listdir(TRIALS) if trial_infos is None else trial_infos
    out: dict[str, list[str]] = {}
    for i in infos:
        if i.base_name.startswith(COMPACTING_PREFIX) and i.base_name.endswith(".json"):
            try:
                with loc.fs.open_input_stream(i.path) as f:
                    rec = json.loads(f.readall().decode())
                out[str(rec["part"])] = [str(x) for x in rec["sources"]]
            except (OSError, ValueError, KeyError, TypeError):
                continue  # not written whole: written atomically, so only a foreign file
    return out


def live_files(loc: Location, sub: str) -> list[pafs.FileInfo]:
    """The result files of `sub` a reader uses, sorted by name: every `*.parquet` that is not
    hidden, except, while a compaction is in flight (grokray.sweep.compact), the sources of a
    committed part (its trials part exists: the part holds their rows) and the curves part of
    an uncommitted one. So each row is visible in exactly one file at every moment of a
    compaction, also when it was killed half-way."""
    infos = [i for i in loc.listdir(sub) if result_file(i.base_name)]
    if sub not in (TRIALS, CURVES):
        return sorted(infos, key=lambda i: i.base_name)
    trial_infos = loc.listdir(TRIALS) if sub != TRIALS else None
    all_trials = trial_infos if trial_infos is not None else loc.listdir(TRIALS)
    flight = compactions(loc, all_trials)
    if flight:
        names = {i.base_name for i in all_trials}
        hidden: set[str] = set()
        for part, sources in flight.items():
            hidden |= set(sources) if part in names else {part}
        infos = [i for i in infos if i.base_name not in hidden]
    return sorted(infos, key=lambda i: i.base_name)


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
             columns: list[str] | None = None, required: tuple[str, ...] | list[str] = (),
             where: dict[str, Any] | None = None, categorical: bool = False) -> Tables:
    """Read every live result file of `out_dir/sub` (`live_files`): Parquet, with the
    `required` columns and a schema version this grokray reads; only `columns` (when given)
    and only the rows whose columns hold one of the values of `where` (`{"config_hash":
    [...]}`: pyarrow.dataset skips the row groups whose statistics rule them out; a file
    without such a column has no matching row). `categorical`: every string column (and
    `file`) comes back as a pandas Categorical of the values present, decoded from Parquet's
    dictionaries without a Python string per cell (curves: 10^7 rows of a few distinct keys).
    Damaged files are listed, not raised."""
    loc = out_dir if isinstance(out_dir, Location) else Location.of(out_dir)
    damaged: list[Damage] = []
    files: list[str] = []
    want = None if columns is None else list(dict.fromkeys([*columns, *required]))
    tables: list[pa.Table] = []
    for info in live_files(loc, sub):
        t = read_arrow(loc, info.path, sub, columns=want, required=required, where=where,
                       use_threads=False, dictionary=categorical)
        if isinstance(t, Damage):
            damaged.append(t)
            continue
        files.append(info.base_name)
        if t.num_rows:
            name = pa.array([info.base_name] * t.num_rows, pa.string()) if not categorical \
                else pa.DictionaryArray.from_arrays(pa.array(np.zeros(t.num_rows, np.int32)),
                                                    pa.array([info.base_name]))
            tables.append(t.append_column("file", name))
    if not tables:
        return Tables(pd.DataFrame(columns=[*(want or required), "file"]), damaged, files)
    return Tables(concat_frames(tables, categorical=categorical), damaged, files)


def concat_frames(tables: list[pa.Table], *, categorical: bool = False) -> pd.DataFrame:
    """Tables whose columns may differ (metric columns appear as they are computed) as one
    DataFrame, missing cells null: one Arrow concatenation and one conversion, whatever the
    number of files (per file where no type promotion reconciles two files). Empties `tables`:
    each Arrow column is freed as it is converted, so the peak is about the DataFrame's size,
    not twice it. `categorical`: the tables' dictionary columns become Categoricals holding
    only the values present, the numeric columns kept apart (no 2-D block copy)."""
    try:
        whole = pa.concat_tables(tables, promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        return pd.concat([t.to_pandas() for t in tables], ignore_index=True, sort=False)
    tables.clear()
    out = whole.to_pandas(self_destruct=True, split_blocks=categorical)
    del whole
    if categorical:
        for c in out.columns:
            if isinstance(out[c].dtype, pd.CategoricalDtype):
                out[c] = out[c].cat.remove_unused_categories()
    pa.default_memory_pool().release_unused()
    return out


def check_dir(out_dir: str | os.PathLike | Location, sub: str, *,
              required: tuple[str, ...] | list[str] = ()) -> Tables:
    """`read_dir` without the rows: each live file's footer is read (its columns, and its
    schema_version from the row groups' statistics, the column itself only where a file has
    none), so a check of 10^7 curve rows in a few parts reads a few kB. `frame` is empty."""
    loc = out_dir if isinstance(out_dir, Location) else Location.of(out_dir)
    damaged: list[Damage] = []
    files: list[str] = []
    for info in live_files(loc, sub):
        bad = footer_problem(loc, info.path, sub, required)
        if bad is None:
            files.append(info.base_name)
        else:
            damaged.append(bad)
    return Tables(pd.DataFrame(columns=[*required, "file"]), damaged, files)


def _unreadable(path: str, exc: BaseException) -> Damage:
    text = " ".join(str(exc).split())[:200]
    return Damage(path, f"cannot read: not a Parquet file, or a truncated one "
                        f"({type(exc).__name__}: {text})")


def _foreign(names: list[str], required: tuple[str, ...] | list[str], path: str,
             sub: str) -> Damage | None:
    missing = [c for c in required if c not in names]
    if not missing:
        return None
    return Damage(path, f"missing column(s) {', '.join(missing)}: not a grokray {sub} table")


def _opened(loc: Location, path: str, sub: str, required: tuple[str, ...] | list[str],
            then: Callable[[pq.ParquetFile, list[str]], T]) -> T | Damage:
    """`then(file, its column names)` on one result file of `sub` opened, or the `Damage` that
    keeps it from being read: unreadable (whatever `then` raised too), or lacking a `required`
    column."""
    try:
        with loc.fs.open_input_file(path) as f:
            pf = pq.ParquetFile(f)
            names = pf.schema_arrow.names
            if (bad := _foreign(names, required, path, sub)) is not None:
                return bad
            return then(pf, names)
    except Exception as exc:  # noqa: BLE001 - pyarrow raises several types for a bad file
        return _unreadable(path, exc)


def _footer_versions_ok(pf: pq.ParquetFile, names: list[str]) -> bool:
    """Does the footer alone show the file's schema_version in range (no such column, no rows,
    or every row group's min and max within 1..SCHEMA_VERSION)? False: read the column."""
    if "schema_version" not in names or not pf.metadata.num_rows:
        return True
    md = pf.metadata
    i = [md.schema.column(j).path for j in range(md.num_columns)].index("schema_version")
    lo = hi = None
    for g in range(md.num_row_groups):
        st = md.row_group(g).column(i).statistics
        if st is None or not st.has_min_max or st.null_count:
            return False
        lo = st.min if lo is None else min(lo, st.min)
        hi = st.max if hi is None else max(hi, st.max)
    return lo is not None and isinstance(lo, int) and 1 <= lo and hi <= SCHEMA_VERSION


def footer_problem(loc: Location, path: str, sub: str,
                   required: tuple[str, ...] | list[str]) -> Damage | None:
    """What keeps one result file from being read, from its footer (`check_dir`), or None."""
    ok = _opened(loc, path, sub, required, _footer_versions_ok)
    if isinstance(ok, Damage):
        return ok
    if ok:
        return None
    t = read_arrow(loc, path, sub, columns=["schema_version"], required=required)
    return t if isinstance(t, Damage) else None


INDEX_COLUMNS = ["config_hash", "seed", "status", "run_id"]
"""the identity index's columns (and `file`: where each row lives)"""


def identities(out_dir: str | os.PathLike | Location,
               config_hashes: list[str] | None = None) -> pd.DataFrame:
    """The identity index of one sweep dir: `config_hash, seed, status, run_id, file` (the
    trials file the row lives in), one row per trials row, read from the identity columns of
    the live trials files only (of those rows whose config_hash is in `config_hashes`, when
    given: pyarrow.dataset reads only the row groups whose config_hash range can hold one).
    Stored hashes: rows older than schema 3 are re-identified by the store
    (grokray.sweep.store.Manifest). SchemaError (grokray.errors) naming every damaged file."""
    from grokray.errors import SchemaError

    loc = out_dir if isinstance(out_dir, Location) else Location.of(out_dir)
    where = None if config_hashes is None else {"config_hash": sorted(set(config_hashes))}
    t = read_dir(loc, TRIALS, columns=INDEX_COLUMNS, required=INDEX_COLUMNS, where=where)
    if t.damaged:
        raise SchemaError(problems_error(strip_query(os.fspath(out_dir)) if not isinstance(
            out_dir, Location) else out_dir.path, t.damaged))
    return t.frame[[*INDEX_COLUMNS, "file"]].reset_index(drop=True)


def sweep_dirs_of(root: str | os.PathLike) -> list[str]:
    """The sweep dirs of a store: `root` itself when it has trials/, else each subdir that
    does (a lab's results root), as paths or URLs (a URL keeps its query)."""
    s = os.fspath(root)
    loc = Location.of(s)
    if loc.is_dir(TRIALS):
        return [s]
    return [join_uri(s, n) for n in loc.subdirs() if loc.is_dir(n, TRIALS)]


def lookup(roots: str | os.PathLike | list, config_hashes: list[str]) -> pd.DataFrame:
    """Where the rows of some identities live across a store: for each sweep dir of `roots`
    (`sweep_dirs_of`), the index rows of `config_hashes` (`identities`), with a `dir` column.
    A service that reuses finished trials asks this instead of scanning every dir."""
    roots = [roots] if isinstance(roots, (str, os.PathLike)) else list(roots)
    frames = []
    for root in roots:
        for d in sweep_dirs_of(root):
            df = identities(d, config_hashes)
            if len(df):
                frames.append(df.assign(dir=d))
    if not frames:
        return pd.DataFrame(columns=[*INDEX_COLUMNS, "file", "dir"])
    return pd.concat(frames, ignore_index=True)


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
               use_threads: bool = True, where: dict[str, Any] | None = None,
               dictionary: bool = False) -> pa.Table | Damage:
    """One result file of `sub` (`trials` or `curves`) as an Arrow table (only the `columns`
    it has, when given; never those in `exclude`; only rows matching `where`, read through
    pyarrow.dataset: `read_dir`), or the `Damage` that keeps it from being read.
    `use_threads=False` decodes in the calling thread: faster for a small file (a caller
    reading many files in a few threads of its own). `dictionary`: string columns read as
    dictionary arrays (Parquet's own dictionaries, one chunk per column)."""

    def read(pf: pq.ParquetFile, names: list[str]) -> pa.Table:
        cols = None if columns is None else [c for c in columns if c in names]
        if exclude:
            cols = [c for c in (cols or names) if c not in exclude]
        schema = pf.schema_arrow
        strings = [x.name for x in schema if pa.types.is_string(x.type)
                   or pa.types.is_large_string(x.type)] if dictionary else []
        if strings and not where:  # Parquet's dictionaries, the footer already read
            table = pq.ParquetFile(path, filesystem=loc.fs, metadata=pf.metadata,
                                   read_dictionary=strings).read(columns=cols,
                                                                 use_threads=use_threads)
            return table.combine_chunks()  # one dictionary per file
        if strings or (where and set(where) <= set(names)):
            fmt = ds.ParquetFileFormat(
                read_options=ds.ParquetReadOptions(dictionary_columns=strings))
            for name in strings:
                i = schema.get_field_index(name)
                schema = schema.set(i, schema.field(i).with_type(
                    pa.dictionary(pa.int32(), schema.field(i).type)))
            frag = ds.dataset(path, filesystem=loc.fs, format=fmt, schema=schema)
            table = frag.to_table(columns=cols, use_threads=use_threads,
                                  filter=None if not where else where_expr(where)
                                  if set(where) <= set(names) else ds.scalar(False))
            return table.combine_chunks() if strings else table  # one dictionary per file
        if where:  # a column `where` names is absent: no row matches
            table = schema.empty_table()
            return table.select(cols) if cols is not None else table
        return pf.read(columns=cols, use_threads=use_threads)

    table = _opened(loc, path, sub, required, read)
    if isinstance(table, Damage):
        return table
    if "schema_version" in table.column_names and table.num_rows:
        v = table.column("schema_version")
        ok = pa.types.is_integer(v.type) and not v.null_count and (  # the usual case, no pandas
            1 <= pc.min(v).as_py() and pc.max(v).as_py() <= SCHEMA_VERSION)
        bad = None if ok else _version_problem(table.select(["schema_version"]).to_pandas())
        if bad is not None:
            return Damage(path, bad[0], repairable=bad[1])
    return table


def where_expr(where: dict[str, Any]) -> ds.Expression:
    """`{column: values}` as a pyarrow.dataset filter: each column's value among its values."""
    expr = None
    for col, values in where.items():
        e = ds.field(col).isin(list(values))
        expr = e if expr is None else expr & e
    return expr


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
    if not df.duplicated(key).any():  # the usual case: two columns looked at, no copy
        return df, 0, 0
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

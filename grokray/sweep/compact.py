"""Compaction: a sweep dir's per-trial files merged into a few large parts, exactly once.

The writer leaves one trials file and one curves file per trial (`<config_hash>-<run_id>.parquet`);
a reader's cost grows with their number. `compact` merges them (and parts still small) into
`trials/part-<id>.parquet` and `curves/part-<id>.parquet` (same name; trials rows sorted by
config_hash and seed, curve rows in the sources' order, which is config_hash order for per-trial
files, so pyarrow.dataset skips the row groups a lookup by config_hash cannot hit). Snapshots,
recomputed tables and checkpoints are left where they are (keyed by config_hash and run_id,
never by file name).

Exactly once, at every moment, also under SIGKILL. One compaction of sources S into part P:

  1. `trials/.compact-<id>.json` names P and S (atomic);      point `planned`
  2. `curves/P` written (atomic; hidden: P has no trials yet); point `curves-written`
  3. `trials/P` written (atomic): the commit;                  point `committed`
  4. the sources deleted (curves, then trials);                point `sources-half-deleted`
                                                               (half of them gone) and
                                                               `sources-deleted`
  5. the `.compact-<id>.json` removed.

A reader (`grokray.reader.live_files`) hides, while a `.compact-*.json` exists, its sources when
its trials part exists and its curves part when it does not: before the commit every row is in
its source, after it in the part, never in both. `grokray.sweep.store.settle_compactions` (run
by `compact`, by `grokray.sweep.store.repair` before every sweep, and by `grokray status
--repair`) finishes what a killed compaction left: forward when committed (the rest of the
sources deleted), back when not (the curves part deleted).

`GROKRAY_COMPACT_KILL_AT=<point>` makes the process SIGKILL itself at that point (the kill test's
hook; `POINTS`).
"""

from __future__ import annotations

import json
import os
import signal
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq

from grokray import reader
from grokray.errors import GrokrayError
from grokray.schema import ID_COLUMNS, STATUSES
from grokray.sweep import store

KILL_ENV = "GROKRAY_COMPACT_KILL_AT"
"""name of a point in `POINTS`: the compacting process kills itself (SIGKILL) there"""
POINTS = ("planned", "curves-written", "committed", "sources-half-deleted", "sources-deleted")
AUTO_MIN_FILES = 256
"""`after_run` compacts a dir once it holds at least this many per-trial trials files (fewer
read in well under a second; a test's small sweep keeps its per-trial files)"""
PART_ROWS = 50_000
"""trials rows per part at most; a part with fewer than half of that is merged again"""
ROW_GROUP_ROWS = 8_192
"""rows per Parquet row group of a trials part (the unit a filter by config_hash skips)"""
CURVE_ROW_GROUP_ROWS = 65_536
"""rows per row group of a curves part (also the most rows held in memory while writing one)"""


def _point(name: str) -> None:
    if os.environ.get(KILL_ENV) == name:
        os.kill(os.getpid(), signal.SIGKILL)


@dataclass
class Compacted:
    """What `compact` did."""

    parts: list[str]
    """the parts written (names)"""
    sources: int
    """trials files merged into them (per-trial files and small parts)"""
    rows: int
    """trials rows moved"""
    skipped: list[str]
    """trials files left as they are (damaged, or a finished trial without its curves:
    `grokray status` names them)"""
    settled: dict[str, int]
    """compactions a killed process had left: finished (`forward`) or undone (`back`)"""


def compact(out_dir: str | os.PathLike, *, part_rows: int = PART_ROWS) -> Compacted:
    """Merge the per-trial files of `out_dir` (and parts with fewer than `part_rows / 2` rows)
    into parts of at most `part_rows` trials rows. Safe to interrupt at any point (module
    docstring); the caller holds the dir's WriterLock."""
    loc = store.Location.of(out_dir)
    settled = store.settle_compactions(loc)
    files = reader.live_files(loc, reader.TRIALS)
    curve_names = {i.base_name for i in reader.live_files(loc, reader.CURVES)}
    batch: list[tuple[str, pa.Table]] = []
    out = Compacted(parts=[], sources=0, rows=0, skipped=[], settled=settled)
    n_loose = sum(not reader.is_part(i.base_name) for i in files)
    small = [i for i in files if not reader.is_part(i.base_name)
             or pq.ParquetFile(i.path, filesystem=loc.fs).metadata.num_rows < part_rows // 2]
    if n_loose == 0 and len(small) < 2:
        return out
    rows = 0
    for info in small:
        t = reader.read_arrow(loc, info.path, reader.TRIALS, required=ID_COLUMNS,
                              use_threads=False)
        if isinstance(t, reader.Damage) or not _whole(t, info.base_name in curve_names):
            out.skipped.append(info.base_name)
            continue
        if rows and rows + t.num_rows > part_rows:
            _write_part(loc, batch, curve_names, out)
            batch, rows = [], 0
        batch.append((info.base_name, t))
        rows += t.num_rows
    if len(batch) > 1 or (batch and not reader.is_part(batch[0][0])):
        _write_part(loc, batch, curve_names, out)
    return out


def after_run(out_dir: str | os.PathLike) -> Compacted | None:
    """The end of a sweep's run: `compact` when the dir holds `AUTO_MIN_FILES` per-trial
    trials files or more (None: left as it is). The driver calls it holding the dir's lock."""
    loc = store.Location.of(out_dir)
    loose = sum(not reader.is_part(i.base_name) for i in reader.live_files(loc, reader.TRIALS))
    return compact(out_dir) if loose >= AUTO_MIN_FILES else None


def write_part(out_dir: str | os.PathLike, trials: pa.Table, curves: pa.Table | None) -> str:
    """Bulk import: rows of identities that have no row in `out_dir` yet, written as one new
    part (its curves, then its trials: the done mark, as the writer orders a trial's files);
    returns the part's name. The caller keeps identities unique (the benchmark's stores are
    built this way: benchmarks/bench_store.py)."""
    loc = store.Location.of(out_dir)
    part = f"{reader.PART_PREFIX}{store.new_run_id()}.parquet"
    if curves is not None and curves.num_rows:
        c = curves.replace_schema_metadata(None)
        loc.write_bytes_atomic(loc.join(reader.CURVES, part), lambda f: pq.write_table(
            c, f, row_group_size=CURVE_ROW_GROUP_ROWS))
    t = trials.replace_schema_metadata(None).sort_by([("config_hash", "ascending"),
                                                      ("seed", "ascending")])
    loc.write_bytes_atomic(loc.join(reader.TRIALS, part), lambda f: pq.write_table(
        t, f, row_group_size=ROW_GROUP_ROWS))
    return part


def _whole(t: pa.Table, has_curves: bool) -> bool:
    """A trials file whose rows are all there: its curves file exists, or every row failed
    (a failed trial has no curves)."""
    if has_curves:
        return True
    status = t.column("status").to_pylist()
    return all(s == "failed" for s in status) and all(s in STATUSES for s in status)


def _write_part(loc: store.Location, batch: list[tuple[str, pa.Table]], curve_names: set[str],
                out: Compacted) -> None:
    """One compaction: `batch` (source name, its trials rows) into one part (module docstring)."""
    cid = store.new_run_id()
    part = f"{reader.PART_PREFIX}{cid}.parquet"
    sources = [name for name, _ in batch]
    record = json.dumps({"part": part, "sources": sources}).encode()
    loc.write_bytes_atomic(store.compaction_record(loc, part), lambda f: f.write(record))
    _point("planned")
    curves = [n for n in sources if n in curve_names]
    if curves:
        _write_curves(loc, loc.join(reader.CURVES, part), curves)
    _point("curves-written")
    trials = _unify([t for _, t in batch])
    trials = trials.sort_by([("config_hash", "ascending"), ("seed", "ascending")])
    loc.write_bytes_atomic(loc.join(reader.TRIALS, part), lambda f: pq.write_table(
        trials, f, row_group_size=ROW_GROUP_ROWS))
    _point("committed")
    for i, name in enumerate(sources):
        if i == len(sources) // 2:
            _point("sources-half-deleted")
        store.delete_result(loc, name)
    _point("sources-deleted")
    loc.fs.delete_file(store.compaction_record(loc, part))
    out.parts.append(part)
    out.sources += len(sources)
    out.rows += trials.num_rows


def _schema(schemas: list[pa.Schema]) -> pa.Schema:
    """One schema for files whose columns may differ (permissive promotion: a column all null
    in one file takes its type from another); no pandas metadata (the index is the row number)."""
    try:
        return pa.unify_schemas(schemas, promote_options="permissive").remove_metadata()
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise GrokrayError(f"cannot compact: the files' columns disagree on a type ({exc}); "
                           "the dir is left as it is") from None


def _conform(t: pa.Table, schema: pa.Schema) -> pa.Table:
    cols = []
    for f in schema:
        if f.name in t.column_names:
            c = t.column(f.name)
            cols.append(c if c.type == f.type else c.cast(f.type))
        else:
            cols.append(pa.nulls(t.num_rows, f.type))
    return pa.Table.from_arrays(cols, schema=schema)


def _unify(tables: list[pa.Table]) -> pa.Table:
    schema = _schema([t.schema for t in tables])
    return pa.concat_tables([_conform(t, schema) for t in tables])


def _write_curves(loc: store.Location, path: str, names: list[str]) -> None:
    """The curves files `names` as one file, streamed: at most a row group's rows in memory."""
    paths = [loc.join(reader.CURVES, n) for n in names]
    schema = _schema([pq.ParquetFile(p, filesystem=loc.fs).schema_arrow for p in paths])

    def write(f) -> None:  # noqa: ANN001 - a pyarrow or file stream
        with pq.ParquetWriter(f, schema) as w:
            buf: list[pa.Table] = []
            n = 0
            for p in paths:
                t = pq.ParquetFile(p, filesystem=loc.fs).read(use_threads=False)
                buf.append(_conform(t, schema))
                n += t.num_rows
                if n >= CURVE_ROW_GROUP_ROWS:
                    w.write_table(pa.concat_tables(buf), row_group_size=CURVE_ROW_GROUP_ROWS)
                    buf, n = [], 0
            if buf:
                w.write_table(pa.concat_tables(buf), row_group_size=CURVE_ROW_GROUP_ROWS)
    loc.write_bytes_atomic(path, write)

"""The service's database: its tables (SQLAlchemy 2 models) and `connect`, which opens a
database by URL and brings its schema to the newest Alembic migration
(grokray/service/migrations/).

An SQLite file is the embedded default (`grokray serve` with no flags: `sqlite:///PATH`);
a lab gives PostgreSQL (`postgresql://user@host/db`, through psycopg). Every table is created by
the migrations, never by `metadata.create_all`, so an older database is upgraded in place at
start and the models below are the schema's reading, not its source.

The tables:

- `users`: who may call the service. `name` (a slug, unique), `token_hash` (the SHA-256 hex of
  the user's token; the token itself is shown once, when `grokray users add` makes it, and never
  stored), `admin` (may act on any sweep and add users), `quota_cpu_hours` / `quota_gpu_hours`
  (the most CPU/GPU-hours the cost model may price this user's queued and running sweeps at;
  NULL: no quota), `created_at`.
- `sweeps`: one row per submission, the queue. `owner_id` (users.id), `name` (the spec's name),
  `spec_text` (the YAML as submitted, byte for byte), `spec_source` (what the user gave: a file
  name or a shipped name), `sweep_dir` (where its rows live; self-contained: `grokray.load`,
  `analyze` and `dashboard` read it without the service), `priority` (higher runs first),
  `state` (queued | held | running | preempted | done | failed | cancelled), `seq` (the ordering
  key: the submission order, unique and increasing; the queue is ordered by what the scheduler
  makes of priority, fair share and `seq`, so a restarted service orders it the same way),
  `submitted_at` / `started_at` / `ended_at`, `estimate_cpu_s` / `estimate_gpu_s` /
  `estimate_wall_s` (the cost model's expected seconds at submission), `used_cpu_s` /
  `used_gpu_s` (what it has used so far), `trials_total` / `seed_runs_total` (configs and
  configs x seeds of its spec), `seed_runs_done` (seed-runs with a row in its dir),
  `seed_runs_reused` (of those, rows taken from another sweep's run instead of trained),
  `attempts` (times it was started: 1 + its resumes), `message` (the last thing the service or
  the runner said about it, e.g. why a row was not reused or why it failed), `request_key` (the
  client's idempotency key: a retried submission returns the sweep it made the first time,
  never a second one), `updated_at`.
- `identities`: the index of every row in the lab's store, one per (config_hash, seed) per sweep
  dir it lives in. `config_hash`, `seed`, `semantics` (the training-semantics version that
  trained it: rows of another version are not the same trial), `device_kind` (e.g. "cpu",
  "cuda:NVIDIA H100"), `status` (training | ok | failed: `training` marks an identity a running
  sweep has claimed, so a second sweep waits for it instead of training it twice), `sweep_id`
  (the sweep whose dir holds the row; NULL for rows indexed from a dir no sweep of the service
  made), `sweep_dir`, `owner_id`, `source_dir` (provenance: the dir a reused row was copied
  from; NULL when trained here), `cpu_s` / `gpu_s` (what training it cost), `created_at`.
- `usage`: what each sweep used, as it used it (`user_id`, `sweep_id`, `at`, `cpu_s`, `gpu_s`):
  fair share reads each user's recent seconds from here, the accounting their totals.
- `events`: what happened to each sweep, in order (`sweep_id`, `at`, `kind`, `actor_id`,
  `detail`): submitted, started, preempted, resumed, held, released, priority, cancelled, done,
  failed, reused, ... The queue's history and the accounting's evidence.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    create_engine,
    event,
)
from sqlalchemy.engine import Engine
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

__all__ = ["STATES", "ACTIVE", "FINAL", "Base", "User", "Sweep", "Identity", "Usage", "Event",
           "connect", "url_of", "SEMANTICS_DEFAULT"]

STATES = ("queued", "held", "running", "preempted", "done", "failed", "cancelled")
"""every state a sweep can be in"""
ACTIVE = ("queued", "held", "running", "preempted")
"""the states of a sweep in the queue (not yet ended)"""
FINAL = ("done", "failed", "cancelled")
"""the states a sweep ends in"""
IDENTITY_STATUSES = ("training", "ok", "failed")
SEMANTICS_DEFAULT = "1"
"""the training-semantics version of rows indexed without one"""

NAME_LEN = 64


def now() -> dt.datetime:
    """The current time, UTC (every timestamp the service stores)."""
    return dt.datetime.now(dt.timezone.utc)


class Base(DeclarativeBase):
    pass


class User(Base):
    __tablename__ = "users"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(NAME_LEN), unique=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    admin: Mapped[bool] = mapped_column(Boolean, default=False)
    quota_cpu_hours: Mapped[float | None] = mapped_column(Float, nullable=True)
    quota_gpu_hours: Mapped[float | None] = mapped_column(Float, nullable=True)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=now)


class Sweep(Base):
    __tablename__ = "sweeps"
    __table_args__ = (
        CheckConstraint("state IN ('queued','held','running','preempted','done','failed',"
                        "'cancelled')", name="sweeps_state"),
        Index("sweeps_state_order", "state", "priority", "seq"),
        Index("sweeps_owner", "owner_id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    owner_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    name: Mapped[str] = mapped_column(String(NAME_LEN))
    spec_text: Mapped[str] = mapped_column(Text)
    spec_source: Mapped[str] = mapped_column(String(1024))
    sweep_dir: Mapped[str] = mapped_column(String(2048))
    priority: Mapped[int] = mapped_column(Integer, default=0)
    state: Mapped[str] = mapped_column(String(16), default="queued")
    seq: Mapped[int] = mapped_column(BigInteger, unique=True)
    submitted_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=now)
    started_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    ended_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    estimate_cpu_s: Mapped[float] = mapped_column(Float, default=0.0)
    estimate_gpu_s: Mapped[float] = mapped_column(Float, default=0.0)
    estimate_wall_s: Mapped[float] = mapped_column(Float, default=0.0)
    used_cpu_s: Mapped[float] = mapped_column(Float, default=0.0)
    used_gpu_s: Mapped[float] = mapped_column(Float, default=0.0)
    trials_total: Mapped[int] = mapped_column(Integer, default=0)
    seed_runs_total: Mapped[int] = mapped_column(Integer, default=0)
    seed_runs_done: Mapped[int] = mapped_column(Integer, default=0)
    seed_runs_reused: Mapped[int] = mapped_column(Integer, default=0)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    message: Mapped[str] = mapped_column(Text, default="")
    request_key: Mapped[str | None] = mapped_column(String(128), unique=True, nullable=True)
    updated_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=now)


class Identity(Base):
    __tablename__ = "identities"
    __table_args__ = (
        UniqueConstraint("config_hash", "seed", "sweep_dir", name="identities_row"),
        Index("identities_lookup", "config_hash", "seed", "semantics", "device_kind"),
        Index("identities_sweep", "sweep_id"),
        CheckConstraint("status IN ('training','ok','failed')", name="identities_status"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    config_hash: Mapped[str] = mapped_column(String(64))
    seed: Mapped[int] = mapped_column(BigInteger)
    semantics: Mapped[str] = mapped_column(String(32), default=SEMANTICS_DEFAULT)
    device_kind: Mapped[str] = mapped_column(String(128), default="cpu")
    status: Mapped[str] = mapped_column(String(16), default="ok")
    sweep_id: Mapped[int | None] = mapped_column(ForeignKey("sweeps.id"), nullable=True)
    sweep_dir: Mapped[str] = mapped_column(String(2048))
    owner_id: Mapped[int | None] = mapped_column(ForeignKey("users.id"), nullable=True)
    source_dir: Mapped[str | None] = mapped_column(String(2048), nullable=True)
    cpu_s: Mapped[float] = mapped_column(Float, default=0.0)
    gpu_s: Mapped[float] = mapped_column(Float, default=0.0)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=now)


class Usage(Base):
    __tablename__ = "usage"
    __table_args__ = (Index("usage_user_at", "user_id", "at"), Index("usage_sweep", "sweep_id"))

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    sweep_id: Mapped[int] = mapped_column(ForeignKey("sweeps.id"))
    at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=now)
    cpu_s: Mapped[float] = mapped_column(Float, default=0.0)
    gpu_s: Mapped[float] = mapped_column(Float, default=0.0)


class Event(Base):
    __tablename__ = "events"
    __table_args__ = (Index("events_sweep", "sweep_id", "id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    sweep_id: Mapped[int] = mapped_column(ForeignKey("sweeps.id"))
    at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=now)
    kind: Mapped[str] = mapped_column(String(32))
    actor_id: Mapped[int | None] = mapped_column(ForeignKey("users.id"), nullable=True)
    detail: Mapped[str] = mapped_column(Text, default="")


MIGRATIONS = Path(__file__).with_name("migrations")


def url_of(db: str | os.PathLike) -> str:
    """A database URL from what a user gave: a URL as it is (`postgresql://...` goes through
    psycopg), anything else as the path of an SQLite file."""
    text = os.fspath(db)
    if "://" in text:
        if text.startswith(("postgresql://", "postgres://")):
            return "postgresql+psycopg://" + text.split("://", 1)[1]
        return text
    return "sqlite:///" + os.path.abspath(text)


def _sqlite_pragmas(dbapi_conn, _record) -> None:  # noqa: ANN001 - DB-API connection
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")     # readers never block the writer
    cur.execute("PRAGMA synchronous=FULL")     # a commit is on disk before it returns
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA busy_timeout=30000")   # wait for another writer instead of failing
    cur.close()


def engine_of(db: str | os.PathLike) -> Engine:
    """An engine for `db` (a URL or an SQLite path), without touching the schema."""
    url = url_of(db)
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"timeout": 30, "check_same_thread": False})
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    return create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=20)


def migrate(engine: Engine) -> None:
    """Bring the database to the newest migration (a new database gets every table)."""
    from alembic import command
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "head")


def connect(db: str | os.PathLike) -> Engine:
    """The database at `db` (a URL or an SQLite path; an SQLite file is created), migrated to
    the newest schema."""
    url = url_of(db)
    if url.startswith("sqlite:///"):
        Path(url[len("sqlite:///"):]).parent.mkdir(parents=True, exist_ok=True)
    engine = engine_of(db)
    migrate(engine)
    return engine

"""The service's state as a small Python API over its database (grokray.service.db): what the
HTTP layer and the runner call, so that neither writes SQL. Every call is one transaction;
every value returned is a plain frozen dataclass (no session attached).

    st = State.open("grokray.db")                     # or "postgresql://user@host/lab"
    alice, token = st.add_user("alice")               # the token is shown once, stored hashed
    sw = st.submit(alice, name="smoke", spec_text=..., spec_source="smoke", priority=5,
                   sweep_dir=lambda id: f"store/alice/smoke-{id}")
    st.list_queue()                                    # the active sweeps, in queue order
    st.set_state(sw.id, "running")                     # the runner: started, preempted, done...
    st.record_usage(sw.id, cpu_s=12.5)                 # fair share and the accounting read these

User-facing refusals are GrokrayErrors of three kinds the HTTP layer maps to a status:
`NotFound` (404), `Forbidden` (403), `Conflict` (409: the sweep is not in a state the action
applies to). Each is one line naming the problem and what is valid.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import hashlib
import hmac
import re
import secrets
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from grokray.errors import GrokrayError
from grokray.service.db import (
    ACTIVE,
    FINAL,
    STATES,
    Event,
    Identity,
    Sweep,
    Usage,
    User,
    connect,
    now,
)

__all__ = ["State", "UserView", "SweepView", "IdentityView", "EventView", "NotFound",
           "Forbidden", "Conflict", "TRANSITIONS", "WAITING", "hash_token", "USER_NAME"]


class NotFound(GrokrayError):
    """No such sweep or user (HTTP 404)."""


class Forbidden(GrokrayError):
    """The caller may not act on this sweep (HTTP 403)."""


class Conflict(GrokrayError):
    """The sweep is not in a state the action applies to (HTTP 409)."""


TRANSITIONS: dict[str, tuple[str, ...]] = {
    "queued": ("held", "running", "cancelled", "failed"),
    "held": ("queued", "cancelled"),
    "running": ("preempted", "done", "failed", "cancelled", "queued"),
    "preempted": ("running", "queued", "held", "cancelled", "failed"),
    "done": (), "failed": (), "cancelled": (),
}
"""state -> the states it may move to (`queued` from running: a service restarted under a
running sweep puts it back in line; it resumes from its rows and checkpoints)"""
WAITING = ("preempted", "queued")
"""the states that count toward a sweep's position (waiting to run)"""
ORDER = {"running": 0, "preempted": 1, "queued": 2, "held": 3}
"""how the queue lists the active states"""
USER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def hash_token(token: str) -> str:
    """The stored form of a token: SHA-256 hex (a token is 32 random bytes; no salt needed)."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class UserView:
    id: int
    name: str
    admin: bool
    quota_cpu_hours: float | None
    quota_gpu_hours: float | None
    created_at: dt.datetime


@dataclass(frozen=True)
class SweepView:
    """One sweep as the queue shows it (`position`: 1-based among the waiting sweeps in queue
    order, 0 for the others)."""

    id: int
    owner: str
    owner_id: int
    name: str
    spec_source: str
    sweep_dir: str
    priority: int
    state: str
    seq: int
    submitted_at: dt.datetime
    started_at: dt.datetime | None
    ended_at: dt.datetime | None
    estimate_cpu_s: float
    estimate_gpu_s: float
    estimate_wall_s: float
    used_cpu_s: float
    used_gpu_s: float
    trials_total: int
    seed_runs_total: int
    seed_runs_done: int
    seed_runs_reused: int
    attempts: int
    message: str
    position: int = 0

    def as_json(self) -> dict[str, Any]:
        """Plain JSON values (times as ISO 8601 UTC)."""
        out = {k: getattr(self, k) for k in _VIEW_FIELDS}
        for k in ("submitted_at", "started_at", "ended_at"):
            if out[k] is not None:
                out[k] = _utc(out[k]).isoformat()
        return out


_VIEW_FIELDS = tuple(f.name for f in dataclasses.fields(SweepView))
_COLUMNS = tuple(f for f in _VIEW_FIELDS if f not in ("owner", "position"))
"""the sweeps columns a SweepView reads (never spec_text: a listing does not load specs)"""


@dataclass(frozen=True)
class IdentityView:
    id: int
    config_hash: str
    seed: int
    semantics: str
    device_kind: str
    status: str
    sweep_id: int | None
    sweep_dir: str
    owner_id: int | None
    source_dir: str | None
    cpu_s: float
    gpu_s: float


@dataclass(frozen=True)
class EventView:
    id: int
    sweep_id: int
    at: dt.datetime
    kind: str
    actor: str | None
    detail: str


def _utc(t: dt.datetime) -> dt.datetime:
    return t if t.tzinfo is not None else t.replace(tzinfo=dt.timezone.utc)  # SQLite drops it


def _user(u: User) -> UserView:
    return UserView(u.id, u.name, bool(u.admin), u.quota_cpu_hours, u.quota_gpu_hours,
                    _utc(u.created_at))


def _named_user(s: Session, name: str) -> User:
    """The user row called `name`; NotFound (pointing to `grokray users list`) otherwise."""
    u = s.scalar(select(User).where(User.name == name))
    if u is None:
        raise NotFound(f"no user {name!r}; `grokray users list` shows them")
    return u


def _sweep(s: Sweep, owner: str, position: int = 0) -> SweepView:
    return SweepView(
        id=s.id, owner=owner, owner_id=s.owner_id, name=s.name, spec_source=s.spec_source,
        sweep_dir=s.sweep_dir, priority=s.priority, state=s.state, seq=s.seq,
        submitted_at=_utc(s.submitted_at),
        started_at=_utc(s.started_at) if s.started_at else None,
        ended_at=_utc(s.ended_at) if s.ended_at else None,
        estimate_cpu_s=s.estimate_cpu_s, estimate_gpu_s=s.estimate_gpu_s,
        estimate_wall_s=s.estimate_wall_s, used_cpu_s=s.used_cpu_s, used_gpu_s=s.used_gpu_s,
        trials_total=s.trials_total, seed_runs_total=s.seed_runs_total,
        seed_runs_done=s.seed_runs_done, seed_runs_reused=s.seed_runs_reused,
        attempts=s.attempts, message=s.message, position=position)


def _view(row: Any) -> SweepView:  # noqa: ANN401 - a Row of _COLUMNS + the owner's name
    vals = dict(zip(_COLUMNS, row[:-1], strict=True))
    for k in ("submitted_at", "started_at", "ended_at"):
        if vals[k] is not None:
            vals[k] = _utc(vals[k])
    return SweepView(owner=row[-1], position=0, **vals)


def _identity(i: Identity) -> IdentityView:
    return IdentityView(i.id, i.config_hash, int(i.seed), i.semantics, i.device_kind, i.status,
                        i.sweep_id, i.sweep_dir, i.owner_id, i.source_dir, i.cpu_s, i.gpu_s)


def _writes(fn: Callable) -> Callable:
    """A State method that writes sweeps: cached listings are dropped when it returns."""

    @functools.wraps(fn)
    def wrapper(self: State, *args: Any, **kw: Any) -> Any:  # noqa: ANN401
        try:
            return fn(self, *args, **kw)
        finally:
            self._wrote()

    return wrapper


def queue_key(s: SweepView | Sweep) -> tuple:
    """The queue's default order: running, preempted, queued, held; then priority (high
    first), then submission (`seq`)."""
    return (ORDER.get(s.state, 9), -s.priority, s.seq)


class State:
    """The service's state in one database (see the module docstring)."""

    LISTING_TTL_S = 1.0
    """a queue listing is answered from the last one for at most this long while nothing was
    written through this State (a storm of `grokray queue` reads the database once a second;
    every write through it is seen at once)"""

    def __init__(self, engine: Any) -> None:  # noqa: ANN401 - sqlalchemy Engine
        self.engine = engine
        self._session = sessionmaker(engine, expire_on_commit=False)
        self._gen = 0
        """bumped by every write of a sweep through this State"""
        self._listings: dict[tuple, tuple[int, float, list[SweepView]]] = {}
        self._lock = threading.Lock()

    @classmethod
    def open(cls, db: str) -> State:
        """The state in `db` (a URL or an SQLite path), its schema migrated to the newest."""
        return cls(connect(db))

    def close(self) -> None:
        self.engine.dispose()

    def session(self) -> Session:
        return self._session()

    @property
    def generation(self) -> int:
        """How many writes of sweeps this State has made (a cache of a listing is good while
        this stays the same)."""
        return self._gen

    def _wrote(self) -> None:
        with self._lock:
            self._gen += 1
            self._listings.clear()

    # ------------------------------------------------------------------------------- users

    def add_user(self, name: str, *, admin: bool = False, quota_cpu_hours: float | None = None,
                 quota_gpu_hours: float | None = None) -> tuple[UserView, str]:
        """A new user and their token (shown once: only its hash is stored)."""
        if not USER_NAME.match(name):
            raise GrokrayError(f"user name {name[:80]!r}: use letters, digits, '_', '-', '.' "
                               "(at most 64, starting with a letter or digit)")
        token = secrets.token_urlsafe(32)
        with self.session() as s, s.begin():
            if s.scalar(select(User.id).where(User.name == name)) is not None:
                raise Conflict(f"user {name} exists; `grokray users token {name}` makes them "
                               "a new token")
            u = User(name=name, token_hash=hash_token(token), admin=admin,
                     quota_cpu_hours=quota_cpu_hours, quota_gpu_hours=quota_gpu_hours,
                     created_at=now())
            s.add(u)
            s.flush()
            return _user(u), token

    def new_token(self, name: str) -> str:
        """A new token for `name` (the old one stops working)."""
        token = secrets.token_urlsafe(32)
        with self.session() as s, s.begin():
            u = _named_user(s, name)
            u.token_hash = hash_token(token)
        return token

    def set_quota(self, name: str, *, cpu_hours: float | None,
                  gpu_hours: float | None) -> UserView:
        with self.session() as s, s.begin():
            u = _named_user(s, name)
            u.quota_cpu_hours, u.quota_gpu_hours = cpu_hours, gpu_hours
            return _user(u)

    def users(self) -> list[UserView]:
        with self.session() as s:
            return [_user(u) for u in s.scalars(select(User).order_by(User.id))]

    def user(self, name: str) -> UserView:
        with self.session() as s:
            u = _named_user(s, name)
            return _user(u)

    def authenticate(self, token: str | None) -> UserView | None:
        """The user whose token this is, or None."""
        if not token or len(token) > 256:
            return None
        digest = hash_token(token)
        with self.session() as s:
            u = s.scalar(select(User).where(User.token_hash == digest))
            if u is None or not hmac.compare_digest(u.token_hash, digest):
                return None
            return _user(u)

    # ------------------------------------------------------------------------------ sweeps

    @_writes
    def submit(self, owner: UserView, *, name: str, spec_text: str, spec_source: str,
               sweep_dir: str | Callable[[int], str], priority: int = 0, state: str = "queued",
               estimate_cpu_s: float = 0.0, estimate_gpu_s: float = 0.0,
               estimate_wall_s: float = 0.0, trials_total: int = 0, seed_runs_total: int = 0,
               message: str = "", request_key: str | None = None) -> tuple[SweepView, bool]:
        """Queue a sweep; (the sweep, True) or, for a `request_key` seen before, (the sweep
        that key made, False): a retried submission never makes a second sweep.
        `sweep_dir`: the dir, or a function of the new sweep's id giving it."""
        if state not in ("queued", "held"):
            raise ValueError(f"a sweep is submitted queued or held, not {state}")
        if request_key is not None:
            found = self._by_key(request_key)
            if found is not None:
                return found, False
        try:
            with self.session() as s, s.begin():
                t = now()
                sw = Sweep(owner_id=owner.id, name=name, spec_text=spec_text,
                           spec_source=spec_source, sweep_dir="", priority=priority, state=state,
                           seq=0, submitted_at=t, estimate_cpu_s=estimate_cpu_s,
                           estimate_gpu_s=estimate_gpu_s, estimate_wall_s=estimate_wall_s,
                           used_cpu_s=0.0, used_gpu_s=0.0, trials_total=trials_total,
                           seed_runs_total=seed_runs_total, seed_runs_done=0,
                           seed_runs_reused=0, attempts=0, message=message,
                           request_key=request_key, updated_at=t)
                s.add(sw)
                s.flush()  # the id
                sw.seq = sw.id
                sw.sweep_dir = sweep_dir(sw.id) if callable(sweep_dir) else sweep_dir
                s.add(Event(sweep_id=sw.id, at=t, kind="submitted", actor_id=owner.id,
                            detail=f"priority {priority}" + (", held" if state == "held" else "")
                            + (f"; {message}" if message else "")))
                return _sweep(sw, owner.name), True
        except IntegrityError:
            if request_key is None:
                raise
            found = self._by_key(request_key)  # the same key, submitted at the same moment
            if found is None:
                raise
            return found, False

    def _by_key(self, key: str) -> SweepView | None:
        with self.session() as s:
            row = s.execute(select(Sweep, User.name).join(User, Sweep.owner_id == User.id)
                            .where(Sweep.request_key == key)).first()
            return _sweep(*row) if row else None

    def get(self, sweep_id: int) -> SweepView:
        """One sweep (NotFound when there is none)."""
        with self.session() as s:
            row = s.execute(select(Sweep, User.name).join(User, Sweep.owner_id == User.id)
                            .where(Sweep.id == sweep_id)).first()
            if row is None:
                raise NotFound(f"no sweep {sweep_id}; `grokray queue --all` lists them")
            sw, owner = row
            pos = 0
            if sw.state in WAITING:
                pos = next((q.position for q in self.list_queue() if q.id == sweep_id), 0)
            return _sweep(sw, owner, pos)

    def spec_text(self, sweep_id: int) -> str:
        with self.session() as s:
            text = s.scalar(select(Sweep.spec_text).where(Sweep.id == sweep_id))
            if text is None:
                raise NotFound(f"no sweep {sweep_id}; `grokray queue --all` lists them")
            return text

    def list_queue(self, *, states: Iterable[str] = ACTIVE, owner: str | None = None,
                   limit: int | None = None,
                   order: Callable[[list[SweepView]], list[SweepView]] | None = None,
                   ) -> list[SweepView]:
        """The sweeps in `states` (default: the active ones), in queue order (`order`, e.g. the
        scheduler's, reorders the default `queue_key` order), each with its position."""
        states = tuple(states)
        bad = [x for x in states if x not in STATES]
        if bad:
            raise GrokrayError(f"state {bad[0]!r}: valid states are {', '.join(STATES)}")
        key = (states, owner, limit, order)
        with self._lock:
            gen = self._gen
            hit = self._listings.get(key)
        if hit is not None and hit[0] == gen and time.monotonic() - hit[1] < self.LISTING_TTL_S:
            return list(hit[2])
        out = self._list_queue(states, owner, limit, order)
        with self._lock:
            if self._gen == gen:
                self._listings[key] = (gen, time.monotonic(), out)
        return list(out)

    def _list_queue(self, states: tuple[str, ...], owner: str | None, limit: int | None,
                    order: Callable[[list[SweepView]], list[SweepView]] | None,
                    ) -> list[SweepView]:
        q = (select(*(getattr(Sweep, c) for c in _COLUMNS), User.name)
             .join(User, Sweep.owner_id == User.id).where(Sweep.state.in_(states)))
        if owner is not None:
            q = q.where(User.name == owner)
        final = [x for x in states if x in FINAL]
        if final and limit is not None:  # ended sweeps: the newest `limit`
            q = q.order_by(Sweep.seq.desc()).limit(limit)
        with self.session() as s:
            rows = [_view(row) for row in s.execute(q)]
        rows.sort(key=lambda v: (v.state in FINAL, *queue_key(v)))
        if order is not None:
            rows = order(rows)
        out, pos = [], 0
        for v in rows:
            if v.state in WAITING:
                pos += 1
                v = dataclasses.replace(v, position=pos)
            out.append(v)
        return out[:limit] if limit is not None else out

    @_writes
    def set_state(self, sweep_id: int, state: str, *, message: str | None = None,
                  actor: UserView | None = None, detail: str = "") -> SweepView:
        """Move a sweep to `state` (Conflict when `TRANSITIONS` does not allow it); records the
        event, the start (and each restart, `attempts`) and the end."""
        if state not in STATES:
            raise GrokrayError(f"state {state!r}: valid states are {', '.join(STATES)}")
        with self.session() as s, s.begin():
            sw = s.get(Sweep, sweep_id, with_for_update=True)
            if sw is None:
                raise NotFound(f"no sweep {sweep_id}; `grokray queue --all` lists them")
            if state not in TRANSITIONS[sw.state]:
                allowed = [k for k, v in TRANSITIONS.items() if state in v]
                raise Conflict(f"sweep {sweep_id} is {sw.state}; it can become {state} only "
                               f"from {' or '.join(allowed) or 'nowhere'}")
            t = now()
            if state == "running":
                sw.attempts += 1
                if sw.started_at is None:
                    sw.started_at = t
            if state in FINAL:
                sw.ended_at = t
            sw.state = state
            if message is not None:
                sw.message = message
            sw.updated_at = t
            s.add(Event(sweep_id=sweep_id, at=t, kind=state,
                        actor_id=actor.id if actor else None,
                        detail=detail or (message or "")))
            owner = s.scalar(select(User.name).where(User.id == sw.owner_id))
            return _sweep(sw, owner)

    def authorize(self, user: UserView, sweep_id: int) -> SweepView:
        """The sweep, when `user` may act on it (its owner or an admin); else Forbidden."""
        sw = self.get(sweep_id)
        if not user.admin and sw.owner_id != user.id:
            raise Forbidden(f"sweep {sweep_id} is {sw.owner}'s; only its owner or an admin may "
                            "change it")
        return sw

    def hold(self, user: UserView, sweep_id: int) -> SweepView:
        self.authorize(user, sweep_id)
        return self.set_state(sweep_id, "held", actor=user, message=f"held by {user.name}")

    def release(self, user: UserView, sweep_id: int) -> SweepView:
        self.authorize(user, sweep_id)
        return self.set_state(sweep_id, "queued", actor=user,
                              message=f"released by {user.name}")

    def cancel(self, user: UserView, sweep_id: int) -> SweepView:
        """Cancel a sweep (a running one is stopped by the runner, which sees the state)."""
        self.authorize(user, sweep_id)
        return self.set_state(sweep_id, "cancelled", actor=user,
                              message=f"cancelled by {user.name}")

    @_writes
    def set_priority(self, user: UserView, sweep_id: int, priority: int) -> SweepView:
        sw = self.authorize(user, sweep_id)
        if sw.state in FINAL:
            raise Conflict(f"sweep {sweep_id} is {sw.state}; a priority applies to a sweep "
                           f"still in the queue ({', '.join(ACTIVE)})")
        with self.session() as s, s.begin():
            row = s.get(Sweep, sweep_id, with_for_update=True)
            old = row.priority
            row.priority, row.updated_at = priority, now()
            s.add(Event(sweep_id=sweep_id, at=row.updated_at, kind="priority", actor_id=user.id,
                        detail=f"{old} -> {priority}"))
        return self.get(sweep_id)

    @_writes
    def note(self, sweep_id: int, kind: str, detail: str = "", *,
             message: str | None = None) -> None:
        """Record an event (and, given, the sweep's last message) without a state change."""
        with self.session() as s, s.begin():
            t = now()
            s.add(Event(sweep_id=sweep_id, at=t, kind=kind, detail=detail))
            if message is not None:
                s.execute(update(Sweep).where(Sweep.id == sweep_id)
                          .values(message=message, updated_at=t))

    @_writes
    def record_progress(self, sweep_id: int, *, seed_runs_done: int | None = None,
                        seed_runs_reused: int | None = None, message: str | None = None) -> None:
        """The runner's progress: seed-runs with a row, of them reused; its last message."""
        values: dict[str, Any] = {"updated_at": now()}
        if seed_runs_done is not None:
            values["seed_runs_done"] = seed_runs_done
        if seed_runs_reused is not None:
            values["seed_runs_reused"] = seed_runs_reused
        if message is not None:
            values["message"] = message
        with self.session() as s, s.begin():
            s.execute(update(Sweep).where(Sweep.id == sweep_id).values(**values))

    @_writes
    def record_usage(self, sweep_id: int, *, cpu_s: float = 0.0, gpu_s: float = 0.0,
                     at: dt.datetime | None = None) -> None:
        """Seconds a sweep used (added to its totals; a usage row for fair share)."""
        with self.session() as s, s.begin():
            owner = s.scalar(select(Sweep.owner_id).where(Sweep.id == sweep_id))
            if owner is None:
                raise NotFound(f"no sweep {sweep_id}")
            s.add(Usage(user_id=owner, sweep_id=sweep_id, at=at or now(), cpu_s=cpu_s,
                        gpu_s=gpu_s))
            s.execute(update(Sweep).where(Sweep.id == sweep_id).values(
                used_cpu_s=Sweep.used_cpu_s + cpu_s, used_gpu_s=Sweep.used_gpu_s + gpu_s,
                updated_at=now()))

    def usage_by_user(self, since: dt.datetime | None = None) -> dict[str, tuple[float, float]]:
        """user name -> (CPU seconds, GPU seconds) used since `since` (default: ever); every
        user, 0 for those who used nothing."""
        q = select(User.name, func.coalesce(func.sum(Usage.cpu_s), 0.0),
                   func.coalesce(func.sum(Usage.gpu_s), 0.0)).select_from(User)
        cond = Usage.user_id == User.id
        if since is not None:
            cond = cond & (Usage.at >= since)
        q = q.outerjoin(Usage, cond).group_by(User.name)
        with self.session() as s:
            return {name: (float(c), float(g)) for name, c, g in s.execute(q)}

    def committed_seconds(self, user: UserView) -> tuple[float, float]:
        """(CPU s, GPU s) the cost model priced this user's active sweeps at, less what they
        have used of it: what counts against a quota now."""
        q = select(func.coalesce(func.sum(Sweep.estimate_cpu_s - Sweep.used_cpu_s), 0.0),
                   func.coalesce(func.sum(Sweep.estimate_gpu_s - Sweep.used_gpu_s), 0.0)) \
            .where(Sweep.owner_id == user.id, Sweep.state.in_(ACTIVE))
        with self.session() as s:
            c, g = s.execute(q).one()
            return max(0.0, float(c)), max(0.0, float(g))

    def events(self, sweep_id: int) -> list[EventView]:
        with self.session() as s:
            rows = s.execute(select(Event, User.name).outerjoin(User, Event.actor_id == User.id)
                             .where(Event.sweep_id == sweep_id).order_by(Event.id))
            return [EventView(e.id, e.sweep_id, _utc(e.at), e.kind, name, e.detail)
                    for e, name in rows]

    # -------------------------------------------------------------------------- identities

    def add_identities(self, rows: Iterable[dict[str, Any]]) -> int:
        """Index rows (dicts of the `identities` columns: config_hash, seed, sweep_dir, and
        optionally semantics, device_kind, status, sweep_id, owner_id, source_dir, cpu_s,
        gpu_s); a row already indexed at that (config_hash, seed, sweep_dir) is updated.
        Returns how many were new."""
        rows = list(rows)
        new = 0
        with self.session() as s, s.begin():
            have: dict[tuple[str, int, str], Identity] = {}
            hashes = sorted({r["config_hash"] for r in rows})
            dirs = sorted({r["sweep_dir"] for r in rows})
            for i in range(0, len(hashes), 500):  # one query per 500 hashes, not one per row
                q = select(Identity).where(Identity.config_hash.in_(hashes[i:i + 500]))
                if len(dirs) <= 500:
                    q = q.where(Identity.sweep_dir.in_(dirs))
                for r in s.scalars(q):
                    have[(r.config_hash, int(r.seed), r.sweep_dir)] = r
            for r in rows:
                key = (r["config_hash"], int(r["seed"]), r["sweep_dir"])
                row = have.get(key)
                if row is None:
                    row = Identity(**{"semantics": "1", "device_kind": "cpu", "status": "ok",
                                      "cpu_s": 0.0, "gpu_s": 0.0, "created_at": now(), **r})
                    s.add(row)
                    have[key] = row
                    new += 1
                else:
                    for k, v in r.items():
                        setattr(row, k, v)
        return new

    def find_identities(self, keys: Iterable[tuple[str, int]], *, semantics: str | None = None,
                        device_kind: str | None = None,
                        statuses: Iterable[str] = ("ok",)) -> list[IdentityView]:
        """Indexed rows of these (config_hash, seed) identities (of that semantics version and
        device kind, when given), oldest first. One query per 500 hashes (an index lookup,
        never a scan of the store)."""
        wanted = {(h, int(seed)) for h, seed in keys}
        hashes = sorted({h for h, _ in wanted})
        out: list[IdentityView] = []
        with self.session() as s:
            for i in range(0, len(hashes), 500):
                q = select(Identity).where(Identity.config_hash.in_(hashes[i:i + 500]),
                                           Identity.status.in_(tuple(statuses)))
                if semantics is not None:
                    q = q.where(Identity.semantics == semantics)
                if device_kind is not None:
                    q = q.where(Identity.device_kind == device_kind)
                out += [_identity(r) for r in s.scalars(q.order_by(Identity.id))
                        if (r.config_hash, int(r.seed)) in wanted]
        return sorted(out, key=lambda v: v.id)

    def identities_of(self, sweep_id: int) -> list[IdentityView]:
        with self.session() as s:
            return [_identity(r) for r in s.scalars(
                select(Identity).where(Identity.sweep_id == sweep_id).order_by(Identity.id))]

    def count_identities(self) -> int:
        with self.session() as s:
            return int(s.scalar(select(func.count(Identity.id))))

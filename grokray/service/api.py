"""The service's HTTP API (aiohttp): JSON over HTTP, a per-user token on every request
(`Authorization: Bearer TOKEN`), described by the OpenAPI document it serves at
/api/openapi.json (`OPENAPI`, below, is that document).

    POST /api/sweeps?source=FILE&priority=N[&hold=1]   body: the spec's YAML    -> 201 the sweep
    POST /api/sweeps?name=NAME&priority=N[&hold=1]     a shipped spec           -> 201 the sweep
    GET  /api/sweeps[?all=1&state=S&user=U&limit=N]    the queue, in order      -> 200 {"sweeps"}
    GET  /api/sweeps/{id}                              one sweep and its events -> 200
    POST /api/sweeps/{id}/cancel | hold | release                               -> 200 the sweep
    POST /api/sweeps/{id}/priority?priority=N                                   -> 200 the sweep
    GET  /api/whoami, GET /api/health, GET /api/openapi.json

Errors are `{"error": ONE LINE, "type": NAME}`: a bad spec 400 with the line `grokray sweep`
prints, a spec over 1 MiB 413 (nothing is read past the limit into memory), no or a wrong
token 401, another user's sweep 403, an unknown id 404, an action the sweep's state does not
allow 409, the database unreachable 503 (retry). Nothing is stored for a request that fails.

A submission with an `Idempotency-Key` header makes one sweep however often it is sent (a client
that lost the answer sends it again: `grokray submit` does). Database calls and spec checks run
on a bounded thread pool, so a storm of requests queues up and is answered more slowly; the
event loop itself never blocks on them.
"""

from __future__ import annotations

import asyncio
import functools
import json
import threading
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from aiohttp import web

from grokray import __version__
from grokray.errors import GrokrayError, SpecError
from grokray.service import submit as submitting
from grokray.service.state import Conflict, Forbidden, NotFound, State, UserView

__all__ = ["make_app", "OPENAPI", "ROUTES", "Settings", "STATE", "SETTINGS"]

STATE = web.AppKey("state", State)
SETTINGS = web.AppKey("settings", object)
POOL = web.AppKey("pool", ThreadPoolExecutor)
READY = web.AppKey("ready", threading.Event)
LISTINGS = web.AppKey("listings", dict)
"""(states, user, limit) -> (the State's generation, when, the JSON): a listing's bytes, kept
as long as the State keeps its rows (State.LISTING_TTL_S)"""
"""set when the spec checker and the cost model are loaded (`grokray serve` loads them at
start; /api/health says `ready`)"""

DISCARD_LIMIT = 64 << 20
"""a body over the spec limit is read and dropped up to this many bytes (so that the client
gets its 413 rather than a reset connection); past it the connection is closed"""


class Settings:
    """What `grokray serve` was told: the store root, the quota policy, the scheduler's hook."""

    def __init__(self, store: str, *, workers: int = 8, policy: Any = None,  # noqa: ANN401
                 order: Callable[[list], list] | None = None) -> None:
        self.store = store
        self.workers = workers
        self.policy = policy
        """grokray.service.scheduler.Policy (None: its defaults)"""
        self.order = order
        """reorders the queue as the scheduler serves it (a function of the SweepViews in the
        default order; `grokray serve` takes the runner's `queue_order` when it has one; None:
        priority, then submission)"""


def _error(status: int, exc: BaseException | str, kind: str | None = None) -> web.Response:
    line = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if isinstance(exc, SpecError) and len(str(exc).splitlines()) > 1:
        line = str(exc)  # every problem of a spec, one line each (as the CLI prints them)
    return web.json_response({"error": line, "type": kind or type(exc).__name__},
                             status=status)


STATUS = {NotFound: 404, Forbidden: 403, Conflict: 409}


def _db_down(exc: BaseException) -> bool:
    from sqlalchemy.exc import DBAPIError, OperationalError

    return isinstance(exc, OperationalError) or (
        isinstance(exc, DBAPIError) and exc.connection_invalidated)


@web.middleware
async def errors(request: web.Request, handler: Callable[..., Awaitable[web.StreamResponse]],
                 ) -> web.StreamResponse:
    try:
        return await handler(request)
    except web.HTTPException:
        raise
    except GrokrayError as exc:
        return _error(STATUS.get(type(exc), 400), exc)
    except Exception as exc:
        if _db_down(exc):
            return _error(503, "the service's database is not answering; try again",
                          "Unavailable")
        raise


def _state(request: web.Request) -> State:
    return request.app[STATE]


async def _run(request: web.Request, fn: Callable[..., Any], *args: Any, **kw: Any) -> Any:  # noqa: ANN401
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(request.app[POOL], functools.partial(fn, *args, **kw))


async def _user(request: web.Request) -> UserView:
    header = request.headers.get("Authorization", "")
    if not header:
        raise web.HTTPUnauthorized(
            text=json.dumps({"error": "no token: send `Authorization: Bearer TOKEN` (an admin "
                                      "makes one with `grokray users add NAME`)",
                             "type": "Unauthorized"}),
            content_type="application/json")
    token = header[7:].strip() if header[:7].lower() == "bearer " else ""
    user = await _run(request, _state(request).authenticate, token)
    if user is None:
        raise web.HTTPUnauthorized(
            text=json.dumps({"error": "wrong token: it matches no user (`grokray users token "
                                      "NAME` makes a new one)", "type": "Unauthorized"}),
            content_type="application/json")
    return user


def _int(request: web.Request, key: str, default: int | None = None) -> int | None:
    raw = request.query.get(key)
    if raw is None or raw == "":
        return default
    try:
        v = int(raw)
    except ValueError:
        raise GrokrayError(f"{key} {raw[:40]!r}: give a whole number") from None
    if not -10**9 <= v <= 10**9:
        raise GrokrayError(f"{key} {v}: give a number between -1000000000 and 1000000000")
    return v


def _flag(request: web.Request, key: str) -> bool:
    return request.query.get(key, "").lower() in ("1", "true", "yes")


def _sweep_id(request: web.Request) -> int:
    raw = request.match_info["id"]
    try:
        return int(raw)
    except ValueError:
        raise NotFound(f"no sweep {raw[:40]!r}; a sweep id is a number (`grokray queue` shows "
                       "them)") from None


async def _read_spec(request: web.Request, source: str) -> bytes:
    """The body, at most MAX_SPEC_BYTES; 413 with the CLI's line above that."""
    limit = submitting.MAX_SPEC_BYTES
    length = request.content_length
    if length is not None and length > DISCARD_LIMIT:
        raise _too_large(source, close=True)
    chunks, size = [], 0
    while True:
        chunk = await request.content.read(1 << 16)
        if not chunk:
            break
        size += len(chunk)
        if size > limit:
            while size <= DISCARD_LIMIT:  # drop the rest, so the client reads the answer
                more = await request.content.read(1 << 20)
                if not more:
                    raise _too_large(source)
                size += len(more)
            raise _too_large(source, close=True)
        chunks.append(chunk)
    return b"".join(chunks)


def _too_large(source: str, close: bool = False) -> web.HTTPException:
    exc = submitting.too_large(source)
    headers = {"Connection": "close"} if close else None
    return web.HTTPRequestEntityTooLarge(
        max_size=submitting.MAX_SPEC_BYTES, actual_size=0, headers=headers,
        text=json.dumps({"error": str(exc), "type": "SpecError"}),
        content_type="application/json")


# ---------------------------------------------------------------------------------- handlers


async def health(request: web.Request) -> web.Response:
    return web.json_response({"ok": True, "version": __version__,
                              "ready": request.app[READY].is_set()})


async def openapi(request: web.Request) -> web.Response:
    return web.json_response(OPENAPI)


async def whoami(request: web.Request) -> web.Response:
    u = await _user(request)
    return web.json_response({"name": u.name, "admin": u.admin,
                              "quota_cpu_hours": u.quota_cpu_hours,
                              "quota_gpu_hours": u.quota_gpu_hours})


async def submit(request: web.Request) -> web.Response:
    user = await _user(request)
    name = request.query.get("name")
    source = request.query.get("source") or "<spec>"
    priority = _int(request, "priority", 0)
    hold = _flag(request, "hold")
    key = request.headers.get("Idempotency-Key")
    if key is not None and not 0 < len(key) <= 128:
        raise GrokrayError("Idempotency-Key: give 1 to 128 characters")
    if name is not None:
        await request.content.read(1 << 16)  # a shipped name takes no body
        if len(name) > 1024:
            raise SpecError(f"{name[:80]}...: sweep spec not found (a name of "
                            f"{len(name):,} characters)")
        prepared = await _run(request, submitting.prepare, name=name)
    else:
        if len(source) > 1024:
            raise GrokrayError("source: at most 1024 characters (the spec file's name)")
        body = await _read_spec(request, source)
        prepared = await _run(request, submitting.prepare, text=body, source=source)
    settings: Settings = request.app[SETTINGS]
    sweep, made = await _run(request, _store_submission, _state(request), settings, user,
                             prepared, priority, hold, key)
    return web.json_response(sweep.as_json(), status=201 if made else 200)


def _store_submission(st: State, settings: Settings, user: UserView,
                      p: submitting.Prepared, priority: int, hold: bool,
                      key: str | None) -> tuple[Any, bool]:
    """Check the quota (grokray.service.scheduler.check_quota) and store the sweep."""
    from grokray.service import scheduler

    state, message = "held" if hold else "queued", p.note
    quota = scheduler.Quota(user.quota_cpu_hours, user.quota_gpu_hours)
    if quota.cpu_h is not None or quota.gpu_h is not None:
        policy = settings.policy or scheduler.Policy()
        import datetime as dt

        since = dt.datetime.now(dt.timezone.utc) - dt.timedelta(seconds=policy.quota_window_s)
        used = scheduler.Usage(*st.usage_by_user(since).get(user.name, (0.0, 0.0)))
        pending = scheduler.Usage(*st.committed_seconds(user))
        est = scheduler.Usage(p.cpu_s_upper, p.gpu_s_upper) if policy.price == "upper" \
            else scheduler.Usage(p.cpu_s, p.gpu_s)
        verdict, line = scheduler.check_quota(user.name, est, used, pending, quota, policy)
        if verdict == "refuse":
            raise GrokrayError(line)
        if verdict == "hold":
            state, message = "held", line
    return st.submit(
        user, name=p.name, spec_text=p.spec_text, spec_source=p.spec_source,
        sweep_dir=lambda i: submitting.sweep_dir_of(settings.store, user.name, i, p.name),
        priority=priority, state=state, estimate_cpu_s=p.cpu_s, estimate_gpu_s=p.gpu_s,
        estimate_wall_s=p.wall_s, trials_total=p.trials_total,
        seed_runs_total=p.seed_runs_total, message=message, request_key=key)


async def queue(request: web.Request) -> web.Response:
    await _user(request)
    from grokray.service.db import ACTIVE, STATES

    states = request.query.getall("state", None) or (STATES if _flag(request, "all")
                                                       else ACTIVE)
    limit = _int(request, "limit")
    owner = request.query.get("user")
    order = request.app[SETTINGS].order
    st = _state(request)
    key = (tuple(states), owner, limit)
    cache = request.app[LISTINGS]
    gen, hit = st.generation, cache.get(key)
    if hit is not None and hit[0] == gen and time.monotonic() - hit[1] < st.LISTING_TTL_S:
        body = hit[2]
    else:
        def encoded() -> bytes:
            rows = st.list_queue(states=states, owner=owner, limit=limit, order=order)
            return json.dumps({"sweeps": [r.as_json() for r in rows]}).encode()

        body = await _run(request, encoded)
        if len(cache) > 64:
            cache.clear()
        cache[key] = (gen, time.monotonic(), body)
    return web.Response(body=body, content_type="application/json")


async def show(request: web.Request) -> web.Response:
    await _user(request)
    sid = _sweep_id(request)
    st = _state(request)
    sweep = await _run(request, st.get, sid)
    events = await _run(request, st.events, sid)
    out = sweep.as_json()
    out["events"] = [{"at": e.at.isoformat(), "kind": e.kind, "actor": e.actor,
                      "detail": e.detail} for e in events]
    return web.json_response(out)


def _action(name: str) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def handler(request: web.Request) -> web.Response:
        user = await _user(request)
        sid = _sweep_id(request)
        sweep = await _run(request, getattr(_state(request), name), user, sid)
        return web.json_response(sweep.as_json())

    return handler


async def priority(request: web.Request) -> web.Response:
    user = await _user(request)
    sid = _sweep_id(request)
    value = _int(request, "priority")
    if value is None:
        raise GrokrayError("priority: give ?priority=N (a whole number; higher runs first)")
    sweep = await _run(request, _state(request).set_priority, user, sid, value)
    return web.json_response(sweep.as_json())


ROUTES: list[tuple[str, str, Callable[..., Any]]] = [
    ("GET", "/api/health", health),
    ("GET", "/api/openapi.json", openapi),
    ("GET", "/api/whoami", whoami),
    ("POST", "/api/sweeps", submit),
    ("GET", "/api/sweeps", queue),
    ("GET", "/api/sweeps/{id}", show),
    ("POST", "/api/sweeps/{id}/cancel", _action("cancel")),
    ("POST", "/api/sweeps/{id}/hold", _action("hold")),
    ("POST", "/api/sweeps/{id}/release", _action("release")),
    ("POST", "/api/sweeps/{id}/priority", priority),
]


def make_app(state: State, settings: Settings) -> web.Application:
    """The API as an aiohttp application over `state`."""
    app = web.Application(middlewares=[errors],
                          client_max_size=submitting.MAX_SPEC_BYTES + (1 << 16))
    app[STATE] = state
    app[SETTINGS] = settings
    app[READY] = threading.Event()
    app[LISTINGS] = {}
    app[POOL] = ThreadPoolExecutor(max_workers=settings.workers,
                                     thread_name_prefix="grokray-service")

    async def _close_pool(app: web.Application) -> None:
        app[POOL].shutdown(wait=False, cancel_futures=True)

    app.on_cleanup.append(_close_pool)
    for method, path, handler in ROUTES:
        app.router.add_route(method, path, handler)
    from grokray.service import pages  # the queue and accounting pages (and their JSON)

    pages.add_routes(app, STATE)
    return app


# ---------------------------------------------------------------------------------- OpenAPI

_ERR = {"description": "one line naming the problem and what is valid",
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
_SWEEP = {"description": "the sweep",
          "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Sweep"}}}}
_ID = {"name": "id", "in": "path", "required": True, "schema": {"type": "integer"}}
_AUTH = {"401": _ERR}


def _act(summary: str) -> dict:
    return {"post": {"summary": summary, "parameters": [_ID],
                     "responses": {"200": _SWEEP, "403": _ERR, "404": _ERR, "409": _ERR,
                                   **_AUTH}}}


_SWEEP_FIELDS = {
    "id": "integer", "owner": "string", "owner_id": "integer", "name": "string",
    "spec_source": "string", "sweep_dir": "string", "priority": "integer", "state": "string",
    "seq": "integer", "submitted_at": "string", "started_at": "string", "ended_at": "string",
    "estimate_cpu_s": "number", "estimate_gpu_s": "number", "estimate_wall_s": "number",
    "used_cpu_s": "number", "used_gpu_s": "number", "trials_total": "integer",
    "seed_runs_total": "integer", "seed_runs_done": "integer", "seed_runs_reused": "integer",
    "attempts": "integer", "message": "string", "position": "integer"}

OPENAPI: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {"title": "grokray sweep service", "version": __version__,
             "description": "Queue sweeps on a lab's shared cluster (docs/service.md)."},
    "servers": [{"url": "http://127.0.0.1:8750"}],
    "security": [{"token": []}],
    "components": {
        "securitySchemes": {"token": {"type": "http", "scheme": "bearer",
                                      "description": "a user's token (`grokray users add`)"}},
        "schemas": {
            "Error": {"type": "object", "required": ["error", "type"],
                      "properties": {"error": {"type": "string"}, "type": {"type": "string"}}},
            "Sweep": {"type": "object",
                      "properties": {k: {"type": [v, "null"]} if k.endswith("ed_at") and
                                     k != "submitted_at" else {"type": v}
                                     for k, v in _SWEEP_FIELDS.items()}},
        },
    },
    "paths": {
        "/api/health": {"get": {"summary": "the service answers", "security": [],
                                "responses": {"200": {"description": "ok and the version"}}}},
        "/api/openapi.json": {"get": {"summary": "this document", "security": [],
                                      "responses": {"200": {"description": "OpenAPI 3.1"}}}},
        "/api/whoami": {"get": {"summary": "the caller's user", "responses": {
            "200": {"description": "name, admin, quotas"}, **_AUTH}}},
        "/api/sweeps": {
            "post": {
                "summary": "submit a sweep: the spec's YAML as the body (source: its file "
                           "name), or a shipped spec's name and no body",
                "parameters": [
                    {"name": "source", "in": "query", "schema": {"type": "string"}},
                    {"name": "name", "in": "query", "schema": {"type": "string"}},
                    {"name": "priority", "in": "query", "schema": {"type": "integer"}},
                    {"name": "hold", "in": "query", "schema": {"type": "boolean"}},
                    {"name": "Idempotency-Key", "in": "header", "schema": {"type": "string"}}],
                "requestBody": {"content": {"application/yaml": {
                    "schema": {"type": "string", "maxLength": submitting.MAX_SPEC_BYTES}}}},
                "responses": {"201": _SWEEP, "200": {**_SWEEP, "description":
                                                     "the sweep this Idempotency-Key made"},
                              "400": _ERR, "413": _ERR, **_AUTH}},
            "get": {
                "summary": "the queue in the order it is served (all=1: ended sweeps too)",
                "parameters": [
                    {"name": "all", "in": "query", "schema": {"type": "boolean"}},
                    {"name": "state", "in": "query", "schema": {"type": "string"}},
                    {"name": "user", "in": "query", "schema": {"type": "string"}},
                    {"name": "limit", "in": "query", "schema": {"type": "integer"}}],
                "responses": {"200": {"description": "{sweeps: [Sweep]}"}, "400": _ERR,
                              **_AUTH}},
        },
        "/api/accounting": {"get": {
            "summary": "CPU/GPU-hours per user and per sweep, used vs estimated, seed-runs "
                       "reused and the hours they saved (grokray.service.accounting)",
            "responses": {"200": {"description": "the accounting's users and sweeps"},
                          **_AUTH}}},
        "/api/sweeps/{id}": {"get": {"summary": "one sweep and its events",
                                     "parameters": [_ID],
                                     "responses": {"200": _SWEEP, "404": _ERR, **_AUTH}}},
        "/api/sweeps/{id}/cancel": _act("cancel a sweep (its owner or an admin)"),
        "/api/sweeps/{id}/hold": _act("hold a queued sweep (its owner or an admin)"),
        "/api/sweeps/{id}/release": _act("release a held sweep (its owner or an admin)"),
        "/api/sweeps/{id}/priority": {"post": {
            "summary": "set a sweep's priority (its owner or an admin)",
            "parameters": [_ID, {"name": "priority", "in": "query", "required": True,
                                 "schema": {"type": "integer"}}],
            "responses": {"200": _SWEEP, "400": _ERR, "403": _ERR, "404": _ERR, "409": _ERR,
                          **_AUTH}}},
    },
}

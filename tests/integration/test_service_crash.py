"""Crash safety of the service's queue (slow, opt-in: `pytest --runslow -m slow`; .ci/run runs
it): clients submit while `grokray serve` is SIGKILLed and started again, on SQLite and on
PostgreSQL, whose server is SIGKILLed too. After each restart the queue is in the same order;
at the end every submission is stored exactly once (each with its idempotency key), none
acknowledged is lost and none is duplicated."""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from grokray.errors import GrokrayError
from grokray.service.client import Client
from grokray.service.state import State
from tests.helpers.postgres import Server, missing
from tests.helpers.service import Process, queue_spec

pytestmark = pytest.mark.slow

SPEC = queue_spec("crash")
CLIENTS, EACH = 4, 12
ALL = ("queued", "held", "running", "preempted", "done", "failed", "cancelled")


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request, tmp_path):
    if request.param == "sqlite":
        yield str(tmp_path / "service.db"), None
        return
    why = missing()
    if why:
        pytest.skip(why)
    server = Server()
    server.start()
    try:
        yield server.url, server
    finally:
        server.stop()


def _hold(client: Client, sweep_id: int) -> None:
    """Hold a sweep, sent again while the service is down; a hold whose answer the kill lost
    was done: sent again, it finds the sweep held (the one answer that says so)."""
    try:
        client.request("POST", f"/api/sweeps/{sweep_id}/hold", retry_s=240)
    except GrokrayError as exc:
        if f"sweep {sweep_id} is held;" not in str(exc):
            raise


def _order(client: Client) -> list[tuple[int, str]]:
    return [(s["id"], s["state"]) for s in client.queue()]


def test_sigkill_loses_nothing_and_duplicates_nothing(database, tmp_path, request):
    db, pg = database
    st = State.open(db)
    tokens = [st.add_user(f"user{i}")[1] for i in range(CLIENTS)]
    admin = st.add_user("admin", admin=True)[1]
    st.close()
    service = Process(db, str(tmp_path / "store"), str(tmp_path / "serve.log"))
    request.addfinalizer(service.stop)  # a failing test leaves no service behind
    url = service.start()
    acked: dict[str, int] = {}  # idempotency key -> the id the service answered
    sent: list[str] = []
    lock = threading.Lock()
    errors: list[BaseException] = []

    def client(i: int) -> None:
        try:
            c = Client(url, tokens[i], timeout_s=30)
            for j in range(EACH):
                key = uuid.uuid4().hex
                with lock:
                    sent.append(key)
                _, sw = c.request("POST", "/api/sweeps",
                                  query={"source": f"c{i}.yaml", "priority": (i + j) % 3},
                                  body=SPEC.encode(), headers={"Idempotency-Key": key},
                                  retry_s=240)
                with lock:
                    acked[key] = sw["id"]
                # a held one and a cancelled one: the queue holds every state
                if j == 3:
                    _hold(c, sw["id"])
        except BaseException as exc:  # noqa: BLE001 - the test's assertion reports it
            errors.append(exc)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
    for t in threads:
        t.start()
    watcher = Client(url, admin, timeout_s=30)
    total = CLIENTS * EACH
    for at in (total // 5, total // 2, 4 * total // 5):
        while len(acked) < at and not errors:
            time.sleep(0.05)
        before = _order(watcher)
        if pg is not None and at == total // 2:
            pg.kill()  # the database goes: the service answers 503, clients retry
            time.sleep(1.0)
            pg.start()
        service.kill()
        service.start()
        watcher = Client(service.url, admin, timeout_s=30)
        after = _order(watcher)
        # what was queued before is queued after, in the same order (more may have come, and
        # a client may have held one of its sweeps in between: compared on the others)
        same = set(before) & set(after)
        assert len(same) >= len(before) - CLIENTS
        assert [x for x in after if x in same] == [x for x in before if x in same]
    for t in threads:
        t.join(600)
    assert not errors, errors
    st = State.open(db)
    rows = st.list_queue(states=ALL)
    st.close()
    service.stop()
    assert len(acked) == len(sent) == total
    assert sorted(s.id for s in rows) == sorted(acked.values())  # nothing lost, no duplicate
    assert len({s.id for s in rows}) == total
    assert sum(s.state == "held" for s in rows) == CLIENTS

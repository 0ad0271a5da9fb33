"""The service's state API over its database (grokray.service.state), on an SQLite file: the
schema the migrations make equals the models', tokens are stored hashed, the queue's order and
positions, state transitions, permissions, idempotent submission, usage and the identity index.
The same API on PostgreSQL: tests/integration/test_service_postgres.py."""

from __future__ import annotations

import sqlite3

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from grokray.errors import GrokrayError
from grokray.service.db import Base
from grokray.service.state import Conflict, Forbidden, NotFound, State, hash_token


@pytest.fixture()
def st(tmp_path):
    s = State.open(str(tmp_path / "service.db"))
    yield s
    s.close()


def _submit(st, user, name="smoke", priority=0, **kw):
    sw, _ = st.submit(user, name=name, spec_text=f"name: {name}\n", spec_source=name,
                      sweep_dir=lambda i: f"store/{user.name}/{name}-{i}", priority=priority,
                      **kw)
    return sw


def test_migrations_make_the_models_schema_and_run_twice(tmp_path):
    path = str(tmp_path / "service.db")
    for _ in range(2):  # a second start finds the schema at head and changes nothing
        st = State.open(path)
        with st.engine.connect() as c:
            assert compare_metadata(MigrationContext.configure(c), Base.metadata) == []
            assert MigrationContext.configure(c).get_current_revision() == "0001"
        st.close()
    tables = {r[0] for r in sqlite3.connect(path).execute(
        "select name from sqlite_master where type='table'")}
    assert {"users", "sweeps", "identities", "usage", "events", "alembic_version"} <= tables


def test_tokens_are_stored_hashed_and_authenticate(st, tmp_path):
    alice, token = st.add_user("alice", admin=True)
    bob, token_b = st.add_user("bob")
    assert alice.admin and not bob.admin and token != token_b and len(token) >= 40
    assert st.authenticate(token) == alice and st.authenticate(token_b) == bob
    for bad in (None, "", token + "x", token[:-1], "x" * 10_000):
        assert st.authenticate(bad) is None
    stored = sqlite3.connect(str(tmp_path / "service.db")).execute(
        "select name, token_hash from users order by id").fetchall()
    assert stored == [("alice", hash_token(token)), ("bob", hash_token(token_b))]
    assert token not in repr(stored)
    new = st.new_token("bob")
    assert st.authenticate(token_b) is None and st.authenticate(new) == bob
    with pytest.raises(Conflict, match="user alice exists"):
        st.add_user("alice")
    with pytest.raises(GrokrayError, match="user name"):
        st.add_user("robert'); DROP TABLE users;--")
    assert [u.name for u in st.users()] == ["alice", "bob"]


def test_queue_order_positions_and_transitions(st):
    a, _ = st.add_user("alice")
    b, _ = st.add_user("bob")
    s1 = _submit(st, a, "one", 0)
    s2 = _submit(st, b, "two", 5)
    s3 = _submit(st, a, "three", 0)
    s4 = _submit(st, b, "four", 5, state="held")
    assert (s1.seq, s2.seq, s3.seq, s4.seq) == (s1.id, s2.id, s3.id, s4.id)
    assert s3.sweep_dir == f"store/alice/three-{s3.id}"
    q = st.list_queue()
    assert [(v.name, v.state, v.position) for v in q] == [
        ("two", "queued", 1), ("one", "queued", 2), ("three", "queued", 3), ("four", "held", 0)]
    st.set_state(s1.id, "running")
    assert st.get(s1.id).attempts == 1 and st.get(s1.id).started_at is not None
    st.set_state(s1.id, "preempted", detail="for sweep 2")
    st.set_state(s1.id, "running")
    assert [(v.name, v.position) for v in st.list_queue()] == [
        ("one", 0), ("two", 1), ("three", 2), ("four", 0)]
    done = st.set_state(s1.id, "done", message="3/3 seed-runs")
    assert done.ended_at is not None and done.attempts == 2 and done.message == "3/3 seed-runs"
    with pytest.raises(Conflict, match=r"sweep \d+ is done; it can become running only from "
                                       r"queued or preempted"):
        st.set_state(s1.id, "running")
    assert [e.kind for e in st.events(s1.id)] == [
        "submitted", "running", "preempted", "running", "done"]
    assert [v.name for v in st.list_queue(states=["done"])] == ["one"]
    assert st.get(s2.id).position == 1
    with pytest.raises(NotFound, match="no sweep 999"):
        st.get(999)
    with pytest.raises(GrokrayError, match="valid states are queued, held"):
        st.list_queue(states=["bogus"])


def test_owner_or_admin_acts_others_are_forbidden(st):
    root, _ = st.add_user("root", admin=True)
    a, _ = st.add_user("alice")
    b, _ = st.add_user("bob")
    sw = _submit(st, a)
    with pytest.raises(Forbidden, match=f"sweep {sw.id} is alice's; only its owner or an admin"):
        st.cancel(b, sw.id)
    with pytest.raises(Forbidden):
        st.set_priority(b, sw.id, 9)
    assert st.get(sw.id).state == "queued" and st.get(sw.id).priority == 0
    assert st.hold(a, sw.id).state == "held"
    with pytest.raises(Conflict, match="is held; it can become held only from queued or "
                                       "preempted"):
        st.hold(a, sw.id)
    assert st.release(a, sw.id).state == "queued"
    assert st.set_priority(root, sw.id, 7).priority == 7
    assert st.cancel(root, sw.id).state == "cancelled"
    with pytest.raises(Conflict, match="a priority applies to a sweep still in the queue"):
        st.set_priority(a, sw.id, 1)
    ev = st.events(sw.id)
    assert [(e.kind, e.actor) for e in ev] == [
        ("submitted", "alice"), ("held", "alice"), ("queued", "alice"), ("priority", "root"),
        ("cancelled", "root")]
    assert ev[3].detail == "0 -> 7"


def test_request_key_makes_one_sweep(st):
    a, _ = st.add_user("alice")
    first, made = st.submit(a, name="x", spec_text="t", spec_source="x", sweep_dir="d",
                            request_key="k-1")
    again, made2 = st.submit(a, name="x", spec_text="t", spec_source="x", sweep_dir="d",
                             request_key="k-1")
    assert made and not made2 and again == first
    assert len(st.list_queue()) == 1


def test_a_sql_looking_name_is_stored_as_given(st):
    a, _ = st.add_user("alice")
    name = "x'); DROP TABLE sweeps; --"
    sw = _submit(st, a, name)
    assert st.get(sw.id).name == name and st.spec_text(sw.id) == f"name: {name}\n"
    assert [v.name for v in st.list_queue(owner="alice")] == [name]
    assert st.list_queue(owner="alice' OR '1'='1") == []


def test_usage_fair_share_and_committed_seconds(st):
    a, _ = st.add_user("alice")
    b, _ = st.add_user("bob")
    s1 = _submit(st, a, estimate_cpu_s=100.0, estimate_gpu_s=10.0)
    _submit(st, a, "other", estimate_cpu_s=50.0)
    st.record_usage(s1.id, cpu_s=30.0, gpu_s=4.0)
    st.record_usage(s1.id, cpu_s=5.5)
    assert st.usage_by_user() == {"alice": (35.5, 4.0), "bob": (0.0, 0.0)}
    assert st.get(s1.id).used_cpu_s == 35.5 and st.get(s1.id).used_gpu_s == 4.0
    assert st.committed_seconds(a) == (114.5, 6.0)
    assert st.committed_seconds(b) == (0.0, 0.0)
    st.record_progress(s1.id, seed_runs_done=4, seed_runs_reused=3, message="3 reused")
    got = st.get(s1.id)
    assert (got.seed_runs_done, got.seed_runs_reused, got.message) == (4, 3, "3 reused")


def test_identity_index_lookup_by_key_semantics_and_device(st):
    a, _ = st.add_user("alice")
    sw = _submit(st, a)
    rows = [{"config_hash": f"h{i}", "seed": s, "sweep_dir": "store/a/x", "sweep_id": sw.id,
             "owner_id": a.id, "cpu_s": 1.5} for i in range(3) for s in (0, 1)]
    rows.append({"config_hash": "h0", "seed": 0, "sweep_dir": "store/b/y", "semantics": "2"})
    rows.append({"config_hash": "h1", "seed": 0, "sweep_dir": "store/c/z",
                 "device_kind": "cuda:H100", "status": "training"})
    assert st.add_identities(rows) == 8
    assert st.add_identities(rows[:1]) == 0  # the same row again: updated, not added
    assert st.count_identities() == 8
    hits = st.find_identities([("h0", 0), ("h1", 0), ("h9", 0)], semantics="1",
                              device_kind="cpu")
    assert [(h.config_hash, h.seed, h.sweep_dir) for h in hits] == [
        ("h0", 0, "store/a/x"), ("h1", 0, "store/a/x")]
    assert {h.semantics for h in st.find_identities([("h0", 0)])} == {"1", "2"}
    inflight = st.find_identities([("h1", 0)], statuses=("training",))
    assert [(h.device_kind, h.sweep_dir) for h in inflight] == [("cuda:H100", "store/c/z")]
    assert len(st.identities_of(sw.id)) == 6

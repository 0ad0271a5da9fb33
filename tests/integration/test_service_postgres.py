"""The service's state API on PostgreSQL (slow, opt-in: `pytest --runslow -m slow`; .ci/run
runs it where it can install Debian's postgresql): the same tests as on SQLite
(tests/unit/test_service_state.py), each on a fresh database of one throwaway server, and the
migrations there; then the HTTP API's storm over PostgreSQL."""

from __future__ import annotations

import concurrent.futures as cf
import importlib.util
import itertools
import uuid
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import create_engine, text

from grokray.service.db import Base, url_of
from grokray.service.state import State
from tests.helpers.postgres import Server, missing
from tests.helpers.service import call, in_thread

pytestmark = pytest.mark.slow

_spec = importlib.util.spec_from_file_location(
    "service_state_tests", Path(__file__).resolve().parents[1] / "unit" / "test_service_state.py")
_sqlite_tests = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_sqlite_tests)
# the SQLite module's tests, run here with this module's `st` (a PostgreSQL database)
test_a_sql_looking_name_is_stored_as_given = \
    _sqlite_tests.test_a_sql_looking_name_is_stored_as_given
test_identity_index_lookup_by_key_semantics_and_device = \
    _sqlite_tests.test_identity_index_lookup_by_key_semantics_and_device
test_owner_or_admin_acts_others_are_forbidden = \
    _sqlite_tests.test_owner_or_admin_acts_others_are_forbidden
test_queue_order_positions_and_transitions = \
    _sqlite_tests.test_queue_order_positions_and_transitions
test_request_key_makes_one_sweep = _sqlite_tests.test_request_key_makes_one_sweep
test_usage_fair_share_and_committed_seconds = \
    _sqlite_tests.test_usage_fair_share_and_committed_seconds

_n = itertools.count()


@pytest.fixture(scope="module")
def server():
    why = missing()
    if why:
        pytest.skip(why)
    s = Server()
    s.start()
    yield s
    s.stop()


def _fresh(server: Server) -> str:
    name = f"t{next(_n)}"
    eng = create_engine(url_of(server.url), isolation_level="AUTOCOMMIT")
    with eng.connect() as c:
        c.execute(text(f"CREATE DATABASE {name}"))
    eng.dispose()
    return server.url.rsplit("/", 1)[0] + "/" + name


@pytest.fixture()
def st(server):
    s = State.open(_fresh(server))
    yield s
    s.close()


def test_migrations_make_the_models_schema_on_postgresql(server):
    url = _fresh(server)
    for _ in range(2):
        s = State.open(url)
        with s.engine.connect() as c:
            assert compare_metadata(MigrationContext.configure(c), Base.metadata) == []
            assert MigrationContext.configure(c).get_current_revision() == "0001"
        s.close()


def test_tokens_authenticate_on_postgresql(st):
    alice, token = st.add_user("alice", admin=True)
    assert st.authenticate(token) == alice and st.authenticate(token + "x") is None
    with st.engine.connect() as c:
        stored = c.execute(text("select token_hash from users")).scalar()
    assert stored != token and len(stored) == 64


def test_a_storm_over_postgresql_loses_nothing(server, tmp_path):
    with in_thread(_fresh(server), str(tmp_path / "store")) as (url, st):
        _, token = st.add_user("alice")
        spec = b"name: storm\nconfig: {group: Z5, arch: mlp}\nseeds: 1\nsteps: 20\n" \
               b"eval_every: 10\n"
        keys = [uuid.uuid4().hex for _ in range(64)]

        def one(i: int) -> int:
            s, sw = call(f"{url}/api/sweeps?source=s.yaml", "POST", token, spec,
                         {"Idempotency-Key": keys[i % 48]}, timeout=120)
            assert s in (200, 201)
            assert call(f"{url}/api/sweeps", token=token, timeout=120)[0] == 200
            return sw["id"]

        with cf.ThreadPoolExecutor(16) as pool:
            ids = list(pool.map(one, range(64)))
        assert len(set(ids)) == 48  # 16 keys sent twice: one sweep each
        assert len(st.list_queue()) == 48

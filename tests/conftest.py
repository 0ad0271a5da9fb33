import sys

import pytest


@pytest.fixture(scope="session")
def tiny():
    """tests/fixtures/tiny.py: writes the tiny synthetic sweeps in the Parquet schema."""
    from tests.fixtures import tiny

    return tiny


@pytest.fixture(scope="session")
def sweepdir():
    """tests/fixtures/sweepdir.py: a synthetic sweep dir written through the real store."""
    from tests.fixtures import sweepdir

    return sweepdir


@pytest.fixture(scope="session")
def dashboard_proc():
    """tests/fixtures/dashboard.py: start and stop `grokray dashboard` as a process."""
    from tests.fixtures import dashboard

    return dashboard


def pytest_addoption(parser):
    parser.addoption(
        "--runslow", action="store_true", default=False, help="run slow acceptance tests"
    )


def pytest_collection_modifyitems(config, items):
    if config.getoption("--runslow"):
        return
    skip_slow = pytest.mark.skip(reason="slow acceptance test: run with --runslow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip_slow)


# The `ray` marker: every test that starts Ray carries it, so that a quick loop can run
# `python -m pytest -q -m "not ray"`. A Ray started in this process (ray.init without an
# address, a ray.cluster_utils.Cluster, `grokray sweep` run through grokray.cli.main) spawns
# its gcs_server from here, and `ray start` is a command run from here: an audit hook sees
# either, and the test that did it without the marker fails, naming the marker. (Ray started
# inside a child process, e.g. `python -m grokray.cli sweep` as a subprocess, is not seen: such
# tests carry the marker by hand.)
_current: dict = {"item": None, "started": set()}


def _ray_start_audit(event: str, args) -> None:
    if event != "subprocess.Popen" or _current["item"] is None:
        return
    cmd = args[1] if len(args) > 1 else None
    words = [str(w) for w in cmd] if isinstance(cmd, (list, tuple)) else [str(cmd or "")]
    words.append(str(args[0] or ""))
    if any(w.endswith("gcs_server") for w in words) or (
            len(words) > 1 and words[0].endswith("ray") and words[1] == "start"):
        _current["started"].add(_current["item"].nodeid)


sys.addaudithook(_ray_start_audit)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    _current["item"] = item
    yield
    _current["item"] = None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if (call.when == "teardown" and item.nodeid in _current["started"]
            and item.get_closest_marker("ray") is None and not rep.failed):
        rep.outcome = "failed"
        rep.longrepr = (f"{item.nodeid} starts Ray without the `ray` marker: add "
                        "`@pytest.mark.ray` (or `pytestmark = pytest.mark.ray` for the module), "
                        "so that `-m \"not ray\"` leaves it out")

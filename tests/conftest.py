import importlib.util
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _fixture_module(name: str, file: str):
    spec = importlib.util.spec_from_file_location(name, FIXTURES / file)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="session")
def tiny():
    """tests/fixtures/tiny.py: writes the tiny synthetic sweeps in the Parquet schema."""
    return _fixture_module("grokray_tiny_fixture", "tiny.py")


@pytest.fixture(scope="session")
def sweepdir():
    """tests/fixtures/sweepdir.py: a synthetic sweep dir written through the real store."""
    return _fixture_module("grokray_sweepdir_fixture", "sweepdir.py")


@pytest.fixture(scope="session")
def dashboard_proc():
    """tests/fixtures/dashboard.py: start and stop `grokray dashboard` as a process."""
    return _fixture_module("grokray_dashboard_fixture", "dashboard.py")


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

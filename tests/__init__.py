"""grokray's tests. A package so that the shared test helpers import by one name from any test
file (`from tests.helpers import ...`); pyproject.toml puts the repository root on pytest's
sys.path (`pythonpath`), for `python -m pytest` and `pytest` alike, from anywhere."""

"""The sweep service (`grokray serve`): one long-running process beside a Ray cluster that
queues every researcher's sweeps, keeps its state in a database (`db`: SQLite by default,
PostgreSQL for a lab; `state`: the Python API over it) and answers an HTTP API (`api`) that the
CLI's client verbs (`grokray submit`, `queue`, `show`, `cancel`, ...) call through `client`.
docs/service.md describes it.

Nothing here is imported by `grokray --help`: the commands import it inside their `main`.
"""

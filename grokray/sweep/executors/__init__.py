"""What runs a sweep's trials (imports nothing: `factory.make_executor` picks an executor, and
the interface, `base.py`, knows none of them).

    base.py      the `Executor` interface and the `Sink` it reports to
    factory.py   `make_executor`: which of the three runs a sweep
    local.py     in this process, without Ray (--local, tests)
    warm.py      a grid on the session's warm workers (embedded local Ray)
    tune.py      a search, or any sweep on a joined cluster, on Ray Tune
    calls.py     the worker call (what one Ray worker runs at a time): which configs share one,
                 in which order they go, and how a worker runs one
    packing.py   how many configs go in one pack and which: decided here alone
    retry.py     a lost worker: the test, the policy, and the one retry loop (`CallQueue`)
"""

"""What a trial or a sweep costs before it runs: a per-step CPU time model by family and shape,
calibrated by `benchmarks/calibrate_cost.py` and stored as data (`table.json`), scaled to this
host by its 1-thread sgemm rate; GPU figures from FLOP counts at a nominal rate (uncalibrated).

    work.py    multiply-adds of one training step per seed, from the config alone
    table.py   the stored calibration (coefficients, reference host, command, date)
    host.py    this host's 1-thread sgemm rate, measured once and cached
    model.py   CPU (and nominal GPU) seconds of one trial for given steps per seed
    steps.py   steps per seed: the budget, the rows of earlier runs, or the stated prior
    sweep.py   a plan's cost: upper bound, expected, wall time on the sweep's slots
"""

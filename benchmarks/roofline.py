"""The GEMM roofline of a training run: how fast could its matmuls alone go on this machine?

    with GemmCounter() as gc:          # every mm / bmm / addmm / baddbmm / addbmm, backward too
        run()
    rates = sgemm_rates(gc.shapes)     # FLOP/s of a plain bmm at each of those shapes, now
    t_gemm = gemm_seconds(gc.shapes, rates)   # the run's matmuls at those rates, nothing else

The roofline fraction of a run that took `wall` seconds is t_gemm / wall: 1.0 would mean the
run is nothing but its GEMMs, each running as fast as the same GEMM alone (the rest of the step,
elementwise passes, the optimizer, Python, costs nothing). The achieved GEMM rate is
flops / wall; the machine's rate at the run's own shapes is flops / t_gemm.
"""

from __future__ import annotations

import time
from collections import Counter

import torch
from torch.utils._python_dispatch import TorchDispatchMode

_GEMMS = {"mm", "bmm", "addmm", "baddbmm", "addbmm"}
Shape = tuple[int, int, int, int]  # (batch, m, k, n): batch x [m, k] @ [k, n]


def _shape(name: str, args: tuple) -> Shape:
    if name in ("mm", "bmm"):
        x, y = args[0], args[1]
    else:  # addmm / baddbmm / addbmm (input, x, y)
        x, y = args[1], args[2]
    if x.dim() == 2:
        return (1, x.shape[0], x.shape[1], y.shape[1])
    return (x.shape[0], x.shape[1], x.shape[2], y.shape[2])


class GemmCounter(TorchDispatchMode):
    """Counts the matmuls run under it, by shape (forward and autograd backward alike)."""

    def __init__(self) -> None:
        super().__init__()
        self.shapes: Counter[Shape] = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: D105
        name = func.overloadpacket.__name__.rstrip("_")  # baddbmm_ and the like too
        if name in _GEMMS:
            self.shapes[_shape(name, args)] += 1
        return func(*args, **(kwargs or {}))

    @property
    def flops(self) -> float:
        return sum(2.0 * b * m * k * n * c for (b, m, k, n), c in self.shapes.items())


CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}
"""`cpu`: this process's CPU seconds (on a shared, loaded machine the wall clock also counts the
time the process waits for a core; with one torch thread CPU seconds do not)"""
clock = CLOCKS["wall"]
"""the clock every timing here uses (bench_train.py --clock sets it)"""


def _time_bmm(shape: Shape, device: str, min_s: float = 0.02) -> float:
    """Seconds per call of a plain bmm at `shape` (output reused), best of 3 timed loops, on
    `clock`."""
    b, m, k, n = shape
    x = torch.randn(b, m, k, device=device)
    y = torch.randn(b, k, n, device=device)
    out = torch.empty(b, m, n, device=device)
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    torch.bmm(x, y, out=out)
    sync()
    reps = 1
    while True:  # calibrate to about min_s per timed loop
        t0 = clock()
        for _ in range(reps):
            torch.bmm(x, y, out=out)
        sync()
        dt = clock() - t0
        if dt >= min_s or reps >= 1 << 16:
            break
        reps *= 2
    best = dt / reps
    for _ in range(2):
        t0 = clock()
        for _ in range(reps):
            torch.bmm(x, y, out=out)
        sync()
        best = min(best, (clock() - t0) / reps)
    return best


def sgemm_rates(shapes, device: str = "cpu", cache: dict | None = None) -> dict[Shape, float]:
    """FLOP/s of a plain float32 bmm at each shape, measured now (cached across calls)."""
    cache = {} if cache is None else cache
    for s in shapes:
        if s not in cache:
            b, m, k, n = s
            cache[s] = 2.0 * b * m * k * n / _time_bmm(s, device)
    return {s: cache[s] for s in shapes}


def gemm_seconds(shapes: Counter, rates: dict[Shape, float]) -> float:
    """Seconds the counted matmuls take at the measured rates."""
    return sum(2.0 * b * m * k * n * c / rates[(b, m, k, n)]
               for (b, m, k, n), c in shapes.items())


def cube_rate(device: str = "cpu", n: int = 1024) -> float:
    """FLOP/s of an n-cube sgemm: the machine's large-GEMM rate, for reference."""
    return sgemm_rates([(1, n, n, n)], device)[(1, n, n, n)]

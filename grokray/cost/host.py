"""This host's 1-thread float32 GEMM rate at the matched MLP's Z97 shape: the speed the stored
CPU calibration is scaled by (hosts here differ about 3x). Measured once (about 0.3 CPU s) and
cached per host in $GROKRAY_CACHE/host/ (default ~/.cache/grokray); $GROKRAY_HOST_GFLOPS sets
it."""

from __future__ import annotations

import json
import os
import platform
import tempfile
import time
from pathlib import Path

from grokray.threads import torch_threads

SHAPE = (4704, 158, 97)
"""[M, K] x [K, N]: the matched MLP's output GEMM at Z97 (train 0.5: 4,704 pairs, h 158)"""


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def host_key() -> str:
    """What the cached rate belongs to: node name, CPU model, torch version."""
    import torch

    return f"{platform.node()}|{_cpu_name()}|torch {torch.__version__}"


def measure_gflops(min_s: float = 0.02, loops: int = 12) -> float:
    """GFLOP/s of a plain [M, K] x [K, N] sgemm at one torch thread, best of `loops` timed loops
    of about `min_s` process CPU seconds each (CPU seconds: waiting for a busy core is not
    counted; a core shared with a busy sibling thread still is, so the best loop counts)."""
    import torch

    with torch_threads(1):
        M, K, N = SHAPE
        g = torch.Generator().manual_seed(0)
        x, y = torch.randn(M, K, generator=g), torch.randn(K, N, generator=g)
        out = torch.empty(M, N)
        torch.mm(x, y, out=out)
        reps, best = 1, float("inf")
        while True:
            t0 = time.process_time()
            for _ in range(reps):
                torch.mm(x, y, out=out)
            dt = time.process_time() - t0
            if dt >= min_s or reps >= 1 << 12:
                break
            reps *= 2
        for _ in range(loops):
            t0 = time.process_time()
            for _ in range(reps):
                torch.mm(x, y, out=out)
            best = min(best, (time.process_time() - t0) / reps)
        return 2.0 * M * K * N / max(best, 1e-9) / 1e9


def _cache_file() -> Path | None:
    from grokray.groups._cache import cache_root

    root = cache_root()  # $GROKRAY_CACHE/groups/vN, None when caching is off
    return None if root is None else root.parent.parent / "host" / "sgemm.json"


def host_gflops(refresh: bool = False) -> tuple[float, str]:
    """(GFLOP/s, where it came from: 'env', 'cached <date>' or 'measured now'). `refresh`
    measures again and keeps the higher rate: on a shared machine a busy sibling core slows a
    measurement, never speeds it, and the table's rate is its host's best too."""
    raw = os.environ.get("GROKRAY_HOST_GFLOPS", "").strip()
    if raw:
        try:
            return float(raw), "env GROKRAY_HOST_GFLOPS"
        except ValueError:
            pass
    path, key = _cache_file(), host_key()
    best = 0.0
    if path is not None and path.exists():
        try:
            rec = json.loads(path.read_text())
            if rec.get("key") == key:
                if not refresh:
                    return float(rec["gflops"]), f"cached {rec.get('date', '?')}"
                best = float(rec["gflops"])
        except (OSError, ValueError, KeyError, TypeError):
            pass
    rate = round(max(measure_gflops(), best), 2)  # the rate the cache gives back next time
    if path is not None:
        _write(path, {"key": key, "gflops": rate,
                      "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
    return rate, "measured now"


def _write(path: Path, rec: dict) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".sgemm.")
        with os.fdopen(fd, "w") as f:
            json.dump(rec, f)
        os.replace(tmp, path)
    except OSError:
        pass  # an unwritable cache only costs a measurement next time

"""How many torch intra-op threads a trial trains on: `trial_threads(cpu)`, the one rule, and
`torch_threads(n)`, which sets them around a block and restores the caller's count after.

A trial trains on as many threads as its `resources.cpu`, rounded down, at least 1 (`cpu: 0.5`
and `cpu: 1` give 1, `cpu: 2.5` gives 2): what Ray gives a worker as OMP_NUM_THREADS when the
variable is unset. Every executor (in process, warm workers, Ray Tune) applies it to every call
(`grokray.sweep.executors.calls.run_call`), so a trial's numbers do not depend on which of them
ran it: float64 sums taken in another order differ in their last bits, and training grows that.
The count is a runtime setting, not part of a trial's config or its identity (config_hash).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator


def trial_threads(cpu: float) -> int:
    """Torch intra-op threads for a trial holding `cpu` CPUs: floor(cpu), at least 1."""
    return max(1, math.floor(cpu))


@contextlib.contextmanager
def torch_threads(n: int) -> Iterator[None]:
    """torch runs on `n` intra-op threads inside the block; the caller's count is restored after
    (a driver running trials in process, or a warm worker serving many, keeps its own)."""
    import torch  # lazy: callers such as `grokray run` keep torch out of `--help`

    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)

"""When a trial evaluates: `EvalSchedule(cfg)`, the steps of `eval_schedule` fixed or log.

fixed: step 0, every `eval_every` steps, and the last step (`steps`). log: step 0, the steps
round(10^(k / evals_per_decade)) for k = 0, 1, ... up to `steps` (duplicates once: 1, 2, 3, ...
early, then consecutive evals a factor 10^(1/evals_per_decade) apart), and the last step; the
grok step is then known to a fixed relative resolution at every scale, as in openai/grok. The
eval at step t is taken after t optimizer steps; `patience` and `costly_every` count evals.
"""

from __future__ import annotations

from typing import Any


class EvalSchedule:
    """The eval steps of one config (`step in schedule`; `steps()` lists them)."""

    def __init__(self, cfg: Any) -> None:
        self.total = int(cfg.steps)
        self.kind = cfg.eval_schedule
        self.every = int(cfg.eval_every)
        self._log = log_steps(self.total, cfg.evals_per_decade) if self.kind == "log" else None

    def __contains__(self, step: int) -> bool:
        if self._log is not None:
            return step in self._log
        return step % self.every == 0 or step == self.total

    def steps(self) -> list[int]:
        """Every eval step, ascending."""
        if self._log is not None:
            return sorted(self._log)
        return sorted({*range(0, self.total + 1, self.every), self.total})


def log_steps(total: int, per_decade: int) -> frozenset[int]:
    """{0, total} and every round(10^(k / per_decade)) <= total."""
    out = {0, total}
    k = 0
    while (t := round(10 ** (k / per_decade))) <= total:
        out.add(t)
        k += 1
    return frozenset(out)

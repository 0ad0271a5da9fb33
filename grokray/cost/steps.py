"""Steps each seed of a config will run: the budget (upper bound), the steps its rows ran in an
earlier run of the same config, or a stated prior (a share of the budget, then patience)."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import pandas as pd

PRIOR = {"forge": 0.06, "mlp": 0.5, "transformer": 0.4, "rfm": 1.0, "hamiltonian": 1.0}
"""share of the budget before a seed groks when no row says; then `patience` evals more. From
the CPU ledger's grok steps (docs/reproduction.md): FORGE 3-33% of its budgets (median 6-8%); the
matched MLP 23% on Z97 and censored (100%) on A5, S3 .. S5, so 0.5 is within 2x of both; the
transformer 17-63%, its S5 control censored; RFM and the Hamiltonian trials never stop early. A
family not listed: 1.0; FORGE below its group's faithful bound (`below_faithful`): 1.0."""


def budget(cfg: Any) -> int:  # noqa: ANN401 - TrialConfig
    """Steps a seed runs at most (RFM: its iterations)."""
    return int(cfg.rfm.iters) if cfg.arch == "rfm" else int(cfg.steps)


def prior_steps(cfg: Any) -> int:  # noqa: ANN401
    """The prior's steps per seed: its share of the budget, then `patience` evals (the budget
    when nothing stops a seed early: patience 0)."""
    b = budget(cfg)
    if cfg.metrics.patience == 0 or below_faithful(cfg):
        return b
    share = PRIOR.get(cfg.arch, 1.0)
    return min(b, round(share * b) + cfg.metrics.patience * cfg.eval_every)


def below_faithful(cfg: Any) -> bool:  # noqa: ANN401
    """FORGE with a rank or d set below what its group's smallest faithful real Wedderburn sum
    needs (grokray/cprank/faithful.py) cannot multiply exactly: expect it to run its budget (the
    capacity grids). An `auto` shape is above the bound by construction."""
    if cfg.arch != "forge" or cfg.op not in ("group", "add") or \
            not {"model.rank", "model.d"} - set(cfg.auto_fields):
        return False
    need = _faithful(cfg.group)
    return need is not None and (cfg.model.rank < need[0] or cfg.model.d < need[1])


@lru_cache(maxsize=256)
def _faithful(group: str) -> tuple[int, int] | None:
    from grokray.cprank.faithful import smallest_faithful
    from grokray.groups import get_group

    b = smallest_faithful(get_group(group))
    return None if b is None else (int(b["rank"]), int(b["dim"]))


def rows_steps(trials: pd.DataFrame) -> dict[str, dict[int, int]]:
    """config_hash -> {seed: steps_run} of the finished (not failed) rows."""
    if trials is None or not len(trials) or "steps_run" not in trials:
        return {}
    ok = trials[(trials["status"] != "failed") & trials["steps_run"].notna()]
    out: dict[str, dict[int, int]] = {}
    for h, s, r in zip(ok["config_hash"], ok["seed"], ok["steps_run"], strict=True):
        out.setdefault(str(h), {})[int(s)] = int(r)
    return out


def expected_steps(cfg: Any, rows: dict[int, int] | None) -> tuple[list[int], bool]:  # noqa: ANN401
    """Steps per seed of `cfg` (its seed order) and whether rows gave them: a seed's own row,
    else the mean over the config's other seeds' rows, else the prior."""
    b = budget(cfg)
    if rows:
        mean = round(sum(rows.values()) / len(rows))
        return [min(b, rows.get(s, mean)) for s in cfg.seeds], True
    return [prior_steps(cfg)] * len(cfg.seeds), False

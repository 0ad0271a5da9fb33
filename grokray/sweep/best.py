"""The best config of an Optuna search, read back from its rows (every run of the sweep, so a
resumed search counts what earlier runs found): its searched values, its objective and how the
seeds that did not grok within the budget (censored) entered it. `grokray sweep` prints it when
a search ends.

The objective is `outcome.trial_summary`'s, the one the sampler optimized: a failed seed is left
out; a censored seed counts as the step budget in `grok_step` (so the mean is a lower bound of
the config's true mean time to grok), as not grokked in `grok_rate`, and with its final values
in `final_val_acc` / `final_val_loss`.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from grokray.config import TrialConfig, get_key
from grokray.sweep import store
from grokray.sweep.outcome import trial_summary

CENSORED = {
    "grok_step": "counted at the step budget {steps:,} (the mean is a lower bound)",
    "grok_rate": "counted as not grokked",
    "final_val_acc": "counted with their final values",
    "final_val_loss": "counted with their final values",
}
"""how a search metric counts a seed that did not grok within the budget"""


@dataclass(frozen=True)
class Best:
    """A search's best config."""

    values: dict[str, Any]
    """searched key -> its value"""
    metric: str
    mode: str
    objective: float
    config_hash: str
    seeds: int
    """seeds the objective is over (failed ones left out)"""
    grokked: int
    censored: int
    """seeds that ran to the budget without grokking"""
    diverged: int
    """seeds stopped as diverged (counted as not grokked, like the censored ones)"""
    steps: int
    """the step budget"""
    configs: int
    """configs the search has rows for (with an objective)"""

    def line(self) -> str:
        vals = ", ".join(f"{k}={_fmt(v)}" for k, v in self.values.items())
        how = CENSORED[self.metric].format(steps=self.steps)
        div = f", {self.diverged} diverged" if self.diverged else ""
        return (f"best of {self.configs} searched configs by {self.metric} ({self.mode}): {vals} "
                f"-> {self.metric} {_fmt(self.objective)} over {self.seeds} seeds ({self.grokked} "
                f"grokked, {self.censored} censored{div}; censored seeds {how}); config "
                f"{self.config_hash}")


def best_config(trials: Any, search: Any) -> Best | None:  # noqa: ANN401 - DataFrame, SearchSpec
    """The best config by `search.metric` / `search.mode` among `trials` (a sweep's trials
    table); None when no config has an objective (every seed failed, or no rows)."""
    if trials is None or not len(trials):
        return None
    scored = []
    for h, grp in trials.groupby("config_hash", sort=True):
        cfg = TrialConfig.from_dict(json.loads(grp["config_json"].iloc[0]))
        rows = grp.to_dict("records")
        value = trial_summary(rows, cfg.steps)[search.metric]
        if not math.isnan(value):
            scored.append((value, str(h), cfg, rows))
    if not scored:
        return None
    sign = -1.0 if search.mode == "max" else 1.0
    value, h, cfg, rows = min(scored, key=lambda s: (sign * s[0], s[1]))
    ok = [r for r in rows if r.get("status") != "failed"]
    grokked = sum(r.get("status") == "grokked" for r in ok)
    return Best(values={k: get_key(cfg, k) for k in search.space}, metric=search.metric,
                mode=search.mode, objective=value, config_hash=h, seeds=len(ok),
                grokked=grokked, censored=sum(r.get("status") == "not_grokked" for r in ok),
                diverged=sum(r.get("status") == "diverged" for r in ok), steps=cfg.steps,
                configs=len(scored))


def best_line(sweep_dir: str, spec: Any) -> str:  # noqa: ANN401 - SweepSpec
    """The line `grokray sweep` prints when a search ends."""
    trials = store.read_trials(sweep_dir)
    if "sweep" in trials:
        trials = trials[trials["sweep"] == spec.name]
    best = best_config(trials, spec.search)
    if best is None:
        return f"search {spec.name}: no config has a {spec.search.metric} (every seed failed)"
    return f"search {spec.name}: {best.line()}"


def _fmt(v: Any) -> str:  # noqa: ANN401
    if isinstance(v, float):
        return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.4g}"
    return str(v)

"""Continue a censored run, the driver's half: a sweep run again with a larger `steps` picks up
the seeds that ran out of budget at the smaller one from their end snapshots, instead of training
them from step 0.

The plan (`plan`) pairs each config still to run with the rows of the same config at a smaller
budget (the same canonical config but `steps`; the largest such budget), and sets the config's
`continued_from` section (grokray.config.ContinuedFromConfig): where those rows are, and which
of its seeds are copied. A seed that ended at the smaller budget (`not_grokked`, or grokked but
not yet held for `patience` evals) continues from its end snapshot (parameters, optimizer
moments, Grokfast filter state, the sampling stream: grokray.optim.state,
`MiniBatches.state`); a seed that grokked and
held before that budget stopped where it would stop at any larger one, so its rows are copied
under the new identity without training. A continued or copied row records `continued_from` (the
old config_hash) and `continued_from_step` (the step training picked up from; for a copied row,
its `steps_run`: nothing was trained).

A continuation is refused, and the config trains from step 0, when the two budgets would not give
the same run (`refusal`): a family not trained by the gradient trainer, a schedule that depends
on `steps` (an lr schedule other than constant, a lambda_alg schedule scaled by the steps)
differs before the old budget, the old budget is not an eval step of the new schedule
(`eval_every` does not divide it; a log schedule), or a seed has no row to continue (failed,
diverged, missing) or no training state (snapshots off). A refused continuation is one line per
reason on the sweep's stderr.

The worker's half, reading the old rows back, is grokray.trainer.pickup.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from grokray import reader
from grokray.config import TrialConfig
from grokray.evals import EvalSchedule
from grokray.families import get_family
from grokray.optim.schedules import lambda_alg, lr_at
from grokray.snapshots import STATE
from grokray.sweep.store import SNAPSHOTS, TRIALS, current_identity


def budget_key(cfg: TrialConfig) -> str:
    """The canonical config without its `steps`: two configs with equal keys differ only in
    their budget."""
    d = cfg.canonical()
    d.pop("steps", None)
    return json.dumps(d, sort_keys=True, default=str)


def refusal(old: TrialConfig, new: TrialConfig) -> str | None:
    """Why `new` cannot continue from `old`'s end (None: it can): the runs would differ."""
    o, n = old.steps, new.steps
    fam = get_family(new.arch)
    if fam.train != "gradient":
        return f"arch {new.arch} is not trained by the gradient trainer"
    if new.optim.lr_schedule != "constant" and any(
            lr_at(t, new.optim, o) != lr_at(t, new.optim, n) for t in range(o)):
        return (f"optim.lr_schedule {new.optim.lr_schedule} depends on steps (the lr differs "
                f"before step {o} at {o} and {n} steps)")
    f = getattr(new, "forge", None)
    if new.arch == "forge" and f is not None and f.lambda_schedule not in ("constant", "off") \
            and any(lambda_alg(t, f, o) != lambda_alg(t, f, n) for t in range(o)):
        return (f"forge.lambda_schedule {f.lambda_schedule} is scaled by steps (lambda_alg "
                f"differs before step {o} at {o} and {n} steps; forge.lambda_steps sets a "
                f"decay independent of the budget)")
    before = EvalSchedule(old).steps()
    after = [t for t in EvalSchedule(new).steps() if t <= o]
    if before != after:
        how = f"eval_every {new.eval_every} does not divide {o}" if new.eval_schedule == "fixed" \
            else f"eval_schedule log: step {o} is not an eval step at {n} steps"
        return f"the evals differ ({how})"
    return None


def steps_to_train(cfg: TrialConfig) -> int:
    """Seed-steps `cfg` trains at most: its budget for each seed, less where it continues
    from; nothing for a copied seed."""
    r = cfg.continued_from
    if not r.config_hash:
        return len(cfg.seeds) * cfg.steps
    return (len(cfg.seeds) - len(r.copied)) * (cfg.steps - r.step)


@dataclass
class Continuations:
    """What `plan` made of the configs still to run."""

    todo: list[TrialConfig]
    """the configs, those that continue with their `continued_from` section set"""
    continued: int = 0
    """seeds that continue from an end snapshot"""
    copied: int = 0
    """seeds whose rows are copied (grokked and held before the smaller budget)"""
    steps_saved: int = 0
    """seed-steps not trained again"""
    refused: Counter = field(default_factory=Counter)
    """reason -> seeds that train from step 0 instead"""

    def lines(self) -> list[str]:
        """One line per refusal reason, then what continues (empty when nothing does)."""
        out = [f"not continued, training from step 0 ({k} seed-run(s)): {why}"
               for why, k in sorted(self.refused.items())]
        if self.continued or self.copied:
            out.append(f"continuing {self.continued} censored seed-run(s) from their end "
                       f"snapshots, {self.copied} finished one(s) copied: "
                       f"{self.steps_saved:,} seed-steps not trained again")
        return out


@dataclass
class _Old:
    cfg: TrialConfig
    hash: str
    rows: dict[int, dict[str, Any]]
    """seed -> its trials row (status, steps_run, file)"""


def plan(configs: list[TrialConfig], sweep_dir: str) -> Continuations:
    """Set the `continued_from` section of each config in `configs` (each with the seeds still
    to run) that can continue from rows of a smaller budget in `sweep_dir`; reads only."""
    out = Continuations(todo=list(configs))
    if not configs:
        return out
    loc = reader.Location.of(sweep_dir)
    cols = ["config_hash", "seed", "status", "steps", "steps_run", "schema_version"]
    t = reader.read_dir(loc, TRIALS, columns=cols, required=("config_hash", "seed", "status"))
    df = t.frame
    if not len(df) or not {"steps", "steps_run"} <= set(df.columns):
        return out
    df = df[df["steps"] < max(c.steps for c in configs)]  # a resumed sweep reads no config
    if not len(df):
        return out
    cj = reader.read_dir(loc, TRIALS, columns=["config_hash", "config_json"],  # those rows'
                         required=("config_hash",),
                         where={"config_hash": sorted(set(df["config_hash"]))}).frame
    if "config_json" not in cj:
        return out
    df = df.merge(cj.drop(columns="file").drop_duplicates("config_hash"), on="config_hash",
                  how="left")
    df = df[df["config_json"].notna()]
    if not len(df):
        return out
    df = df.assign(config_hash=current_identity(df))
    olds: dict[str, list[_Old]] = {}
    for h, grp in df.groupby("config_hash"):
        cfg = TrialConfig.from_dict(json.loads(grp["config_json"].iloc[0]))
        rows = {int(r["seed"]): r for r in grp.to_dict("records")}
        olds.setdefault(budget_key(cfg), []).append(_Old(cfg, str(h), rows))
    todo = []
    for cfg in configs:
        cands = [o for o in olds.get(budget_key(cfg), []) if o.cfg.steps < cfg.steps]
        if not cands:
            todo.append(cfg)
            continue
        old = max(cands, key=lambda o: o.cfg.steps)
        why = refusal(old.cfg, cfg) or _seeds_refusal(old, cfg.seeds, loc)
        if why:
            out.refused[why] += len(cfg.seeds)
            todo.append(cfg)
            continue
        copied = [s for s in cfg.seeds if int(old.rows[s]["steps_run"]) < old.cfg.steps]
        go_on = [s for s in cfg.seeds if s not in copied]
        out.copied += len(copied)
        out.continued += len(go_on)
        out.steps_saved += len(go_on) * old.cfg.steps + sum(
            int(old.rows[s]["steps_run"]) for s in copied)
        todo.append(cfg.with_overrides({"continued_from": {
            "config_hash": old.hash, "step": old.cfg.steps, "out": sweep_dir,
            "files": sorted({old.rows[s]["file"] for s in cfg.seeds}), "copied": copied}}))
    out.todo = todo
    return out


def _seeds_refusal(old: _Old, seeds: list[int], loc: reader.Location) -> str | None:
    """Why some seed cannot continue from `old` (None: every one can)."""
    o = old.cfg.steps
    for s in seeds:
        row = old.rows.get(s)
        if row is None or row["status"] not in ("grokked", "not_grokked"):
            what = "no row" if row is None else f"status {row['status']}"
            return f"a seed has {what} at {o} steps"
    ends = [s for s in seeds if int(old.rows[s]["steps_run"]) >= o]
    for name in sorted({old.rows[s]["file"] for s in ends}):
        path = loc.join(SNAPSHOTS, name)
        snap = loc.read_table(path, columns=["seed", "tensor"]) if loc.exists(SNAPSHOTS, name) \
            else pd.DataFrame(columns=["seed", "tensor"])
        have = set(snap.loc[snap["tensor"] == STATE + "opt.t", "seed"].astype(int))
        if any(old.rows[s]["file"] == name and s not in have for s in ends):
            return (f"the runs at {o} steps kept no training state in their end snapshots "
                    "(snapshots off, or written before grokray kept it)")
    return None

"""Continue a censored run: a sweep run again with a larger `steps` picks up the seeds that ran
out of budget at the smaller one from their end snapshots, instead of training them from step 0.

The plan (`plan`, on the driver) pairs each config still to run with the rows of the same config
at a smaller budget (the same canonical config but `steps`; the largest such budget), and sets
the config's `resume` section (grokray.config.ResumeConfig): where those rows are, and which of
its seeds are copied. A seed that ended at the smaller budget (`not_grokked`, or grokked but not
yet held for `patience` evals) continues from its end snapshot (parameters, optimizer moments,
Grokfast filter state, the sampling stream: grokray.optim.state, `Batcher.state`); a seed that
grokked and held before that budget stopped where it would stop at any larger one, so its rows
are copied under the new identity without training. A continued or copied row records
`continued_from` (the old config_hash) and `continued_from_step` (the step training picked up
from; for a copied row, its `steps_run`: nothing was trained).

A continuation is refused, and the config trains from step 0, when the two budgets would not give
the same run (`refusal`): a schedule that depends on `steps` (an lr schedule other than constant,
a lambda_alg schedule scaled by the steps) differs before the old budget, the old budget is not
an eval step of the new schedule (`eval_every` does not divide it; a log schedule), or a seed has
no row to continue (failed, diverged, missing) or no training state (snapshots off). A refused
continuation is one line per reason on the sweep's stderr.

The worker (`load`, from `grokray.trial.TrialRun`) reads the old rows: the continued seeds' curve
rows before the old budget and their snapshots before it (the curves and snapshots of the new row
hold the whole run, so analysis sees one curve; the eval at the old budget is taken again, as the
larger-budget run takes it), their end snapshot, and the copied seeds' rows whole.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from grokray import files
from grokray.config import TrialConfig
from grokray.errors import GrokrayError
from grokray.result import SeedResult
from grokray.schema import CURVE_KEY_COLUMNS, METRIC_PREFIX

STATE = "state/"
"""tensor-name prefix of the training state in an end snapshot"""
TRIALS, CURVES, SNAPSHOTS = "trials", "curves", "snapshots"


def budget_key(cfg: TrialConfig) -> str:
    """The canonical config without its `steps`: two configs with equal keys differ only in
    their budget."""
    d = cfg.canonical()
    d.pop("steps", None)
    return json.dumps(d, sort_keys=True, default=str)


def refusal(old: TrialConfig, new: TrialConfig) -> str | None:
    """Why `new` cannot continue from `old`'s end (None: it can): the runs would differ."""
    from grokray.evals import EvalSchedule
    from grokray.models.registry import get_family
    from grokray.optim.schedules import lambda_alg, lr_at

    o, n = old.steps, new.steps
    fam = get_family(new.arch)
    if fam.model is None or not getattr(fam.train, "__module__", "").startswith("grokray.trainer"):
        return f"arch {new.arch} is not trained by the gradient trainer"
    if new.optim.lr_schedule != "constant" and any(
            lr_at(t, new.optim, o) != lr_at(t, new.optim, n) for t in range(o)):
        return (f"optim.lr_schedule {new.optim.lr_schedule} depends on steps (the lr differs "
                f"before step {o} at {o} and {n} steps)")
    f = getattr(new, "forge", None)
    if new.arch == "forge" and f is not None and f.lambda_schedule not in ("constant", "off") \
            and any(lambda_alg(t, f, o) != lambda_alg(t, f, n) for t in range(o)):
        return (f"forge.lambda_schedule {f.lambda_schedule} is scaled by steps (lambda_alg "
                f"differs before step {o} at {o} and {n} steps)")
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
    r = cfg.resume
    if not r.config_hash:
        return len(cfg.seeds) * cfg.steps
    return (len(cfg.seeds) - len(r.copied)) * (cfg.steps - r.step)


@dataclass
class Continuations:
    """What `plan` made of the configs still to run."""

    todo: list[TrialConfig]
    """the configs, those that continue with their `resume` section set"""
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
    """Set the `resume` section of each config in `configs` (each with the seeds still to run)
    that can continue from rows of a smaller budget in `sweep_dir`; reads only."""
    out = Continuations(todo=list(configs))
    if not configs:
        return out
    loc = files.Location.of(sweep_dir)
    cols = ["config_hash", "seed", "status", "steps", "steps_run", "schema_version",
            "config_json"]
    t = files.read_dir(loc, TRIALS, columns=cols, required=("config_hash", "seed", "status"))
    df = t.frame
    if not len(df) or not {"steps", "steps_run", "config_json"} <= set(df.columns):
        return out
    df = df[df["steps"] < max(c.steps for c in configs)]  # a plain resume reads no config
    if not len(df):
        return out
    from grokray.sweep.store import current_identity

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
        todo.append(cfg.with_overrides({"resume": {
            "config_hash": old.hash, "step": old.cfg.steps, "out": sweep_dir,
            "files": sorted({old.rows[s]["file"] for s in cfg.seeds}), "copied": copied}}))
    out.todo = todo
    return out


def _seeds_refusal(old: _Old, seeds: list[int], loc: files.Location) -> str | None:
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


# ----------------------------------------------------------------------------- the worker


@dataclass
class SeedState:
    """What a continued seed picks up."""

    rows: list[dict[str, Any]]
    """its curve rows before the old budget"""
    snapshots: list[dict[str, Any]]
    """its snapshot records before the old budget"""
    params: dict[str, np.ndarray]
    """its parameters at the old budget"""
    state: dict[str, np.ndarray]
    """its training state there (names without the `state/` prefix)"""


@dataclass
class Resumed:
    """The old rows a continued trial reads (`load`)."""

    config_hash: str
    """the old config's identity"""
    step: int
    """the step the continued seeds pick up from"""
    seeds: dict[int, SeedState]
    """continued seeds"""
    copied: dict[int, tuple[SeedResult, list[dict[str, Any]], list[dict[str, Any]]]]
    """copied seeds: (outcome, curve rows, snapshot records)"""

    def origin(self, seed: int) -> tuple[str | None, int | None]:
        """(continued_from, continued_from_step) of a continued seed."""
        return (self.config_hash, self.step) if seed in self.seeds else (None, None)


def load(cfg: TrialConfig) -> Resumed:
    """Read what the seeds of `cfg` continue from (`cfg.resume`)."""
    from grokray.snapshots import to_tensor

    r = cfg.resume
    assert r.config_hash is not None and r.out is not None
    loc = files.Location.of(r.out)
    seeds, copied = set(cfg.seeds), set(r.copied)

    def read(sub: str) -> pd.DataFrame:
        frames = []
        for name in r.files:
            if not loc.exists(sub, name):
                if sub == SNAPSHOTS:
                    continue
                raise GrokrayError(f"cannot continue {cfg.config_hash()}: {r.out}/{sub}/{name} "
                                   "is gone; run the sweep again to train it from step 0")
            df = loc.read_table(loc.join(sub, name))
            frames.append(df[df["seed"].astype(int).isin(seeds)])
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    trials, curves, snaps = read(TRIALS), read(CURVES), read(SNAPSHOTS)
    out = Resumed(config_hash=r.config_hash, step=int(r.step), seeds={}, copied={})
    for s in cfg.seeds:
        c = curves[curves["seed"].astype(int) == s].sort_values("step")
        sn = snaps[snaps["seed"].astype(int) == s] if len(snaps) else snaps
        if s in copied:
            row = trials[trials["seed"].astype(int) == s].iloc[0]
            out.copied[s] = (_outcome(cfg, row, r.config_hash), _rows(c), _records(sn))
            continue
        before = sn[sn["step"] < r.step] if len(sn) else sn
        end = sn[(sn["step"] == r.step) & sn["tags"].str.contains("end")] if len(sn) else sn
        tensors = {str(x["tensor"]): to_tensor(x) for _, x in end.iterrows()}
        state = {k[len(STATE):]: v for k, v in tensors.items() if k.startswith(STATE)}
        if "opt.t" not in state:
            raise GrokrayError(f"cannot continue {cfg.config_hash()} seed {s}: no training state"
                               f" at step {r.step} in {r.out}/{SNAPSHOTS}")
        params = {k: v for k, v in tensors.items() if not k.startswith(STATE)}
        params.update({k[len("param."):]: v for k, v in state.items() if k.startswith("param.")})
        out.seeds[s] = SeedState(rows=_rows(c[c["step"] < r.step]), snapshots=_records(before),
                                 params=params, state=state)
    return out


_KEYS = [k for k in CURVE_KEY_COLUMNS if k not in ("seed", "step")]


def _rows(c: pd.DataFrame) -> list[dict[str, Any]]:
    """Curve rows as the trainer records them (no key columns; absent values left out)."""
    out = []
    for rec in c.drop(columns=[k for k in _KEYS if k in c]).to_dict("records"):
        row = {k: v for k, v in rec.items() if not _absent(v)}
        row["seed"], row["step"] = int(row["seed"]), int(row["step"])
        out.append(row)
    return out


def _absent(v: Any) -> bool:
    return v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v))


def _records(sn: pd.DataFrame) -> list[dict[str, Any]]:
    """Snapshot records (grokray.snapshots.COLUMNS) without training state."""
    if not len(sn):
        return []
    sn = sn[~sn["tensor"].str.startswith(STATE)]
    return [{"seed": int(x["seed"]), "step": int(x["step"]), "tags": str(x["tags"]),
             "tensor": str(x["tensor"]), "shape": [int(n) for n in x["shape"]],
             "dtype": str(x["dtype"]), "values": np.asarray(x["values"], dtype=x["dtype"])}
            for _, x in sn.iterrows()]


def _outcome(cfg: TrialConfig, row: pd.Series, old_hash: str) -> SeedResult:
    """A copied seed's outcome: its old row's, continued from its own end."""
    def opt_int(k: str) -> int | None:
        v = row.get(k)
        return None if _absent(v) else int(v)

    final = {k: float(row[k]) for k in ("final_train_acc", "final_val_acc", "final_train_loss",
                                        "final_val_loss") if not _absent(row.get(k))}
    metrics = {k[len(METRIC_PREFIX):]: float(v) for k, v in row.items()
               if str(k).startswith(METRIC_PREFIX) and not _absent(v)}
    s = int(row["seed"])
    return SeedResult(
        seed=s, data_seed=cfg.seed_data_seed(s), status=str(row["status"]),
        grok_step=opt_int("grok_step"), grok_step_lo=opt_int("grok_step_lo"),
        memorize_step=opt_int("memorize_step"), ungrok_step=opt_int("ungrok_step"),
        steps_run=int(row["steps_run"]), final=final, metrics=metrics,
        continued_from=old_hash, continued_from_step=int(row["steps_run"]))

"""What a trial picks up from an earlier run, put into the trainer: a continued run's old rows
and end snapshots, or a checkpoint's state.

A continued run, the worker's half (the driver's plan and refusal rules:
grokray.sweep.continuing). `read_continued` reads the old rows a continued trial picks up: the
continued seeds' curve rows before the old budget and their snapshots before it (the curves and
snapshots of the new row hold the whole run, so analysis sees one curve; the eval at the old
budget is taken again, as the larger-budget run takes it), their end snapshot (parameters and
training state), and the copied seeds' rows whole. In the trainer, `pick_up` puts each continued
member's end snapshot (parameters, optimizer and filter state, sampling stream) into its slot of
the stack, and `replay` its evals before the start (curve rows, grok track, eval count,
snapshots), as if this run had taken them. A run restored from a checkpoint (grokray.checkpoint,
read back by grokray.checkpoint.restore) goes through `pick_up` and `replay` too, its members'
state read from the checkpoint.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import torch

from grokray import reader
from grokray.config import TrialConfig
from grokray.errors import GrokrayError
from grokray.optim.state import load_member_state
from grokray.pickup import SeedPickup
from grokray.result import SeedResult
from grokray.schema import CONFIG_JSON_COLUMN, CURVE_KEY_COLUMNS, IDENTITY_VERSION, METRIC_PREFIX
from grokray.snapshots import STATE, to_tensor
from grokray.trainer.evaluate import Evaluator
from grokray.trainer.snapshot_hooks import SnapshotHooks
from grokray.trainer.stack import Stack
from grokray.trainer.stopping import StoppingRule

TRIALS, CURVES, SNAPSHOTS = "trials", "curves", "snapshots"


def pick_up(st: Stack) -> int:
    """Put what each member picks up (a continued seed's end snapshot, a restored checkpoint's
    state) into its slot; the step training starts from.
    The members of a pack continue from one step (its `continued_from.step` is in the pack key)."""
    starts = {r.pickup.step if r.pickup is not None else 0 for r in st.runs}
    if len(starts) != 1:
        raise ValueError(f"members of one stack continue from different steps {starts}")
    with torch.no_grad():
        for p, (ri, seed) in enumerate(st.members):
            res = st.runs[ri].pickup
            assert res is not None
            state = res.seeds[seed]
            for k, v in st.model.params.items():
                v[p].copy_(torch.from_numpy(state.params[k]))
            load_member_state(st.opt, st.filt, p, state.state, st.model.params)
            st.model.load_rng_state(p, state.state)
            if st.minibatches is not None:
                st.minibatches.load(p, state.state)
    return starts.pop()


def replay(st: Stack, evaluator: Evaluator, stopping: StoppingRule,
           snaps: SnapshotHooks) -> None:
    """Each continued member's evals before its start: its curve rows (read back), replayed
    through the stopping rule and counted; its snapshots before the start kept."""
    for pos in st.active:
        ri, seed = st.member_run[pos], st.seeds[pos]
        res = st.runs[ri].pickup
        assert res is not None
        state = res.seeds[seed]
        stopping.replay(pos, state.rows)
        evaluator.replay(pos, state.rows)
        st.runs[ri].rows.extend(state.rows)
        snaps.add(ri, state.snapshots)


@dataclass
class TrialPickup:
    """What a trial picks up from an earlier run: the old rows a continued trial reads
    (`read_continued`), or what a restored checkpoint holds (grokray.trial)."""

    config_hash: str | None
    """the old config's identity (None: a run restored from a checkpoint, not continued)"""
    step: int
    """the step the continued seeds pick up from"""
    seeds: dict[int, SeedPickup]
    """continued seeds"""
    copied: dict[int, tuple[SeedResult, list[dict[str, Any]], list[dict[str, Any]]]]
    """copied seeds: (outcome, curve rows, snapshot records)"""
    from_step: int | None = None
    """the step the seeds continued from when that is not `step` (a continued run that then
    was restored from a checkpoint at `step`, grokray.checkpoint)"""
    evaluated: bool = False
    """the eval at `step` was taken before (a checkpoint's): training goes on without it"""

    def origin(self, seed: int) -> tuple[str | None, int | None]:
        """(continued_from, continued_from_step) of a continued seed."""
        if seed not in self.seeds or not self.config_hash:
            return None, None
        return self.config_hash, self.step if self.from_step is None else self.from_step


def read_continued(cfg: TrialConfig) -> TrialPickup:
    """Read what the seeds of `cfg` continue from (`cfg.continued_from`)."""
    r = cfg.continued_from
    assert r.config_hash is not None and r.out is not None
    loc = reader.Location.of(r.out)
    seeds, copied = set(cfg.seeds), set(r.copied)

    def read(sub: str, names: list[str], runs: set | None = None) -> pd.DataFrame:
        frames = []
        for name in names:
            if not loc.exists(sub, name):
                if sub == SNAPSHOTS:
                    continue
                raise GrokrayError(f"cannot continue {cfg.config_hash()}: {r.out}/{sub}/{name} "
                                   "is gone; run the sweep again to train it from step 0")
            df = loc.read_table(loc.join(sub, name))
            df = df[df["seed"].astype(int).isin(seeds)]
            if runs is not None:  # a compacted file holds other trials' rows too
                df = df[[(h, r) in runs for h, r in zip(df["config_hash"], df["run_id"],
                                                        strict=True)]]
            frames.append(df)
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    trials = read(TRIALS, r.files)
    if len(trials):
        trials = trials[[h == r.config_hash for h in _identities(trials)]]
    runs = set(zip(trials["config_hash"], trials["run_id"], strict=True)) if len(trials) \
        else set()
    curves = read(CURVES, r.files, runs)
    snaps = read(SNAPSHOTS, sorted(f"{h}-{run}.parquet" for h, run in runs), runs)
    out = TrialPickup(config_hash=r.config_hash, step=int(r.step), seeds={}, copied={})
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
        out.seeds[s] = SeedPickup(rows=_rows(c[c["step"] < r.step]), snapshots=_records(before),
                                 params=params, state=state)
    return out


def _identities(trials: pd.DataFrame) -> list[str]:
    """Each trials row's current identity (a row older than IDENTITY_VERSION: from its
    config_json, as grokray.sweep.store.current_identity gives it)."""
    out = []
    for h, v, cj in zip(trials["config_hash"], trials["schema_version"],
                        trials.get(CONFIG_JSON_COLUMN, [None] * len(trials)), strict=True):
        old = int(v) < IDENTITY_VERSION and isinstance(cj, str)
        out.append(TrialConfig.from_dict(json.loads(cj)).config_hash() if old else h)
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

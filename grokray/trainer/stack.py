"""The stack: the members (config, seed) of one trial or pack that train together, and their
stacked state: the training pairs, the model, the optimizer, the Grokfast filter and the
mini-batch streams, each with a leading member dimension. A member leaves the stack (`drop`)
when it stops; `active` lists the positions (into `seeds`) still in it, in stack order."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from grokray.config import TrialConfig
from grokray.models.chunks import chunk_pairs
from grokray.models.protocol import Model
from grokray.optim import make_filter, make_optimizer
from grokray.tasks import Task
from grokray.trainer.minibatches import MiniBatches
from grokray.trialrun import TrialRun


class Stack:
    """The members of `runs` (configs of one `grokray.pack.pack_key`; one trial alone: its
    seeds) and their stacked state."""

    def __init__(self, runs: list[TrialRun]) -> None:
        run = runs[0]
        self.runs, self.cfg = runs, run.cfg
        self.device, self.dtype = run.device, run.dtype
        self.task = task = run.task
        self.members = [(ri, s) for ri, r in enumerate(runs) for s in r.seeds]
        """(index of its trial in `runs`, seed) per member position"""
        self.member_run = [ri for ri, _ in self.members]
        self.seeds = [s for _, s in self.members]
        self.steps = [runs[ri].cfg.steps for ri in self.member_run]
        """each member's step budget"""
        self.active = list(range(len(self.members)))
        """positions (into `seeds`) still in the stack"""
        dev = self.device
        self.splits = [sp for r in runs for sp in r.splits]
        """each member's (train, val) task indices"""
        tr = torch.stack([t for t, _ in self.splits])  # [S, Ntr] task indices
        self.n_train = tr.shape[1]
        self.a, self.b = task.a.to(dev), task.b.to(dev)
        self.y = _labels([r.task for r in runs], self.member_run).to(dev)
        """answers [N], or [S, N] in a pack of groups of one order (each member its table)"""
        self.tr = tr.to(dev)
        self.a_tr, self.b_tr, self.y_tr = self.a[self.tr], self.b[self.tr], self.y_of(self.tr)
        self.model, self.configs, wd = _model(runs, self.member_run)
        """the stacked model; each trial's own model object (its lambda_alg: `aux_weight`)"""
        self.has_aux = self.model.has_aux
        self.opt = make_optimizer(self.model.params, wd, self.cfg.optim)
        self.filt = make_filter([runs[ri].cfg.grokfast for ri in self.member_run]
                                if len(runs) > 1 else self.cfg.grokfast)
        self.batch = _batch_size(self.cfg, self.n_train)
        self.minibatches = None if self.batch >= self.n_train else MiniBatches(
            self.seeds, self.n_train, self.batch)

    def y_of(self, idx: torch.Tensor) -> torch.Tensor:
        """The answers of task indices idx [S, m] (each active member its own table)."""
        return self.y[idx] if self.y.dim() == 1 else self.y.gather(1, idx)

    def chunk(self, budget: int, S: int, pair_floats: int = 0) -> int:
        """Pairs per chunk of this stack's task on its device (`chunk_pairs`)."""
        return chunk_pairs(budget, self.task.n_out, S, pair_floats, self.device.type == "cpu")

    def per_member(self, fn: Callable[[int, TrialConfig], Any]) -> Any:
        """fn(trial index, config) for each active member (one value when every member shares
        it)."""
        by_run = {ri: fn(ri, self.runs[ri].cfg) for ri in dict.fromkeys(self.member_run)}
        values = [by_run[self.member_run[p]] for p in self.active]
        return values[0] if len(set(values)) == 1 else values

    def drop(self, positions: list[int]) -> None:
        """Remove the members at `positions` from every stacked state."""
        if not positions:
            return
        keep_pos = [i for i, p in enumerate(self.active) if p not in positions]
        self.active = [self.active[i] for i in keep_pos]
        if not self.active:
            return
        keep = torch.tensor(keep_pos, device=self.device)
        self.model.select(keep)
        self.opt.select(keep)
        if self.filt is not None:
            self.filt.select(keep)
        self.tr, self.a_tr = self.tr[keep], self.a_tr[keep]
        self.b_tr, self.y_tr = self.b_tr[keep], self.y_tr[keep]
        if self.y.dim() == 2:
            self.y = self.y[keep]


def _model(runs: list[TrialRun], member_run: list[int]
           ) -> tuple[Model, list[Model], list[dict[str, float]]]:
    """Each trial's model (its seeds), joined into one stack: (the stack, each trial's own,
    each member's weight decay per parameter)."""
    run = runs[0]
    task, model_cls = run.task, run.family.model
    models: list[Model] = [_seeds_model(model_cls, r) for r in runs]
    for r in runs:
        r.n_params = model_cls.count_params(r.cfg, task.n_in, task.n_out)
    wd = [models[ri].weight_decay(runs[ri].cfg.optim.weight_decay) for ri in member_run]
    stacked = models[0]
    for other in models[1:]:
        stacked.extend(other)
        other.params = {}  # kept for its schedule (aux_weight) only
    return stacked, models, wd


def _seeds_model(model_cls: Any, run: TrialRun) -> Model:
    """The model of `run`'s seeds to train, built for all of its config's seeds and narrowed to
    those (a continued or restored trial whose other seeds had finished): choices made for the
    seed count (FORGE's L_assoc form) are its trial's, whatever seeds are left."""
    cfg, task = run.cfg, run.task
    if list(run.seeds) == list(cfg.seeds):
        return model_cls(cfg, task.n_in, task.n_out, run.seeds, run.device, run.dtype)
    model = model_cls(cfg, task.n_in, task.n_out, list(cfg.seeds), run.device, run.dtype)
    keep = [list(cfg.seeds).index(s) for s in run.seeds]
    with torch.no_grad():
        model.select(torch.tensor(keep, dtype=torch.long, device=run.device))
    return model


def _batch_size(cfg: TrialConfig, n_train: int) -> int:
    """Training pairs per step: `optim.batch_size`, or the whole train set up to
    `optim.max_full_batch`."""
    bs = cfg.optim.batch_size
    if bs is None:
        bs = n_train if n_train <= cfg.optim.max_full_batch else cfg.optim.max_full_batch
    return min(bs, n_train)


def _labels(tasks: list[Task], member_run: list[int]) -> torch.Tensor:
    """The answers y of the tasks: [N] when they are one table, else [S, N] (member i the
    table of tasks[member_run[i]]); the tasks must share their pairs (a, b)."""
    first = tasks[0]
    if all(t is first or torch.equal(t.y, first.y) for t in tasks):
        return first.y
    if not all(torch.equal(t.a, first.a) and torch.equal(t.b, first.b) for t in tasks):
        raise ValueError("a pack's tasks must share their pairs (a, b): groups of one order")
    return torch.stack([tasks[ri].y for ri in member_run])

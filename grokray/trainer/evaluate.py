"""The eval and its records: every active member's loss and accuracy on its train and val
pairs (every task pair when the task has at most `metrics.eval_max_pairs`, else a fixed
per-seed sample of that many of each), its weight norms and auxiliary losses, and the mechanism
metrics when due (grokray.metrics.mechanism); the rows of the members whose eval falls at the
step are recorded as their trials' curve rows. `summarize` turns a trial's rows into each
seed's scalar summaries when it ends."""

from __future__ import annotations

import pandas as pd
import torch

from grokray.evals import EvalSchedule
from grokray.metrics.mechanism import (
    MetricInputs,
    compute_eval_metrics,
    metrics_due,
    validate_metric_names,
)
from grokray.metrics.mechanism import (
    summarize as summarize_curves,
)
from grokray.metrics.norms import weight_norms
from grokray.models import seed_generator
from grokray.models.chunks import LOGIT_BUDGET
from grokray.models.fused import nll_rows_
from grokray.optim import lr_at
from grokray.tasks import pred_table
from grokray.trainer.stack import Stack
from grokray.trialrun import TrialRun

Row = dict[str, float]


class Evaluator:
    """The eval of one stack: which pairs it reads, each trial's eval steps, and each member's
    records (its last row, its eval count), by stack position."""

    def __init__(self, st: Stack) -> None:
        cfg = st.cfg
        self.metric_names = list(cfg.metrics.cheap) + list(cfg.metrics.costly)
        if self.metric_names:
            validate_metric_names(self.metric_names)
        self.schedules = [EvalSchedule(r.cfg) for r in st.runs]
        """each trial's eval steps (its own schedule and budget)"""
        S, N = len(st.seeds), len(st.task)
        self.full_eval = N <= cfg.metrics.eval_max_pairs
        if self.full_eval:
            mask = torch.zeros(S, N, dtype=torch.bool)
            mask[torch.arange(S)[:, None], torch.stack([t for t, _ in st.splits])] = True
            self.train_mask = mask.to(st.device)  # [S, N]
        else:
            m = cfg.metrics.eval_max_pairs
            pairs = list(zip(st.splits, st.seeds, strict=True))
            dev = st.device
            self.ev_tr = torch.stack([_subsample(t, m, s, 3) for (t, _), s in pairs]).to(dev)
            self.ev_val = torch.stack([_subsample(v, m, s, 4) for (_, v), s in pairs]).to(dev)
        self.last: dict[int, Row] = {}
        """each member's last curve row"""
        self.n_evals = [0] * S
        """evals each member has had"""

    def is_eval(self, st: Stack, pos: int, step: int) -> bool:
        """Whether `step` is an eval step of the member at `pos`."""
        return step in self.schedules[st.member_run[pos]]

    def due(self, st: Stack, step: int) -> list[int]:
        """The active members whose eval falls at `step`."""
        return [p for p in st.active if self.is_eval(st, p, step)]

    def replay(self, pos: int, rows: list[Row]) -> None:
        """Count a continued member's evals before its start (its curve rows read back)."""
        self.n_evals[pos] = len(rows)
        if rows:
            self.last[pos] = rows[-1]

    @torch.no_grad()
    def evaluate(self, st: Stack, step: int, due: list[int]) -> dict[int, Row]:
        """Evaluate every active member; record and return the rows of those in `due`
        (members whose eval falls at `step`; a member's last one, at its own budget, is its
        final eval), by position."""
        model = st.model
        act = torch.tensor(st.active, device=st.device)
        if self.full_eval:
            loss, correct, pred = self._eval_all(st)  # [S, N] each
            mask = self.train_mask[act]
            m = mask.to(loss.dtype)
            v = 1.0 - m
            tr_loss, tr_acc = (loss * m).sum(1) / m.sum(1), (correct * m).sum(1) / m.sum(1)
            va_loss, va_acc = (loss * v).sum(1) / v.sum(1), (correct * v).sum(1) / v.sum(1)
        else:
            pred = None
            tr_loss, tr_acc = self._eval_idx(st, self.ev_tr[act])
            va_loss, va_acc = self._eval_idx(st, self.ev_val[act])
        cols: dict[str, torch.Tensor] = {
            "train_loss": tr_loss, "train_acc": tr_acc, "val_loss": va_loss, "val_acc": va_acc,
        }
        cols.update(weight_norms(model.params))
        if st.has_aux:
            for k, val in model.aux_losses().items():
                cols[f"loss_{k}"] = val
        table = {k: v.detach().to("cpu", torch.float64).tolist() for k, v in cols.items()}
        index = {p: i for i, p in enumerate(st.active)}
        metrics = self._metrics(st, pred, step, due, index) if self.metric_names else {}
        rows = {}
        for pos in due:
            ri, i = st.member_run[pos], index[pos]
            cfg = st.runs[ri].cfg
            row = {"seed": st.seeds[pos], "step": step, **{k: v[i] for k, v in table.items()},
                   **metrics.get(pos, {}), "lr": lr_at(step, cfg.optim, cfg.steps)}
            if st.has_aux:
                row["lambda_alg"] = st.configs[ri].aux_weight(step, cfg.steps)
            st.runs[ri].rows.append(row)
            self.last[pos] = rows[pos] = row
            self.n_evals[pos] += 1
        return rows

    def _metrics(self, st: Stack, pred: torch.Tensor | None, step: int, due: list[int],
                 index: dict[int, int]) -> dict[int, Row]:
        """The mechanism metrics due for each member in `due` (by its own eval count, and all
        of them at its final eval), computed on every active member."""
        by_names: dict[tuple[str, ...], list[int]] = {}
        for pos in due:
            final = step > 0 and step == st.steps[pos]
            names = metrics_due(st.cfg.metrics, self.n_evals[pos], final)
            by_names.setdefault(tuple(names), []).append(pos)
        out: dict[int, Row] = {}
        for names, members in by_names.items():
            vals = {k: v.detach().to("cpu", torch.float64).tolist()
                    for k, v in _mechanism(st, pred, list(names)).items()}
            for pos in members:
                out[pos] = {k: v[index[pos]] for k, v in vals.items()}
        return out

    def _eval_all(self, st: Stack) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Loss, correctness and prediction on every task pair: [S, N] each (shared inputs)."""
        S, N = len(st.active), len(st.task)
        chunk = st.chunk(LOGIT_BUDGET, S, st.model.pair_floats)
        losses, corrects, preds = [], [], []
        for i in range(0, N, chunk):
            a, b, y = st.a[i:i + chunk], st.b[i:i + chunk], st.y[..., i:i + chunk]
            logits = st.model.logits(a, b)  # [S, C, n_out]
            p = logits.argmax(-1)
            preds.append(p)
            corrects.append((p == y).to(logits.dtype))
            losses.append(nll_rows_(logits, y))
        return torch.cat(losses, 1), torch.cat(corrects, 1), torch.cat(preds, 1)

    def _eval_idx(self, st: Stack, idx: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean loss and accuracy over per-seed task indices idx [S, m]."""
        S, m = idx.shape
        chunk = st.chunk(LOGIT_BUDGET, S, st.model.pair_floats)
        loss_sum = torch.zeros(S, device=st.device, dtype=torch.float64)
        acc_sum = torch.zeros_like(loss_sum)
        for i in range(0, m, chunk):
            j = idx[:, i:i + chunk]
            logits = st.model.logits(st.a[j], st.b[j])
            y = st.y_of(j)
            acc_sum += (logits.argmax(-1) == y).sum(1).double()
            loss_sum += nll_rows_(logits, y).sum(1).double()
        return loss_sum / m, acc_sum / m


def _mechanism(st: Stack, pred: torch.Tensor | None, names: list[str]
               ) -> dict[str, torch.Tensor]:
    """The mechanism metrics `names` of every active member, as curve columns."""
    if not names:
        return {}
    task = st.task
    table = pred_table(task, pred) if pred is not None else None
    inputs = MetricInputs(group=task.group, E=st.model.embedding(), pred_table=table,
                          hooks=st.model.hooks(), pairs=(st.a_tr, st.b_tr),
                          n_seeds=len(st.active))
    out = compute_eval_metrics(inputs, names)
    return {f"metric_{k}": v for k, v in out.items()}


def _subsample(idx: torch.Tensor, m: int, seed: int, stream: int) -> torch.Tensor:
    if len(idx) <= m:
        return idx
    return idx[torch.randperm(len(idx), generator=seed_generator(seed, stream))[:m]]


def summarize(runs: list[TrialRun]) -> None:
    """Each seed's scalar summaries of its metric curves (grokray.metrics.mechanism)."""
    for run in runs:
        if not run.rows:
            continue
        out = run.outcome
        grok = {s: r.grok_step for s, r in out.items()}  # copied seeds too
        for seed, summary in summarize_curves(pd.DataFrame(run.rows), grok).items():
            if seed in out:
                out[seed].metrics.update(summary)

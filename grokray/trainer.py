"""The gradient trainer: trains the S seeds of one trial together (`Family.train` of every
gradient-trained family), or the members (config, seed) of a pack of trials of one shape
(`Family.pack`, grokray.pack). `grokray.trial.run_trial` and `grokray.pack.run_pack` are the entry
points; no Ray here.

Every parameter, optimizer moment and filter state is stacked along a leading seed dimension, and
every operation is per seed (batched matmuls, elementwise updates; the loss is the sum of the
per-seed mean losses), so each seed follows exactly the path it would follow alone, to float
tolerance. Seed s has its own model init, its own sampling stream, and its own split (from
`data_seed`, or from s itself when `data_seed` is null). A seed that finishes (grokked and held)
or diverges (non-finite loss) is dropped from the stack; the others go on.

In a pack the stack holds members: each config's seeds, one config after the other. A member
has its own learning rate (and schedule), weight decay, lambda_alg (and schedule), Grokfast
filter and its settings, init, split, step budget and group table (groups of one order share
the pairs (a, b); the answers y are then [S, N]); everything else is the pack's (grokray.pack.
pack_key: the eval schedule fields and the snapshots section too). So each member evaluates at
its own config's steps (its schedule over its own budget), records its own lr and weight norms,
and its trial's snapshots go to that trial's own recorder (seeds repeat across configs).
Chunk sizes on CPU and FORGE's L_assoc form depend on the member's shape, not on how many
members train: a member does the arithmetic of its trial alone.

The trainer talks to the model only through grokray.models.protocol.Model.

Step convention: the eval at step t is taken after t optimizer steps (t = 0, eval_every, ...,
and the last step; or log-spaced steps: grokray.evals). `steps_run` counts optimizer steps.
"""

from __future__ import annotations

import math
import time

import numpy as np
import torch

from grokray.errors import GrokrayError
from grokray.evals import EvalSchedule
from grokray.metrics.grokking import GrokDetector
from grokray.metrics.norms import weight_norms
from grokray.models import seed_generator
from grokray.models.fused import nll_rows_
from grokray.models.protocol import Model
from grokray.optim import lr_at, make_filter, make_optimizer
from grokray.optim.state import load_member_state, member_state
from grokray.result import SeedResult
from grokray.snapshots import Recorder
from grokray.trial import Progress, ProgressFn, TrialRun, error_line, resolve_device, run_trial

__all__ = ["Progress", "ProgressFn", "resolve_device", "run_trial", "train", "train_pack"]

LOGIT_BUDGET = 1 << 24  # elements of one eval logits chunk [S, chunk, n_out]
TRAIN_LOGIT_BUDGET = 1 << 25  # elements of one training logits chunk (gradient accumulation)
CHUNK_SEEDS = 8  # on CPU the budgets below are spent on this many seeds, however many train, so
# that a seed's arithmetic (the chunks its sums run over) does not depend on the others
CPU_CHUNK_BUDGET = 5 << 20  # on CPU, a chunk of pairs holds at most this many floats: its
# logits and the model's per-pair floats (Model.pair_floats), over CHUNK_SEEDS seeds; cache-sized
# working sets. At Z97 this gives the MLP 1,362 pairs a chunk, FORGE (d 32, R 256) 705, the
# transformer (d 128, d_mlp 512) 305: FORGE's step is 1.3x faster than at 1,351 pairs (a
# logits-only budget of 2^20), the transformer's 1.1x faster than at 675, the MLP's a little
# faster than at 337 (benchmarks/README.md); on CUDA one big chunk is best


def train(run: TrialRun) -> None:
    """Train every seed of `run` by gradient descent, recording outcomes and curve rows."""
    _Trial(run).run()


def train_pack(runs: list[TrialRun]) -> None:
    """Train the trials `runs` (configs of one `grokray.pack.pack_key`) as one stack of members,
    each recording its own outcomes and curve rows as it would alone."""
    runs = [r for r in runs if r.seeds]  # a continued trial's copied seeds need no training
    if runs:
        _Trial(runs).run()


class _Trial:
    """The state of one running trial or pack (a class only to keep run_trial readable)."""

    def __init__(self, runs: TrialRun | list[TrialRun]) -> None:
        runs = runs if isinstance(runs, list) else [runs]
        run = runs[0]
        cfg = run.cfg
        self.runs, self.cfg = runs, cfg
        self.device, self.dtype = run.device, run.dtype
        self.metric_names = list(cfg.metrics.cheap) + list(cfg.metrics.costly)
        if self.metric_names:
            from grokray.metrics.mechanism import validate_metric_names

            validate_metric_names(self.metric_names)
        self.task = task = run.task
        members = [(ri, s) for ri, r in enumerate(runs) for s in r.seeds]
        self.member_run = [ri for ri, _ in members]
        """member position -> index of its trial in `runs`"""
        self.seeds = [s for _, s in members]
        self.steps = [runs[ri].cfg.steps for ri in self.member_run]
        """each member's step budget"""
        S = len(self.seeds)
        dev = self.device
        splits = [sp for r in runs for sp in r.splits]
        tr = torch.stack([t for t, _ in splits])  # [S, Ntr] task indices
        self.n_train = tr.shape[1]
        self.a, self.b = task.a.to(dev), task.b.to(dev)
        self.y = _labels([r.task for r in runs], self.member_run).to(dev)
        """answers [N], or [S, N] in a pack of groups of one order (each member its table)"""
        self.tr = tr.to(dev)
        self.a_tr, self.b_tr, self.y_tr = self.a[self.tr], self.b[self.tr], self._y(self.tr)
        N = len(task)
        self.full_eval = N <= cfg.metrics.eval_max_pairs
        if self.full_eval:
            mask = torch.zeros(S, N, dtype=torch.bool)
            mask[torch.arange(S)[:, None], tr] = True
            self.train_mask = mask.to(dev)  # [S, N]
        else:
            m = cfg.metrics.eval_max_pairs
            pairs = list(zip(splits, self.seeds, strict=True))
            self.ev_tr = torch.stack([_subsample(t, m, s, 3) for (t, _), s in pairs]).to(dev)
            self.ev_val = torch.stack([_subsample(v, m, s, 4) for (_, v), s in pairs]).to(dev)
        model_cls = run.family.model
        models: list[Model] = [model_cls(r.cfg, task.n_in, task.n_out, r.seeds, dev, self.dtype)
                               for r in runs]
        for r in runs:
            r.n_params = model_cls.count_params(r.cfg, task.n_in, task.n_out)
        wd = [models[ri].weight_decay(runs[ri].cfg.optim.weight_decay) for ri in self.member_run]
        self.model = models[0]
        for other in models[1:]:
            self.model.extend(other)
            other.params = {}  # kept for its schedule (aux_weight) only
        self.configs = models
        """each trial's own model object: its lambda_alg schedule (`aux_weight`)"""
        self.opt = make_optimizer(self.model.params, wd, cfg.optim)
        self.filt = make_filter([runs[ri].cfg.grokfast for ri in self.member_run]
                                if len(runs) > 1 else cfg.grokfast)
        bs = cfg.optim.batch_size
        if bs is None:
            bs = self.n_train if self.n_train <= cfg.optim.max_full_batch else \
                cfg.optim.max_full_batch
        self.batch = min(bs, self.n_train)
        self.batcher = None if self.batch >= self.n_train else _Batcher(
            self.seeds, self.n_train, self.batch)
        self.has_aux = self.model.has_aux
        self.evals = [EvalSchedule(r.cfg) for r in runs]
        """each trial's eval steps (its own schedule and budget)"""
        self.snaps = [Recorder(r.cfg, ev.steps(), self.model.params)
                      for r, ev in zip(runs, self.evals, strict=True)]
        """each trial's snapshot recorder (seeds repeat across the configs of a pack)"""
        self.detector = GrokDetector(cfg.metrics.grok_threshold, cfg.metrics.memorize_threshold,
                                     cfg.metrics.patience)
        self.active = list(range(S))  # positions (into self.seeds) still in the stack
        self.last: dict[int, dict[str, float]] = {}
        self.n_evals = [0] * S  # evals each member has had
        self.start = 0
        """the step training starts from (a continued run's: grokray.continuation)"""
        if any(r.resumed is not None for r in runs):
            self._restore(members)

    def _restore(self, members: list[tuple[int, int]]) -> None:
        """Put each continued member's end snapshot (parameters, optimizer and filter state,
        sampling stream) into its slot of the stack. The members of a pack continue from one
        step (its `resume.step` is in the pack key)."""
        starts = {r.resumed.step if r.resumed is not None else 0 for r in self.runs}
        if len(starts) != 1:
            raise ValueError(f"members of one stack continue from different steps {starts}")
        self.start = starts.pop()
        with torch.no_grad():
            for p, (ri, seed) in enumerate(members):
                res = self.runs[ri].resumed
                assert res is not None
                st = res.seeds[seed]
                for k, v in self.model.params.items():
                    v[p].copy_(torch.from_numpy(st.params[k]))
                load_member_state(self.opt, self.filt, p, st.state, self.model.params)
                if self.batcher is not None:
                    self.batcher.load(p, st.state)

    def _resumed_evals(self) -> None:
        """A continued run's evals before its start: its curve rows (read back), replayed
        through the detector and counted, as if this run had taken them."""
        for pos in self.active:
            ri, seed = self.member_run[pos], self.seeds[pos]
            res = self.runs[ri].resumed
            assert res is not None
            st = res.seeds[seed]
            for row in st.rows:
                self.detector.update(pos, row["step"], row["train_acc"], row["val_acc"])
            self.n_evals[pos] = len(st.rows)
            if st.rows:
                self.last[pos] = st.rows[-1]
            self.runs[ri].rows.extend(st.rows)
            self.snaps[ri].add(st.snapshots)

    # ------------------------------------------------------------------ main loop

    def run(self) -> None:
        step = self.start
        t_loop = time.perf_counter()
        try:
            if step:
                self._resumed_evals()
            self._evaluate(step, list(self.active))
            check_every = 1 if self.device.type == "cpu" else 16
            while step < max(self.steps) and self.active:
                loss = self._train_step(step)
                step += 1
                evals = [self.evals[self.member_run[p]] for p in self.active]
                self._check_finite(loss, step - 1, [
                    step % check_every == 0 or step in ev for ev in evals])
                if not self.active:
                    break
                due = [p for p in self.active if step in self.evals[self.member_run[p]]]
                if due:
                    self._evaluate(step, due)
                    self._report(step, t_loop, due)
                self._end([p for p in self.active if step == self.steps[p]], step)
        except Exception as exc:
            # a user's mistake is raised by run_trial; any other error fails the active seeds
            for pos in self.active:
                self._finish(pos, "failed", step, error=error_line(exc))
            self.active = []
            if isinstance(exc, GrokrayError):
                raise
        self._end(list(self.active), step)
        for run, snaps in zip(self.runs, self.snaps, strict=True):
            run.snapshots = snaps.records()
        self._summarize()

    def _end(self, positions: list[int], step: int) -> None:
        """Finish the members at `positions`, whose budget is spent, and drop them."""
        for pos in positions:
            tr = self.detector.tracks.get(pos)
            grokked = tr is not None and tr.grok_step is not None
            self._finish(pos, "grokked" if grokked else "not_grokked", step)
        self._drop(positions)

    def _train_step(self, step: int) -> torch.Tensor:
        model = self.model
        if self.batcher is None:
            a, b, y = self.a_tr, self.b_tr, self.y_tr
        else:
            idx = self.batcher.next(self.active).to(self.device)
            idx = self.tr.gather(1, idx)  # [S, B] task indices
            a, b, y = self.a[idx], self.b[idx], self._y(idx)
        S = y.shape[0]
        chunk = self._chunk(TRAIN_LOGIT_BUDGET, S, model.pair_floats)
        lam = self._aux_weight(step) if self.has_aux else 0.0
        names = list(model.params)
        ps = [model.params[k] for k in names]
        acc: list[torch.Tensor | None] = [None] * len(ps)
        total_sum = torch.zeros(S, device=self.device, dtype=self.dtype)
        for n, total in enumerate(model.data_losses(a, b, y, chunk)):
            if n == 0 and (bool((lam > 0.0).any()) if isinstance(lam, torch.Tensor) else lam > 0):
                total = total + lam * model.aux_loss()
            gs = torch.autograd.grad(total.sum(), ps, allow_unused=True)
            acc = [g if s is None else s if g is None else s.add_(g)
                   for s, g in zip(acc, gs, strict=True)]
            total_sum += total.detach()
        # a parameter unused at this step (g_phi once lambda_alg is 0) gets a zero gradient
        grads = {k: torch.zeros_like(p) if g is None else g
                 for k, p, g in zip(names, ps, acc, strict=True)}
        if self.filt is not None:
            grads = self.filt(grads)
        self.opt.step(model.params, grads, self._per_member(
            lambda r, c: lr_at(step, c.optim, c.steps)))
        return total_sum

    def _per_member(self, fn) -> float | list[float]:  # noqa: ANN001 - fn(run index, config)
        """fn's value for each active member (one float when every member shares it)."""
        by_run = {ri: fn(ri, self.runs[ri].cfg) for ri in dict.fromkeys(self.member_run)}
        values = [by_run[self.member_run[p]] for p in self.active]
        return values[0] if len(set(values)) == 1 else values

    def _aux_weight(self, step: int) -> float | torch.Tensor:
        """lambda_alg of each active member at `step`: one float, or a tensor [S]."""
        lam = self._per_member(lambda r, c: self.configs[r].aux_weight(step, c.steps))
        if isinstance(lam, list):
            return torch.tensor(lam, dtype=self.dtype, device=self.device)
        return lam

    def _chunk(self, budget: int, S: int, pair_floats: int = 0) -> int:
        """Pairs per chunk of this trial's task on its device (`chunk_pairs`)."""
        return chunk_pairs(budget, self.task.n_out, S, pair_floats, self.device.type == "cpu")

    def _y(self, idx: torch.Tensor) -> torch.Tensor:
        """The answers of task indices idx [S, m] (each active member its own table)."""
        return self.y[idx] if self.y.dim() == 1 else self.y.gather(1, idx)

    def _check_finite(self, loss: torch.Tensor, step: int, due: list[bool]) -> None:
        bad = ~torch.isfinite(loss) & torch.tensor(due, device=loss.device)
        if not bool(bad.any()):
            return
        dropped = [self.active[i] for i in torch.nonzero(bad).flatten().tolist()]
        for pos in dropped:
            self._finish(pos, "diverged", step, error=f"non-finite loss at step {step}")
        self._drop(dropped)

    # ------------------------------------------------------------------ evaluation

    @torch.no_grad()
    def _evaluate(self, step: int, due: list[int]) -> None:
        """Evaluate every active member; record the rows of those in `due` (members whose eval
        falls at `step`; a member's last one, at its own budget, is its final eval)."""
        model = self.model
        act = torch.tensor(self.active, device=self.device)
        if self.full_eval:
            loss, correct, pred = self._eval_all()  # [S, N] each
            mask = self.train_mask[act]
            m = mask.to(loss.dtype)
            v = 1.0 - m
            tr_loss, tr_acc = (loss * m).sum(1) / m.sum(1), (correct * m).sum(1) / m.sum(1)
            va_loss, va_acc = (loss * v).sum(1) / v.sum(1), (correct * v).sum(1) / v.sum(1)
        else:
            pred = None
            tr_loss, tr_acc = self._eval_idx(self.ev_tr[act])
            va_loss, va_acc = self._eval_idx(self.ev_val[act])
        cols: dict[str, torch.Tensor] = {
            "train_loss": tr_loss, "train_acc": tr_acc, "val_loss": va_loss, "val_acc": va_acc,
        }
        cols.update(weight_norms(model.params))
        if self.has_aux:
            for k, val in model.aux_losses().items():
                cols[f"loss_{k}"] = val
        table = {k: v.detach().to("cpu", torch.float64).tolist() for k, v in cols.items()}
        index = {p: i for i, p in enumerate(self.active)}
        metrics = self._metrics(pred, step, due, index) if self.metric_names else {}
        finished, diverged = [], []
        for pos in due:
            i, seed, cfg = index[pos], self.seeds[pos], self.runs[self.member_run[pos]].cfg
            row = {"seed": seed, "step": step, **{k: v[i] for k, v in table.items()},
                   **metrics.get(pos, {}), "lr": lr_at(step, cfg.optim, cfg.steps)}
            if self.has_aux:
                row["lambda_alg"] = self.configs[self.member_run[pos]].aux_weight(step,
                                                                                 cfg.steps)
            self.runs[self.member_run[pos]].rows.append(row)
            self.last[pos] = row
            self.n_evals[pos] += 1
            if not (math.isfinite(row["train_loss"]) and math.isfinite(row["val_loss"])):
                diverged.append(pos)
                continue
            track = self.detector.update(pos, step, row["train_acc"], row["val_acc"])
            if track.finished:
                finished.append(pos)
        for ri in dict.fromkeys(self.member_run[p] for p in due):
            mine = [p for p in due if self.member_run[p] == ri]
            self.snaps[ri].at_eval(step, [self.seeds[p] for p in mine], model.params,
                                   {self.seeds[p]: self.detector.tracks.get(p) for p in mine},
                                   index=[index[p] for p in mine])
        for pos in diverged:
            self._finish(pos, "diverged", step, error=f"non-finite eval loss at step {step}")
        for pos in finished:
            self._finish(pos, "grokked", step)
        self._drop(diverged + finished)

    def _metrics(self, pred: torch.Tensor | None, step: int, due: list[int],
                 index: dict[int, int]) -> dict[int, dict[str, float]]:
        """The mechanism metrics due for each member in `due` (by its own eval count, and all
        of them at its final eval), computed on every active member."""
        from grokray.metrics.mechanism import metrics_due

        by_names: dict[tuple[str, ...], list[int]] = {}
        for pos in due:
            final = step > 0 and step == self.steps[pos]
            names = metrics_due(self.cfg.metrics, self.n_evals[pos], final)
            by_names.setdefault(tuple(names), []).append(pos)
        out: dict[int, dict[str, float]] = {}
        for names, members in by_names.items():
            vals = {k: v.detach().to("cpu", torch.float64).tolist()
                    for k, v in self._mechanism(pred, list(names)).items()}
            for pos in members:
                out[pos] = {k: v[index[pos]] for k, v in vals.items()}
        return out

    def _eval_all(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Loss, correctness and prediction on every task pair: [S, N] each (shared inputs)."""
        S, N = len(self.active), len(self.task)
        chunk = self._chunk(LOGIT_BUDGET, S, self.model.pair_floats)
        losses, corrects, preds = [], [], []
        for i in range(0, N, chunk):
            a, b, y = self.a[i:i + chunk], self.b[i:i + chunk], self.y[..., i:i + chunk]
            logits = self.model.logits(a, b)  # [S, C, n_out]
            p = logits.argmax(-1)
            preds.append(p)
            corrects.append((p == y).to(logits.dtype))
            losses.append(nll_rows_(logits, y))
        return torch.cat(losses, 1), torch.cat(corrects, 1), torch.cat(preds, 1)

    def _eval_idx(self, idx: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean loss and accuracy over per-seed task indices idx [S, m]."""
        S, m = idx.shape
        chunk = self._chunk(LOGIT_BUDGET, S, self.model.pair_floats)
        loss_sum = torch.zeros(S, device=self.device, dtype=torch.float64)
        acc_sum = torch.zeros_like(loss_sum)
        for i in range(0, m, chunk):
            j = idx[:, i:i + chunk]
            logits = self.model.logits(self.a[j], self.b[j])
            y = self._y(j)
            acc_sum += (logits.argmax(-1) == y).sum(1).double()
            loss_sum += nll_rows_(logits, y).sum(1).double()
        return loss_sum / m, acc_sum / m

    def _mechanism(self, pred: torch.Tensor | None, names: list[str]) -> dict[str, torch.Tensor]:
        from grokray.metrics.mechanism import MetricInputs, compute_eval_metrics

        if not names:
            return {}
        task = self.task
        table = pred_table(task, pred) if pred is not None else None
        inputs = MetricInputs(group=task.group, E=self.model.embedding(), pred_table=table,
                              hooks=self.model.hooks(), pairs=(self.a_tr, self.b_tr),
                              n_seeds=len(self.active))
        out = compute_eval_metrics(inputs, names)
        return {f"metric_{k}": v for k, v in out.items()}

    # ------------------------------------------------------------------ bookkeeping

    def _finish(self, pos: int, status: str, step: int, error: str | None = None) -> None:
        seed, run = self.seeds[pos], self.runs[self.member_run[pos]]
        if status in ("grokked", "not_grokked"):
            i = self.active.index(pos)
            state = self._state(pos, i) if step == self.steps[pos] else None
            self.snaps[self.member_run[pos]].at_end(seed, step, i, self.model.params, state)
        tr = self.detector.tracks.get(pos)
        last = self.last.get(pos, {})
        origin = run.resumed.origin(seed) if run.resumed is not None else (None, None)
        run.outcome[seed] = SeedResult(
            seed=seed, data_seed=run.cfg.seed_data_seed(seed), status=status, error=error,
            grok_step=tr.grok_step if tr else None,
            grok_step_lo=tr.grok_step_lo if tr else None,
            memorize_step=tr.memorize_step if tr else None,
            ungrok_step=tr.ungrok_step if tr else None,
            steps_run=step,
            continued_from=origin[0], continued_from_step=origin[1],
            final={f"final_{k}": float(last[k]) for k in
                   ("train_acc", "val_acc", "train_loss", "val_loss") if k in last},
        )

    def _state(self, pos: int, i: int) -> dict[str, np.ndarray]:
        """What member `pos` (stack index i) needs to continue past its budget: optimizer and
        filter state (grokray.optim.state) and its sampling stream."""
        out = member_state(self.opt, self.filt, i)
        if self.batcher is not None:
            out.update(self.batcher.state(pos))
        return out

    def _drop(self, positions: list[int]) -> None:
        """Remove finished seeds from every stacked state."""
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

    def _report(self, step: int, t_loop: float, due: list[int]) -> None:
        """Each trial with a member in `due` reports its own seeds to its progress callback."""
        dt = max(1e-9, time.perf_counter() - t_loop)
        for ri in dict.fromkeys(self.member_run[p] for p in due):
            run = self.runs[ri]
            if run.progress is None:
                continue
            mine = [p for p, r in enumerate(self.member_run) if r == ri]
            tracks = [self.detector.tracks.get(p) for p in mine]
            grokked = sum(t is not None and t.grok_step is not None for t in tracks)
            rows = [r for r in run.rows[-len(run.seeds):] if r["step"] == step]
            best = max((r["val_acc"] for r in rows), default=float("nan"))
            n_active = sum(self.member_run[p] == ri for p in self.active)
            run.progress(Progress(step, run.cfg.steps, len(run.seeds), n_active, grokked,
                                  best, step / dt))

    def _summarize(self) -> None:
        """Each seed's scalar summaries of its metric curves (grokray.metrics.mechanism)."""
        import pandas as pd

        from grokray.metrics.mechanism import summarize

        for run in self.runs:
            if not run.rows:
                continue
            out = run.outcome
            grok = {s: r.grok_step for s, r in out.items()}  # copied seeds too
            for seed, summary in summarize(pd.DataFrame(run.rows), grok).items():
                if seed in out:
                    out[seed].metrics.update(summary)


class _Batcher:
    """Per-member shuffled mini-batches of positions in the train set (each member its own
    stream, from its seed)."""

    def __init__(self, seeds: list[int], n: int, batch: int) -> None:
        self.n, self.batch = n, batch
        self.gens = [seed_generator(s, 2) for s in seeds]
        self.perm: list[torch.Tensor] = []
        self.pos = 0

    def next(self, members: list[int]) -> torch.Tensor:
        """[S, batch] positions for the given (still active) member positions."""
        if self.pos + self.batch > self.n or not self.perm:
            self.perm = [torch.randperm(self.n, generator=g) for g in self.gens]
            self.pos = 0
        out = torch.stack([self.perm[m][self.pos:self.pos + self.batch] for m in members])
        self.pos += self.batch
        return out

    def state(self, m: int) -> dict[str, np.ndarray]:
        """Member m's stream: its generator, its current permutation and the shared position."""
        out = {"rng.batch": self.gens[m].get_state().numpy().copy(),
               "rng.pos": np.array(self.pos, dtype=np.int64)}
        if self.perm:
            out["rng.perm"] = self.perm[m].numpy().copy()
        return out

    def load(self, m: int, state: dict[str, np.ndarray]) -> None:
        """Restore member m's stream (`state`)."""
        self.gens[m].set_state(torch.from_numpy(np.asarray(state["rng.batch"]).copy()))
        self.pos = int(state["rng.pos"])
        if "rng.perm" in state:
            if not self.perm:
                self.perm = [torch.empty(self.n, dtype=torch.long) for _ in self.gens]
            self.perm[m] = torch.from_numpy(np.asarray(state["rng.perm"]).copy())


def _labels(tasks: list, member_run: list[int]) -> torch.Tensor:  # noqa: ANN001 - Task
    """The answers y of the tasks: [N] when they are one table, else [S, N] (member i the
    table of tasks[member_run[i]]); the tasks must share their pairs (a, b)."""
    first = tasks[0]
    if all(t is first or torch.equal(t.y, first.y) for t in tasks):
        return first.y
    if not all(torch.equal(t.a, first.a) and torch.equal(t.b, first.b) for t in tasks):
        raise ValueError("a pack's tasks must share their pairs (a, b): groups of one order")
    return torch.stack([tasks[ri].y for ri in member_run])


def _subsample(idx: torch.Tensor, m: int, seed: int, stream: int) -> torch.Tensor:
    if len(idx) <= m:
        return idx
    return idx[torch.randperm(len(idx), generator=seed_generator(seed, stream))[:m]]


def chunk_pairs(budget: int, n_out: int, S: int, pair_floats: int = 0, cpu: bool = True
                ) -> int:
    """Pairs per chunk so that one logits tensor [S, chunk, n_out] holds <= budget elements;
    on CPU also the logits and `pair_floats` more per pair and seed <= CPU_CHUNK_BUDGET
    (cache-sized working sets), both over CHUNK_SEEDS seeds whatever S: a seed's chunks are
    those of its trial alone (and of `grokray recompute`'s one-seed model)."""
    if cpu:
        return max(1, min(budget // (CHUNK_SEEDS * n_out),
                          CPU_CHUNK_BUDGET // (CHUNK_SEEDS * (n_out + pair_floats))))
    return max(1, budget // max(1, S * n_out))


def pred_table(task, pred: torch.Tensor) -> torch.Tensor | None:  # noqa: ANN001 - Task
    """The predicted table [S, n, n] from predictions [S, N] over every task pair (None when
    the task's pairs are not every (a, b) of its n elements)."""
    n = task.n_in
    if len(task) != n * n:
        return None
    table = torch.empty_like(pred)
    table[:, task.a * n + task.b] = pred
    return table.view(-1, n, n)

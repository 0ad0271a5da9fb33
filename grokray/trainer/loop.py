"""The training loop: evaluate at step 0, then step, check the losses, evaluate when due, and
stop members as the stopping rule says, until every member has stopped; at the top of a step,
checkpoint when due (grokray.checkpoint)."""

from __future__ import annotations

import time

import torch

from grokray.errors import GrokrayError, error_line
from grokray.trainer.checkpointer import Checkpointer
from grokray.trainer.evaluate import Evaluator, summarize
from grokray.trainer.pickup import pick_up, replay
from grokray.trainer.snapshot_hooks import SnapshotHooks
from grokray.trainer.stack import Stack
from grokray.trainer.step import train_step
from grokray.trainer.stopping import StoppingRule, outcome
from grokray.trialrun import Progress, TrialRun


def train(run: TrialRun) -> None:
    """Train every seed of `run` by gradient descent, recording outcomes and curve rows."""
    train_pack([run])


def train_pack(runs: list[TrialRun]) -> None:
    """Train the trials `runs` (configs of one `grokray.pack.pack_key`) as one stack of members,
    each recording its own outcomes and curve rows as it would alone."""
    # a trial restored from a checkpoint at which every seed had finished: its summaries only
    summarize([r for r in runs if not r.seeds and r.checkpoint_step is not None])
    runs = [r for r in runs if r.seeds]  # a continued trial's copied seeds need no training
    if runs:
        Training(runs).run()


class Training:
    """One stack of members in training: the stack, its eval, its stopping rule and its
    snapshot hooks."""

    def __init__(self, runs: list[TrialRun]) -> None:
        self.stack = st = Stack(runs)
        self.evaluator = Evaluator(st)
        self.stopping = StoppingRule(st.cfg)
        self.snaps = SnapshotHooks(st, self.evaluator.schedules)
        self.start = pick_up(st) if any(r.pickup is not None for r in runs) else 0
        """the step training starts from (a continued or restored run's: grokray.trainer.pickup)"""

    def run(self) -> None:
        st, step = self.stack, self.start
        t_loop = time.perf_counter()
        pickups = [r.pickup for r in st.runs if r.pickup is not None]
        ckpt, ended = None, False
        try:
            if pickups:
                replay(st, self.evaluator, self.stopping, self.snaps)
            ckpt = self.checkpointer(step)  # its deltas hold what is recorded from here on
            if not any(r.evaluated for r in pickups):  # a checkpoint's eval was taken
                self.evaluate(step, list(st.active))
            check_every = 1 if st.device.type == "cpu" else 16  # a GPU sync costs a step
            while step < max(st.steps) and st.active:
                if ckpt is not None:
                    ckpt.maybe(step)
                loss = train_step(st, step)
                step += 1
                checked = [step % check_every == 0 or self.evaluator.is_eval(st, p, step)
                           for p in st.active]
                self.stop(self.stopping.non_finite(loss, st.active, checked), "diverged",
                          step - 1, error=f"non-finite loss at step {step - 1}")
                if not st.active:
                    break
                due = self.evaluator.due(st, step)
                if due:
                    self.evaluate(step, due)
                    self.report(step, t_loop, due)
                self.end([p for p in st.active if step == st.steps[p]], step)
            ended = True
        except Exception as exc:
            # a user's mistake is raised by run_trial; any other error fails the active seeds
            for pos in st.active:
                self.finish(pos, "failed", step, error=error_line(exc))
            st.active = []
            if isinstance(exc, GrokrayError):
                raise
        self.end(list(st.active), step)
        if ckpt is not None and ended:  # asked while it ended: its result may not land
            ckpt.at_end(step)
        self.snaps.close(st)
        summarize(st.runs)

    def checkpointer(self, step: int) -> Checkpointer | None:
        """What takes this stack's checkpoints from `step` on (None: its trials keep none:
        grokray.checkpoint)."""
        hook = self.stack.runs[0].checkpoints
        if hook is None:
            return None
        return Checkpointer(self.stack, self.snaps.recorders, hook,
                            self.stack.cfg.checkpoint_every, step)

    @torch.no_grad()
    def evaluate(self, step: int, due: list[int]) -> None:
        """The eval at `step`: the rows of the members in `due`, their snapshots, and those that
        stop here (diverged, or grokked and held) finished and dropped."""
        st = self.stack
        rows = self.evaluator.evaluate(st, step, due)
        diverged, finished = self.stopping.after_eval(step, rows)
        self.snaps.at_eval(st, step, due, {p: self.stopping.track(p) for p in due})
        for pos in diverged:
            self.finish(pos, "diverged", step, error=f"non-finite eval loss at step {step}")
        for pos in finished:
            self.finish(pos, "grokked", step)
        st.drop(diverged + finished)

    def end(self, positions: list[int], step: int) -> None:
        """Finish the members at `positions`, whose budget is spent, and drop them."""
        for pos in positions:
            self.finish(pos, self.stopping.at_budget(pos), step)
        self.stack.drop(positions)

    def stop(self, positions: list[int], status: str, step: int, error: str | None = None
             ) -> None:
        """Finish the members at `positions` with `status` and drop them."""
        for pos in positions:
            self.finish(pos, status, step, error)
        self.stack.drop(positions)

    def finish(self, pos: int, status: str, step: int, error: str | None = None) -> None:
        """Record the outcome of the member at `pos` (and its end snapshot, unless it failed
        or diverged)."""
        st = self.stack
        if status in ("grokked", "not_grokked"):
            self.snaps.at_end(st, pos, step)
        run, seed = st.runs[st.member_run[pos]], st.seeds[pos]
        run.outcome[seed] = outcome(run, seed, status, step, self.stopping.track(pos),
                                    self.evaluator.last.get(pos, {}), error)

    def report(self, step: int, t_loop: float, due: list[int]) -> None:
        """Each trial with a member in `due` reports its own seeds to its progress callback."""
        st = self.stack
        dt = max(1e-9, time.perf_counter() - t_loop)
        for ri in dict.fromkeys(st.member_run[p] for p in due):
            run = st.runs[ri]
            if run.progress is None:
                continue
            tracks = [self.stopping.track(p) for p, r in enumerate(st.member_run) if r == ri]
            grokked = sum(t is not None and t.grok_step is not None for t in tracks)
            rows = [r for r in run.rows[-len(run.seeds):] if r["step"] == step]
            best = max((r["val_acc"] for r in rows), default=float("nan"))
            n_active = sum(st.member_run[p] == ri for p in st.active)
            run.progress(Progress(step, run.cfg.steps, len(run.seeds), n_active, grokked,
                                  best, step / dt))

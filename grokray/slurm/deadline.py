"""The sweep driver's scheduling policy under a time limit (grokray.sweep.driver.SchedulingPolicy):
start only the trials that can finish before the allocation's end, in rounds, and say whether
the allocation made progress.

`grokray sweep` inside a Slurm job whose allocation has an end time (`allocation.end_time`)
gives the driver a `Deadline`, which runs the plan through `Deadline.run` instead of all at
once:

    round:   the configs still to do, longest first, are laid on the run's slots as the cost
             model prices them (upper bound: every seed to its budget, at this host's speed;
             GPU trials at the model's nominal GPU time; a trial with a checkpoint for the
             steps it has left, and laid first: finishing it is cheap and lands its rows), times
             the pace this allocation has shown; a config is started only where it would end
             before the driver must be done (the time-limit signal's moment, `stop_at`)
    pace:    the cost model prices a trial at the host's unloaded sgemm rate; a loaded node runs
             it 2-4x slower. Each trial that finishes in this allocation is a measurement
             (its wall time over the model's time for the steps it trained), and the estimates
             are scaled by the median of them (never below 1x). Until one is in, a round holds
             one wave (a trial per slot), so that the rest are priced at the measured pace
    again:   after a round, with the time then left (trials that stopped early leave room)
    stop:    when no config left fits: `later` holds them, for the job's next allocation

A trial that cannot fit in any allocation (its estimate is longer than the whole `--time`) is
never started, and the allocation that made no progress says so (`EXIT_NO_PROGRESS`) rather
than being requeued again and again. A search (Optuna) samples its configs as it goes: it runs
unrounded, until the signal.
"""

from __future__ import annotations

import dataclasses
import heapq
import os
import statistics
import time
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import TYPE_CHECKING

from grokray.slurm import EXIT_MORE_TO_DO, EXIT_NO_PROGRESS, allocation

if TYPE_CHECKING:  # pragma: no cover
    from grokray.config import TrialConfig
    from grokray.sweep.driver import Slots
    from grokray.sweep.outcome import Outcome
    from grokray.sweep.plan import Plan

OVERHEAD_S = 5.0
"""seconds a trial costs on top of the cost model's estimate (Tune's start, the write)"""


MIN_MEASURED_S = 2.0
"""a finished trial the cost model prices under this many seconds is no measurement of pace:
its time is mostly its start"""


def model_seconds(cfg: TrialConfig, gpu: float = 0.0,
                  steps: Sequence[int] | None = None, done: int = 0) -> float | None:
    """Cost-model seconds of `cfg` when its seeds run `steps` steps each (default: every seed to
    its budget less `done`, the steps a checkpoint already holds: the upper bound): CPU time at
    this host's sgemm rate, or the nominal GPU time when the trial holds a GPU; None when its
    family has no cost model."""
    from grokray.cost import table as cost_table
    from grokray.cost.host import host_gflops
    from grokray.cost.model import has_model, trial_cost
    from grokray.cost.steps import budget

    if not has_model(cfg):
        return None
    if steps is None:
        steps = [max(0, budget(cfg) - done)] * len(cfg.seeds)
    c = trial_cost(cfg, list(steps))
    if gpu > 0:
        return c.gpu_s
    ref = float(cost_table.load()["reference_host"]["sgemm_gflops"])
    rate, _ = host_gflops()
    return c.cpu_s * ref / rate


def trial_seconds(cfg: TrialConfig, gpu: float = 0.0, pace: float = 1.0) -> float | None:
    """Upper-bound seconds of `cfg` (every seed to its budget) at `pace` times the cost model's
    time, with a trial's start and write (`OVERHEAD_S`); None without a cost model."""
    s = model_seconds(cfg, gpu)
    return None if s is None else s * pace + OVERHEAD_S


def measured_pace(outcome: Outcome, gpu: float = 0.0) -> float | None:
    """A finished trial's wall time over the cost model's time for the steps it trained here
    (past a checkpoint or a continued start); None when it is no measurement: it failed, its
    family has no cost model, or the model prices it under MIN_MEASURED_S."""
    result = getattr(outcome, "result", None)
    if result is None or getattr(outcome, "error", None) or outcome.wall_s <= 0:
        return None
    steps = [max(0, s.steps_run - (s.checkpoint_step or s.continued_from_step or 0))
             for s in result.seeds]
    priced = model_seconds(outcome.config, gpu, steps)
    if priced is None or priced < MIN_MEASURED_S:
        return None
    return outcome.wall_s / priced


def pace_of(measured: Sequence[float]) -> float:
    """The factor the cost model's times are scaled by: the median measured pace (one slow or
    fast trial does not swing it), never below 1x; 1x without a measurement."""
    return max(1.0, statistics.median(measured)) if measured else 1.0


def fitting(configs: Sequence[TrialConfig], seconds: Sequence[float | None], slots: int,
            left: float, needs: Sequence[float | None] | None = None,
            first: Collection[int] = ()) -> tuple[list[int], list[int]]:
    """Indices of `configs` that fit in `left` seconds on `slots` slots, laid as the executors
    take them (a slot takes the next config as soon as it is free; `lay_order`: the indices in
    `first` before the others, each part longest first), and of the rest. A config fits when it
    would reach its end, or sooner its first checkpoint (`needs`: seconds to it, None without
    checkpoints), before `left`; it holds its slot for its `seconds`. A config without an
    estimate fits whenever a slot is free before `left`."""
    order = lay_order(range(len(configs)), seconds, first)
    free = [0.0] * max(1, slots)
    fits, rest = [], []
    for i in order:
        start = free[0]
        need = seconds[i] or 0.0
        if needs is not None and needs[i] is not None and seconds[i]:
            need = min(need, needs[i])  # a trial shorter than its checkpoint interval: its end
        if start + need <= left and start < left:
            heapq.heapreplace(free, start + (seconds[i] or 0.0))
            fits.append(i)
        else:
            rest.append(i)
    return sorted(fits), sorted(rest)


def lay_order(indices: Iterable[int], seconds: Sequence[float | None],
              first: Collection[int] = ()) -> list[int]:
    """`indices` in the order trials are started: those in `first` (trials with a checkpoint:
    finishing one is cheap and lands its rows) before the others, each part longest first."""
    return sorted(indices, key=lambda i: (i not in first, -(seconds[i] or 0.0)))


def first_checkpoint_s(cfg: TrialConfig) -> float | None:
    """Seconds of trial time until a new trial of `cfg` checkpoints (None: it never does)."""
    try:
        from grokray.checkpoint.hook import first_checkpoint_s as first
    except ImportError:  # a grokray without trial checkpoints
        return None
    return first(cfg)


@dataclasses.dataclass
class Deadline:
    """When the driver must be done: `stop_at` (epoch seconds), the allocation's end less the
    signal's lead. The sweep driver's scheduling policy in a Slurm job
    (grokray.sweep.driver.SchedulingPolicy)."""

    more_to_do_exit = EXIT_MORE_TO_DO
    no_progress_exit = EXIT_NO_PROGRESS

    stop_at: float
    job: str
    started: float = dataclasses.field(default_factory=time.time)
    secs: dict[str, float | None] = dataclasses.field(default_factory=dict)
    """config_hash -> the estimate the last round used"""
    measured: list[float] = dataclasses.field(default_factory=list)
    """the pace of each trial that finished in this allocation (`measured_pace`)"""
    _seen: int = dataclasses.field(default=0, repr=False)
    """outcomes already taken by `learn`"""

    def left(self) -> float:
        return self.stop_at - time.time()

    def pace(self) -> float:
        return pace_of(self.measured)

    def learn(self, outcomes: Sequence[Outcome], gpu: float = 0.0) -> None:
        """Take the pace of each finished trial of `outcomes` not yet seen."""
        for o in outcomes[self._seen:]:
            if (m := measured_pace(o, gpu)) is not None:
                self.measured.append(m)
        self._seen = len(outcomes)

    def run(self, plan: Plan, run_part: Callable[[Plan], None], session: Slots | None,
            outcomes: Callable[[], Sequence[Outcome]] | None = None,
            say: Callable[[str], None] = print) -> list[TrialConfig]:
        """Run `plan`'s configs (`run_part(plan)` runs a part of it: the sweep driver's) in
        rounds of those that fit in the time left; the configs left for the next allocation
        (empty when everything ran). `outcomes` gives every trial finished so far in this
        allocation (the writer's), whose pace scales the estimates; without it the cost
        model's times are used as they are; `say` tells the user of each round. A search
        runs whole."""
        spec = plan.spec
        if spec.search is not None or session is None:
            run_part(plan)
            return []
        todo = list(plan.todo)
        # a trial cut short in an earlier allocation is restored from its checkpoint: priced for
        # the steps it has left
        done = checkpoint_steps(spec.sweep_dir)
        model = {c.config_hash(): model_seconds(c, spec.gpu, done=done.get(c.config_hash(), 0))
                 for c in todo}
        # a trial that checkpoints need only reach its first checkpoint (seconds of trial
        # time, after its start): the next allocation restores it from there
        needs = {c.config_hash(): None if (f := first_checkpoint_s(c)) is None
                 else f + OVERHEAD_S for c in todo}
        slots = session.slots(spec.cpu, spec.concurrency) if spec.gpu <= 0 else \
            session.gpu_slots(spec.gpu, spec.concurrency)
        probe = outcomes is not None and any(v is not None for v in model.values())
        while todo:
            pace = self.pace()
            self.secs = {h: None if m is None else m * pace + OVERHEAD_S
                         for h, m in model.items()}
            secs = [self.secs[c.config_hash()] for c in todo]
            resumed = {i for i, c in enumerate(todo) if done.get(c.config_hash(), 0) > 0}
            fits, rest = fitting(todo, secs, slots, self.left(),
                                 [needs[c.config_hash()] for c in todo], resumed)
            if not fits:
                break
            now = [todo[i] for i in lay_order(fits, secs, resumed)]
            if probe and not self.measured and len(fits) > slots:
                # no pace measured yet: one wave (the first a trial per slot) first
                wave = lay_order(fits, secs, resumed)[:slots]
                rest = sorted(set(rest) | (set(fits) - set(wave)))
                now = [todo[i] for i in wave]
                say(f"grokray sweep: {len(now)} of {len(todo)} trials first, to measure how "
                    "fast trials run in this allocation; the rest are priced at that pace")
            elif rest:
                at = f" at {pace:.1f}x the cost model's time" if pace > 1.0 else ""
                say(f"grokray sweep: {len(now)} of {len(todo)} trials can finish in the "
                    f"{self.left() / 60:.1f} min left of this allocation{at}; the rest wait")
            probe = False
            run_part(dataclasses.replace(plan, todo=now))
            if outcomes is not None:
                self.learn(outcomes(), spec.gpu)
            todo = [todo[i] for i in rest]
        return todo

    def stop_wait_s(self, default_s: float = 30.0) -> float:
        """Seconds a graceful stop may wait for the running trials' checkpoints: what the
        allocation has left less STOP_S, between 5 s and 120 s."""
        end = self.stop_at + allocation.signal_lead()
        return max(5.0, min(120.0, end - time.time() - STOP_S))

    def made_progress(self, plan: Plan) -> bool:
        """Did this allocation write a row, or a checkpoint newer than its start?"""
        return progress(plan, self)

    def later_line(self, later: Sequence[TrialConfig]) -> str:
        """What waits for the next allocation, and the longest of it."""
        longest = max((s for c in later if (s := self.secs.get(c.config_hash()))),
                      default=None)
        how = f" (the longest about {longest / 60:.1f} min)" if longest else ""
        return (f"grokray sweep: {len(later)} trials cannot finish in the "
                f"{max(0.0, self.left()) / 60:.1f} min left of Slurm job {self.job}{how}; "
                "they run in its next allocation")

    def no_progress_line(self, later: Sequence[TrialConfig] = ()) -> str:
        """The one line of an allocation that wrote nothing new."""
        longest = max((s for c in later if (s := self.secs.get(c.config_hash()))),
                      default=None)
        need = (f"; its trials need up to {longest / 60:.1f} min each (cost model, every seed "
                "to its budget): ask for a longer --time") if longest else ""
        return (f"grokray sweep: no new row and no newer checkpoint in this allocation of Slurm "
                f"job {self.job} ({(time.time() - self.started) / 60:.1f} min); a requeue would "
                f"do the same, so the job stops here{need}")


def from_env(env: dict[str, str] | None = None) -> Deadline | None:
    """The deadline of this Slurm job (None outside one, or without a time limit, or with
    GROKRAY_SLURM_DEADLINE=off)."""
    env = os.environ if env is None else env
    job = allocation.job_id(env)
    if job is None or env.get("GROKRAY_SLURM_DEADLINE", "").lower() == "off":
        return None
    end = allocation.end_time(job, env)
    if end is None:
        return None
    return Deadline(stop_at=end - allocation.signal_lead(env), job=job)


def progress(plan: Plan, deadline: Deadline) -> bool:
    """Did this run write a row, or a checkpoint newer than its start?"""
    from grokray.sweep.writer import trials_written

    return trials_written(plan) > 0 or newest_checkpoint(plan.spec.sweep_dir) > deadline.started


def newest_checkpoint(sweep_dir: str) -> float:
    """Epoch seconds of the newest file under the sweep's checkpoints/ (0 when none)."""
    import pyarrow.fs as pafs

    from grokray.reader import Location
    from grokray.sweep.checkpoint_store import CHECKPOINTS

    loc = Location.of(sweep_dir)
    sel = pafs.FileSelector(loc.join(CHECKPOINTS), recursive=True, allow_not_found=True)
    try:
        infos = loc.fs.get_file_info(sel)
    except (OSError, ValueError):
        return 0.0
    return max((i.mtime.timestamp() for i in infos
                if i.type == pafs.FileType.File and i.mtime is not None), default=0.0)


def checkpoint_steps(sweep_dir: str) -> dict[str, int]:
    """config_hash -> the step of its newest checkpoint state under the sweep's checkpoints/
    (from the file names; whether it can be used is the trial's to find out)."""
    from grokray.sweep.checkpoint_store import Files

    try:
        files = Files(sweep_dir)
        return {h: steps[-1] for h in files.hashes() if (steps := files.state_steps(h))}
    except (OSError, ValueError):
        return {}


STOP_S = 45.0
"""seconds the driver keeps for itself after the checkpoints on a graceful stop: writing what
finished, leaving Ray; the job's script stops Ray and requeues after it"""


def ask_checkpoints(deadline: Deadline | None, default_s: float = 30.0) -> str | None:
    """On a graceful stop (SIGTERM), before Ray goes: ask every running trial to checkpoint now
    and wait until each has (or finished, or the time the stop leaves ran out): at most what the
    allocation has left less STOP_S (`default_s` outside a Slurm job). The line to print, None
    when no sweep with checkpoints runs (grokray.sweep.driver.checkpoint_running)."""
    from grokray.sweep.driver import checkpoint_running

    return checkpoint_running(default_s if deadline is None else deadline.stop_wait_s())

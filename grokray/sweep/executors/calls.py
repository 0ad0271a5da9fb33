"""Worker calls: the unit the driver sends to one Ray worker (one call of a warm worker, or one
Ray Tune trial), which configs share one, in which order they go, and how a worker runs one.

A call holds one pack (configs of one shape trained as one stack: `packing.packs`) or configs
run one after another. A tiny config runs in about the time Ray Tune spends on one trial of its
own (about 0.1 s on a 2-core machine, benchmarks/bench_sweep_overhead.py), so tiny configs
share a call (`tiny_calls`); the warm workers start the longest calls first
(`longest_first`). Both size a config by `pair_steps`: steps x seeds x train pairs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from grokray.config import TrialConfig
from grokray.groups import parse
from grokray.sweep.checkpoint_actor import worker_hook
from grokray.sweep.checkpoint_store import channel
from grokray.sweep.executors.packing import fit_device, free_bytes, packs
from grokray.sweep.outcome import Outcome, TrialFn, default_trial_fn, execute, execute_pack
from grokray.threads import torch_threads, trial_threads

TINY_PAIR_STEPS = 200_000
"""A config is tiny when steps x seeds x train pairs is at most this (e.g. Z5 for 1,000 steps
with 4 seeds): its run takes about as long as Tune's own work per trial."""
MAX_TINY = 16
"""At most this many tiny configs share one call."""
CALL_PAIR_STEPS = 8 * TINY_PAIR_STEPS
"""... and at most this many pair-steps in all (a call of the largest tiny configs: 8)."""
TRIALS_PER_SLOT = 2
"""Tiny configs are spread so that every concurrent slot gets about this many calls (load
balance; each Tune trial costs about 0.1-0.4 s of Tune's own work, bench_sweep_overhead.py)."""


@dataclass(frozen=True)
class WorkerCall:
    """What one Ray worker runs in one call."""

    configs: list[TrialConfig]
    packed: bool = False
    """the configs train as one pack (one shape, one stack of members), not one after another"""


def worker_calls(configs: Sequence[TrialConfig], slots: int, pack: int | None, gpu: float,
                 packable: bool = True) -> list[WorkerCall]:
    """A grid's calls for `slots` concurrent workers holding `gpu` of a device each: each pack
    of several configs (`packing.packs`, from `--pack`: 1 off, None auto, N) one call, first;
    then the configs left alone, the tiny ones several to a call (`tiny_calls`). `packable`
    False (a trial function of one's own): nothing packs."""
    groups = packs(configs, slots, pack, gpu) if packable else [[i] for i in range(len(configs))]
    alone = [g[0] for g in groups if len(g) == 1]
    rest = tiny_calls([configs[i] for i in alone], slots)
    return ([WorkerCall([configs[i] for i in g], packed=True) for g in groups if len(g) > 1]
            + [WorkerCall([configs[alone[j]] for j in b]) for b in rest])


def pair_steps(cfg: TrialConfig) -> float:
    """steps x seeds x train pairs of `cfg`: its estimated work (inf for a group it cannot
    size, which then fails in its trial, not here)."""
    try:
        n = parse(cfg.group, cap=10**12).order  # the order from the name: nothing is built
    except Exception:  # noqa: BLE001 - an unknown group fails in its trial, not here
        return math.inf
    return cfg.steps * len(cfg.seeds) * n * n * cfg.train_frac


def tiny_calls(configs: Sequence[TrialConfig], slots: int) -> list[list[int]]:
    """Indices of `configs` grouped into calls: each non-tiny config alone; the tiny ones
    (`TINY_PAIR_STEPS`) in runs of up to `MAX_TINY` configs and `CALL_PAIR_STEPS` pair-steps,
    small enough that every one of the `slots` concurrent workers still gets about
    `TRIALS_PER_SLOT` calls (load balance)."""
    work = [pair_steps(c) for c in configs]
    tiny = [i for i, w in enumerate(work) if w <= TINY_PAIR_STEPS]
    size = max(1, min(MAX_TINY, len(tiny) // (TRIALS_PER_SLOT * max(1, slots))))
    calls = [[i] for i, w in enumerate(work) if w > TINY_PAIR_STEPS]
    run: list[int] = []
    for i in tiny:
        if run and (len(run) == size or sum(work[j] for j in run) + work[i] > CALL_PAIR_STEPS):
            calls.append(run)
            run = []
        run.append(i)
    return calls + ([run] if run else [])


def longest_first(calls: Sequence[WorkerCall]) -> list[int]:
    """Call indices by estimated work (`pair_steps`), largest first (given order among equals):
    the longest trials start first and the short ones fill in, so that no slot is left running
    one long trial alone at the end. Replaying the trial times of the CPU ledger run of
    2026-12-01 15:00 on 2 slots (a simulation, benchmarks/README.md): `scaling_cpu`, whose grid
    lists the groups by order, 510 -> 470 s; the other sweeps unchanged, nonabelian_cpu +1.3 s."""
    work = [sum(pair_steps(c) for c in call.configs) for call in calls]
    return sorted(range(len(calls)), key=lambda i: -work[i])


def run_call(call: WorkerCall, trial_fn: TrialFn | None, node: str, *, cpu: float,
             log: bool = False) -> list[Outcome]:
    """What a worker does with `call` (in this process): its configs one after the other
    (`trial_fn`, default `grokray.trainer.run_trial`), or its pack as one stack, split on CUDA
    to fit this process's free device memory (`packing.fit_device`); each outcome stamped with
    `node` (the Ray node's id), in the order of `call.configs`. The call trains on the torch
    threads of a trial holding `cpu` CPUs (`grokray.threads.trial_threads`), this process's own
    count restored after. `log`: a trial's traceback goes to stdout (a Ray worker's log)."""
    with torch_threads(trial_threads(cpu)):
        return _run_call(call, trial_fn, node, log)


def _run_call(call: WorkerCall, trial_fn: TrialFn | None, node: str,
              log: bool) -> list[Outcome]:
    configs = call.configs
    hook = checkpoint_hook(node) if trial_fn is None else None  # the default trial's only
    fn = trial_fn or default_trial_fn(hook)
    packed = call.packed and trial_fn is None and len(configs) > 1
    parts = fit_device(configs, free_bytes(configs[0])) if packed else \
        [[i] for i in range(len(configs))]
    outs: list[Outcome] = []
    for part in parts:
        done = execute_pack([configs[i] for i in part], hook) if len(part) > 1 else \
            [execute(configs[part[0]], fn)]
        for out in done:
            out.node_id = node
            if log and out.traceback:
                print(out.traceback, flush=True)  # lands in Ray's worker log
            outs.append(out)
    return outs


def checkpoint_hook(node: str) -> Any:
    """Where this worker's trials keep their checkpoints (grokray.checkpoint.Hook): in the
    driver's own process (`node` "local") its channel, on a Ray worker the driver's checkpoint
    actor (grokray/sweep/checkpoint_actor.py); None when there is none."""
    return channel() if node == "local" else worker_hook()

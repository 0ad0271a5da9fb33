"""Which configs share one worker call, and in what order the calls go: the batching policy.

A tiny config runs in about the time Ray Tune spends on one trial of its own (about 0.1 s on a
2-core machine, benchmarks/bench_sweep_overhead.py), so tiny configs run several in a row in
one call (`tiny_batches`); the warm workers start the longest calls first (`longest_first`).
Both size a config by `pair_steps`: steps x seeds x train pairs. With `--pack`, configs of one
shape share a call as one pack (`pack_groups`, `pack_batches`), sized by `pack_size` and, for
`auto`, per shape by `pack_limit` (CPU: work per seed-step; CUDA: the memory estimate of
grokray.cost.memory, `fit_device` in the worker).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from grokray.config import TrialConfig

TINY_PAIR_STEPS = 200_000
"""A config is tiny when steps x seeds x train pairs is at most this (e.g. Z5 for 1,000 steps
with 4 seeds): its run takes about as long as Tune's own work per trial."""
MAX_BATCH = 16
"""At most this many tiny configs share one call."""
BATCH_PAIR_STEPS = 8 * TINY_PAIR_STEPS
"""... and at most this many pair-steps in all (a batch of the largest tiny configs: 8)."""
TRIALS_PER_SLOT = 2
"""Tiny configs are spread so that every concurrent slot gets about this many calls (load
balance; each Tune trial costs about 0.1-0.4 s of Tune's own work, bench_sweep_overhead.py)."""


def pair_steps(cfg: TrialConfig) -> float:
    """steps x seeds x train pairs of `cfg`: its estimated work (inf for a group it cannot
    size, which then fails in its trial, not here)."""
    from grokray.groups import parse

    try:
        n = parse(cfg.group, cap=10**12).order  # the order from the name: nothing is built
    except Exception:  # noqa: BLE001 - an unknown group fails in its trial, not here
        return math.inf
    return cfg.steps * len(cfg.seeds) * n * n * cfg.train_frac


def tiny_batches(configs: Sequence[TrialConfig], slots: int) -> list[list[int]]:
    """Indices of `configs` grouped into calls: each non-tiny config alone; the tiny ones
    (`TINY_PAIR_STEPS`) in runs of up to `MAX_BATCH` configs and `BATCH_PAIR_STEPS` pair-steps,
    small enough that every one of the `slots` concurrent workers still gets about
    `TRIALS_PER_SLOT` calls (load balance)."""
    work = [pair_steps(c) for c in configs]
    tiny = [i for i, w in enumerate(work) if w <= TINY_PAIR_STEPS]
    size = max(1, min(MAX_BATCH, len(tiny) // (TRIALS_PER_SLOT * max(1, slots))))
    batches = [[i] for i, w in enumerate(work) if w > TINY_PAIR_STEPS]
    run: list[int] = []
    for i in tiny:
        if run and (len(run) == size or sum(work[j] for j in run) + work[i] > BATCH_PAIR_STEPS):
            batches.append(run)
            run = []
        run.append(i)
    return batches + ([run] if run else [])


def pack_groups(configs: Sequence[TrialConfig], size: int,
                limit: Callable[[TrialConfig], int] | None = None) -> list[list[int]]:
    """Indices of `configs` grouped into packs: configs of one `grokray.pack.pack_key` (one
    shape), in grid order, at most `size` to a pack (and at most `limit(config)` for a shape,
    asked once per shape: `pack_limit`); a config that does not pack stays alone."""
    from grokray.pack import pack_key

    if size <= 1:
        return [[i] for i in range(len(configs))]
    open_packs: dict[str, list[int]] = {}
    caps: dict[str, int] = {}
    groups: list[list[int]] = []
    for i, cfg in enumerate(configs):
        key = pack_key(cfg)
        if key is None:
            groups.append([i])
            continue
        if key not in caps:
            caps[key] = size if limit is None else max(1, min(size, limit(cfg)))
        group = open_packs.get(key)
        if group is None or len(group) >= caps[key]:
            group = open_packs[key] = []
            groups.append(group)
        group.append(i)
    return groups


PACK_MEMBERS = 64
"""`--pack auto` puts at most this many members (config, seed) in one pack (on CPU a pack of
more gains little: MLP D4 4.4x from 2 to 16 seeds per trial, issue 25)"""


def parse_pack(value: str) -> int | None:
    """`--pack`: off -> 1, auto -> None (sized by `pack_size`), N -> N (>= 1); ValueError
    naming the valid values otherwise."""
    v = str(value).strip().lower()
    if v == "off":
        return 1
    if v == "auto":
        return None
    if v.isdigit() and int(v) >= 1:
        return int(v)
    raise ValueError(f"--pack {value!r}: valid: off, auto, or a number of configs >= 1")


GPU_PACK_MEMBERS = 4096
"""... and on CUDA at most this many (the memory estimate, `pack_limit`, is what bounds it)"""


def pack_size(configs: Sequence[TrialConfig], slots: int, pack: int | None,
              cuda: bool = False) -> int:
    """Configs per pack: `pack` as given, or (auto, None) enough that every one of the `slots`
    workers gets about one pack of each shape, at most PACK_MEMBERS members (GPU_PACK_MEMBERS
    when the trials hold a GPU, `cuda`); `pack_limit` then lowers it per shape."""
    if pack is not None:
        return pack
    if not configs:
        return 1
    seeds = max(len(c.seeds) for c in configs)
    per_slot = math.ceil(len(configs) / max(1, slots))
    cap = GPU_PACK_MEMBERS if cuda else PACK_MEMBERS
    return max(1, min(per_slot, cap // max(1, seeds)))


PACK_MAX_MACS = 50.0
"""On CPU `--pack auto` packs a shape only when one seed-step of it is at most this many million
multiply-adds (`grokray.cost.work.step_macs`): above it a step is arithmetic-bound and a pack
gains nothing (issue 25, per seed-step at 2 vs 16 seeds: FORGE S4, 129 M, 9.0 vs 8.3 ms; A5,
325 M, 23.5 vs 22.9 ms; FORGE S3, 9.7 M, 1.7x; MLP D4, 0.3 M, 4.4x; whole sweeps:
benchmarks/bench_pack_sweep.py, benchmarks/README.md)."""
GPU_MEMORY_SHARE = 0.8
"""`--pack auto` on CUDA fills at most this share of the device memory a trial may use with the
estimate (`grokray.cost.memory.pack_bytes`): the rest is the CUDA context, the allocator's cache
and the estimate's error."""


def pack_limit(cfg: TrialConfig, device_bytes: float | None = None) -> int:
    """Configs of `cfg`'s shape that `--pack auto` puts in one pack, at most. On CUDA (a
    `device_bytes`, the memory one trial may use, for a config not on the CPU): as many as
    fit `GPU_MEMORY_SHARE` of it, at most GPU_PACK_MEMBERS members; device `cuda` with the
    memory unknown here: GPU_PACK_MEMBERS (the worker splits a pack by its free memory,
    `fit_device`). On CPU: 1 (no packing) when one seed-step is above PACK_MAX_MACS, else
    PACK_MEMBERS members. A model the cost model cannot size packs as below the limit."""
    seeds = max(1, len(cfg.seeds))
    if cfg.device != "cpu" and device_bytes is not None:
        from grokray.cost.memory import members_that_fit

        members = members_that_fit(cfg, GPU_MEMORY_SHARE * device_bytes, GPU_PACK_MEMBERS)
        return max(1, members // seeds)
    if cfg.device == "cuda":
        return max(1, GPU_PACK_MEMBERS // seeds)
    cap = max(1, PACK_MEMBERS // seeds)
    try:
        from grokray.cost.work import KINDS, step_macs

        macs = step_macs(cfg, cfg.arch) if cfg.arch in KINDS else 0.0
    except Exception:  # noqa: BLE001 - a group it cannot size fails in its trial, not here
        return cap
    return 1 if macs > PACK_MAX_MACS else cap


def device_bytes(gpu: float = 1.0) -> float | None:
    """The device memory one trial may use on this machine: `gpu` (its share of a GPU, 0 =
    a whole one) x the first CUDA device's total; None without CUDA."""
    try:
        import torch

        if not torch.cuda.is_available():
            return None
        _, total = torch.cuda.mem_get_info()
    except Exception:  # noqa: BLE001 - no usable CUDA here
        return None
    return total * (gpu if 0 < gpu < 1 else 1.0)


def free_bytes(cfg: TrialConfig) -> float | None:
    """Free memory of the CUDA device `cfg` trains on in this worker; None on CPU."""
    if cfg.device == "cpu":
        return None
    try:
        import torch

        if not torch.cuda.is_available():
            return None
        return float(torch.cuda.mem_get_info()[0])
    except Exception:  # noqa: BLE001 - no usable CUDA: the trial says so itself
        return None


def fit_device(configs: Sequence[TrialConfig], free_bytes: float | None) -> list[list[int]]:
    """A pack split so that each part's estimate fits `GPU_MEMORY_SHARE` of `free_bytes` (a
    worker's free CUDA memory; None or a CPU pack: one part), in order."""
    if free_bytes is None or not configs or configs[0].device == "cpu":
        return [list(range(len(configs)))]
    n = pack_limit(configs[0], free_bytes)
    return [list(range(i, min(i + n, len(configs)))) for i in range(0, len(configs), n)]


def pack_batches(configs: Sequence[TrialConfig], slots: int, size: int,
                 limit: Callable[[TrialConfig], int] | None = None
                 ) -> tuple[list[list[int]], int]:
    """Worker calls when packing, and how many of them are packs (those come first): each pack
    of several configs (`pack_groups`, at most `limit` for a shape) one call; the configs that
    stay alone batched as `tiny_batches` does."""
    groups = pack_groups(configs, size, limit)
    alone = [g[0] for g in groups if len(g) == 1]
    rest = tiny_batches([configs[i] for i in alone], slots)
    packs = [g for g in groups if len(g) > 1]
    return packs + [[alone[j] for j in b] for b in rest], len(packs)


def auto_limit(gpu: float) -> Callable[[TrialConfig], int]:
    """`--pack auto`'s bound per shape (`pack_limit`) for trials that hold `gpu` of a device
    each (0: none, the CPU rule)."""
    dev = device_bytes(gpu) if gpu > 0 else None
    return lambda c: pack_limit(c, dev)


def worker_calls(configs: Sequence[TrialConfig], slots: int, pack: int | None, gpu: float,
                 packable: bool = True) -> tuple[list[list[int]], list[int]]:
    """A grid's worker calls (batches of indices into `configs`) and, for each, its configs
    per pack (1: a batch run one config after another). `pack`: `--pack` (1 off, None auto,
    sized by `pack_size` and bounded per shape by `auto_limit`); `packable` False (a trial
    function of one's own): never packed, tiny configs batched (`tiny_batches`)."""
    size = pack_size(configs, slots, pack, gpu > 0) if packable else 1
    if size <= 1:
        batches = tiny_batches(configs, slots)
        return batches, [1] * len(batches)
    batches, packs = pack_batches(configs, slots, size, auto_limit(gpu) if pack is None else None)
    return batches, [len(b) if k < packs else 1 for k, b in enumerate(batches)]


def longest_first(configs: Sequence[TrialConfig], batches: Sequence[Sequence[int]]
                  ) -> list[int]:
    """Batch indices by estimated work (`pair_steps`), largest first (grid order among equals):
    the longest trials start first and the short ones fill in, so that no slot is left running
    one long trial alone at the end. Replaying the trial times of the CPU ledger run of
    2026-12-01 15:00 on 2 slots (a simulation, benchmarks/README.md): `scaling_cpu`, whose grid
    lists the groups by order, 510 -> 470 s; the other sweeps unchanged, nonabelian_cpu +1.3 s."""
    work = [sum(pair_steps(configs[i]) for i in b) for b in batches]
    return sorted(range(len(batches)), key=lambda b: -work[b])

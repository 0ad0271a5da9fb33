"""How a grid's configs are packed: how many configs go in one pack and which ones, decided here
alone (the warm, Tune and in-process executors, and the dry run's counts, all ask `packs` /
`pack_size`).

A pack holds configs of one shape (`grokray.pack.pack_key`) trained as one stack of members.
`--pack` sets the size (`parse_pack`: off 1, auto None, N); `auto` gives every worker about one
pack of each shape (`pack_size`), at most PACK_MEMBERS members (GPU_PACK_MEMBERS on a GPU), and
bounds it per shape (`pack_limit`: on CPU no pack for arithmetic-bound shapes, on CUDA what
the memory estimate of grokray.cost.memory fits). A worker splits a CUDA pack by its own free
memory by the same rule (`fit_device`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch

from grokray.config import TrialConfig
from grokray.cost.memory import members_that_fit
from grokray.cost.work import KINDS, step_macs
from grokray.pack import pack_key

PACK_MEMBERS = 64
"""`--pack auto` puts at most this many members (config, seed) in one pack (on CPU a pack of
more gains little: MLP D4 4.4x from 2 to 16 seeds per trial: benchmarks/README.md)"""
GPU_PACK_MEMBERS = 4096
"""... and on CUDA at most this many (the memory estimate, `pack_limit`, is what bounds it)"""
PACK_MAX_MACS = 50.0
"""On CPU `--pack auto` packs a shape only when one seed-step of it is at most this many million
multiply-adds (`grokray.cost.work.step_macs`): above it a step is arithmetic-bound and a pack
gains nothing (per seed-step at 2 vs 16 seeds: FORGE S4, 129 M, 9.0 vs 8.3 ms; A5,
325 M, 23.5 vs 22.9 ms; FORGE S3, 9.7 M, 1.7x; MLP D4, 0.3 M, 4.4x; whole sweeps:
benchmarks/bench_pack_sweep.py, benchmarks/README.md)."""
GPU_MEMORY_SHARE = 0.8
"""`--pack auto` on CUDA fills at most this share of the device memory a trial may use with the
estimate (`grokray.cost.memory.pack_bytes`): the rest is the CUDA context, the allocator's cache
and the estimate's error."""


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


def packs(configs: Sequence[TrialConfig], slots: int, pack: int | None,
          gpu: float) -> list[list[int]]:
    """The packs of `configs` (indices, in grid order; a config that packs with none alone) for
    `slots` concurrent workers holding `gpu` of a device each (0: none): `--pack`'s size
    (`pack_size`), bounded per shape under auto (`auto_limit`)."""
    size = pack_size(configs, slots, pack, gpu > 0)
    return pack_groups(configs, size, auto_limit(gpu) if pack is None else None)


def pack_size(configs: Sequence[TrialConfig], slots: int, pack: int | None,
              cuda: bool = False) -> int:
    """Configs per pack: `pack` as given, or (auto, None) enough that every one of the `slots`
    workers gets about one pack of each shape, at most PACK_MEMBERS members (GPU_PACK_MEMBERS
    when the trials hold a GPU, `cuda`); `pack_limit` then lowers it per shape."""
    seeds = max((len(c.seeds) for c in configs), default=1)
    return size_of(len(configs), seeds, slots, pack, cuda)


def size_of(n_configs: int, seeds: int, slots: int, pack: int | None, cuda: bool = False) -> int:
    """`pack_size` of `n_configs` configs of at most `seeds` seeds each (a counted grid too)."""
    if pack is not None:
        return pack
    per_slot = math.ceil(n_configs / max(1, slots))
    cap = GPU_PACK_MEMBERS if cuda else PACK_MEMBERS
    return max(1, min(per_slot, cap // max(1, seeds)))


def pack_groups(configs: Sequence[TrialConfig], size: int,
                limit: Callable[[TrialConfig], int] | None = None) -> list[list[int]]:
    """Indices of `configs` grouped into packs: configs of one `grokray.pack.pack_key` (one
    shape), in grid order, at most `size` to a pack (and at most `limit(config)` for a shape,
    asked once per shape: `pack_limit`); a config that does not pack stays alone."""
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


def pack_limit(cfg: TrialConfig, device_bytes: float | None = None) -> int:
    """Configs of `cfg`'s shape that `--pack auto` puts in one pack, at most. On CUDA (a
    `device_bytes`, the memory one trial may use, for a config not on the CPU): as many as
    fit `GPU_MEMORY_SHARE` of it, at most GPU_PACK_MEMBERS members; device `cuda` with the
    memory unknown here: GPU_PACK_MEMBERS (the worker splits a pack by its free memory,
    `fit_device`). On CPU: 1 (no packing) when one seed-step is above PACK_MAX_MACS, else
    PACK_MEMBERS members. A model the cost model cannot size packs as below the limit."""
    seeds = max(1, len(cfg.seeds))
    if cfg.device != "cpu" and device_bytes is not None:

        members = members_that_fit(cfg, GPU_MEMORY_SHARE * device_bytes, GPU_PACK_MEMBERS)
        return max(1, members // seeds)
    if cfg.device == "cuda":
        return max(1, GPU_PACK_MEMBERS // seeds)
    cap = max(1, PACK_MEMBERS // seeds)
    try:

        macs = step_macs(cfg, cfg.arch) if cfg.arch in KINDS else 0.0
    except Exception:  # noqa: BLE001 - a group it cannot size fails in its trial, not here
        return cap
    return 1 if macs > PACK_MAX_MACS else cap


def auto_limit(gpu: float) -> Callable[[TrialConfig], int]:
    """`--pack auto`'s bound per shape (`pack_limit`) for trials that hold `gpu` of a device
    each (0: none, the CPU rule)."""
    dev = device_bytes(gpu) if gpu > 0 else None
    return lambda c: pack_limit(c, dev)


def device_bytes(gpu: float = 1.0) -> float | None:
    """The device memory one trial may use on this machine: `gpu` (its share of a GPU, 0 =
    a whole one) x the first CUDA device's total; None without CUDA."""
    try:

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

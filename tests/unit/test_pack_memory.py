"""`--pack auto`'s sizing: the memory estimate of a pack on CUDA (grokray.cost.memory) with a
fake device memory, and the CPU rule that leaves arithmetic-bound shapes unpacked."""

from functools import partial

import pytest
import torch

from grokray.cost.memory import members_that_fit, pack_bytes, pair_floats
from grokray.families import get_family
from grokray.sweep.executors import packing
from grokray.sweep.executors.calls import worker_calls
from grokray.sweep.executors.packing import (
    GPU_MEMORY_SHARE,
    GPU_PACK_MEMBERS,
    PACK_MEMBERS,
    fit_device,
    pack_groups,
    pack_limit,
)
from grokray.tasks import make_task
from tests.helpers.configs import config

GIB = 2.0**30


_cfg = partial(config, {"arch": "mlp", "group": "D4", "seeds": [0, 1, 2]})


@pytest.mark.parametrize("arch", ["mlp", "forge"])
def test_pair_floats_agree_with_the_models(arch):
    cfg = _cfg(arch=arch, group="S3")
    task = make_task("S3")
    model = get_family(arch).model(cfg, task.n_in, task.n_out, cfg.seeds, torch.device("cpu"),
                                   torch.float32)
    assert pair_floats(cfg, task.n_in, task.n_out) == model.pair_floats


def test_pack_bytes_grows_with_members_and_dtype():
    cfg = _cfg(device="cuda")
    sizes = [pack_bytes(cfg, m) for m in (1, 2, 8, 64)]
    assert sizes == sorted(sizes) and sizes[0] > 0
    assert pack_bytes(_cfg(device="cuda", dtype="float64"), 8) == 2 * sizes[2]
    ma = _cfg(device="cuda", **{"grokfast.filter": "ma", "grokfast.window": 100})
    assert pack_bytes(ma, 8) > pack_bytes(_cfg(device="cuda", **{"grokfast.filter": "ema"}), 8)


@pytest.mark.parametrize("arch,group", [("mlp", "D4"), ("mlp", "Z97"), ("forge", "S4")])
def test_members_that_fit_is_the_largest_that_fits(arch, group):
    cfg = _cfg(arch=arch, group=group, device="cuda")
    budget = pack_bytes(cfg, 10) + 1  # room for 10 members, not 11
    assert members_that_fit(cfg, budget, 64) == 10
    assert members_that_fit(cfg, 1e15, 64) == 64  # the cap
    assert members_that_fit(cfg, 1.0, 64) == 1  # not even one: a trial runs as it always did


def test_pack_limit_on_cuda_fills_the_fake_device_and_never_exceeds_it():
    cfg = _cfg(group="Z97", device="cuda")
    cap = GPU_PACK_MEMBERS // 3
    sizes = []
    for dev in (0.5 * GIB, 2 * GIB, 8 * GIB, 141 * GIB):
        n = pack_limit(cfg, dev)
        sizes.append(n)
        members = n * len(cfg.seeds)
        assert 1 <= n <= cap
        if n > 1:
            assert pack_bytes(cfg, members) <= GPU_MEMORY_SHARE * dev
        if n < cap:  # one config more would not fit
            assert pack_bytes(cfg, members + 3) > GPU_MEMORY_SHARE * dev
    assert sizes == sorted(sizes) and sizes[0] < sizes[-1]
    assert pack_limit(cfg, None) == cap  # memory unknown on the driver: the worker splits
    assert pack_limit(cfg.with_overrides({"device": "cpu"}), 8 * GIB) == 1  # CPU rule (MACs)


def test_fit_device_splits_a_pack_by_the_free_memory():
    cfgs = [_cfg(group="Z97", device="cuda", **{"optim.lr": 1e-3 * (i + 1)}) for i in range(12)]
    free = pack_bytes(cfgs[0], 12) / GPU_MEMORY_SHARE + 1  # 4 configs of 3 seeds fit
    assert fit_device(cfgs, free) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]
    assert fit_device(cfgs, None) == [list(range(12))]
    cpu = [c.with_overrides({"device": "cpu"}) for c in cfgs]
    assert fit_device(cpu, free) == [list(range(12))]


def test_auto_on_cpu_leaves_arithmetic_bound_shapes_unpacked():
    small, large = _cfg(arch="forge", group="S3"), _cfg(arch="forge", group="S4")
    assert pack_limit(small) == PACK_MEMBERS // 3
    assert pack_limit(large) == 1  # 129 M multiply-adds a seed-step > PACK_MAX_MACS
    grid = [c.with_overrides({"optim.lr": lr}) for c in (small, large) for lr in (1e-3, 3e-3)]
    assert pack_groups(grid, 8, pack_limit) == [[0, 1], [2], [3]]
    assert pack_groups(grid, 8) == [[0, 1], [2, 3]]  # --pack N: as asked
    calls = worker_calls(grid, 2, None, 0.0)  # --pack auto on CPU, 2 workers: the pack first
    assert [c.packed for c in calls] == [True, False, False] and calls[0].configs == grid[:2]
    assert sorted(grid.index(c.configs[0]) for c in calls[1:]) == [2, 3]


def test_the_macs_threshold_sits_between_the_measured_shapes():
    from grokray.cost.work import step_macs

    gain = [_cfg(group="D4"), _cfg(arch="forge", group="S3"), _cfg(arch="forge", group="D4")]
    flat = [_cfg(arch="forge", group="S4"), _cfg(arch="forge", group="A5")]
    assert all(step_macs(c, c.arch) <= packing.PACK_MAX_MACS for c in gain)
    assert all(step_macs(c, c.arch) > packing.PACK_MAX_MACS for c in flat)

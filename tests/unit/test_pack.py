"""Config-packed trials (grokray.pack): each member of a pack follows its trial alone."""

from functools import partial

import pandas as pd
import pytest
import torch

from grokray.pack import pack_key, run_pack
from grokray.trial import run_trial
from tests.helpers.configs import TINY, config

torch.set_num_threads(1)  # tiny tensors: extra threads only contend on a shared CPU


_cfg = partial(config, {**TINY, "metrics.patience": 0})


def _assert_same(packed, alone):
    """Same outcomes per seed and the same curves (every column) to 1e-10."""
    assert packed.config == alone.config
    for mine, ref in zip(packed.seeds, alone.seeds, strict=True):
        exact = ("seed", "data_seed", "status", "error", "grok_step", "grok_step_lo",
                 "memorize_step", "ungrok_step", "steps_run")
        assert [getattr(mine, k) for k in exact] == [getattr(ref, k) for k in exact]
        assert mine.final == pytest.approx(ref.final, rel=1e-10, abs=1e-12)
    assert list(packed.curves.columns) == list(alone.curves.columns)
    assert len(packed.curves) == len(alone.curves) > 0
    for c in alone.curves.columns:
        torch.testing.assert_close(torch.tensor(packed.curves[c].to_numpy(dtype=float)),
                                   torch.tensor(alone.curves[c].to_numpy(dtype=float)),
                                   rtol=1e-10, atol=1e-12, equal_nan=True)
    _assert_same_snapshots(packed, alone)


def _assert_same_snapshots(packed, alone):
    """The same snapshot records (seed, step, tags, tensor, shape, dtype), values to 1e-10."""
    key = ("seed", "step", "tags", "tensor", "shape", "dtype")
    assert [[r[k] for k in key] for r in packed.snapshots] == \
        [[r[k] for k in key] for r in alone.snapshots]
    for mine, ref in zip(packed.snapshots, alone.snapshots, strict=True):
        torch.testing.assert_close(torch.from_numpy(mine["values"]),
                                   torch.from_numpy(ref["values"]), rtol=1e-10, atol=1e-12)


# one case per packable field: (the fixed fields, the per-member field and its values)
CASES = [
    ({"arch": "mlp"}, "optim.lr", [3e-3, 1e-2, 3e-2]),
    ({"arch": "mlp"}, "optim.weight_decay", [0.0, 0.5, 2.0]),
    ({"arch": "mlp", "optim.warmup_steps": 10}, "optim.lr_schedule", ["constant", "cosine"]),
    ({"arch": "mlp"}, "model.init_scale", [0.5, 1.0, 2.0]),
    ({"arch": "mlp"}, "data_seed", [None, 3, 7]),
    ({"arch": "mlp"}, "steps", [20, 35, 40]),
    ({"arch": "mlp", "optim.name": "sgd", "optim.momentum": 0.9}, "optim.lr", [1e-2, 5e-2]),
    ({"arch": "mlp", "grokfast.filter": "ema"}, "grokfast.alpha", [0.8, 0.98]),
    ({"arch": "mlp", "grokfast.filter": "ema"}, "grokfast.lamb", [0.5, 2.0, 5.0]),
    ({"arch": "mlp", "grokfast.filter": "ma", "grokfast.window": 5}, "grokfast.lamb", [1.0, 5.0]),
    ({"arch": "mlp", "grokfast.window": 5}, "grokfast.filter", ["ema", "none", "ma", "ema"]),
    ({"arch": "mlp", "grokfast.filter": "ma"}, "grokfast.window", [3, 7, 3]),
    ({"arch": "mlp", "grokfast.filter": "ma", "grokfast.window": 6}, "grokfast.warmup",
     [True, False]),
    ({"arch": "forge", "grokfast.window": 5}, "grokfast.filter", ["none", "ma", "ema"]),
    ({"arch": "mlp"}, "group", ["D4", "Q8", "Z2xZ4", "Z8"]),
    ({"arch": "mlp", "optim.batch_size": 16, "metrics.eval_max_pairs": 20}, "group",
     ["Z2xZ4", "D4"]),
    ({"arch": "forge"}, "group", ["D4", "Q8", "Z2xZ4"]),
    ({"arch": "forge", "forge.alg_full_max": 2, "forge.alg_samples": 4}, "group", ["S3", "Z6"]),
    ({"arch": "forge"}, "forge.lambda_alg", [0.0, 0.03, 0.3]),
    ({"arch": "forge"}, "forge.lambda_schedule", ["linear", "constant", "off", "step"]),
    ({"arch": "forge"}, "forge.wd_dad", [None, 0.1, 3.0]),
    ({"arch": "forge"}, "optim.weight_decay", [0.1, 1.0]),
    ({"arch": "forge", "forge.alg_full_max": 2, "forge.alg_samples": 16}, "optim.lr",
     [3e-3, 2e-2]),
    ({"arch": "forge", "optim.batch_size": 8}, "steps", [15, 40]),
]


@pytest.mark.parametrize(("fixed", "field", "values"), CASES,
                         ids=[f"{f['arch']}-{k}" for f, k, _ in CASES])
def test_member_equals_its_trial_alone(fixed, field, values):
    configs = [_cfg(**fixed, **{field: v}) for v in values]
    assert len({pack_key(c) for c in configs}) == 1
    for packed, cfg in zip(run_pack(configs), configs, strict=True):
        _assert_same(packed, run_trial(cfg))


def test_members_of_other_groups_and_filters_stop_on_their_own():
    """Members of several groups and filters whose budgets end at other steps: each run of
    filtered members loses its stopped members (MemberFilters.select), each member keeps its
    own task table, and every member ends as alone."""
    fixed = {"arch": "mlp", "grokfast.window": 4, "seeds": [0, 1, 2]}
    configs = [_cfg(**fixed, group=g, steps=n, **{"grokfast.filter": f})
               for g, n, f in (("D4", 40, "ema"), ("Q8", 25, "ema"), ("Z8", 30, "none"),
                               ("D4", 35, "ma"), ("Z2xZ4", 15, "ma"))]
    assert len({pack_key(c) for c in configs}) == 1
    for packed, cfg in zip(run_pack(configs), configs, strict=True):
        assert [s.steps_run for s in packed.seeds] == [cfg.steps] * 3
        _assert_same(packed, run_trial(cfg))


def test_pack_key_of_groups_and_filters():
    """Groups of one order share a key (not with metrics: they read the group); a modular op
    keeps its group; the filter settings are per member."""
    assert pack_key(_cfg(group="D4")) == pack_key(_cfg(group="Q8")) == pack_key(_cfg(group="Z8"))
    assert pack_key(_cfg(group="D4")) != pack_key(_cfg(group="S3"))
    assert pack_key(_cfg(group="D4", **{"metrics.cheap": ["spectrum"]})) != \
        pack_key(_cfg(group="Q8", **{"metrics.cheap": ["spectrum"]}))
    assert pack_key(_cfg(group="Z7", op="add")) != pack_key(_cfg(group="Z7"))
    assert pack_key(_cfg(**{"grokfast.filter": "ma", "grokfast.window": 3})) == pack_key(_cfg())


def test_members_grok_diverge_and_stop_on_their_own():
    """A member that diverges (huge lr), one that groks and stops (patience), one that runs to
    its budget: each ends as alone, with its own steps_run."""
    configs = [_cfg(arch="forge", **{"optim.lr": lr, "metrics.patience": 1, "steps": 300,
                                     "model.d": 16, "model.rank": 32})
               for lr in (1e9, 1e-2, 3e-3)]
    results = run_pack(configs)
    statuses = [{s.status for s in r.seeds} for r in results]
    assert statuses == [{"diverged"}, {"grokked"}, {"not_grokked"}]
    assert max(s.steps_run for s in results[1].seeds) < 300
    assert [s.steps_run for s in results[2].seeds] == [300, 300]
    for packed, cfg in zip(results, configs, strict=True):
        _assert_same(packed, run_trial(cfg))


@pytest.mark.parametrize("arch", ["mlp", "forge"])
def test_member_with_log_evals_and_snapshots_equals_its_trial_alone(arch):
    """Log-spaced evals over each member's own budget, weight-norm columns, each member's own
    lr schedule in the `lr` column, grok_step_lo, and snapshots (log-spaced, init, memorize,
    grok, end) per config: the configs share seeds, so a recorder per seed would mix them."""
    fixed = {"arch": arch, "eval_schedule": "log", "evals_per_decade": 8, "metrics.patience": 1,
             "model.d": 16, "model.rank": 32, "snapshots.per_decade": 3,
             "optim.warmup_steps": 20}
    configs = [_cfg(**fixed, steps=steps, **{"optim.lr": lr, "optim.lr_schedule": sched})
               for steps, lr, sched in ((300, 1e-2, "cosine"), (170, 3e-3, "constant"),
                                        (250, 2e-2, "linear"))]
    assert len({pack_key(c) for c in configs}) == 1
    results = run_pack(configs)
    tags = set()
    for packed, cfg in zip(results, configs, strict=True):
        alone = run_trial(cfg)
        _assert_same(packed, alone)
        assert {"weight_norm", "lr"} <= set(packed.curves.columns)
        assert any(c.startswith("weight_norm_") for c in packed.curves.columns)
        assert packed.snapshots and {r["seed"] for r in packed.snapshots} == set(cfg.seeds)
        tags |= {t for r in packed.snapshots for t in r["tags"].split(",")}
        steps = sorted(set(packed.curves["step"]))
        assert steps[:4] == [0, 1, 2, 3]  # log-spaced, not every eval_every
    assert {"init", "log", "memorize", "end"} <= tags
    if arch == "forge":  # groks at this size: grok snapshots and grok_step_lo per member
        assert "grok" in tags
        assert all(s.grok_step_lo is not None for r in results[::2] for s in r.seeds)
    assert len({len(r.curves) for r in results}) > 1  # each member its own budget's evals


def test_pack_key_holds_the_eval_schedule_and_snapshots():
    """The eval-schedule fields and the snapshots section are the pack's (not PER_MEMBER): a
    member's eval steps differ from another's only through its step budget."""
    base = pack_key(_cfg(arch="mlp"))
    for over in ({"eval_every": 5}, {"eval_schedule": "log"}, {"snapshots.keep": False},
                 {"snapshots.per_decade": 2}, {"snapshots.max_mb": 1.0}):
        assert pack_key(_cfg(arch="mlp", **over)) != base, over
    log = pack_key(_cfg(arch="mlp", eval_schedule="log"))
    assert pack_key(_cfg(arch="mlp", eval_schedule="log", evals_per_decade=5)) != log
    assert pack_key(_cfg(arch="mlp", eval_schedule="log", steps=99)) == log


def test_pack_key_separates_shapes_and_families():
    assert pack_key(_cfg(arch="mlp")) == pack_key(_cfg(arch="mlp", **{"optim.lr": 0.1}))
    assert pack_key(_cfg(arch="mlp")) != pack_key(_cfg(arch="mlp", **{"model.hidden": 32}))
    assert pack_key(_cfg(arch="mlp")) != pack_key(_cfg(arch="mlp", train_frac=0.6))
    assert pack_key(_cfg(arch="forge")) != pack_key(_cfg(arch="forge", seeds=[0, 1, 2]))
    assert pack_key(_cfg(arch="transformer")) is None
    with pytest.raises(ValueError, match="pack_key"):
        run_pack([_cfg(arch="mlp"), _cfg(arch="mlp", **{"model.hidden": 32})])


def test_unpackable_family_runs_one_at_a_time():
    configs = [_cfg(arch="transformer", steps=10, **{"optim.lr": lr}) for lr in (1e-3, 1e-2)]
    for packed, cfg in zip(run_pack(configs), configs, strict=True):
        _assert_same(packed, run_trial(cfg))


def test_pack_groups_by_shape_in_grid_order():
    from grokray.sweep.executors.packing import pack_groups

    configs = [_cfg(arch="mlp", **{"optim.lr": 1e-3}), _cfg(arch="mlp", **{"model.hidden": 32}),
               _cfg(arch="transformer"), _cfg(arch="mlp", **{"optim.lr": 1e-1}),
               _cfg(arch="mlp", **{"optim.lr": 1e-2}), _cfg(arch="mlp", **{"model.hidden": 32,
                                                                           "steps": 20})]
    assert pack_groups(configs, 2) == [[0, 3], [1, 5], [2], [4]]
    assert pack_groups(configs, 1) == [[i] for i in range(6)]


def test_execute_pack_rows_as_unpacked_and_cpu_shared_by_seed_steps():
    """The trial and curve rows of a packed config are those of its trial alone (to 1e-10 in
    float64: a batched GEMM may sum in another order for another batch count) but for times;
    the pack's CPU time is split by the seed-steps each config ran."""
    from grokray.schema import curve_frame, trial_frame
    from grokray.sweep.outcome import execute_pack

    configs = [_cfg(arch="forge", steps=s, **{"forge.lambda_alg": lam})
               for s, lam in ((40, 0.03), (20, 0.1), (40, 0.0))]
    outs = execute_pack(configs)
    times = {"wall_s", "started_at", "finished_at"}
    for out, cfg in zip(outs, configs, strict=True):
        assert out.error is None and out.config is cfg
        alone = run_trial(cfg)
        mine, ref = trial_frame(out.result, "s", "r"), trial_frame(alone, "s", "r")
        keep = [c for c in ref.columns if c not in times]
        assert list(mine.columns) == list(ref.columns)
        pd.testing.assert_frame_equal(mine[keep], ref[keep], rtol=1e-10)
        pd.testing.assert_frame_equal(curve_frame(out.result, "s", "r"),
                                      curve_frame(alone, "s", "r"), rtol=1e-10)
    cpu = [o.cpu_s for o in outs]
    assert cpu[0] == pytest.approx(2 * cpu[1]) and cpu[0] == pytest.approx(cpu[2])

"""Continuing censored runs (grokray.sweep.continuing, grokray.trainer.pickup): `grokray sweep`
with a larger `steps` picks up the seeds censored at the smaller budget from their end
snapshots, and its rows equal those of a sweep trained at the larger budget from the start
(float64: every trials column but times and run ids, every curve value); finished seeds are
copied; budget-dependent schedules refuse."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from grokray.sweep.executors.local import LocalExecutor
from grokray.sweep.plan import make_plan
from grokray.sweep.writer import run_plan
from tests.helpers import specs

SPEC = """\
name: c
out: {out}
config:
  train_frac: 0.6
  device: cpu
  dtype: float64
  model: {{d: 8, hidden: 16, rank: 8}}
  metrics: {{patience: 3}}
  optim: {{lr: 0.01, batch_size: 8{optim}}}
  forge: {{{forge}}}
  grokfast: {grokfast}
axes:
{axes}
seeds: 2
steps: {steps}
eval_every: {every}
"""
AXES = "  group: [Z5, S3]\n  arch: [mlp, forge]"
VOLATILE = {"run_id", "wall_s", "started_at", "finished_at", "continued_from",
            "continued_from_step", "hostname"}


def _spec(tmp_path, out, steps, axes=AXES, grokfast="{filter: ema}", optim="", every=10,
          forge="lambda_schedule: constant"):
    return specs.load(tmp_path, SPEC, f"{out}-{steps}.yaml", out=tmp_path / out, steps=steps,
                      axes=axes, grokfast=grokfast, optim=optim, every=every, forge=forge)


def _run(spec, pack=1, **kw):
    plan = make_plan(spec, **kw)
    run_plan(plan, LocalExecutor(pack=pack))
    return plan


def _tables(sweep_dir, hashes=None):
    t = pd.concat(pd.read_parquet(p) for p in (sweep_dir / "trials").glob("*.parquet"))
    c = pd.concat(pd.read_parquet(p) for p in (sweep_dir / "curves").glob("*.parquet"))
    if hashes is not None:
        t, c = t[t.config_hash.isin(hashes)], c[c.config_hash.isin(hashes)]
    return (t.sort_values(["config_hash", "seed"]).reset_index(drop=True),
            c.sort_values(["config_hash", "seed", "step"]).reset_index(drop=True))


def _assert_same(a: pd.DataFrame, b: pd.DataFrame, what: str) -> None:
    assert len(a) == len(b) and set(a.columns) == set(b.columns), what
    for col in a.columns:
        if col in VOLATILE:
            continue
        x, y = a[col], b[col]
        if pd.api.types.is_numeric_dtype(x) and pd.api.types.is_numeric_dtype(y):
            np.testing.assert_allclose(x.astype(float), y.astype(float), rtol=1e-12,
                                       atol=1e-12, err_msg=f"{what} {col}")
        else:
            assert list(x.astype(str)) == list(y.astype(str)), f"{what} {col}"


def _continue_vs_scratch(tmp_path, small, large, pack=1, **spec_kw):
    first = _run(_spec(tmp_path, "a", small, **spec_kw), pack)
    assert first.continuations is None  # nothing on disk: nothing to continue
    plan = _run(_spec(tmp_path, "a", large, **spec_kw), pack)
    _run(_spec(tmp_path, "b", large, **spec_kw))  # from scratch, unpacked
    tb, cb = _tables(tmp_path / "b" / "c")
    ta, ca = _tables(tmp_path / "a" / "c", set(tb.config_hash))
    _assert_same(ta, tb, "trials")
    _assert_same(ca, cb, "curves")
    return plan, ta


def test_continued_equals_trained_from_scratch_mlp_forge_grokfast(tmp_path):
    plan, t = _continue_vs_scratch(tmp_path, 160, 240)
    cont = plan.continuations
    assert cont.continued + cont.copied == 8 and cont.copied >= 1 and not cont.refused
    assert t["continued_from_step"].notna().all()
    copied = t[t.continued_from_step < 160]  # grokked and held before 160: copied as it is
    assert (copied.status == "grokked").all() and (copied.steps_run == copied.continued_from_step
                                                   ).all()
    went_on = t[t.continued_from_step == 160]
    assert len(went_on) == cont.continued and (went_on.steps_run > 160).all()
    small, _ = _tables(tmp_path / "a" / "c")
    s = pd.concat(pd.read_parquet(p) for p in (tmp_path / "a" / "c" / "snapshots").glob("*"))
    state = s[s.tensor.str.startswith("state/") & s.config_hash.isin(set(small.config_hash))]
    assert state.tags.str.contains("end").all()  # at the end of a seed out of budget only
    ended = small[small.steps_run == small.steps]
    assert set(zip(state.config_hash, state.seed, strict=True)) == \
        set(zip(ended.config_hash, ended.seed, strict=True))
    assert {"state/opt.t", "state/opt.m.W2", "state/grokfast.mu.W2", "state/rng.batch",
            "state/rng.perm"} <= set(state.tensor)
    old = small[~small.config_hash.isin(set(t.config_hash))]  # the 160-step rows stay as they are
    assert len(old) == 8 and set(t.continued_from) == set(old.config_hash)
    assert small.groupby(["config_hash", "seed"]).size().eq(1).all()
    again = make_plan(_spec(tmp_path, "a", 240))  # resume: every row is there
    assert not again.todo and again.done_rows == 8
    # the continued rows' snapshots: the old ones before 160, then their own (an end each)
    s = s[s.config_hash.isin(set(t.config_hash))]
    for (h, seed), g in s.groupby(["config_hash", "seed"]):
        row = t[(t.config_hash == h) & (t.seed == seed)].iloc[0]
        assert g[g.tags.str.contains("end")]["step"].unique().tolist() == [row.steps_run]
        assert 0 in set(g.step)


def test_continued_sgd_momentum_and_ma_filter(tmp_path):
    _continue_vs_scratch(tmp_path, 60, 130, axes="  group: [S3]\n  arch: [mlp]",
                         grokfast="{filter: ma, window: 7}",
                         optim=", name: sgd, momentum: 0.9")


def test_continued_through_a_pack(tmp_path):
    plan, t = _continue_vs_scratch(tmp_path, 60, 130, pack=2,
                                   axes="  group: [S3]\n  arch: [mlp, forge]\n"
                                        "  optim.lr: [0.01, 0.02]")
    assert plan.continuations.continued == 8 and (t.continued_from_step == 60).all()
    from grokray.sweep.executors.packing import pack_groups

    assert sorted(len(g) for g in pack_groups(plan.todo, 2)) == [2, 2]  # it packed


@pytest.mark.parametrize("over,why", [
    ({"optim": ", lr_schedule: cosine"}, "optim.lr_schedule cosine depends on steps"),
    ({"every": 7}, "eval_every 7 does not divide 60"),
])
def test_budget_dependent_schedules_refuse_and_train_from_zero(tmp_path, over, why):
    axes = "  group: [S3]\n  arch: [mlp]"
    _run(_spec(tmp_path, "a", 60, axes=axes, **over))
    plan = make_plan(_spec(tmp_path, "a", 90, axes=axes, **over))
    lines = plan.continuations.lines()
    assert len(lines) == 1 and why in lines[0] and lines[0].startswith(
        "not continued, training from step 0 (2 seed-run(s)): ")
    assert all(c.continued_from.config_hash is None for c in plan.todo)
    assert make_plan(_spec(tmp_path, "a", 90, axes=axes, **over), force=True
                     ).continuations is None


def test_forge_with_a_fixed_lambda_decay_continues(tmp_path):
    # lambda_alg decays to 0 at step 40 whatever the budget: the 60-step runs continue to 130
    # and equal runs trained at 130 from the start
    plan, t = _continue_vs_scratch(tmp_path, 60, 130, axes="  group: [S3]\n  arch: [forge]",
                                   grokfast="{filter: none}",
                                   forge="lambda_schedule: linear, lambda_steps: 40")
    assert not plan.continuations.refused
    assert plan.continuations.continued + plan.continuations.copied == 2


def test_lambda_schedule_scaled_by_steps_refuses():
    from grokray.config import TrialConfig
    from grokray.sweep.continuing import refusal

    base = {"arch": "forge", "group": "S3", "forge.lambda_schedule": "linear"}
    old = TrialConfig.from_dict({**base, "steps": 100})
    why = refusal(old, old.with_overrides({"steps": 300}))
    assert why is not None and why.startswith("forge.lambda_schedule linear is scaled by steps")
    assert "forge.lambda_steps" in why  # says how to decay independently of the budget
    fixed = old.with_overrides({"forge.lambda_steps": 50})
    assert refusal(fixed, fixed.with_overrides({"steps": 300})) is None
    const = old.with_overrides({"forge.lambda_schedule": "constant", "optim.warmup_steps": 10})
    assert refusal(const, const.with_overrides({"steps": 300})) is None  # warmup: not budget


def test_dry_run_counts_only_the_steps_left(tmp_path):
    axes = "  group: [S3]\n  arch: [mlp]"
    _run(_spec(tmp_path, "a", 40, axes=axes))
    plan = make_plan(_spec(tmp_path, "a", 100, axes=axes), build=False)
    assert plan.continuations.continued == 2 and plan.todo_seed_steps == 2 * 60

"""Checkpoints (grokray/checkpoint/): a trial cut short and resumed from its newest checkpoint
gives the rows of a trial never cut (float64, every trials column but times, ids and
checkpoint_step, every curve value and snapshot to 1e-12), for every gradient-trained path;
the steps trained again are those since the last checkpoint; unusable checkpoints are not
used."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from grokray.checkpoint import Unusable, decode, encode
from grokray.checkpoint.memory import MemoryHook
from grokray.checkpoint.restore import restore
from grokray.config import TrialConfig
from grokray.pack import run_pack
from grokray.schema import curve_frame, snapshot_frame, trial_frame
from grokray.trial import run_trial
from tests.helpers.checkpoints import Killed, StepHook
from tests.helpers.checkpoints import ck_cfg as _cfg

VOLATILE = {"run_id", "wall_s", "started_at", "finished_at", "checkpoint_step", "hostname"}


def _tables(res) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    t = trial_frame(res, "s", "r")
    c = curve_frame(res, "s", "r").sort_values(["seed", "step"]).reset_index(drop=True)
    sn = snapshot_frame(res, "s", "r") if res.snapshots else pd.DataFrame()
    return t.drop(columns=[k for k in VOLATILE if k in t]), c, sn


def assert_same(got, ref) -> None:
    """Every trials column but the volatile ones, every curve value and snapshot to 1e-12."""
    (t1, c1, s1), (t0, c0, s0) = _tables(got), _tables(ref)
    pd.testing.assert_frame_equal(t1, t0, check_exact=False, rtol=1e-12, atol=1e-12)
    pd.testing.assert_frame_equal(c1, c0, check_exact=False, rtol=1e-12, atol=1e-12)
    assert len(s1) == len(s0)
    if len(s0):
        key = ["seed", "step", "tensor"]
        s1, s0 = s1.sort_values(key).reset_index(drop=True), s0.sort_values(key).reset_index(
            drop=True)
        pd.testing.assert_frame_equal(s1.drop(columns="values"), s0.drop(columns="values"))
        for a, b in zip(s1["values"], s0["values"], strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def cut_and_resume(cfg: TrialConfig, every: int, kills: list[int]):
    """Run `cfg` cut at each of `kills` (steps counted from where that run started), resuming
    each time from the newest checkpoint; the result and the steps each run trained."""
    store = MemoryHook()
    trained = []
    for k in kills:
        hook = StepHook(every, kill=k, store=store)
        with pytest.raises(Killed):
            run_trial(cfg, checkpoints=hook)
        trained.append(hook.calls - 1)
    hook = StepHook(every, store=store)
    res = run_trial(cfg, checkpoints=hook)
    trained.append(hook.calls)
    return res, trained


CASES = {
    "mlp": {},
    "grokfast_ema": {"grokfast.filter": "ema", "grokfast.lamb": 2.0},
    "grokfast_ma": {"grokfast.filter": "ma", "grokfast.window": 7},
    "minibatch": {"optim.batch_size": 5},
    "forge": {"arch": "forge", "model.d": 8, "model.rank": 16, "forge.inv_hidden": 8},
    "forge_sampled": {"arch": "forge", "group": "S3", "op": "group", "model.d": 8,
                      "model.rank": 16, "forge.inv_hidden": 8, "forge.alg_full_max": 4,
                      "forge.alg_samples": 9},
    "transformer": {"arch": "transformer", "transformer.d_model": 16, "transformer.n_heads": 2,
                    "transformer.d_mlp": 32, "transformer.n_layers": 1, "steps": 60},
}


@pytest.mark.parametrize("case", list(CASES))
def test_resumed_equals_uninterrupted(case):
    cfg = _cfg(**CASES[case])
    ref = run_trial(cfg)
    got, trained = cut_and_resume(cfg, every=25, kills=[37, 30])
    assert_same(got, ref)
    assert {s.checkpoint_step for s in got.seeds} == {50}  # 25, 50; lost at 62; resumed at 50
    # lost after 37 steps (12 past the checkpoint at 25), then at 25 + 30 = 55 (5 past 50)
    assert trained[:2] == [37, 30]
    assert all(s.checkpoint_step is None for s in ref.seeds)


def _pack() -> list[TrialConfig]:
    """Three configs of one shape: one trains on, one ends at 30 steps (its end snapshot with
    its training state), one diverges at once; each an own lr and Grokfast filter."""
    return [_cfg(**{"grokfast.filter": "ema"}),
            _cfg(**{"steps": 30, "optim.lr": 1e-2, "grokfast.filter": "ma",
                    "grokfast.window": 5}),
            _cfg(**{"optim.lr": 1e4})]


def cut_pack(configs: list[TrialConfig], every: int, kills: list[int]):
    store = MemoryHook()
    for k in kills:
        with pytest.raises(Killed):
            run_pack(configs, checkpoints=StepHook(every, kill=k, store=store))
    return store


def test_pack_resumed_equals_uninterrupted():
    configs = _pack()
    ref = run_pack(configs)
    assert [r.seeds[0].status for r in ref] == ["not_grokked", "not_grokked", "diverged"]
    store = cut_pack(configs, 25, [37, 30])
    got = run_pack(configs, checkpoints=StepHook(25, store=store))
    for g, r in zip(got, ref, strict=True):
        assert_same(g, r)
        assert {s.checkpoint_step for s in g.seeds} == {50}


def test_lost_pack_reruns_as_one_config_trials():
    """A pack lost at step 62 reruns as one trial per config, each from its own checkpoint at
    50; the result is its trial's (a member of a pack does the arithmetic of its trial alone:
    to 1e-10, as tests/unit/test_pack.py holds)."""
    configs = _pack()
    ref = [run_trial(c) for c in configs]
    store = cut_pack(configs, 25, [62])
    for cfg, r in zip(configs, ref, strict=True):
        hook = StepHook(25, store=store)
        g = run_trial(cfg, checkpoints=hook)
        (t1, c1, _), (t0, c0, _) = _tables(g), _tables(r)
        pd.testing.assert_frame_equal(t1, t0, check_exact=False, rtol=1e-10, atol=1e-12)
        pd.testing.assert_frame_equal(c1, c0, check_exact=False, rtol=1e-10, atol=1e-12)
        finished = cfg.steps == 30 or cfg.optim.lr > 1
        assert hook.calls == (0 if finished else cfg.steps - 50)  # nothing trained again
        assert {s.checkpoint_step for s in g.seeds} == {50}


def test_checkpoint_off_and_short_trials_take_none():
    hook = MemoryHook()
    hook.ask()
    res = run_trial(_cfg(checkpoint_every=0), checkpoints=hook)
    assert hook.saved == [] and res.seeds[0].checkpoint_step is None
    run_trial(_cfg(checkpoint_every=3600), checkpoints=hook)  # shorter than the interval
    assert len(hook.saved) == 1  # the one the driver asked for, at the first step
    hook2 = MemoryHook()
    run_trial(_cfg(checkpoint_every=3600), checkpoints=hook2)
    assert hook2.saved == []


class LateHook(MemoryHook):
    """The driver asked while the trial was training, but the trial learns of it only when it
    asks at its end (a request that came within its polling lag of its end)."""

    def __init__(self, store: MemoryHook | None = None):
        super().__init__()
        if store is not None:
            self.held = store.held
        self.calls = 0

    def asked(self) -> bool:
        self.calls += 1
        return False

    def asked_at_end(self) -> bool:
        return True


@pytest.mark.parametrize("case", ["mlp", "minibatch", "forge_sampled"])
def test_trial_asked_as_it_ends_checkpoints_its_end(case):
    """A stop whose request a trial sees only as it ends drops the trial's result; the end
    checkpoint holds every seed's outcome, rows and snapshots, and the next run trains nothing
    and gives the rows of the trial never cut."""
    cfg = _cfg(**CASES[case])
    hook = LateHook()
    run_trial(cfg, checkpoints=hook)  # its result is lost with the stop
    assert hook.saved == [(cfg.config_hash(), hook.calls)]  # once, at the end
    again = LateHook(store=hook)
    got = run_trial(cfg, checkpoints=again)
    assert again.calls == 0 and again.saved == []  # nothing trained again
    assert {s.checkpoint_step for s in got.seeds} == {hook.calls}
    assert_same(got, run_trial(cfg))


def test_checkpoint_off_changes_no_number():
    cfg = _cfg()
    got, _ = cut_and_resume(cfg, every=25, kills=[40])
    off = run_trial(_cfg(checkpoint_every=0))
    (t1, c1, _), (t0, c0, _) = _tables(got), _tables(off)
    pd.testing.assert_frame_equal(t1.drop(columns="checkpoint_every"),
                                  t0.drop(columns="checkpoint_every"),
                                  check_exact=False, rtol=1e-12, atol=1e-12)
    pd.testing.assert_frame_equal(c1, c0, check_exact=False, rtol=1e-12, atol=1e-12)
    assert cfg.config_hash() == _cfg(checkpoint_every=0).config_hash()


def _one_checkpoint(cfg: TrialConfig) -> MemoryHook:
    store = MemoryHook()
    with pytest.raises(Killed):
        run_trial(cfg, checkpoints=StepHook(25, kill=30, store=store))
    return store


@pytest.mark.parametrize("damage", ["truncated", "flipped", "version", "other_trial"])
def test_unusable_checkpoint_is_not_used(damage, capsys):
    cfg = _cfg()
    h = cfg.config_hash()
    store = _one_checkpoint(cfg)
    held = store.held[h]
    step, state = held.state
    if damage == "truncated":
        state = state[: len(state) // 2]
    elif damage == "flipped":
        i = len(state) // 2
        state = state[:i] + bytes([state[i] ^ 0xFF]) + state[i + 1:]
    elif damage == "version":
        part = decode(state)
        state = encode(part).replace(b'"format": 1', b'"format": 9')
    else:
        part = decode(state)
        part.config_hash = "0123456789abcdef"
        state = encode(part)
    held.state = (step, state)
    chain = store.chain(h)
    with pytest.raises(Unusable):
        restore(chain, cfg.config_hash())
    hook = StepHook(25, store=store)
    res = run_trial(cfg, checkpoints=hook)
    assert res.seeds[0].checkpoint_step is None and hook.calls == cfg.steps
    assert_same(res, run_trial(cfg))
    out = capsys.readouterr().out
    assert out.count("not used") == 1


def test_steps_trained_again_are_those_since_the_last_checkpoint():
    """Lost after 9 of 10 intervals and a bit: at most one interval is trained again."""
    cfg = _cfg(steps=100)
    got, trained = cut_and_resume(cfg, every=10, kills=[97])
    assert trained == [97, 10]  # resumed at 90: 10 steps to the end, 7 of them again
    assert {s.checkpoint_step for s in got.seeds} == {90}
    assert_same(got, run_trial(cfg))

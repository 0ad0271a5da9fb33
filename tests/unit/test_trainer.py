import math
from functools import partial

import pytest
import torch

import grokray.models.chunks
import grokray.trainer.loop
from grokray.config import OptimConfig, TrialConfig
from grokray.metrics.grokking import GrokDetector
from grokray.optim.optimizers import SeedAdamW, SeedSGD
from grokray.trainer import Training
from grokray.trial import run_trial
from grokray.trialrun import TrialRun
from tests.helpers.configs import TINY, config

torch.set_num_threads(1)  # tiny tensors: extra threads only contend on a shared CPU


_cfg = partial(config, {**TINY, "seeds": [0, 1, 2]})


CURVE = ["train_loss", "train_acc", "val_loss", "val_acc"]


@pytest.mark.parametrize("over", [
    {"arch": "mlp"},
    {"arch": "forge"},
    {"arch": "forge", "grokfast.filter": "ema", "forge.decode": "separate"},
    {"arch": "mlp", "grokfast.filter": "ma", "grokfast.window": 5, "optim.batch_size": 8},
    {"arch": "forge", "forge.alg_full_max": 2, "forge.alg_samples": 16, "optim.name": "sgd",
     "optim.momentum": 0.9},
])
def test_batched_seeds_equal_separate_runs(over):
    together = run_trial(_cfg(**over)).curves
    for seed in (0, 2):
        alone = run_trial(_cfg(**over, seeds=[seed])).curves
        mine = together[together.seed == seed].reset_index(drop=True)
        assert len(mine) == len(alone) == 5
        for c in alone.columns:
            torch.testing.assert_close(torch.tensor(mine[c].to_numpy(dtype=float)),
                                       torch.tensor(alone[c].to_numpy(dtype=float)),
                                       rtol=1e-9, atol=1e-12)


def test_seeds_differ_and_data_seed_fixes_split():
    r = run_trial(_cfg(arch="mlp", steps=10))
    first = r.curves[r.curves.step == 10].val_loss.to_numpy()
    assert len(set(first.round(12))) == 3
    assert [s.data_seed for s in r.seeds] == [0, 1, 2]
    r2 = run_trial(_cfg(arch="mlp", steps=10, data_seed=7))
    assert [s.data_seed for s in r2.seeds] == [7, 7, 7]


def test_deterministic():
    a = run_trial(_cfg(arch="forge", dtype="float32"))
    b = run_trial(_cfg(arch="forge", dtype="float32"))
    assert a.curves.equals(b.curves)


@pytest.mark.parametrize("fused", [True, False])
def test_adamw_equals_torch_per_seed(fused):
    """Both paths of SeedAdamW (PyTorch's fused kernel, the foreach calls) move each seed as
    torch.optim.AdamW moves that seed alone."""
    S = 3
    g = torch.Generator().manual_seed(0)
    params = {"a": torch.randn(S, 4, 5, generator=g, dtype=torch.float64),
              "b": torch.randn(S, 5, generator=g, dtype=torch.float64)}
    wd = {"a": 0.5, "b": 0.0}
    cfg = OptimConfig(lr=0.05, beta1=0.8, beta2=0.95, eps=1e-6)
    opt = SeedAdamW(params, wd, cfg)
    assert opt.fused  # the kernel exists on CPU for float64
    opt.fused = fused
    refs = []
    for s in range(S):
        ps = {k: v[s].clone().requires_grad_() for k, v in params.items()}
        o = torch.optim.AdamW([{"params": [ps["a"]], "weight_decay": 0.5},
                               {"params": [ps["b"]], "weight_decay": 0.0}],
                              lr=0.05, betas=(0.8, 0.95), eps=1e-6)
        refs.append((ps, o))
    for _ in range(7):
        grads = {k: torch.randn(v.shape, generator=g, dtype=torch.float64)
                 for k, v in params.items()}
        opt.step(params, grads, 0.05)
        for s, (ps, o) in enumerate(refs):
            for k in ps:
                ps[k].grad = grads[k][s].clone()
            o.step()
    for s, (ps, _) in enumerate(refs):
        for k in ps:
            torch.testing.assert_close(params[k][s], ps[k].detach())


def test_sgd_equals_torch_per_seed():
    g = torch.Generator().manual_seed(1)
    params = {"a": torch.randn(2, 3, generator=g, dtype=torch.float64)}
    opt = SeedSGD(params, {"a": 0.1}, OptimConfig(name="sgd", momentum=0.9))
    ref = params["a"][1].clone().requires_grad_()
    o = torch.optim.SGD([ref], lr=0.1, momentum=0.9, weight_decay=0.1)
    for _ in range(5):
        grad = torch.randn(2, 3, generator=g, dtype=torch.float64)
        opt.step(params, {"a": grad}, 0.1)
        ref.grad = grad[1].clone()
        o.step()
    torch.testing.assert_close(params["a"][1], ref.detach())


def test_nan_seed_diverges_others_continue():
    cfg = _cfg(arch="mlp")
    clean = run_trial(cfg)
    run = TrialRun(cfg)
    t = Training([run])
    with torch.no_grad():
        t.stack.model.params["W2"][1] = math.nan
    t.run()
    r = run.result()
    st = {s.seed: s for s in r.seeds}
    assert st[1].status == "diverged" and "non-finite" in st[1].error
    assert st[1].steps_run == 0
    for seed in (0, 2):
        assert st[seed].status != "diverged" and st[seed].steps_run == 40
        a = r.curves[r.curves.seed == seed].val_loss.to_numpy()
        b = clean.curves[clean.curves.seed == seed].val_loss.to_numpy()
        torch.testing.assert_close(torch.tensor(a), torch.tensor(b))


def test_early_stop_after_patience_and_progress():
    # threshold 0: every seed "groks" at step 0 and stops after holding 2 more evals
    cfg = _cfg(arch="mlp", steps=200, **{"metrics.patience": 2, "metrics.grok_threshold": 0.0})
    calls = []
    r = run_trial(cfg, progress=calls.append)
    for s in r.seeds:
        assert s.status == "grokked" and s.grok_step == 0 and s.steps_run == 20
    assert r.curves.step.max() == 20
    assert calls and calls[-1].n_seeds == 3 and calls[-1].steps_per_s > 0
    # never reached: not_grokked, censored, full budget
    r = run_trial(_cfg(arch="mlp", steps=20, **{"metrics.grok_threshold": 1.01}))
    assert all(s.status == "not_grokked" and s.grok_step is None and s.steps_run == 20
               for s in r.seeds)


def test_detector_rules():
    d = GrokDetector(0.9, 0.9, patience=2)
    seq = [(0, 0.1, 0.0), (1, 0.95, 0.5), (2, 1.0, 0.95), (3, 1.0, 0.5), (4, 1.0, 0.92),
           (5, 1.0, 0.93), (6, 1.0, 0.99)]
    done = None
    for step, tr, va in seq:
        t = d.update(0, step, tr, va)
        if t.finished and done is None:
            done = step
    t = d.tracks[0]
    assert (t.memorize_step, t.grok_step, t.ungrok_step) == (1, 2, 3)
    assert done == 6


def test_failed_status_on_exception(monkeypatch):
    cfg = _cfg(arch="mlp", steps=20)

    def boom(stack, step):
        raise RuntimeError("kaboom\nsecond line")

    monkeypatch.setattr(grokray.trainer.loop, "train_step", boom)
    r = run_trial(cfg)
    assert all(s.status == "failed" and s.error == "RuntimeError: kaboom" for s in r.seeds)


def test_rfm_runs_through_the_shared_runner():
    r = run_trial(TrialConfig.from_dict({"arch": "rfm", "group": "Z5", "op": "add",
                                         "rfm.iters": 1, "seeds": [0, 1], "device": "cpu"}))
    assert [s.seed for s in r.seeds] == [0, 1] and r.device == "cpu" and r.group_order == 5
    # round(0.5 * 25) = 12 dual rows x 5 classes, plus M [10, 10]
    assert sorted(set(r.curves.step)) == [0, 1] and r.n_params == 12 * 5 + 100


@pytest.mark.parametrize("arch", ["mlp", "forge"])
def test_chunked_gradient_accumulation_equals_one_batch(monkeypatch, arch):
    whole = run_trial(_cfg(arch=arch)).curves
    # S=3, |S3|=6: chunks of 5
    monkeypatch.setattr(grokray.models.chunks, "TRAIN_LOGIT_BUDGET", 3 * 6 * 5)
    chunked = run_trial(_cfg(arch=arch)).curves
    for c in CURVE:
        torch.testing.assert_close(torch.tensor(chunked[c].to_numpy(dtype=float)),
                                   torch.tensor(whole[c].to_numpy(dtype=float)),
                                   rtol=1e-9, atol=1e-12)
    assert whole.train_loss.iloc[-1] < whole.train_loss.iloc[0]


def test_adamw_fused_and_foreach_agree_with_strided_grads():
    """The fused kernel walks memory in order: a transposed gradient (FORGE's decoder, the
    transformer's) must give the same step as the foreach path (it once did not: 0.08 apart)."""
    g = torch.Generator().manual_seed(2)
    base = {"a": torch.randn(2, 5, 3, generator=g, dtype=torch.float64),
            "b": torch.randn(2, 3, generator=g, dtype=torch.float64)}
    grads = [{k: torch.randn(v.shape[::-1], generator=g, dtype=torch.float64).permute(
        *reversed(range(v.dim()))) for k, v in base.items()} for _ in range(4)]
    assert not grads[0]["a"].is_contiguous()
    out = []
    for fused in (True, False):
        ps = {k: v.clone() for k, v in base.items()}
        opt = SeedAdamW(ps, {"a": 1.0, "b": 0.1}, OptimConfig())
        opt.fused = fused
        for gr in grads:
            opt.step(ps, gr, 1e-2)
        out.append(ps)
    for k in base:
        torch.testing.assert_close(out[0][k], out[1][k], rtol=1e-13, atol=1e-15)
        assert not torch.equal(out[0][k], base[k])

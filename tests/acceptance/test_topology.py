"""Slow acceptance test, geometric inductive bias (papers.md section 2; issue 6), CPU scale.

Claim: a transformer with a fully bounded spherical topology (weight decay 0) and a LayerNorm
transformer with uniform attention generalize in fewer steps than the LayerNorm baseline
(paper: > 20x at Z_113 and paper scale), and a grokked model's embeddings have their Fourier
mass on a few frequencies.

Reduced scale, chosen so it runs in minutes on a loaded 2-core CPU: Z_59 addition, train
fraction 0.5, full batch, d_model 64, 4 heads, d_mlp 256, AdamW lr 3e-3, betas (0.9, 0.98),
3 seeds, a STEPS budget; spherical_bounded with the default logit scale 5 (with scale 10 no seed
reached 0.99 within 1,500 steps here, measured 2026-11-30). A seed that does not reach val acc
0.99 within the budget is censored at the budget, so a ratio against a censored baseline is a
lower bound (printed with `>=`). Measured: layernorm 925, spherical_bounded 250 (3.7x), uniform
500 (1.85x) median steps; about 6 min in all on the shared CPU.

    pytest tests/acceptance/test_topology.py --runslow -s
"""

from __future__ import annotations

import statistics

import pytest
import torch

from grokray.config import TrialConfig
from grokray.metrics.spectra import fourier_mass, n_key_modes, top_mode
from grokray.models import get_model
from grokray.result import TrialResult
from grokray.trainer import Training
from grokray.trial import run_trial
from grokray.trialrun import TrialRun

P, TRAIN_FRAC, STEPS, EVAL_EVERY, LR, D = 59, 0.5, 1500, 25, 3e-3, 64
SEEDS = [0, 1, 2]
ARMS: dict[str, dict[str, object]] = {
    "layernorm": {"transformer.norm": "layernorm", "optim.weight_decay": 1.0},
    "spherical_bounded": {"transformer.norm": "spherical_bounded", "optim.weight_decay": 0.0},
    "uniform": {"transformer.norm": "layernorm", "transformer.attention": "uniform",
                "optim.weight_decay": 1.0},
}
BASELINE = "layernorm"
FEW_FREQUENCIES = 6  # of the P // 2 = 29 non-trivial frequencies of Z_59


def arm_config(arm: str) -> TrialConfig:
    base = {
        "arch": "transformer", "group": f"Z{P}", "op": "add", "train_frac": TRAIN_FRAC,
        "steps": STEPS, "eval_every": EVAL_EVERY, "seeds": SEEDS, "device": "cpu",
        "transformer": {"n_layers": 1, "d_model": D, "n_heads": 4, "d_mlp": 4 * D},
        "optim": {"lr": LR, "beta1": 0.9, "beta2": 0.98},
        "metrics": {"patience": 2},
    }
    return TrialConfig.from_dict(base).with_overrides(ARMS[arm])


@pytest.fixture(scope="module")
def results() -> dict[str, TrialResult]:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # 2 shared cores: more threads oversubscribe and run ~10x slower
    try:
        return {arm: run_trial(arm_config(arm)) for arm in ARMS}
    finally:
        torch.set_num_threads(threads)


def censored_steps(res: TrialResult) -> list[int]:
    """Grok step per seed; a seed that did not grok counts as the budget (a lower bound)."""
    return [s.grok_step if s.grok_step is not None else STEPS for s in res.seeds]


def all_grokked(res: TrialResult) -> bool:
    return all(s.grok_step is not None for s in res.seeds)


@pytest.mark.slow
def test_bounded_and_uniform_generalize_faster(results, capsys):
    med = {arm: statistics.median(censored_steps(r)) for arm, r in results.items()}
    base_exact = all_grokked(results[BASELINE])
    lines = [f"Z{P} add, train {TRAIN_FRAC}, d_model {D}, lr {LR}, budget {STEPS} steps"]
    for arm, res in results.items():
        steps = [s.grok_step for s in res.seeds]
        ratio = med[BASELINE] / med[arm]
        exact = base_exact and all_grokked(res)
        lines.append(f"  {arm:18s} grok steps {steps}  median {med[arm]:g}  "
                     f"baseline/arm {'' if exact else '>='}{ratio:.2f}x  "
                     f"wall {res.wall_s:.0f}s")
    with capsys.disabled():
        print("\n" + "\n".join(lines))
    for arm in ("spherical_bounded", "uniform"):
        assert all_grokked(results[arm]), f"{arm} did not generalize in {STEPS} steps"
        assert med[arm] < med[BASELINE], f"{arm} not faster than {BASELINE}: {med}"


@pytest.mark.slow
def test_grokked_embeddings_have_few_key_frequencies(capsys):
    """Train the uniform-attention model (the cheapest accelerated arm) for the whole budget
    (no early stop, so the post-grok clean-up runs) and FFT its token embeddings W_E[:p]."""
    cfg = arm_config("uniform").with_overrides({"metrics.patience": 0, "metrics.cheap": []})
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        init = get_model("transformer")(cfg, P, P, SEEDS).embeddings()["E"].detach()
        run = TrialRun(cfg)
        trial = Training([run])  # the trainer's own loop, kept to read the trained weights
        trial.run()
        res = run.result()
    finally:
        torch.set_num_threads(threads)
    E = trial.stack.model.embeddings()["E"].detach()  # [S, p, d]
    share0, share = top_share(fourier_mass(init)), top_share(fourier_mass(E))  # [S]
    with capsys.disabled():
        print(f"\n  uniform, Z{P}, {STEPS} steps, grok steps {[s.grok_step for s in res.seeds]}:"
              f" share of the non-trivial Fourier mass of W_E on its top {FEW_FREQUENCIES} of "
              f"{P // 2} frequencies, init {share0.numpy().round(2)} -> "
              f"trained {share.numpy().round(2)}; key frequencies (90%) "
              f"{n_key_modes(fourier_mass(E)).numpy()}, top {top_mode(fourier_mass(E)).numpy()}")
    assert all(s.grok_step is not None for s in res.seeds)
    assert (share >= 0.5).all() and (share >= 2 * share0).all()


def top_share(mass: torch.Tensor) -> torch.Tensor:
    """Share of the non-trivial mass [..., m] held by the FEW_FREQUENCIES largest modes."""
    m = mass[..., 1:]
    return m.topk(FEW_FREQUENCIES, dim=-1).values.sum(-1) / m.sum(-1)

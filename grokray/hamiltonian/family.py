"""The `hamiltonian` family: learned step maps of Hamiltonian systems (FORGE "beyond groups").

Not a group task: a trial learns the time-dt flow map of one system (harmonic, pendulum, kepler;
data from grokray's own symplectic integrator) with a plain MLP step model (`step: mlp`) or the
DAD flow model with the algebra losses on compositions of flow maps (`step: dad`, weighted by
lambda_alg(t)), then rolls it out for `rollout_steps` steps from held-out states and records the
drift of the conserved quantities. The math lives beside this file in `grokray/hamiltonian/`
(pure modules); this file is the family: its config section and the trainer the trial runner
calls (a function of its own, `train_hamiltonian`, over `train.run_seed`).

Written to the Parquet contract: one trials row per seed, status `not_grokked` for a finished
seed (there is no grokking event here; analysis reads the `metric_*` columns), `diverged` when
the training loss goes non-finite; metrics `metric_drift_energy`, `metric_drift_angular_momentum`
(kepler), `metric_blowups` (rollout orbits that went non-finite: their drift is inf),
`metric_ref_drift_energy` (leapfrog at the same dt over the same rollout). Curves: one-step
train/val loss (acc columns NaN) and the algebra losses. The trial's `group` is not read
(the runner still builds its task; sweeps set `group: Z2`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from grokray.families import Family
from grokray.fields import at_least, choice, positive
from grokray.hamiltonian.train import HamConfig, reference_drift, run_seed
from grokray.result import SeedResult
from grokray.threads import torch_threads


@dataclass(frozen=True)
class HamiltonianConfig:
    """Hamiltonian step-map trial settings (steps, lr, weight decay, seeds: top level / optim)."""

    system: str = choice("harmonic", ("harmonic", "pendulum", "kepler"))
    """harmonic oscillator, pendulum, or two-body Kepler (relative coordinate, plane)"""
    step: str = choice("mlp", ("mlp", "dad"))
    """mlp: x' = x + MLP(x); dad: phi_k(x) = x + W((U h(x)) * (V tau_k)) + the algebra losses"""
    dt: float = positive(0.1)
    """time step of the learned map"""
    n_traj: int = positive(64)
    """training trajectories (pairs = n_traj * traj_steps)"""
    traj_steps: int = positive(50)
    """steps per training trajectory"""
    n_test: int = positive(32)
    """held-out initial states rolled out"""
    rollout_steps: int = positive(1000)
    """rollout length in steps of dt"""
    hidden: int = positive(64)
    """trunk width H (both step models)"""
    d: int = positive(16)
    """time-element embedding width (dad)"""
    rank: int = positive(64)
    """DAD rank R (dad)"""
    K: int = positive(4)
    """largest |k| of the flow maps phi_k (dad)"""
    inverse: str = choice("reversal", ("reversal", "learned"))
    """phi_{-k}: reversal (R phi_k R with R(q, p) = (q, -p)) or learned (its own tau_{-k})"""
    batch: int = positive(256)
    """mini-batch of one-step pairs"""
    lambda_alg: float = at_least(1.0, 0.0)
    """lambda_alg(0), weight of L_assoc + L_ident + L_inv (dad)"""
    lambda_schedule: str = choice("linear", ("linear", "constant", "cosine", "step", "off"))
    """lambda_alg(t) schedule (grokray.optim.schedules.lambda_alg)"""
    lambda_end: float = positive(1.0)
    """fraction of the steps where linear/cosine/step reach 0"""


def train_hamiltonian(run: Any) -> None:
    """Each seed: train, roll out, measure (grokray.hamiltonian.train.run_seed)."""
    cfg, h = run.cfg, run.cfg.hamiltonian
    # tiny matmuls: one thread is fastest (and cores are shared), whatever the trial holds
    with torch_threads(1):
        for seed in run.seeds:
            data_seed = cfg.seed_data_seed(seed)
            hc = HamConfig(
                system=h.system, arch="mlp" if h.step == "mlp" else "forge", dt=h.dt,
                n_traj=h.n_traj, traj_steps=h.traj_steps, n_test=h.n_test,
                rollout_steps=h.rollout_steps, hidden=h.hidden, d=h.d, rank=h.rank, K=h.K,
                inverse=h.inverse, steps=cfg.steps, batch=h.batch, lr=cfg.optim.lr,
                weight_decay=cfg.optim.weight_decay, lambda_alg=h.lambda_alg,
                lambda_schedule=h.lambda_schedule, lambda_end=h.lambda_end,
                data_seed=data_seed, eval_every=cfg.eval_every,
            )
            out = run_seed(hc, seed)
            run.n_params = out.n_params
            for r in out.curves:
                run.rows.append({"seed": seed, "train_acc": math.nan, "val_acc": math.nan, **r})
            if out.error is not None:
                run.outcome[seed] = SeedResult(seed=seed, data_seed=data_seed, status="diverged",
                                               error=out.error, steps_run=out.curves[-1]["step"])
                continue
            ref = reference_drift(replace(hc))
            metrics = {k: v for k, v in out.metrics.items() if not k.startswith("final_")}
            metrics.update({f"ref_drift_{k}": v for k, v in ref.items() if k != "blowups"})
            final = {"final_train_loss": out.metrics["final_train_loss"],
                     "final_val_loss": out.metrics["final_val_loss"],
                     "final_train_acc": math.nan, "final_val_acc": math.nan}
            run.outcome[seed] = SeedResult(seed=seed, data_seed=data_seed, status="not_grokked",
                                           steps_run=cfg.steps, final=final, metrics=metrics)


FAMILY = Family("hamiltonian", train=train_hamiltonian, section="hamiltonian",
                config=HamiltonianConfig, shared=("optim",))

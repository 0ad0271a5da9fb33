"""One seed of a Hamiltonian trial: data, training, long rollout, invariant drift (pure).

`run_seed(cfg, seed) -> SeedOutcome`. The config is any object with the fields of `HamConfig`
(the family's config section). Seeding: the data comes from `data_seed` (numpy PCG64), the model
init from torch.Generator(seed), the mini-batches and algebra-loss draws from
torch.Generator(seed + 1): same config + seed -> same numbers.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
import torch

from grokray.hamiltonian.data import make_data
from grokray.hamiltonian.integrate import flow, leapfrog
from grokray.hamiltonian.model import FlowDAD, StepMLP
from grokray.hamiltonian.rollout import drift, rollout
from grokray.hamiltonian.systems import get_system
from grokray.optim.schedules import lambda_alg


@dataclass(frozen=True)
class HamConfig:
    """Settings of a Hamiltonian trial."""

    system: str = "harmonic"
    """harmonic | pendulum | kepler"""
    arch: str = "mlp"
    """mlp (plain step MLP) | forge (DAD flow model phi_k with the algebra losses)"""
    dt: float = 0.1
    """time step of the learned map"""
    n_traj: int = 64
    """training trajectories"""
    traj_steps: int = 50
    """steps per training trajectory (pairs = n_traj * traj_steps)"""
    n_test: int = 32
    """held-out initial states for rollouts"""
    rollout_steps: int = 1000
    """rollout length (long: 20x the training trajectories)"""
    hidden: int = 128
    """trunk width H"""
    d: int = 16
    """time-element embedding width (forge)"""
    rank: int = 64
    """DAD rank R (forge)"""
    K: int = 4
    """largest |k| of the flow maps phi_k (forge)"""
    inverse: str = "reversal"
    """phi_{-k}: reversal (R phi_k R, R(q, p) = (q, -p)) or learned (its own tau_{-k})"""
    steps: int = 3000
    """optimizer steps"""
    batch: int = 256
    """mini-batch of pairs"""
    lr: float = 1e-3
    """AdamW learning rate (cosine decay)"""
    weight_decay: float = 0.0
    """AdamW weight decay"""
    lambda_alg: float = 1.0
    """lambda_alg(0)"""
    lambda_schedule: str = "linear"
    """linear | constant | cosine | step | off (grokray.optim.schedules.lambda_alg)"""
    lambda_end: float = 1.0
    """fraction of the steps where linear/cosine/step reach 0"""
    data_seed: int = 0
    """seed of the trajectories (train: data_seed, test: data_seed + 1)"""
    eval_every: int = 500
    """curve cadence (train and held-out one-step loss)"""


@dataclass
class SeedOutcome:
    seed: int
    metrics: dict[str, float]
    curves: list[dict[str, float]] = field(default_factory=list)
    n_params: int = 0
    error: str | None = None


def build_model(cfg, dim: int, gen: torch.Generator) -> torch.nn.Module:
    with torch.random.fork_rng():
        torch.manual_seed(int(torch.randint(0, 2**31 - 1, (1,), generator=gen)))
        if cfg.arch == "mlp":
            return StepMLP(dim, cfg.hidden)
        if cfg.arch == "forge":
            return FlowDAD(dim, cfg.hidden, cfg.d, cfg.rank, cfg.K, cfg.inverse)
    raise ValueError(f"unknown Hamiltonian arch {cfg.arch!r}; valid: mlp, forge")


def reference_drift(cfg) -> dict[str, float]:
    """Drift of leapfrog at the same dt over the same rollout: the symplectic yardstick."""
    system = get_system(cfg.system)
    data = make_data(system, dt=cfg.dt, n_traj=1, traj_steps=1, n_test=cfg.n_test,
                     data_seed=cfg.data_seed)
    X = [data.test_x0]
    for _ in range(cfg.rollout_steps):
        X.append(leapfrog(system, X[-1], cfg.dt))
    return drift(system, np.stack(X))


def run_seed(cfg, seed: int) -> SeedOutcome:
    """Train one model of `cfg` with `seed`, roll it out, measure the invariants' drift."""
    system = get_system(cfg.system)
    data = make_data(system, dt=cfg.dt, n_traj=cfg.n_traj, traj_steps=cfg.traj_steps,
                     n_test=cfg.n_test, data_seed=cfg.data_seed)
    x = torch.as_tensor(data.x, dtype=torch.float32)
    y = torch.as_tensor(data.y, dtype=torch.float32)
    test_rng = np.random.Generator(np.random.PCG64(cfg.data_seed + 2))
    tx0 = system.sample(test_rng, 256)
    tx = torch.as_tensor(tx0, dtype=torch.float32)
    ty = torch.as_tensor(flow(system, tx0, cfg.dt), dtype=torch.float32)
    model = build_model(cfg, x.shape[1], torch.Generator().manual_seed(seed))
    n_params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    gen = torch.Generator().manual_seed(seed + 1)
    curves: list[dict[str, float]] = []
    algebra = isinstance(model, FlowDAD)
    for t in range(cfg.steps + 1):
        if t % cfg.eval_every == 0 or t == cfg.steps:
            with torch.no_grad():
                row = {"step": t, "train_loss": float(model.data_loss(x, y)),
                       "val_loss": float(model.data_loss(tx, ty))}
                if algebra:
                    row.update({f"loss_{k}": float(v)
                                for k, v in model.algebra_losses(x[:1024], gen).items()})
                    row["lambda_alg"] = lambda_alg(t, cfg, cfg.steps)
            curves.append(row)
            if not math.isfinite(row["train_loss"]):
                return SeedOutcome(seed, {}, curves, n_params, f"non-finite loss at step {t}")
        if t == cfg.steps:
            break
        for g in opt.param_groups:
            g["lr"] = cfg.lr * 0.5 * (1 + math.cos(math.pi * t / cfg.steps))
        idx = torch.randint(0, x.shape[0], (cfg.batch,), generator=gen)
        loss = model.data_loss(x[idx], y[idx])
        lam = lambda_alg(t, cfg, cfg.steps) if algebra else 0.0
        if lam > 0:
            aux = model.algebra_losses(x[idx], gen)
            loss = loss + lam * (aux["assoc"] + aux["ident"] + aux["inv"])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    t0 = time.perf_counter()
    X = rollout(model.step, data.test_x0, cfg.rollout_steps)
    metrics = {f"drift_{k}": v for k, v in drift(system, X).items() if k != "blowups"}
    metrics["blowups"] = drift(system, X)["blowups"]
    metrics["rollout_s"] = time.perf_counter() - t0
    metrics["final_train_loss"] = curves[-1]["train_loss"]
    metrics["final_val_loss"] = curves[-1]["val_loss"]
    return SeedOutcome(seed, metrics, curves, n_params)

"""Hamiltonian systems: integrators, data, step models, algebra losses, drift, a tiny trial."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from grokray.errors import ConfigError
from grokray.hamiltonian.data import make_data
from grokray.hamiltonian.integrate import flow, leapfrog, trajectory
from grokray.hamiltonian.model import FlowDAD, StepMLP
from grokray.hamiltonian.rollout import drift, rollout
from grokray.hamiltonian.systems import SYSTEMS, get_system
from grokray.hamiltonian.train import HamConfig, run_seed
from grokray_analysis.drift import drift_table


@pytest.mark.parametrize("name", list(SYSTEMS))
def test_reference_flow_conserves_invariants(name):
    S = get_system(name)
    x0 = S.sample(np.random.default_rng(0), 8)
    X = trajectory(S, x0, 0.1, 200, substeps=10)  # [201, 8, 2m]
    inv = S.invariants(X)
    assert np.abs(inv["energy"] - inv["energy"][:1]).max() < 1e-7
    if name == "kepler":  # a central force: leapfrog conserves L to round-off
        L = inv["angular_momentum"]
        assert np.abs(L - L[:1]).max() < 1e-12


def test_harmonic_flow_is_a_rotation():
    S = get_system("harmonic")
    x = np.array([[1.0, 0.0]])
    t = 0.7
    assert np.allclose(flow(S, x, t, substeps=20), [[np.cos(t), -np.sin(t)]], atol=1e-9)


def test_leapfrog_is_reversible():
    S = get_system("pendulum")
    x = S.sample(np.random.default_rng(1), 4)
    back = leapfrog(S, leapfrog(S, x, 0.1), -0.1)
    assert np.allclose(back, x, atol=1e-13)


def test_unknown_system_is_a_config_error():
    with pytest.raises(ConfigError, match="valid: harmonic, pendulum, kepler"):
        get_system("duffing")


def test_data_pairs_and_disjoint_test_states():
    S = get_system("harmonic")
    d = make_data(S, dt=0.1, n_traj=4, traj_steps=5, n_test=3, data_seed=0)
    assert d.x.shape == (20, 2) and d.y.shape == (20, 2) and d.test_x0.shape == (3, 2)
    assert np.allclose(flow(S, d.x, 0.1), d.y)
    assert not np.isin(d.test_x0[:, 0], d.x[:, 0]).any()


def test_drift_of_exact_and_blown_up_rollouts():
    S = get_system("harmonic")
    X = trajectory(S, S.sample(np.random.default_rng(0), 4), 0.1, 50)
    assert drift(S, X)["energy"] < 1e-7
    X[10:, 2] = np.nan  # orbit 2 blows up
    d = drift(S, X)
    assert d["energy"] == np.inf and d["blowups"] == 1.0
    # a constant energy error of 10% on every orbit gives drift 0.1
    Y = X[:, [0, 1, 3]].copy()
    Y[1:] *= np.sqrt(1.1)
    assert drift(S, Y)["energy"] == pytest.approx(0.1)


def test_flow_dad_reversal_and_losses():
    torch.manual_seed(0)
    m = FlowDAD(4, 16, 8, 8, K=3, inverse="reversal")
    x = torch.randn(5, 4)
    R = torch.tensor([1.0, 1.0, -1.0, -1.0])
    # phi_{-k} = R phi_k R by construction
    assert torch.allclose(m.flow(x, -2), m.flow(x * R, 2) * R, atol=1e-6)
    losses = m.algebra_losses(x, torch.Generator().manual_seed(0))
    assert set(losses) == {"assoc", "ident", "inv"}
    total = sum(losses.values())
    total.backward()
    assert m.tau.grad is not None and torch.isfinite(m.tau.grad).all()
    assert StepMLP(4, 16).step(x).shape == (5, 4)


def test_tiny_trial_is_deterministic():
    cfg = HamConfig(system="kepler", arch="forge", steps=20, rollout_steps=30, n_traj=4,
                    traj_steps=5, n_test=4, hidden=16, d=4, rank=8, batch=16, eval_every=10)
    a, b = run_seed(cfg, 3), run_seed(cfg, 3)
    assert a.error is None
    same = {k: v for k, v in a.metrics.items() if k != "rollout_s"}  # wall time differs
    assert same == {k: v for k, v in b.metrics.items() if k != "rollout_s"}
    assert {"drift_energy", "drift_angular_momentum"} <= set(a.metrics)
    assert [r["step"] for r in a.curves] == [0, 10, 20]
    assert "loss_assoc" in a.curves[0]


def test_rollout_shape():
    X = rollout(lambda x: x * 0.5, np.ones((3, 2)), 4)
    assert X.shape == (5, 3, 2) and X[-1, 0, 0] == pytest.approx(1 / 16)


def test_drift_table_ratio():
    rows = []
    for arm, v in (("mlp", [0.2, 0.4, 0.3]), ("dad+algebra", [0.01, 0.03, 0.02])):
        for s, x in enumerate(v):
            rows.append({"hamiltonian_system": "harmonic", "arm": arm, "status": "not_grokked",
                         "seed": s, "metric_drift_energy": x, "metric_blowups": 0.0,
                         "metric_ref_drift_energy": 0.002})
    res = drift_table(pd.DataFrame(rows))
    cell = next(c for c in res.cells if c.arm == "dad+algebra")
    assert cell.median == 0.02 and cell.ratio == pytest.approx(15.0) and cell.reference == 0.002
    assert np.isnan(next(c for c in res.cells if c.arm == "mlp").ratio)

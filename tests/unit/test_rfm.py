"""RFM estimator: kernels, closed-form AGOP against autograd, the solve, fit/predict, baseline."""

import pytest
import torch

from grokray.metrics.circulant import feature_circulant_deviation
from grokray.rfm.model import (
    KERNELS,
    RFM,
    agop,
    binary_support,
    gradient_weights,
    kernel_matrix,
    one_hot_pairs,
    random_circulant_M,
    solve_psd,
)

P = 11


def _mod_data(p: int, op: str = "add", frac: float = 0.6, seed: int = 0):
    a, b = torch.meshgrid(torch.arange(p), torch.arange(p), indexing="ij")
    a, b = a.flatten(), b.flatten()
    y = {"add": (a + b) % p, "sub": (a - b) % p}[op]
    X = one_hot_pairs(a, b, p)
    perm = torch.randperm(len(y), generator=torch.Generator().manual_seed(seed))
    n = int(frac * len(y))
    return X[perm[:n]], y[perm[:n]], X[perm[n:]], y[perm[n:]]


def _random_psd(d: int, seed: int = 1) -> torch.Tensor:
    B = torch.randn(d, d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    return B @ B.T / d + torch.eye(d, dtype=torch.float64)


def _k_ref(kernel, x, Z, M, L):
    """Out-of-place kernel row k(x, Z) for autograd."""
    if kernel == "quadratic":
        return (Z @ (M @ x)) ** 2
    diff = x[None, :] - Z
    d2 = ((diff @ M) * diff).sum(1)
    if kernel == "gaussian":
        return torch.exp(-d2 / (2 * L**2))
    return torch.exp(-torch.sqrt(d2) / L)


def _agop_autograd(kernel, X, alpha, M, L, centering):
    Js = []
    for j in range(len(X)):
        # laplace has a cusp at x_j: its closed form drops the self term (the others keep it)
        keep = (torch.arange(len(X)) != j) | (kernel != "laplace")
        Z, A = X[keep], alpha[keep]
        Js.append(torch.autograd.functional.jacobian(
            lambda x, Z=Z, A=A: _k_ref(kernel, x, Z, M, L) @ A, X[j].clone()))
    J = torch.stack(Js)  # [n, c, d]
    if centering:
        J = J - J.mean(0)
    return torch.einsum("ncd,nce->de", J, J) / len(X)


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("centering", [False, True])
def test_agop_closed_form_matches_autograd(kernel, centering):
    X, y, _, _ = _mod_data(7, frac=0.5)
    M = _random_psd(X.shape[1])
    Y = torch.nn.functional.one_hot(y, 7).double()
    K = kernel_matrix(kernel, X, X, M, 2.0)
    alpha = solve_psd(K + 1e-2 * torch.eye(len(K), dtype=K.dtype), Y)
    W, gamma, delta = gradient_weights(kernel, X, M, K, 2.0)
    ref = _agop_autograd(kernel, X, alpha, M, 2.0, centering)
    support = binary_support(X)
    assert support is not None
    for sup in (support, None):  # grouped one-hot path and dense path
        G = agop(X, alpha, W, M, gamma, delta, centering, sup)
        assert float((G - ref).norm() / ref.norm()) < 1e-7  # laplace: sqrt of a cancelled sum


def test_kernel_values():
    X, _, _, _ = _mod_data(5, frac=0.5)
    M = _random_psd(10)
    for kernel in KERNELS:
        K = kernel_matrix(kernel, X, X[:4], M, 1.5)
        ref = torch.stack([_k_ref(kernel, x, X[:4], M, 1.5) for x in X])
        assert torch.allclose(K, ref, atol=1e-12)
    K = kernel_matrix("gaussian", X, X, M, 1.5)
    assert torch.allclose(K.diagonal(), torch.ones(len(X), dtype=K.dtype))
    assert torch.allclose(K, K.T)


def test_binary_support_lists_rows_per_column():
    X, _, _, _ = _mod_data(5, frac=0.8)
    idx = binary_support(X)
    n = len(X)
    for a in range(X.shape[1]):
        rows = sorted(int(i) for i in idx[a] if i < n)
        assert rows == X[:, a].nonzero().flatten().tolist()
    assert binary_support(X * 0.5 + 0.1) is None


def test_solve_psd_cholesky_and_fallback():
    A = _random_psd(30)
    Y = torch.randn(30, 4, dtype=torch.float64)
    assert torch.allclose(A @ solve_psd(A, Y), Y, atol=1e-10)
    S = torch.diag(torch.tensor([1.0, -2.0, 3.0], dtype=torch.float64))  # not PD: LU fallback
    Y3 = torch.ones(3, 1, dtype=torch.float64)
    assert torch.allclose(S @ solve_psd(S, Y3), Y3)


def test_fit_interpolates_and_records_history():
    Xtr, ytr, Xva, yva = _mod_data(P)
    est = RFM(iters=3, store_iterates=True)
    assert est.fit(Xtr, ytr, eval_set=(Xva, yva)) is est
    assert len(est.history_) == 4 and len(est.Ms_) == 4
    assert all(h["train_acc"] == 1.0 for h in est.history_)
    assert est.M_.shape == (2 * P, 2 * P)
    assert torch.allclose(est.M_, est.M_.T)
    assert float(torch.linalg.eigvalsh(est.M_).min()) > -1e-10
    assert est.score(Xtr, ytr) == 1.0
    # the final fit uses M_: history's last val acc is the score with (M_, dual_coef_)
    assert est.score(Xva, yva) == pytest.approx(est.history_[-1]["val_acc"])
    assert est.decision_function(Xva).shape == (len(Xva), P)


def test_rfm_iterations_build_circulant_features_small():
    """Z_23 add: the plain kernel machine is at chance; the AGOP iterations make the off-diagonal
    block steadily more circulant (the hidden progress measure) and the val loss fall."""
    Xtr, ytr, Xva, yva = _mod_data(23, frac=0.5)
    est = RFM(iters=8, store_iterates=True).fit(Xtr, ytr, eval_set=(Xva, yva))
    assert est.history_[0]["val_acc"] < 0.05
    dev = [feature_circulant_deviation(M, "add") for M in est.Ms_[1:]]
    assert all(d1 < d0 for d0, d1 in zip(dev, dev[1:], strict=False))
    assert dev[-1] < 0.5 * dev[0]
    assert est.history_[-1]["val_loss"] < est.history_[0]["val_loss"]


def test_random_circulant_baseline_generalizes_at_iteration_zero():
    Xtr, ytr, Xva, yva = _mod_data(31, frac=0.5)
    g = torch.Generator().manual_seed(0)
    M0 = random_circulant_M(31, "add", g)
    assert torch.allclose(M0, M0.T)
    assert feature_circulant_deviation(M0, "add") < 1e-12
    est = RFM(iters=0, M_init=M0).fit(Xtr, ytr, eval_set=(Xva, yva))
    assert est.history_[0]["val_acc"] > 0.95  # 1.0 at p = 61 (acceptance test)
    plain = RFM(iters=0).fit(Xtr, ytr, eval_set=(Xva, yva))
    assert plain.history_[0]["val_acc"] < 0.05


def test_random_circulant_for_each_op_is_circulant_in_op_order():
    for op in ("add", "sub", "mul", "div"):
        M0 = random_circulant_M(P, op, torch.Generator().manual_seed(3))
        assert feature_circulant_deviation(M0, op) < 1e-10
        assert float(torch.linalg.eigvalsh(M0).min()) > -1e-10


def test_unknown_kernel_raises_config_error():
    from grokray.errors import ConfigError

    Xtr, ytr, _, _ = _mod_data(5)
    with pytest.raises(ConfigError, match="valid: gaussian, laplace, quadratic"):
        RFM(kernel="rbf").fit(Xtr, ytr)


def test_run_trial_dispatches_rfm_and_fills_the_result():
    from grokray.config import TrialConfig
    from grokray.trial import run_trial

    cfg = TrialConfig.from_dict({"group": "Z7", "op": "mul", "arch": "rfm", "train_frac": 0.6,
                                 "seeds": [0, 1], "device": "cpu", "rfm": {"iters": 2}})
    res = run_trial(cfg)
    c = res.curves
    assert len(c) == 2 * 3 and sorted(set(c.seed)) == [0, 1]
    assert list(c[c.seed == 0].step) == [0, 1, 2]
    for col in ("train_loss", "train_acc", "val_loss", "val_acc", "metric_circulant_dev",
                "metric_agop_align", "metric_iter_s"):
        assert col in c.columns
    assert c[c.step == 2].metric_agop_align.tolist() == pytest.approx([1.0, 1.0])
    for s in res.seeds:
        assert s.status in ("grokked", "not_grokked") and s.error is None
        assert s.steps_run == 2 and s.artifacts["M"].shape == (14, 14)
        assert {"iter_s", "circulant_dev", "agop_align_first"} <= set(s.metrics)
        assert s.final["final_train_acc"] == 1.0
    assert res.group_order == 7 and res.n_params > 0
    base = run_trial(cfg.with_overrides({"rfm.baseline": "random_circulant", "op": "add"}))
    assert list(base.curves.step) == [0, 0]

"""Circulant deviation (with discrete-log reordering) and the AGOP metrics."""

import pytest
import torch

from grokray.metrics.agop import (
    agop_alignment,
    embed_mlp_nfa,
    mlp_agop,
    nfa_correlation,
    pearson,
    psd_power,
)
from grokray.metrics.circulant import (
    circulant_deviation,
    circulant_profile,
    dlog_order,
    feature_circulant_deviation,
    has_circulant_structure,
    op_block,
    primitive_root,
)


def _circulant(v: torch.Tensor) -> torch.Tensor:
    q = len(v)
    i = torch.arange(q)
    return v[(i[None, :] - i[:, None]) % q]  # C[r, s] = v[s - r]


def test_circulant_deviation_zero_on_circulant_positive_otherwise():
    v = torch.randn(7, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    C = _circulant(v)
    assert circulant_deviation(C) == pytest.approx(0.0, abs=1e-15)
    assert torch.allclose(circulant_profile(C), v)
    R = torch.randn(7, 7, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    assert circulant_deviation(R) > 0.01
    # hand value: D = sum_j Var(diag_j) / |A|_F^2 on a 2x2 example
    A = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    # wrapped diagonals: j=0 -> (1, 4), j=1 -> (2, 3); variances 2.25 and 0.25; |A|^2 = 30
    assert circulant_deviation(A) == pytest.approx(2.5 / 30)
    assert circulant_deviation(A * 5) == pytest.approx(2.5 / 30)  # scale free
    assert torch.isnan(torch.tensor(circulant_deviation(torch.zeros(3, 3))))


def test_primitive_root_and_dlog_order():
    assert primitive_root(7) == 3
    assert primitive_root(61) == 2
    order = dlog_order(11).tolist()
    assert sorted(order) == list(range(1, 11))
    g = primitive_root(11)
    assert order == [pow(g, k, 11) for k in range(10)]
    with pytest.raises(ValueError):
        primitive_root(12)


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
def test_op_block_makes_op_structured_matrix_circulant(op):
    p = 11
    v = torch.randn(p, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    a = torch.arange(p)[:, None]
    b = torch.arange(p)[None, :]
    if op == "add":  # C[a, b] = v[b - a]
        C = v[(b - a) % p]
    elif op == "sub":  # C[a, b] = v[-(a + b)] : Hankel in a, b
        C = v[(-(a + b)) % p]
    else:
        # in log coordinates: mul C[a, b] = w[log b - log a]; div C[a, b] = w[-(log a + log b)]
        w = v[: p - 1]
        log = torch.zeros(p, dtype=torch.long)
        log[dlog_order(p)] = torch.arange(p - 1)
        la, lb = log[a.flatten()][:, None], log[b.flatten()][None, :]
        C = w[(lb - la) % (p - 1)] if op == "mul" else w[(-(la + lb)) % (p - 1)]
        C[0, :] = 0.0
        C[:, 0] = 0.0
    B = op_block(C, op)
    assert circulant_deviation(B) == pytest.approx(0.0, abs=1e-14)
    M = torch.zeros(2 * p, 2 * p, dtype=torch.float64)
    M[:p, p:] = C
    M[p:, :p] = C.T
    assert feature_circulant_deviation(M, op) == pytest.approx(0.0, abs=1e-14)
    if op != "add":
        assert circulant_deviation(C) > 1e-3  # the reordering is what makes it circulant


def test_has_circulant_structure():
    assert has_circulant_structure("add", 12)
    assert has_circulant_structure("mul", 13)
    assert not has_circulant_structure("mul", 12)
    assert not has_circulant_structure("group", 13)


def test_alignment_and_pearson():
    g = torch.Generator().manual_seed(0)
    A = torch.randn(6, 6, generator=g, dtype=torch.float64)
    assert agop_alignment(A, A) == pytest.approx(1.0)
    assert agop_alignment(A, 3 * A + 2) == pytest.approx(1.0)  # centered: shift and scale free
    assert agop_alignment(A, -A) == pytest.approx(-1.0)
    assert agop_alignment(A, A + 2, center=False) < 0.99
    B = torch.randn(6, 6, generator=g, dtype=torch.float64)
    assert abs(pearson(A, B)) < 0.6
    assert pearson(A, torch.ones(6, 6)) == 0.0
    D = torch.diag(torch.arange(6.0)) * 100
    assert pearson(A + D, A - D, drop_diag=True) == pytest.approx(1.0)
    assert pearson(A + D, A - D) < 0


@pytest.mark.parametrize("act", ["relu", "quadratic", "tanh", "gelu", "silu", "identity"])
def test_mlp_agop_matches_autograd(act):
    g = torch.Generator().manual_seed(1)
    n, d, h, c = 20, 8, 16, 5
    X = torch.randn(n, d, generator=g, dtype=torch.float64)
    W1 = torch.randn(h, d, generator=g, dtype=torch.float64)
    b1 = torch.randn(h, generator=g, dtype=torch.float64)
    W2 = torch.randn(c, h, generator=g, dtype=torch.float64)
    fn = {"relu": torch.relu, "quadratic": torch.square, "tanh": torch.tanh,
          "gelu": torch.nn.functional.gelu, "silu": torch.nn.functional.silu,
          "identity": lambda z: z}[act]
    J = torch.stack([torch.autograd.functional.jacobian(lambda x: W2 @ fn(W1 @ x + b1), x)
                     for x in X])  # [n, c, d]
    ref = torch.einsum("ncd,nce->de", J, J) / n
    G = mlp_agop(X, W1, W2, b1, act)
    assert torch.allclose(G, ref, rtol=1e-9, atol=1e-9)


def test_nfa_correlation_perfect_for_linear_net_and_power_one():
    # f(x) = W2 W1 x: AGOP = W1^T W2^T W2 W1; with W2 = I that is W1^T W1 exactly
    g = torch.Generator().manual_seed(3)
    W1 = torch.randn(6, 6, generator=g, dtype=torch.float64)
    X = torch.randn(10, 6, generator=g, dtype=torch.float64)
    assert nfa_correlation(X, W1, torch.eye(6, dtype=torch.float64), act="identity",
                           power=1.0) == pytest.approx(1.0)
    G = W1.T @ W1
    assert torch.allclose(psd_power(G, 0.5) @ psd_power(G, 0.5), G, atol=1e-10)


def test_embed_mlp_nfa_matches_one_hot_mlp_agop():
    g = torch.Generator().manual_seed(4)
    n, h, c = 5, 12, 5
    Ta = torch.randn(n, h, generator=g, dtype=torch.float64)
    Tb = torch.randn(n, h, generator=g, dtype=torch.float64)
    b1 = torch.randn(h, generator=g, dtype=torch.float64)
    W2 = torch.randn(h, c, generator=g, dtype=torch.float64)
    a = torch.arange(n).repeat_interleave(n)
    b = torch.arange(n).repeat(n)
    X = torch.zeros(n * n, 2 * n, dtype=torch.float64)
    X[torch.arange(n * n), a] = 1.0
    X[torch.arange(n * n), n + b] = 1.0
    W1 = torch.cat([Ta, Tb], 0).T  # [h, 2n]
    corr, G = embed_mlp_nfa(Ta, Tb, b1, W2, a, b, act="quadratic")
    assert torch.allclose(G, mlp_agop(X, W1, W2.T, b1, "quadratic"), atol=1e-10)
    assert corr == pytest.approx(nfa_correlation(X, W1, W2.T, b1, "quadratic"))
    assert -1.0 <= corr <= 1.0

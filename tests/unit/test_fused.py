"""The fused training losses (models/fused.py) equal autograd through the models' logits."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from grokray.config import TrialConfig
from grokray.models import get_model
from grokray.models.assoc import assoc_naive, assoc_sampled
from grokray.models.fused import LOG2E, Workspace, softmax_grad2_
from grokray.models.ops import seed_cross_entropy

ACTS = ("relu", "gelu", "tanh", "silu", "quadratic", "identity")
CASES = [("mlp", {"model.act": act}) for act in ACTS] + [
    ("forge", {"forge.decode": dec}) for dec in ("tied_dist", "tied", "separate")
]


def _model(arch: str, extra: dict, dtype: torch.dtype, n: int = 13, seeds=(0, 1, 2)):
    cfg = TrialConfig.from_dict({"group": "Z13", "arch": arch, "model.hidden": 24,
                                 "model.rank": 16, "model.d": 8, **extra})
    return get_model(arch)(cfg, n, n, list(seeds), "cpu", dtype)


def _grads(model, loss: torch.Tensor, w: torch.Tensor) -> list[torch.Tensor | None]:
    return list(torch.autograd.grad((loss * w).sum(), list(model.params.values()),
                                    allow_unused=True))


@pytest.mark.parametrize("arch,extra", CASES)
@pytest.mark.parametrize("chunk", [5, 64, 10_000])
def test_fused_equals_autograd_float64(arch, extra, chunk):
    torch.manual_seed(0)
    m = _model(arch, extra, torch.float64)
    S, B, n = 3, 64, 13
    a, b, y = (torch.randint(n, (S, B)) for _ in range(3))
    w = torch.tensor([1.0, 0.5, -2.0], dtype=torch.float64)  # per-seed upstream gradient
    ref = seed_cross_entropy(m.logits(a, b), y)
    got = m.data_loss(a, b, y, chunk)
    assert torch.allclose(got, ref, rtol=0, atol=1e-12)
    for g_ref, g_got in zip(_grads(m, ref, w), _grads(m, got, w), strict=True):
        if g_ref is None:
            assert g_got is None or not g_got.abs().any()
            continue
        assert torch.allclose(g_got, g_ref, rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize("arch,extra", [CASES[0], CASES[-3]])
def test_fused_shared_indices_and_float32(arch, extra):
    """1-D (shared) index batches, and float32 within float32 rounding of the stock path."""
    torch.manual_seed(1)
    m = _model(arch, extra, torch.float32)
    B, n = 50, 13
    a, b, y = (torch.randint(n, (B,)) for _ in range(3))
    w = torch.ones(3)
    ref = seed_cross_entropy(m.logits(a, b), y)
    got = m.data_loss(a, b, y, 7)
    assert torch.allclose(got, ref, rtol=1e-5, atol=1e-5)
    for g_ref, g_got in zip(_grads(m, ref, w), _grads(m, got, w), strict=True):
        if g_ref is not None:
            assert torch.allclose(g_got, g_ref, rtol=1e-4, atol=1e-6)


def test_softmax_grad2_extreme_logits():
    """Exact nll where the target probability underflows (no inf), gradient = softmax - onehot."""
    logits = torch.tensor([[[0.0, -200.0, 3.0], [50.0, -50.0, 0.0]]], dtype=torch.float32)
    y = torch.tensor([[1, 0]])
    ref_nll = F.cross_entropy(logits.double()[0], y[0], reduction="sum")
    L = logits * LOG2E
    nll = softmax_grad2_(L, y)
    assert math.isfinite(nll.item())
    assert nll.item() == pytest.approx(ref_nll.item(), rel=1e-6)  # 203.05 + 0.0 ...
    expect = torch.softmax(logits.double(), -1)
    expect[0, 0, 1] -= 1.0
    expect[0, 1, 0] -= 1.0
    assert torch.allclose(L.double(), expect, atol=1e-6)


def test_workspace_reuses_and_grows():
    ws, like = Workspace(), torch.zeros(1)
    a = ws.get("x", (2, 3), like)
    b = ws.get("x", (3, 2), like)
    assert a.data_ptr() == b.data_ptr() and b.shape == (3, 2) and b.is_contiguous()
    c = ws.get("x", (4, 4), like)
    assert c.numel() == 16
    assert ws.get("x", (2, 2), like.double()).dtype == torch.float64


def test_fused_backward_scales_with_weights():
    """The loss of a seed with weight 0 contributes no gradient to that seed's parameters."""
    torch.manual_seed(2)
    m = _model("forge", {}, torch.float64)
    S, B = 3, 40
    a, b, y = (torch.randint(13, (S, B)) for _ in range(3))
    g = _grads(m, m.data_loss(a, b, y, 16), torch.tensor([1.0, 0.0, 1.0], dtype=torch.float64))
    E = dict(zip(m.params, g, strict=True))["E"]
    assert E[1].abs().max().item() == 0.0 and E[0].abs().max().item() > 0.0


def test_assoc_sampled_equals_naive_float64():
    """The fused sampled associativity loss: value and gradients equal autograd through mu."""
    torch.manual_seed(3)
    m = _model("forge", {}, torch.float64)
    S, M = 3, 37
    i, j, k = (torch.randint(13, (S, M)) for _ in range(3))
    p = m.params
    ref = assoc_naive(p["E"], p["U"], p["V"], p["W"], i, j, k)
    got = assoc_sampled(*m._tables(), p["U"], p["V"], p["W"], i, j, k, Workspace())
    assert torch.allclose(got, ref, rtol=1e-12, atol=1e-15) and ref.min() > 0
    w = torch.tensor([0.3, 1.0, -1.5], dtype=torch.float64)
    for g_ref, g_got in zip(_grads(m, ref, w), _grads(m, got, w), strict=True):
        if g_ref is None:
            assert g_got is None
            continue
        assert torch.allclose(g_got, g_ref, rtol=1e-10, atol=1e-14)
    with torch.no_grad():  # no gradient work without grad mode: same value
        assert torch.allclose(assoc_sampled(*m._tables(), p["U"], p["V"], p["W"], i, j, k,
                                            Workspace()), ref)


@pytest.mark.parametrize("n,extra", [(13, {}), (13, {"forge.alg_full_max": 4,
                                                     "forge.alg_samples": 6})])
def test_forge_aux_loss_equals_plain_autograd(n, extra):
    """The weighted algebra loss (fused identity/inverse, full or sampled associativity) and its
    gradient equal the losses written plainly with mu and g_phi (papers.md definitions)."""
    torch.manual_seed(4)
    m = _model("forge", {"forge.w_assoc": 0.7, "forge.w_ident": 1.3, "forge.w_inv": 0.4,
                         **extra}, torch.float64, n=n)
    gens = [g.get_state() for g in m.gens]
    got = m.aux_loss()
    for g, st in zip(m.gens, gens, strict=True):  # replay the same samples
        g.set_state(st)
    p = m.params
    E, e = p["E"], p["e"][:, None, :]
    S = E.shape[0]
    sq = lambda v: v.square().sum(-1).mean(-1)  # noqa: E731
    UVW = p["U"], p["V"], p["W"]
    if n <= m.full_max:
        assoc = assoc_naive(E, *UVW)
    else:
        idx = m._sample((m.n_samples, 3), n)
        assoc = assoc_naive(E, *UVW, idx[..., 0], idx[..., 1], idx[..., 2])
    if n <= m.n_samples:
        x = E
    else:
        x = torch.stack([E[s_, i_] for s_, i_ in enumerate(m._sample((m.n_samples,), n))])
    ee = e.expand_as(x)
    ident = sq(m.mu(ee, x) - x) + sq(m.mu(x, ee) - x)
    gx = m.g_phi(x)
    inv = sq(m.mu(x, gx) - ee) + sq(m.mu(gx, x) - ee)
    ref = 0.7 * assoc + 1.3 * ident + 0.4 * inv
    assert S == 3 and torch.allclose(got, ref, rtol=1e-12, atol=1e-14)
    w = torch.tensor([1.0, -0.5, 2.0], dtype=torch.float64)
    for g_ref, g_got in zip(_grads(m, ref, w), _grads(m, got, w), strict=True):
        assert torch.allclose(g_got, g_ref, rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize("by_sort", [False, True])
def test_add_rows_both_paths(by_sort):
    """The row scatter used by the fused backward passes (index_add_ on CPU, the sort-based
    embedding backward on CUDA) adds repeated rows."""
    from grokray.models.fused import add_rows

    acc = torch.ones(5, 3)
    idx = torch.tensor([0, 2, 2, 4, 0])
    src = torch.arange(15.0).view(5, 3)
    add_rows(acc, idx, src, by_sort=by_sort)
    expect = torch.ones(5, 3)
    for r, i in enumerate(idx.tolist()):
        expect[i] += src[r]
    assert torch.equal(acc, expect)


@pytest.mark.parametrize("dtype,tol", [(torch.float64, 1e-12), (torch.float32, 2e-5)])
def test_nll_rows_equals_cross_entropy(dtype, tol):
    from grokray.models.fused import nll_rows_

    torch.manual_seed(5)
    L = torch.randn(3, 40, 11, dtype=dtype) * 20
    L[0, 0] = torch.tensor([0.0] + [-300.0] * 10, dtype=dtype)  # p(y) underflows in float32
    y = torch.randint(11, (3, 40))
    y[0, 0] = 3
    ref = F.cross_entropy(L.double().reshape(-1, 11), y.reshape(-1), reduction="none")
    got = nll_rows_(L.clone(), y)
    assert torch.allclose(got.double().reshape(-1), ref, rtol=tol, atol=tol)
    shared = nll_rows_(L[:, :5].clone(), y[0, :5])  # [c] targets shared by the seeds
    assert shared.shape == (3, 5)

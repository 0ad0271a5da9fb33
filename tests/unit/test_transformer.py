"""The seed-batched transformer over `a b =` (grokray/models/transformer.py), on tiny configs."""

from __future__ import annotations

import math

import pytest
import torch

from grokray.config import TrialConfig
from grokray.errors import ConfigError
from grokray.models import get_model
from grokray.models.transformer import Transformer
from grokray.trial import run_trial

NORMS = ("none", "layernorm", "rmsnorm", "spherical", "spherical_bounded")
N = 5


def make_cfg(**tf) -> TrialConfig:
    base = {"d_model": 16, "n_heads": 2, "d_mlp": 32}
    return TrialConfig.from_dict({"arch": "transformer", "transformer": {**base, **tf}})


def all_pairs(n: int = N) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.arange(n).repeat_interleave(n), torch.arange(n).repeat(n)  # [n^2] each


def test_registry_resolves_transformer():
    assert get_model("transformer") is Transformer


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("attention", ["standard", "uniform"])
def test_shapes_and_param_count(norm, attention):
    cfg = make_cfg(norm=norm, attention=attention, n_layers=2, learn_scale=True)
    model = Transformer(cfg, N, 7, seeds=[0, 1, 2])
    a, b = all_pairs()
    assert model.logits(a, b).shape == (3, N * N, 7)
    assert model.logits(a.expand(3, -1), b.expand(3, -1)).shape == (3, N * N, 7)
    assert all(p.shape[0] == 3 and p.requires_grad for p in model.params.values())
    n = sum(p[0].numel() for p in model.params.values())
    assert n == Transformer.count_params(cfg, N, 7)
    assert set(model.weight_decay(1.0)) == set(model.params)
    assert model.embeddings()["E"].shape == (3, N, 16)
    acts = model.activations(a, b)
    assert acts["resid_post.1"].shape == (3, N * N, 3, 16)
    assert acts["mlp_post.0"].shape == (3, N * N, 3, 32)
    assert acts["attn_pattern.1"].shape == (3, N * N, 2, 3, 3)
    assert ("W_Q.0" in model.params) == (attention == "standard")


def test_param_count_by_hand():
    # Nanda et al. defaults, LayerNorm, p = 113: E (114 x 128) + pos (3 x 128) + 4 x (128 x 128)
    # attention + MLP (128 x 512 + 512 + 512 x 128 + 128) + U (113 x 128) + 3 norms x 2 x 128
    cfg = TrialConfig.from_dict({"arch": "transformer"})
    d, m = 128, 512
    want = 114 * d + 3 * d + 4 * d * d + (d * m + m + m * d + d) + 113 * d + 3 * 2 * d
    assert Transformer.count_params(cfg, 113, 113) == want


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("attention", ["standard", "uniform"])
@pytest.mark.parametrize("layers", [1, 2])  # 1: the per-token-table shortcut of block 0
def test_shortcut_equals_full_forward(norm, attention, layers):
    """logits (last-position shortcut) equal the last position of the all-position forward,
    in value and gradient (float64), for shared and per-seed index batches."""
    model = Transformer(make_cfg(norm=norm, attention=attention, n_layers=layers,
                                 learn_scale=True), N, N, seeds=[0, 1], dtype=torch.float64)
    a, b = all_pairs()
    for ia, ib in ((a, b), (a.flip(0).expand(2, -1), b.expand(2, -1))):
        fast, full = model.logits(ia, ib), model.activations(ia, ib)["logits"]
        torch.testing.assert_close(fast, full, rtol=1e-10, atol=1e-12)
        ps = list(model.params.values())
        w = torch.randn_like(full)
        g_fast = torch.autograd.grad((fast * w).sum(), ps, allow_unused=True)
        g_full = torch.autograd.grad((full * w).sum(), ps, allow_unused=True)
        for x, y in zip(g_fast, g_full, strict=True):
            torch.testing.assert_close(x, y, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("attention", ["standard", "uniform"])
def test_table_losses_equal_chunked(norm, attention):
    """data_losses over several chunks (a 1-layer model: per-token tables once per batch, the
    gradients through a surrogate term) equal chunked_losses through logits, in value and
    gradient (float64), for per-seed batches; the term's value is the plain loss exactly."""
    from grokray.models.protocol import chunked_losses

    model = Transformer(make_cfg(norm=norm, attention=attention, learn_scale=True), N, N,
                        seeds=[0, 1, 2], dtype=torch.float64)
    a, b = all_pairs()
    g = torch.Generator().manual_seed(0)
    ia = torch.stack([a[torch.randperm(N * N, generator=g)] for _ in range(3)])[:, :17]
    ib = torch.stack([b[torch.randperm(N * N, generator=g)] for _ in range(3)])[:, :17]
    y = (ia + ib) % N
    ps = list(model.params.values())
    terms = list(model.data_losses(ia, ib, y, chunk=5))  # chunks of 5, 5, 5, 2
    assert len(terms) == 1
    plain = list(chunked_losses(model.logits, ia, ib, y, 5))
    want = sum(t.detach() for t in plain)
    torch.testing.assert_close(terms[0].detach(), want, rtol=1e-12, atol=1e-14)
    got_g = torch.autograd.grad(terms[0].sum(), ps, allow_unused=True)
    want_g = [None] * len(ps)
    for t in plain:
        gs = torch.autograd.grad(t.sum(), ps, allow_unused=True)
        want_g = [x if w is None else w if x is None else w + x
                  for w, x in zip(want_g, gs, strict=True)]
    for x, w in zip(got_g, want_g, strict=True):
        assert (x is None) == (w is None)
        if x is not None:
            torch.testing.assert_close(x, w, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("norm", ["layernorm", "spherical_bounded"])
def test_seed_batched_equals_separate(norm):
    cfg = make_cfg(norm=norm, learn_scale=True)
    seeds = [3, 0, 11]
    batched = Transformer(cfg, N, N, seeds=seeds)
    a, b = all_pairs()
    ab, bb = a[torch.randperm(N * N)], b[torch.randperm(N * N)]
    per_seed_a = torch.stack([a, ab, a])  # [S, B]: a different batch per seed
    per_seed_b = torch.stack([b, bb, bb])
    out = batched.logits(per_seed_a, per_seed_b)  # [S, B, n]
    for i, s in enumerate(seeds):
        alone = Transformer(cfg, N, N, seeds=[s])
        torch.testing.assert_close(out[i], alone.logits(per_seed_a[i], per_seed_b[i])[0],
                                   rtol=1e-5, atol=1e-6)
    assert not torch.allclose(out[0], out[2])  # seeds differ


@pytest.mark.parametrize("norm", ["spherical", "spherical_bounded"])
def test_spherical_residual_unit_norm(norm):
    model = Transformer(make_cfg(norm=norm, n_layers=2), N, N, seeds=[0, 1])
    acts = model.activations(*all_pairs())
    for name in ("resid_pre.0", "resid_pre.1", "resid_post.0", "resid_post.1", "resid_final"):
        norms = acts[name].norm(dim=-1)
        torch.testing.assert_close(norms, torch.ones_like(norms), rtol=0, atol=1e-5)
    assert acts["embed"].norm(dim=-1).std() > 1e-3  # the raw embedding is not normalized


def test_layernorm_residual_not_unit_norm():
    acts = Transformer(make_cfg(norm="layernorm"), N, N, seeds=[0]).activations(*all_pairs())
    assert (acts["resid_post.0"].norm(dim=-1) - 1).abs().max() > 0.1


def test_uniform_attention_is_mean_of_visible_values():
    model = Transformer(make_cfg(norm="none", attention="uniform"), N, N, seeds=[0, 1])
    acts = model.activations(*all_pairs())
    h = acts["resid_pre.0"]  # norm none: the attention input is the residual stream
    v = torch.einsum("sbtd,shde->sbhte", h, model.params["W_V.0"])  # [S, B, H, T, e]
    z = acts["attn_z.0"]
    for t in range(3):
        torch.testing.assert_close(z[:, :, :, t], v[:, :, :, : t + 1].mean(3))
    pattern = acts["attn_pattern.0"][0, 0, 0]  # [T, T]
    want = torch.tensor([[1, 0, 0], [1 / 2, 1 / 2, 0], [1 / 3, 1 / 3, 1 / 3]])
    torch.testing.assert_close(pattern, want)


def test_uniform_attention_ignores_query_key():
    """Uniform = standard attention whose scores are all equal (W_Q = 0), whatever W_K is; with
    a non-zero W_Q the standard model differs."""
    uni = Transformer(make_cfg(attention="uniform"), N, N, seeds=[0])
    std = Transformer(make_cfg(attention="standard"), N, N, seeds=[0])
    a, b = all_pairs()
    with torch.no_grad():
        for k, p in uni.params.items():
            std.params[k].copy_(p)
        assert not torch.allclose(std.logits(a, b), uni.logits(a, b), atol=1e-4)
        std.params["W_Q.0"].zero_()
        torch.testing.assert_close(std.logits(a, b), uni.logits(a, b))
        std.params["W_K.0"].mul_(100.0)
        torch.testing.assert_close(std.logits(a, b), uni.logits(a, b))


@pytest.mark.parametrize("learn", [False, True])
def test_spherical_bounded_logits_bounded(learn):
    cfg = make_cfg(norm="spherical_bounded", logit_scale=-3.0, learn_scale=learn)
    model = Transformer(cfg, N, N, seeds=[0, 1])
    with torch.no_grad():
        model.params["W_U"].mul_(50.0)  # row norms do not matter: rows are normalized
        for k in ("W_in.0", "W_out.0", "W_V.0", "W_E"):
            model.params[k].mul_(20.0)
    logits = model.logits(*all_pairs())
    assert logits.abs().max() <= 3.0 + 1e-5
    assert logits.abs().max() > 0.5  # not trivially zero
    assert ("scale" in model.params) == learn


def test_learned_scale_gets_gradient():
    model = Transformer(make_cfg(norm="spherical_bounded", learn_scale=True), N, N, seeds=[0])
    y = torch.arange(N * N) % N
    loss = torch.nn.functional.cross_entropy(model.logits(*all_pairs())[0], y)
    (g,) = torch.autograd.grad(loss, [model.params["scale"]])
    assert g.abs().item() > 0


def test_deterministic():
    cfg = make_cfg(norm="rmsnorm")
    m1, m2 = Transformer(cfg, N, N, seeds=[4, 5]), Transformer(cfg, N, N, seeds=[4, 5])
    for k in m1.params:
        assert torch.equal(m1.params[k], m2.params[k])
    a, b = all_pairs()
    assert torch.equal(m1.logits(a, b), m2.logits(a, b))


def test_select_keeps_seeds():
    model = Transformer(make_cfg(), N, N, seeds=[0, 1, 2])
    a, b = all_pairs()
    before = model.logits(a, b)
    model.select(torch.tensor([2, 0]))
    torch.testing.assert_close(model.logits(a, b), before[[2, 0]])


def test_bad_shape_config_raises():
    with pytest.raises(ConfigError, match="divisible"):
        Transformer(make_cfg(d_model=10, n_heads=4), N, N, seeds=[0])
    with pytest.raises(ConfigError, match="transformer.act"):
        Transformer(make_cfg(act="swish"), N, N, seeds=[0])
    m = Transformer(make_cfg(d_model=10, n_heads=4, d_head=3), N, N, seeds=[0])
    assert m.params["W_Q.0"].shape == (1, 4, 10, 3)


@pytest.mark.parametrize("group,op,norm", [("Z5", "group", "spherical_bounded"),
                                           ("Z7", "add", "layernorm")])
def test_run_trial_records_curves(group, op, norm):
    cfg = TrialConfig.from_dict({
        "arch": "transformer", "group": group, "op": op, "steps": 60, "eval_every": 20,
        "train_frac": 0.6, "seeds": [0, 1], "device": "cpu",
        "transformer": {"d_model": 16, "n_heads": 2, "d_mlp": 32, "norm": norm},
        "optim": {"lr": 3e-3, "weight_decay": 0.0 if norm == "spherical_bounded" else 1.0},
        "metrics": {"patience": 0},
    })
    res = run_trial(cfg)
    n = int(group[1:])
    assert res.n_params == Transformer.count_params(cfg, n, n)
    assert [s.status for s in res.seeds] != ["failed", "failed"]
    assert all(s.error is None for s in res.seeds)
    c = res.curves
    assert sorted(c["step"].unique().tolist()) == [0, 20, 40, 60]
    assert len(c) == 8 and c[["train_loss", "val_loss"]].notna().all().all()
    first = c[c.step == 0].train_loss.mean()
    last = c[c.step == 60].train_loss.mean()
    assert last < first  # it learns
    assert not math.isnan(first)


def test_run_trial_is_deterministic():
    cfg = TrialConfig.from_dict({
        "arch": "transformer", "group": "S3", "steps": 20, "eval_every": 10, "seeds": [0],
        "device": "cpu", "transformer": {"d_model": 16, "n_heads": 2, "d_mlp": 32},
    })
    c1, c2 = run_trial(cfg).curves, run_trial(cfg).curves
    cols = ["step", "train_loss", "val_loss", "train_acc", "val_acc"]
    assert c1[cols].equals(c2[cols])

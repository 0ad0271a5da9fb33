import torch

from grokray.optim.grokfast import EMAFilter, MAFilter


def _grads(T, S=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [{"w": torch.randn(S, 4, generator=g, dtype=torch.float64),
             "b": torch.randn(S, 2, generator=g, dtype=torch.float64)} for _ in range(T)]


def test_ema_matches_formula():
    a, lam = 0.9, 2.0
    f = EMAFilter(a, lam)
    mu: dict = {}
    for g in _grads(20):
        out = f(g)
        for k in g:
            mu[k] = g[k].clone() if k not in mu else a * mu[k] + (1 - a) * g[k]
            torch.testing.assert_close(out[k], g[k] + lam * mu[k])


def test_ma_matches_formula_with_and_without_warmup():
    w, lam = 4, 5.0
    hist = _grads(15)
    for warmup in (True, False):
        f = MAFilter(w, lam, warmup)
        for t, g in enumerate(hist):
            out = f(g)
            window = hist[max(0, t - w + 1): t + 1]
            for k in g:
                if warmup and len(window) < w:
                    torch.testing.assert_close(out[k], g[k])
                else:
                    avg = sum(x[k] for x in window) / len(window)
                    torch.testing.assert_close(out[k], g[k] + lam * avg)


def test_filters_are_per_seed_and_select():
    hist = _grads(6)
    f_all, f_one = EMAFilter(0.8, 1.5), EMAFilter(0.8, 1.5)
    for g in hist:
        out = f_all(g)
        one = f_one({k: v[1:2] for k, v in g.items()})
        torch.testing.assert_close(out["w"][1:2], one["w"])
    m = MAFilter(3, 2.0, False)
    for g in hist:
        m(g)
    m.select(torch.tensor([2]))
    assert m.total["w"].shape == (1, 4) and m.buf["w"].shape == (3, 1, 4)
    torch.testing.assert_close(m.total["w"], sum(g["w"][2:3] for g in hist[-3:]))


def test_ema_with_an_alpha_per_member_equals_each_member_alone_bit_for_bit():
    """A pack's EMA filter (one alpha and lamb per member: one lerp per tensor with a weight
    per member, the output in buffers reused each step) gives each member exactly what its
    own filter gives, float32 and float64."""
    for dtype in (torch.float32, torch.float64):
        alphas, lambs = [0.9, 0.9, 0.98, 0.8], [2.0, 2.0, 1.0, 2.0]
        pack = EMAFilter(list(alphas), list(lambs))
        alone = [EMAFilter(a, lam) for a, lam in zip(alphas, lambs, strict=True)]
        for g in _grads(8, S=4):
            g = {k: v.to(dtype) for k, v in g.items()}
            out = {k: v.clone() for k, v in pack(g).items()}
            for i, f in enumerate(alone):
                one = f({k: v[i:i + 1] for k, v in g.items()})
                for k in g:
                    assert torch.equal(out[k][i:i + 1], one[k])
        pack.select(torch.tensor([0, 3]))
        g = {k: v.to(dtype)[[0, 3]] for k, v in _grads(1, S=4, seed=9)[0].items()}
        out = pack(g)
        for i, f in zip((0, 1), (alone[0], alone[3]), strict=True):
            one = f({k: v[i:i + 1] for k, v in g.items()})
            assert all(torch.equal(out[k][i:i + 1], one[k]) for k in g)

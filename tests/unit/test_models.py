import dataclasses
from functools import partial

import pytest
import torch

from grokray.config import TrialConfig
from grokray.families import families
from grokray.models import get_model
from grokray.models.forge import Forge
from grokray.models.mlp import MLP, mlp_params
from tests.helpers.configs import defaults

torch.set_num_threads(1)  # tiny tensors: extra threads only contend on a shared CPU


_cfg = partial(defaults, {"model.d": 8, "model.rank": 6, "model.hidden": 10,
                          "forge.inv_hidden": 5})


def _count(params):
    return sum(p[0].numel() for p in params.values())


def test_registry():
    assert {"mlp", "forge", "transformer", "rfm"} <= set(families())
    assert get_model("mlp") is MLP and get_model("forge") is Forge
    with pytest.raises(Exception, match="unknown arch"):
        get_model("cnn")


@pytest.mark.parametrize("arch", ["mlp", "forge"])
def test_shapes_and_param_counts(arch):
    cfg = _cfg(arch=arch)
    cls = get_model(arch)
    m = cls(cfg, 5, 5, [0, 1, 2])
    a = torch.tensor([[0, 1, 2, 3], [4, 3, 2, 1], [0, 0, 0, 0]])
    assert m.logits(a, a).shape == (3, 4, 5)
    assert m.logits(a[0], a[1]).shape == (3, 4, 5)  # shared indices
    assert all(p.shape[0] == 3 for p in m.params.values())
    assert _count(m.params) == cls.count_params(cfg, 5, 5)
    assert set(m.weight_decay(1.0)) == set(m.params)
    assert m.embeddings()["E"].shape[:2] == (3, 5)


def test_counts_by_formula():
    cfg = _cfg()
    assert MLP.count_params(cfg, 5, 5) == 2 * 5 * 8 + 16 * 10 + 10 + 10 * 5 + 5
    # FORGE: E + U, V, W + e + g_phi (d*h + h + h*d + d)
    assert Forge.count_params(cfg, 5, 5) == 5 * 8 + 3 * 6 * 8 + 8 + (8 * 5 + 5 + 5 * 8 + 8)
    sep = _cfg(**{"forge.decode": "separate"})
    assert Forge.count_params(sep, 5, 5) == Forge.count_params(cfg, 5, 5) + 5 * 8 + 5


@pytest.mark.parametrize("n,decode", [(6, "tied"), (12, "separate"), (24, "tied")])
def test_matched_budget(n, decode):
    cfg = TrialConfig().with_overrides({"model.matched_budget": True, "forge.decode": decode})
    target = Forge.count_params(cfg, n, n)
    h = MLP(cfg, n, n, [0]).h
    got = MLP.count_params(cfg, n, n)
    assert got == mlp_params(n, n, cfg.model.d, h)
    # the closest width: one more or one less hidden unit is no closer
    for hh in (h - 1, h + 1):
        assert abs(mlp_params(n, n, cfg.model.d, hh) - target) >= abs(got - target)


def test_seed_slices_equal_single_seed_models():
    for arch in ("mlp", "forge"):
        cfg = _cfg(arch=arch)
        many = get_model(arch)(cfg, 5, 5, [3, 7])
        one = get_model(arch)(cfg, 5, 5, [7])
        for k in many.params:
            torch.testing.assert_close(many.params[k][1:], one.params[k])
        assert not torch.equal(many.params["E" if arch == "forge" else "Ea"][0],
                               many.params["E" if arch == "forge" else "Ea"][1])


def test_mlp_forward_matches_concat_formula():
    cfg = _cfg(arch="mlp")
    m = MLP(cfg, 5, 5, [0], dtype=torch.float64)
    p = {k: v[0].detach() for k, v in m.params.items()}
    a, b = torch.tensor([1, 4]), torch.tensor([2, 0])
    x = torch.cat([p["Ea"][a], p["Eb"][b]], -1)
    W1 = torch.cat([p["W1a"], p["W1b"]], 0)
    ref = torch.relu(x @ W1 + p["b1"]) @ p["W2"] + p["b2"]
    torch.testing.assert_close(m.logits(a, b)[0].detach(), ref)


def test_forge_product_and_losses_match_definitions():
    cfg = _cfg(arch="forge", **{"forge.decode": "tied"})
    m = Forge(cfg, 5, 5, [0, 1], dtype=torch.float64)
    p = {k: v[1].detach() for k, v in m.params.items()}

    def mu(x, y):
        return ((x @ p["U"].T) * (y @ p["V"].T)) @ p["W"].T

    def g(x):
        return torch.relu(x @ p["G1"] + p["g1"]) @ p["G2"] + p["g2"]

    E, e = p["E"], p["e"]
    a, b = torch.tensor([1, 4, 2]), torch.tensor([2, 0, 2])
    torch.testing.assert_close(m.logits(a, b)[1].detach(), mu(E[a], E[b]) @ E.T)
    aux = {k: v[1].item() for k, v in m.aux_losses().items()}
    n = 5
    assoc = sum(((mu(mu(E[i:i+1], E[j:j+1]), E[k:k+1]) - mu(E[i:i+1], mu(E[j:j+1], E[k:k+1])))
                 ** 2).sum() for i in range(n) for j in range(n) for k in range(n)) / n**3
    ident = (((mu(e.expand(n, -1), E) - E) ** 2).sum(1) + ((mu(E, e.expand(n, -1)) - E) ** 2)
             .sum(1)).mean()
    inv = (((mu(E, g(E)) - e) ** 2).sum(1) + ((mu(g(E), E) - e) ** 2).sum(1)).mean()
    assert aux["assoc"] == pytest.approx(assoc.item(), rel=1e-9)
    assert aux["ident"] == pytest.approx(ident.item(), rel=1e-9)
    assert aux["inv"] == pytest.approx(inv.item(), rel=1e-9)


def test_forge_sampled_losses_when_large():
    cfg = _cfg(arch="forge", **{"forge.alg_full_max": 4, "forge.alg_samples": 50})
    m = Forge(cfg, 9, 9, [0, 1, 2])
    aux = m.aux_losses()
    assert set(aux) == {"assoc", "ident", "inv"}
    assert all(v.shape == (3,) and torch.isfinite(v).all() for v in aux.values())


def test_tied_needs_square():
    with pytest.raises(Exception, match="separate"):
        Forge(_cfg(arch="forge"), 5, 6, [0])


def test_select_keeps_seeds():
    m = Forge(_cfg(arch="forge"), 5, 5, [0, 1, 2])
    E2 = m.params["E"][2].detach().clone()
    m.select(torch.tensor([2]))
    assert m.params["E"].shape[0] == 1 and m.params["E"].requires_grad
    torch.testing.assert_close(m.params["E"][0], E2)
    assert len(m.gens) == 1


def test_forge_tied_dist_decoding_is_negative_squared_distance():
    cfg = _cfg(arch="forge", **{"forge.decode": "tied_dist"})
    m = Forge(cfg, 5, 5, [0], dtype=torch.float64)
    a, b = torch.tensor([1, 3]), torch.tensor([2, 2])
    z = m._product(a, b)[0].detach()  # [B, d]
    E = m.params["E"][0].detach()
    ref = -((z[:, None, :] - E[None]) ** 2).sum(-1)  # [B, n]
    got = m.logits(a, b)[0].detach()
    shift = got - ref  # the class-independent |z|^2
    torch.testing.assert_close(shift, (z**2).sum(-1, keepdim=True).expand_as(shift))


def test_forge_sampled_losses_on_tables_equal_definitions():
    """aux_losses works on the tables U E^T, V E^T; the same numbers as mu on gathered vectors."""
    from grokray.models import gather_rows, seed_generator
    from grokray.models.assoc import sqnorm

    cfg = _cfg(arch="forge", **{"forge.alg_full_max": 4, "forge.alg_samples": 10})
    m = Forge(cfg, 24, 24, [0, 1], "cpu", torch.float64)
    got = m.aux_losses()
    m.gens = [seed_generator(s, 1) for s in (0, 1)]  # replay the same samples
    E, e = m.params["E"], m.params["e"][:, None, :]
    idx = m._sample((10, 3), 24)
    x, y, z = (gather_rows(E, idx[..., i]) for i in range(3))
    want = {"assoc": sqnorm(m.mu(m.mu(x, y), z) - m.mu(x, m.mu(y, z)))}
    x = gather_rows(E, m._sample((10,), 24))
    ee, gx = e.expand(-1, 10, -1), m.g_phi(x)
    want["ident"] = sqnorm(m.mu(ee, x) - x) + sqnorm(m.mu(x, ee) - x)
    want["inv"] = sqnorm(m.mu(x, gx) - ee) + sqnorm(m.mu(gx, x) - ee)
    for k, v in want.items():
        assert float(v.detach().abs().min()) > 0
        torch.testing.assert_close(got[k], v, rtol=1e-10, atol=0)


def test_activation_names_are_one_list():
    # one shared module: the config choices and every model use the same table
    from grokray.config import ModelConfig
    from grokray.models.activations import ACTIVATIONS, ACTS
    from grokray.models.transformer import TransformerConfig

    for section in (ModelConfig, TransformerConfig):
        act = next(f for f in dataclasses.fields(section) if f.name == "act")
        assert act.metadata["choices"] == ACTIVATIONS == tuple(ACTS)


def test_families_name_a_training_protocol_the_trial_resolves():
    from grokray import trainer
    from grokray.families import Family, get_family, register
    from grokray.trial import pack_trainer_of, trainer_of

    mlp, tr, rfm = get_family("mlp"), get_family("transformer"), get_family("rfm")
    assert (mlp.train, mlp.pack, tr.train, tr.pack) == ("gradient", True, "gradient", False)
    assert trainer_of(mlp) is trainer.train and pack_trainer_of(mlp) is trainer.train_pack
    assert pack_trainer_of(tr) is None  # the transformer's trials run one at a time
    assert callable(rfm.train) and trainer_of(rfm) is rfm.train and pack_trainer_of(rfm) is None
    with pytest.raises(ValueError, match="unknown training protocol 'sgd'; valid: gradient"):
        register(Family("x", train="sgd", model=MLP))
    with pytest.raises(ValueError, match="gradient training needs its `model`"):
        register(Family("x"))
    with pytest.raises(ValueError, match="only a training protocol packs"):
        register(Family("x", train=lambda run: None, pack=True))

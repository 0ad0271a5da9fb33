"""FORGE: fiber embedding + DAD product, with algebra losses, seed-batched.

    E: G -> R^d                        fiber embedding, x = E[a], y = E[b]
    mu(x, y) = W ((U x) * (V y))       DAD product of rank R; U, V [R, d], W [d, R]
    logits(a, b) = mu(x, y) . E^T      tied decoding (or . D^T + c with a separate unembedding,
                                       or tied_dist: -|mu(x, y) - E_c|^2, nearest embedding)
    e in R^d                           learned identity
    g_phi: R^d -> R^d                  learned inverse, one hidden ReLU layer

Algebra losses, each the mean over elements (or triples) of a squared L2 norm:
    L_assoc = |mu(mu(x,y),z) - mu(x,mu(y,z))|^2
    L_ident = |mu(e,x) - x|^2 + |mu(x,e) - x|^2
    L_inv   = |mu(x,g(x)) - e|^2 + |mu(g(x),x) - e|^2
over all elements and all |G|^3 triples when |G| <= forge.alg_full_max, else over
forge.alg_samples sampled triples per step (each seed its own generator); L_ident and L_inv use
every element while |G| <= forge.alg_samples.
Weight decay groups: "embed" (E, D, c, e), "dad" (U, V, W), "other" (g_phi), each
`forge.wd_<group>` or, when that is null, optim.weight_decay.

Config: the shared `model` section (d, rank, init_scale) and its own `forge` section
(`ForgeConfig`, below).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from grokray.config import MODEL_AUTO, TrialConfig
from grokray.cprank.faithful import smallest_faithful
from grokray.errors import ConfigError
from grokray.families import Family
from grokray.fields import choice, positive
from grokray.groups import get_group
from grokray.models import (
    fan_in_bound,
    gather_rows,
    normal,
    seed_generator,
    stack_init,
    uniform,
)
from grokray.models.assoc import assoc_exact, assoc_form, assoc_sampled, dad
from grokray.models.fused import Workspace, forge_loss, ident_inv
from grokray.models.protocol import BaseModel
from grokray.optim.schedules import lambda_alg


@dataclass
class ForgeConfig:
    """FORGE (fiber embedding + DAD) specifics; shape (d, rank) lives in `model`.

    Defaults tuned with grokray on the non-abelian ablation (S3, D4, A4, train 0.5, d 32, R 64,
    AdamW lr 1e-3, wd 1): nearest-embedding decoding (`tied_dist`) and a small algebra weight
    (0.03, linear decay to 0 at half the budget) grokked 18/18 seeds within 1,000 steps; `tied`
    dot-product decoding or lambda_alg >= 1 left val acc at 0.2-0.7, and lambda off at 0/6 (S3).
    """

    decode: str = choice("tied_dist", ("tied", "tied_dist", "separate"))
    """tied (logits = mu(x, y) . E^T), tied_dist (logits = -|mu(x, y) - E_c|^2, up to a
    class-independent term), or separate (a learned unembedding D [|G|, d] and bias)"""
    inv_hidden: int = positive(64)
    """hidden width of the inverse map g_phi: R^d -> R^d (one hidden layer)"""
    lambda_alg: float = 0.03
    """initial weight of the algebra losses (tuned: see the ForgeConfig docstring)"""
    lambda_schedule: str = choice("linear", ("linear", "constant", "cosine", "step", "off"))
    """lambda_alg(t): linear (decay to 0 at `lambda_end`), constant, cosine, step, off"""
    lambda_end: float = 0.5
    """fraction of `steps` at which linear/cosine reach 0 and step drops to 0 (read when
    `lambda_steps` is null)"""
    lambda_steps: int | None = positive(None)
    """the step at which linear/cosine reach 0 and step drops to 0, whatever the budget (then
    `lambda_end` is not read, and a censored run can be continued at a larger budget); null:
    `lambda_end` x `steps`, the budget-tied default. In the identity only when set
    (`identity_reads`), so configs without it keep their config_hash"""
    alg_full_max: int = 64
    """L_assoc exactly over all |G|^3 triples while |G| <= this (the cheapest exact form,
    grokray.models.assoc.assoc_form); sampled above"""
    alg_samples: int = 1024
    """triples sampled per step above alg_full_max; elements sampled for L_ident/L_inv when
    |G| exceeds this"""
    w_assoc: float = 1.0
    """relative weight of L_assoc"""
    w_ident: float = 1.0
    """relative weight of L_ident"""
    w_inv: float = 1.0
    """relative weight of L_inv"""
    wd_embed: float | None = None
    """weight decay on E (and the unembedding, identity e); None: optim.weight_decay"""
    wd_dad: float | None = None
    """weight decay on U, V, W; None: optim.weight_decay"""
    wd_other: float | None = None
    """weight decay on g_phi; None: optim.weight_decay"""


AUTO_MARGIN = 3.7
"""`model.rank: auto` is at least this many times the real-rank bound of the group's smallest
faithful real Wedderburn sum: the margin measured on M_3(C) (bound 69), where R 256 (3.7x)
grokked F21 and Heis3 in 10/10 seeds each and R 128 (1.9x) in 9/10 and 8/10 (docs/
reproduction.md, "FORGE across groups")"""


@functools.lru_cache(maxsize=256)
def auto_shape(group: str) -> dict[str, int]:
    """`model.d` and `model.rank` for `auto` on `group`: d = max(32, D), R = max(256,
    AUTO_MARGIN x Rb rounded up to a multiple of 8), with D and Rb the real dimension and
    real-rank bound of the smallest faithful real Wedderburn sum of the group (grokray.cprank.
    faithful). An exact FORGE solution needs d >= D and R >= the real rank of that sum (docs/
    reproduction.md, "FORGE across groups"). 32 and 256 cover every group of the scaling family
    up to order 60 (M_3(C): 3.7 x 69 = 255.3); F42 (M_6(R)) gets d 36, R 568 and F55 (M_5(C))
    d 50, R 1,040."""
    f = smallest_faithful(get_group(group))
    dim, rank = (f["dim"], f["rank"]) if f is not None else (0, 0)  # trivial group
    return {"d": max(MODEL_AUTO["d"], dim),
            "rank": max(MODEL_AUTO["rank"], 8 * math.ceil(AUTO_MARGIN * rank / 8))}


def _auto(cfg: TrialConfig) -> dict[str, int]:
    return auto_shape(cfg.group)


def _t(x: torch.Tensor) -> torch.Tensor:
    return x.transpose(1, 2)


class Forge(BaseModel):
    """FORGE for S seeds; parameters stacked along dim 0."""

    def __init__(self, cfg: TrialConfig, n_in: int, n_out: int, seeds: Sequence[int],
                 device: str | torch.device = "cpu", dtype: torch.dtype = torch.float32) -> None:
        f = cfg.forge
        if f.decode != "separate" and n_in != n_out:
            raise ConfigError(
                f"forge.decode=tied needs as many outputs as inputs ({n_out} != {n_in}); "
                "use forge.decode=separate"
            )
        self.n_in, self.n_out = n_in, n_out
        self.d, self.R, self.hg = d, R, hg = cfg.model.d, cfg.model.rank, f.inv_hidden
        self.pair_floats = 3 * R + 2 * d  # the fused loss's per-pair buffers u, v, m; z, dz
        self.decode = f.decode
        self.f = f
        self.tied = f.decode != "separate"
        self.full_max, self.n_samples = f.alg_full_max, f.alg_samples
        self.form = assoc_form(n_in, d, R, len(seeds)) if n_in <= f.alg_full_max else None
        """the exact L_assoc form, chosen once for this config's seeds: a member of a pack (or
        a trial whose seeds stop early) keeps the arithmetic of its trial alone"""
        self.aux_weights = {"assoc": f.w_assoc, "ident": f.w_ident, "inv": f.w_inv}
        s = cfg.model.init_scale
        std_e = s / d**0.5

        def draws(g: torch.Generator) -> dict[str, torch.Tensor]:
            p = {
                "E": normal(g, (n_in, d), std_e),  # [n, d], rows of norm ~ s
                "U": uniform(g, (R, d), fan_in_bound(d) * s),  # [R, d]
                "V": uniform(g, (R, d), fan_in_bound(d) * s),  # [R, d]
                "W": uniform(g, (d, R), fan_in_bound(R) * s),  # [d, R]
                "e": normal(g, (d,), std_e),  # [d]
                "G1": uniform(g, (d, hg), fan_in_bound(d) * s),  # g_phi layer 1 [d, hg]
                "g1": uniform(g, (hg,), fan_in_bound(d) * s),
                "G2": uniform(g, (hg, d), fan_in_bound(hg) * s),  # g_phi layer 2 [hg, d]
                "g2": uniform(g, (d,), fan_in_bound(hg) * s),
            }
            if not self.tied:
                p["D"] = normal(g, (n_out, d), std_e)  # unembedding [n_out, d]
                p["c"] = torch.zeros(n_out, dtype=torch.float64)  # [n_out]
            return p

        self.params = stack_init(seeds, draws, device, dtype)
        groups = {"E": "embed", "D": "embed", "c": "embed", "e": "embed",
                  "U": "dad", "V": "dad", "W": "dad"}
        self.wd_groups = {k: groups.get(k, "other") for k in self.params}
        """param name -> weight-decay group (embed, dad, other)"""
        self.device = torch.device(device)
        self.gens = [seed_generator(sd, 1, self.device) for sd in seeds]  # sampling streams
        self.ws = Workspace()

    @staticmethod
    def count_params(cfg: TrialConfig, n_in: int, n_out: int) -> int:
        """Parameters per seed: E, U, V, W, e, g_phi (+ D, c when not tied)."""
        d, R, hg = cfg.model.d, cfg.model.rank, cfg.forge.inv_hidden
        n = n_in * d + 3 * R * d + d + (d * hg + hg + hg * d + d)
        if cfg.forge.decode == "separate":
            n += n_out * d + n_out
        return n

    # ------------------------------------------------------------------ the product

    def mu(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """DAD product. x, y [S, M, d] -> [S, M, d]."""
        p = self.params
        return dad(x, y, p["U"], p["V"], p["W"])

    def g_phi(self, x: torch.Tensor) -> torch.Tensor:
        """Learned inverse. x [S, M, d] -> [S, M, d]."""
        p = self.params
        h = torch.relu(torch.baddbmm(p["g1"][:, None, :], x, p["G1"]))
        return torch.baddbmm(p["g2"][:, None, :], h, p["G2"])

    def _decoder(self) -> tuple[torch.Tensor, torch.Tensor, float]:
        """(Dec [S, n_out, d], bias [S, n_out], scale): logits = scale * z . Dec^T + bias.

        tied: Dec = E, no bias; tied_dist: -|z - E_c|^2 up to the class-independent -|z|^2,
        i.e. Dec = E, bias = -|E_c|^2, scale 2 (exact: a power of two); separate: D and c.
        """
        p = self.params
        if self.decode == "tied":
            E = p["E"]
            return E, E.new_zeros(E.shape[:2]), 1.0
        if self.decode == "tied_dist":
            return p["E"], -p["E"].square().sum(-1), 2.0
        return p["D"], p["c"], 1.0

    def _decode(self, z: torch.Tensor) -> torch.Tensor:
        Dec, bias, scale = self._decoder()
        return torch.baddbmm(bias[:, None, :], z, _t(Dec), alpha=scale)  # [S, B, n_out]

    def _tables(self) -> tuple[torch.Tensor, torch.Tensor]:
        """U x and V x for every element: E U^T, E V^T, [S, n, R] each."""
        p = self.params
        return torch.bmm(p["E"], _t(p["U"])), torch.bmm(p["E"], _t(p["V"]))

    def _product(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        Ua, Vb = self._tables()
        return self._mu_uv(gather_rows(Ua, a), gather_rows(Vb, b))  # [S, B, d]

    def logits(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """[S, B, n_out] for index batches a, b of shape [S, B] or [B]."""
        return self._decode(self._product(a, b))

    def data_loss(self, a: torch.Tensor, b: torch.Tensor, y: torch.Tensor,
                  chunk: int) -> torch.Tensor:
        """Mean cross-entropy per seed [S] over pairs (a, b) -> y, fused (models/fused.py)."""
        Ut, Vt = self._tables()
        Dec, bias, scale = self._decoder()
        return forge_loss(Ut, Vt, self.params["W"], Dec, bias, scale, a, b, y, chunk, self.ws)

    def data_losses(self, a: torch.Tensor, b: torch.Tensor, y: torch.Tensor,
                    chunk: int) -> Iterator[torch.Tensor]:
        """One fused term (it loops over the chunks itself)."""
        yield self.data_loss(a, b, y, chunk)

    def weight_decay(self, base: float) -> dict[str, float]:
        """forge.wd_embed / wd_dad / wd_other per group; null: `base`."""
        by_group = {"embed": self.f.wd_embed, "dad": self.f.wd_dad, "other": self.f.wd_other}
        return {k: base if by_group[g] is None else by_group[g]
                for k, g in self.wd_groups.items()}

    # ------------------------------------------------------------------ algebra losses

    has_aux = True

    def aux_weight(self, step: int, steps: int) -> float:
        """lambda_alg(t) of the forge section (grokray.optim.schedules.lambda_alg)."""
        return lambda_alg(step, self.f, steps)

    def aux_losses(self) -> dict[str, torch.Tensor]:
        """L_assoc, L_ident, L_inv per seed, each [S] (unweighted)."""
        return self._aux()[1]

    def aux_loss(self) -> torch.Tensor:
        """The weighted algebra loss w_assoc L_assoc + w_ident L_ident + w_inv L_inv, [S]: what
        the trainer multiplies by lambda_alg (one fused pass, models/fused.py)."""
        return self._aux()[0]

    def _aux(self) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """(weighted total, {assoc, ident, inv}) per seed.

        Computed on the per-element tables U E^T, V E^T (one [n, R] GEMM each): U x and V y of
        an element are table rows, so only the products of non-elements (mu(x, y), g(x), e)
        need a GEMM. The same sums as evaluating mu on gathered vectors, about half the work.
        """
        p = self.params
        E = p["E"]  # [S, n, d]
        n = E.shape[1]
        w = self.aux_weights
        Ut, Vt = self._tables()  # [S, n, R]: U x, V x for every element
        if n <= self.full_max:
            assoc = self._assoc_exact(Ut, Vt)
        else:
            idx = self._sample((self.n_samples, 3), n)  # [S, m, 3]
            i, j, k = idx[..., 0], idx[..., 1], idx[..., 2]
            assoc = assoc_sampled(Ut, Vt, p["U"], p["V"], p["W"], i, j, k, self.ws)
        # identity and inverse: every element, or a sample when there are more than alg_samples
        if n <= self.n_samples:
            x, Ux, Vx = E, Ut, Vt
        else:
            s = self._sample((self.n_samples,), n)
            x, Ux, Vx = gather_rows(E, s), gather_rows(Ut, s), gather_rows(Vt, s)
        total, ident, inv = ident_inv(Ux, Vx, x, p["e"], self.g_phi(x), p["U"], p["V"], p["W"],
                                      w["ident"], w["inv"])
        return w["assoc"] * assoc + total, {"assoc": assoc, "ident": ident, "inv": inv}

    def _assoc_exact(self, Ut: torch.Tensor, Vt: torch.Tensor,
                     form: str | None = None) -> torch.Tensor:
        """L_assoc over all n^3 triples, [S], in the cheapest exact form (models/assoc.py) or the
        given one. Ut, Vt: the tables E U^T, E V^T [S, n, R]."""
        p = self.params
        return assoc_exact(p["E"], p["U"], p["V"], p["W"], Ut, Vt, self.ws, form or self.form)

    def _mu_uv(self, Ux: torch.Tensor, Vy: torch.Tensor) -> torch.Tensor:
        """mu from the projections: W((U x) * (V y)). [S, M, R] (or [S, 1, R]) -> [S, M, d]."""
        return torch.bmm(Ux * Vy, _t(self.params["W"]))

    def _sample(self, shape: tuple[int, ...], n: int) -> torch.Tensor:
        return torch.stack([
            torch.randint(n, shape, generator=g, device=self.device) for g in self.gens
        ])

    # ------------------------------------------------------------------ views for metrics

    def embedding(self) -> torch.Tensor:
        """The fiber embedding E [S, n, d]."""
        return self.params["E"]

    def embeddings(self) -> dict[str, torch.Tensor]:
        """The fiber embedding E [S, n, d] (and the unembedding D when separate)."""
        out = {"E": self.params["E"]}
        if not self.tied:
            out["D"] = self.params["D"]
        return out

    def activations(self, a: torch.Tensor, b: torch.Tensor) -> dict[str, torch.Tensor]:
        p = self.params
        x, y = gather_rows(p["E"], a), gather_rows(p["E"], b)
        prod = torch.bmm(x, _t(p["U"])) * torch.bmm(y, _t(p["V"]))
        return {"x": x, "y": y, "dad": prod, "mu": torch.bmm(prod, _t(p["W"]))}

    def select(self, keep: torch.Tensor) -> None:
        super().select(keep)
        self.gens = [self.gens[i] for i in keep.tolist()]

    def extend(self, other: Forge) -> None:
        super().extend(other)
        self.gens = self.gens + other.gens

    def rng_state(self, i: int) -> dict[str, Any]:
        """Seed position i's sampling stream (the sampled L_assoc triples, identity and
        inverse elements)."""
        return {"rng.model": self.gens[i].get_state().numpy().copy()}

    def load_rng_state(self, i: int, state: dict[str, Any]) -> None:
        if "rng.model" in state:
            self.gens[i].set_state(torch.from_numpy(np.asarray(state["rng.model"]).copy()))


def identity_reads(cfg: Any) -> tuple[str, ...]:  # noqa: ANN401 - TrialConfig
    """The forge fields a config's identity covers: every field, except `lambda_steps` while it
    is null (the field came after many rows were written: their hashes stay) and `lambda_end`
    once it is set (the decay's end is then `lambda_steps`, not a share of the budget)."""
    set_steps = cfg.forge.lambda_steps is not None
    skip = "lambda_end" if set_steps else "lambda_steps"
    return tuple(f"forge.{f.name}" for f in dataclasses.fields(ForgeConfig) if f.name != skip)


FAMILY = Family("forge", model=Forge, train="gradient", pack=True, section="forge",
                config=ForgeConfig, auto=_auto, section_reads=identity_reads,
                shared=("model.d", "model.rank", "model.init_scale", "optim", "grokfast",
                        "metrics"))

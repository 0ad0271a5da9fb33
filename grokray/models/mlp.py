"""The grokking baseline MLP, seed-batched.

    logits(a, b) = act([E_a[a], E_b[b]] W1 + b1) W2 + b2

with separate embeddings E_a, E_b in R^{n_in x d}, one hidden layer of width h. The first layer
acts on per-element tables (T_a = E_a W1_a, T_b = E_b W1_b, each [n_in, h]) instead of per-pair
vectors: the same function, |G| x h work instead of B x 2d x h.

Matched budget (`model.matched_budget`): h is chosen so the parameter count is the closest to
that of the FORGE model with the same config (model.d, model.rank, forge.*): such a trial reads
the `forge` section too, and its identity covers it.

Config: the shared `model` section (d, hidden, act, matched_budget, init_scale); no own section.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import torch

from grokray.families import Family, get_family
from grokray.models import fan_in_bound, gather_rows, normal, stack_init, uniform
from grokray.models.activations import ACTS
from grokray.models.fused import Workspace, mlp_loss
from grokray.models.protocol import BaseModel

if TYPE_CHECKING:  # pragma: no cover
    from grokray.config import TrialConfig

__all__ = ["ACTS", "FAMILY", "MLP", "hidden_width", "mlp_params"]


def mlp_params(n_in: int, n_out: int, d: int, h: int) -> int:
    """Parameter count of the MLP: 2 n_in d + (2d + 1) h + (h + 1) n_out."""
    return 2 * n_in * d + (2 * d + 1) * h + (h + 1) * n_out


def hidden_width(cfg: TrialConfig, n_in: int, n_out: int) -> int:
    """h from the config, or the matched-budget width (closest count to FORGE's, at least 1)."""
    if not cfg.model.matched_budget:
        return cfg.model.hidden
    target = get_family("forge").model.count_params(cfg, n_in, n_out)
    d = cfg.model.d
    h = round((target - 2 * n_in * d - n_out) / (2 * d + 1 + n_out))
    return max(1, h)


class MLP(BaseModel):
    """Embed-and-concatenate MLP for S seeds; parameters stacked along dim 0."""

    def __init__(self, cfg: TrialConfig, n_in: int, n_out: int, seeds: Sequence[int],
                 device: str | torch.device = "cpu", dtype: torch.dtype = torch.float32) -> None:
        self.n_in, self.n_out = n_in, n_out
        d, h = cfg.model.d, hidden_width(cfg, n_in, n_out)
        self.d, self.h = d, h
        self.pair_floats = 3 * h  # the fused loss's [S, chunk, h] buffers (models/fused.py)
        self.act_name = cfg.model.act
        self.act = ACTS[cfg.model.act]
        s = cfg.model.init_scale

        def draws(g: torch.Generator) -> dict[str, torch.Tensor]:
            b1, b2 = fan_in_bound(2 * d), fan_in_bound(h)
            W1 = uniform(g, (2 * d, h), b1 * s)
            return {
                "Ea": normal(g, (n_in, d), s),  # [n_in, d]
                "Eb": normal(g, (n_in, d), s),  # [n_in, d]
                "W1a": W1[:d], "W1b": W1[d:],  # [d, h] each: W1 = [W1a; W1b]
                "b1": uniform(g, (h,), b1 * s),  # [h]
                "W2": uniform(g, (h, n_out), b2 * s),  # [h, n_out]
                "b2": uniform(g, (n_out,), b2 * s),  # [n_out]
            }

        self.params = stack_init(seeds, draws, device, dtype)
        self.ws = Workspace()

    @staticmethod
    def count_params(cfg: TrialConfig, n_in: int, n_out: int) -> int:
        """Parameters per seed."""
        return mlp_params(n_in, n_out, cfg.model.d, hidden_width(cfg, n_in, n_out))

    def _tables(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The first layer on every element: T_a = E_a W1_a, T_b = E_b W1_b + b1, [S, n_in, h]."""
        p = self.params
        Ta = torch.bmm(p["Ea"], p["W1a"])
        Tb = torch.baddbmm(p["b1"][:, None, :], p["Eb"], p["W1b"])
        return Ta, Tb

    def _hidden(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        Ta, Tb = self._tables()
        return gather_rows(Ta, a) + gather_rows(Tb, b)  # [S, B, h]

    def logits(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """[S, B, n_out] for index batches a, b of shape [S, B] or [B]."""
        z = self.act(self._hidden(a, b))
        return torch.baddbmm(self.params["b2"][:, None, :], z, self.params["W2"])

    def data_loss(self, a: torch.Tensor, b: torch.Tensor, y: torch.Tensor,
                  chunk: int) -> torch.Tensor:
        """Mean cross-entropy per seed [S] over pairs (a, b) -> y, fused (models/fused.py)."""
        Ta, Tb = self._tables()
        p = self.params
        return mlp_loss(Ta, Tb, p["W2"], p["b2"], a, b, y, self.act, chunk, self.ws)

    def data_losses(self, a: torch.Tensor, b: torch.Tensor, y: torch.Tensor,
                    chunk: int) -> Iterator[torch.Tensor]:
        """One fused term (it loops over the chunks itself)."""
        yield self.data_loss(a, b, y, chunk)

    def embedding(self) -> torch.Tensor:
        """[E_a, E_b] concatenated on the last axis, [S, n_in, 2d] (the spectrum sums both)."""
        return torch.cat([self.params["Ea"], self.params["Eb"]], -1)

    def hooks(self) -> dict[str, Any]:
        """`pair_mlp`: the first layer over one-hot pairs, for the NFA metric."""
        p = self.params
        keys = ("Ea", "Eb", "W1a", "W1b", "b1", "W2")
        return {"pair_mlp": {**{k: p[k] for k in keys}, "act": self.act_name}}

    def embeddings(self) -> dict[str, torch.Tensor]:
        """The two operand embeddings, [S, n_in, d] each (`E` is E_a)."""
        return {"E": self.params["Ea"], "Ea": self.params["Ea"], "Eb": self.params["Eb"]}

    def activations(self, a: torch.Tensor, b: torch.Tensor) -> dict[str, torch.Tensor]:
        pre = self._hidden(a, b)
        return {"pre": pre, "hidden": self.act(pre)}


def _reads(cfg: TrialConfig) -> tuple[str, ...]:
    """A matched-budget MLP reads FORGE's rank and section (as FORGE's identity covers it)."""
    if not cfg.model.matched_budget:
        return ()
    return ("model.rank", *get_family("forge").own_reads(cfg))


def _auto(cfg: TrialConfig) -> dict[str, int]:
    """`auto` shape: FORGE's for this group when matched to it (its d and the rank it counts),
    else grokray.config.MODEL_AUTO."""
    forge = get_family("forge")
    return forge.auto(cfg) if cfg.model.matched_budget and forge.auto is not None else {}


FAMILY = Family("mlp", model=MLP, train="gradient", pack=True, extra=_reads, auto=_auto,
                shared=("model.d", "model.hidden", "model.act", "model.matched_budget",
                        "model.init_scale", "optim", "grokfast", "metrics"))

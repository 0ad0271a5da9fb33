"""Model families, seed-batched, and the helpers they share.

Each gradient-trained family is one file (mlp.py, forge.py, transformer.py) holding its model,
its config section and its `FAMILY`, registered by one line in `grokray.families.BUILTIN`
(see docs/architecture.md, "Adding an architecture"); a family that trains its own way has a
package of its own (grokray/rfm/, grokray/hamiltonian/). chunks.py sizes the chunks of pairs a
model's logits are computed in (the trainer's and `grokray recompute`'s). A gradient-trained
model implements `protocol.Model` (subclassing `protocol.BaseModel`, which gives the optional
members defaults): the trainer and the metrics use nothing else. A model holds S seeds at once,
every parameter stacked along a leading seed dimension, and is built as

    model = get_model(arch)(cfg, n_in, n_out, seeds, device, dtype)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch

from grokray.errors import ConfigError
from grokray.families import get_family


def get_model(arch: str) -> type:
    """The model class of the gradient-trained family `arch`."""
    model = get_family(arch).model
    if model is None:
        raise ConfigError(f"arch {arch!r} is not a gradient-trained model (it has no model class)")
    return model


def seed_generator(seed: int, stream: int = 0, device: str | torch.device = "cpu"):
    """A torch.Generator for one seed and one purpose (0: init, 1: sampling, ...)."""
    g = torch.Generator(device=device)
    g.manual_seed((int(seed) * 1_000_003 + stream * 7_919 + 12_345) % (2**63))
    return g


def stack_init(
    seeds: Sequence[int],
    draws: Callable[[torch.Generator], dict[str, torch.Tensor]],
    device: str | torch.device,
    dtype: torch.dtype,
) -> dict[str, torch.Tensor]:
    """Draw each seed's parameters on CPU with its own generator, then stack to [S, ...]."""
    per_seed = [draws(seed_generator(s, 0)) for s in seeds]
    return {
        k: torch.stack([p[k] for p in per_seed]).to(device=device, dtype=dtype).requires_grad_()
        for k in per_seed[0]
    }


def uniform(g: torch.Generator, shape: tuple[int, ...], bound: float) -> torch.Tensor:
    """U(-bound, bound) in float64 (cast later), like nn.Linear's default init."""
    return (torch.rand(shape, generator=g, dtype=torch.float64) * 2.0 - 1.0) * bound


def normal(g: torch.Generator, shape: tuple[int, ...], std: float) -> torch.Tensor:
    """N(0, std^2) in float64."""
    return torch.randn(shape, generator=g, dtype=torch.float64) * std


def fan_in_bound(fan_in: int) -> float:
    """nn.Linear's init bound 1/sqrt(fan_in)."""
    return 1.0 / math.sqrt(fan_in)


def gather_rows(table: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    """Per-seed row lookup. table [S, n, k]; idx [S, B] or [B] -> [S, B, k]."""
    S, n, k = table.shape
    if idx.dim() == 1:
        return table.index_select(1, idx)
    off = (torch.arange(S, device=idx.device) * n)[:, None]
    return torch.nn.functional.embedding(idx + off, table.reshape(S * n, k))


def select_params(params: dict[str, torch.Tensor], keep: torch.Tensor) -> dict[str, torch.Tensor]:
    """New leaf tensors holding only the seeds at positions `keep`."""
    return {k: v.detach()[keep].clone().requires_grad_() for k, v in params.items()}

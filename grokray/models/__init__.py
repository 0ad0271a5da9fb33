"""Model families, seed-batched. `MODELS` maps an `arch` name to its class (imported lazily).

The model interface (see docs/architecture.md, "Model interface"): a model holds S seeds at once,
every parameter stacked along a leading seed dimension, and is built as

    model = get_model(arch)(cfg, n_in, n_out, seeds, device, dtype)

with
    model.params: dict[str, Tensor]      # leaf tensors [S, ...], requires_grad
    model.wd_groups: dict[str, str]      # param name -> "all" | "embed" | "dad" | "other"
    model.logits(a, b) -> [S, B, n_out]  # a, b: LongTensor [S, B] (per seed) or [B] (shared)
    model.aux_losses() -> dict[str, Tensor [S]]   # unweighted auxiliary losses ({} if none)
    model.aux_weights: dict[str, float]  # relative weights (the trainer multiplies by lambda(t))
    model.embeddings() -> dict[str, Tensor [S, n_in, d]]   # hook: learned element embeddings
    model.activations(a, b) -> dict[str, Tensor [S, B, ...]]   # hook: named activations
    model.select(keep)                   # keep the seeds at positions `keep` (LongTensor)
    cls.count_params(cfg, n_in, n_out) -> int   # per seed, without building
optional fused fast paths (models/fused.py; the trainer uses them when present):
    model.data_loss(a, b, y, chunk) -> [S]   # = seed_cross_entropy(logits(a, b), y), with grad
    model.aux_loss() -> [S]                  # = sum(w * L) over aux_losses(), with grad
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Sequence

import torch

from grokray.errors import ConfigError

MODELS: dict[str, str] = {
    "mlp": "grokray.models.mlp:MLP",
    "forge": "grokray.models.forge:Forge",
    "transformer": "grokray.models.transformer:Transformer",
}
"""arch name -> "module:Class" (RFM is not a gradient model: run_trial dispatches it)"""


def get_model(arch: str) -> type:
    """The model class registered under `arch`."""
    if arch not in MODELS:
        raise ConfigError(f"unknown arch '{arch}' for a neural model; valid: {', '.join(MODELS)}")
    module, name = MODELS[arch].split(":")
    return getattr(importlib.import_module(module), name)


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

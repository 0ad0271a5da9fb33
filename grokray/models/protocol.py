"""The model protocol: everything the gradient trainer and the metrics ask of a model family.

A model holds S seeds at once, every parameter stacked along a leading seed dimension, and is
built as `Family.model(cfg, n_in, n_out, seeds, device, dtype)`. The trainer and the metrics use
only what is listed in `Model`: they never branch on the arch name, never probe with hasattr,
and never read a family's own config section (the model reads it when it is built).

`BaseModel` gives every member a default but `params`, `count_params` and `logits`, so a new
family subclasses it and writes those three; it overrides the others only to add something (a
fused data loss, an auxiliary loss, views for the metrics).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol

import torch
from torch import Tensor

from grokray.models import select_params
from grokray.models.ops import seed_cross_entropy


class Model(Protocol):
    """A seed-batched model: three members every family writes, then those `BaseModel` gives a
    default (in brackets)."""

    params: dict[str, Tensor]
    """leaf tensors [S, ...] with requires_grad"""

    @staticmethod
    def count_params(cfg: Any, n_in: int, n_out: int) -> int:
        """Parameters per seed, without building the model."""
        ...

    def logits(self, a: Tensor, b: Tensor) -> Tensor:
        """[S, B, n_out] for index batches a, b [S, B] (per seed) or [B] (shared)."""
        ...

    has_aux: bool
    """whether the model has an auxiliary loss (then curves get `loss_<name>` and `lambda_alg`)
    [False]"""
    pair_floats: int
    """floats per training pair and seed that a step holds besides the logits (per-pair buffers
    and activations; 0: the logits only). On CPU the trainer sizes its chunks of pairs so that
    the logits and these together stay cache-sized (trainer.CPU_CHUNK_BUDGET) [0]"""

    def data_losses(self, a: Tensor, b: Tensor, y: Tensor, chunk: int) -> Iterator[Tensor]:
        """The batch's mean cross-entropy per seed [S], as terms the trainer differentiates one
        at a time (one chunk's graph is freed before the next is built). A fused fast path
        yields one term [`chunked_losses(self.logits, ...)`]."""
        ...

    def weight_decay(self, base: float) -> dict[str, float]:
        """Weight decay per parameter name, given the optimizer's `weight_decay` [`base` for
        every parameter]."""
        ...

    def aux_weight(self, step: int, steps: int) -> float:
        """Weight of the auxiliary loss at step `step` of `steps` (0.0: not computed) [0.0]."""
        ...

    def aux_loss(self) -> Tensor:
        """The weighted auxiliary loss per seed [S], with grad (what the weight multiplies)
        [raises: never called while has_aux is False]."""
        ...

    def aux_losses(self) -> dict[str, Tensor]:
        """Unweighted auxiliary losses by name, [S] each, for the curves [{}]."""
        ...

    def embedding(self) -> Tensor | None:
        """The canonical group-indexed embedding for metrics [S, n_in, d] (row x = element x),
        or None when the model has none (the embedding metrics are then skipped) [None]."""
        ...

    def hooks(self) -> dict[str, Any]:
        """Named views for metrics (e.g. `pair_mlp`: the first layer over one-hot pairs) [{}]."""
        ...

    def embeddings(self) -> dict[str, Tensor]:
        """The learned tables by name, [S, n, d] each [{"E": embedding()}, or {}]."""
        ...

    def activations(self, a: Tensor, b: Tensor) -> dict[str, Tensor]:
        """Named activations [S, B, ...] for index batches a, b [{"logits": logits(a, b)}]."""
        ...

    def select(self, keep: Tensor) -> None:
        """Keep only the seeds at positions `keep` (LongTensor) [`params` sliced]."""
        ...

    def extend(self, other: Any) -> None:
        """Append the seeds of `other`, a model of the same parameter shapes built for another
        config of a pack, after this model's own [`params` concatenated]."""
        ...

    def rng_state(self, i: int) -> dict[str, Any]:
        """Seed position i's sampling stream as named arrays, for a checkpoint
        (grokray.checkpoint) [{}: the model samples nothing]."""
        ...

    def load_rng_state(self, i: int, state: dict[str, Any]) -> None:
        """Restore seed position i's sampling stream from `state` (what `rng_state` gave)
        [nothing]."""
        ...


def chunked_losses(logits: Any, a: Tensor, b: Tensor, y: Tensor, chunk: int) -> Iterator[Tensor]:
    """The plain data loss: one `seed_cross_entropy` term per chunk of pairs, weighted by its
    share of the batch (one term, unweighted, when the batch fits in one chunk)."""
    B = y.shape[1]
    for i in range(0, B, chunk):
        j = slice(i, i + chunk)
        total = seed_cross_entropy(logits(a[:, j], b[:, j]), y[:, j])  # [S]
        yield total if chunk >= B else total * (y[:, j].shape[1] / B)


class BaseModel:
    """Defaults of `Model`'s members for a family that does not need its own: no auxiliary loss,
    the data loss through `logits` in chunks, one weight decay for all parameters, no views for
    the metrics but the logits. A subclass sets `params` and defines `count_params` and
    `logits`."""

    params: dict[str, Tensor]
    has_aux = False
    pair_floats = 0

    def logits(self, a: Tensor, b: Tensor) -> Tensor:
        """[S, B, n_out]: every family defines its own."""
        raise NotImplementedError

    def data_losses(self, a: Tensor, b: Tensor, y: Tensor, chunk: int) -> Iterator[Tensor]:
        return chunked_losses(self.logits, a, b, y, chunk)

    def weight_decay(self, base: float) -> dict[str, float]:
        return {k: base for k in self.params}

    def aux_weight(self, step: int, steps: int) -> float:
        return 0.0

    def aux_loss(self) -> Tensor:
        raise RuntimeError("this model has no auxiliary loss")

    def aux_losses(self) -> dict[str, Tensor]:
        return {}

    def embedding(self) -> Tensor | None:
        return None

    def hooks(self) -> dict[str, Any]:
        return {}

    def embeddings(self) -> dict[str, Tensor]:
        E = self.embedding()
        return {} if E is None else {"E": E}

    def activations(self, a: Tensor, b: Tensor) -> dict[str, Tensor]:
        return {"logits": self.logits(a, b)}

    def select(self, keep: Tensor) -> None:
        self.params = select_params(self.params, keep)

    def extend(self, other: Any) -> None:
        self.params = {k: torch.cat([v.detach(), other.params[k].detach()]).requires_grad_()
                       for k, v in self.params.items()}

    def rng_state(self, i: int) -> dict[str, Any]:
        return {}

    def load_rng_state(self, i: int, state: dict[str, Any]) -> None:
        return None


__all__ = ["BaseModel", "Model", "chunked_losses"]

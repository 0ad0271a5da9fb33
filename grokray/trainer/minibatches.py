"""Mini-batches: each member's shuffled batches of positions in its train set, from its own
sampling stream (`seed_generator(seed, 2)`), and that stream's state for a continued run."""

from __future__ import annotations

import numpy as np
import torch

from grokray.models import seed_generator


class MiniBatches:
    """Per-member shuffled mini-batches of positions in the train set (each member its own
    stream, from its seed)."""

    def __init__(self, seeds: list[int], n: int, batch: int) -> None:
        self.n, self.batch = n, batch
        self.gens = [seed_generator(s, 2) for s in seeds]
        self.perm: list[torch.Tensor] = []
        self.pos = 0

    def next(self, members: list[int]) -> torch.Tensor:
        """[S, batch] positions for the given (still active) member positions."""
        if self.pos + self.batch > self.n or not self.perm:
            self.perm = [torch.randperm(self.n, generator=g) for g in self.gens]
            self.pos = 0
        out = torch.stack([self.perm[m][self.pos:self.pos + self.batch] for m in members])
        self.pos += self.batch
        return out

    def state(self, m: int) -> dict[str, np.ndarray]:
        """Member m's stream: its generator, its current permutation and the shared position."""
        out = {"rng.batch": self.gens[m].get_state().numpy().copy(),
               "rng.pos": np.array(self.pos, dtype=np.int64)}
        if self.perm:
            out["rng.perm"] = self.perm[m].numpy().copy()
        return out

    def load(self, m: int, state: dict[str, np.ndarray]) -> None:
        """Restore member m's stream (`state`)."""
        self.gens[m].set_state(torch.from_numpy(np.asarray(state["rng.batch"]).copy()))
        self.pos = int(state["rng.pos"])
        if "rng.perm" in state:
            if not self.perm:
                self.perm = [torch.empty(self.n, dtype=torch.long) for _ in self.gens]
            self.perm[m] = torch.from_numpy(np.asarray(state["rng.perm"]).copy())

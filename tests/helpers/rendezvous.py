"""A Ray actor that holds trials until they run on `n` distinct nodes (imports ray)."""

from __future__ import annotations

import ray


@ray.remote(num_cpus=0)
class Rendezvous:
    """Counts the distinct nodes (or keys) that trials arrived from; `arrive` is true once `n`
    were seen."""

    def __init__(self, n: int):
        self.n, self.nodes = n, set()

    def arrive(self, node: str) -> bool:
        self.nodes.add(node)
        return len(self.nodes) >= self.n

    def seen(self) -> int:
        return len(self.nodes)

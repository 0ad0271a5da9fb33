"""Checkpoints kept in memory, by trial: the newest state and the deltas of its chain. What the
driver's checkpoint channel (grokray/sweep/checkpoint_store.py) and the checkpoint actor
(grokray/sweep/checkpoint_actor.py) hold, and a `Hook` of its own for tests and benchmarks."""

from __future__ import annotations

from dataclasses import dataclass, field

from grokray.checkpoint.format import header
from grokray.checkpoint.hook import Chain


@dataclass
class Held:
    """One trial's checkpoints."""

    state: tuple[int, bytes] | None = None
    """(step, bytes) of the newest state"""
    deltas: dict[int, bytes] = field(default_factory=dict)
    """step -> the delta taken there (this chain's)"""

    def chain(self) -> Chain | None:
        if self.state is None:
            return None
        step = self.state[0]
        return Chain(self.state[1], [d for s, d in sorted(self.deltas.items()) if s <= step])


class MemoryStore:
    """Trials' checkpoints in memory."""

    def __init__(self) -> None:
        self.held: dict[str, Held] = {}

    def put(self, config_hash: str, step: int, delta: bytes, state: bytes) -> None:
        """Keep a checkpoint; deltas past the one it follows go (a lost run took them)."""
        h = self.held.setdefault(config_hash, Held())
        head = header(delta)
        if head.get("first"):  # a new chain (the trial started again from its start)
            h.deltas = {}
        else:
            h.deltas = {s: d for s, d in h.deltas.items() if s <= int(head["prev"])}
        h.deltas[step] = delta
        h.state = (step, state)

    def chain(self, config_hash: str) -> Chain | None:
        h = self.held.get(config_hash)
        return h.chain() if h is not None else None

    def drop(self, config_hash: str) -> None:
        self.held.pop(config_hash, None)


class MemoryHook(MemoryStore):
    """A `Hook` that keeps checkpoints in memory (tests, benchmarks); `ask()` makes the
    trainer checkpoint at its next step."""

    def __init__(self) -> None:
        super().__init__()
        self.saved: list[tuple[str, int]] = []
        """(config_hash, step) of every checkpoint given"""
        self.asking = False

    def save(self, config_hash: str, step: int, delta: bytes, state: bytes) -> None:
        self.put(config_hash, step, delta, state)
        self.saved.append((config_hash, step))
        self.asking = False

    def ask(self) -> None:
        self.asking = True

    def asked(self) -> bool:
        return self.asking

    def asked_at_end(self) -> bool:
        return self.asking

    def chain(self, config_hash: str, every_s: float = 0.0) -> Chain | None:
        return super().chain(config_hash)

    def done(self, config_hash: str) -> None:
        return None

"""How the trainer talks to whoever keeps its checkpoints (`Hook`): the sweep's worker hands one
to `run_trial` / `run_pack`; the trainer asks it for the chain to restore, gives it each
checkpoint, and asks whether the driver wants one now. No Ray here: in a `--local` sweep the
hook is the driver's channel itself (grokray/sweep/checkpoint_store.py, `Channel`); on Ray it is
the workers' `ActorHook`, which reaches the driver through the checkpoint actor, at the edge
(grokray/sweep/checkpoint_actor.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from grokray.families import get_family


@dataclass
class Chain:
    """The newest usable checkpoint of one trial, as file bytes: its state and every delta up to
    it, oldest first."""

    state: bytes
    deltas: list[bytes] = field(default_factory=list)


class Hook(Protocol):
    """What the trainer needs of a checkpoint store."""

    def chain(self, config_hash: str, every_s: float) -> Chain | None:
        """The chain a trial of this identity is restored from (None: start at its first step); the
        trial starts, checkpointing every `every_s` seconds."""
        ...

    def save(self, config_hash: str, step: int, delta: bytes, state: bytes) -> None:
        """Keep a checkpoint of the trial at `step` (a delta and a state file)."""
        ...

    def asked(self) -> bool:
        """Has the driver asked for a checkpoint since the last `save` (cheap: called at every
        step)?"""
        ...

    def asked_at_end(self) -> bool:
        """The trial has finished training: has the driver asked for a checkpoint that it has
        not answered? Asked of the driver now, waiting for the answer (once per trial): a trial
        that ends between the driver's request and its next `asked` checkpoints its end, so
        that a stop which drops its result (the driver stops before it lands) loses nothing."""
        ...

    def done(self, config_hash: str) -> None:
        """The trial stopped training (its result goes back with the call)."""
        ...


def first_checkpoint_s(cfg: Any) -> float | None:
    """Seconds of trial time until a trial's first checkpoint (None: it never checkpoints,
    `checkpoint_every` 0, or its family has no checkpoints)."""
    every = float(getattr(cfg, "checkpoint_every", 0.0) or 0.0)
    if every <= 0 or not checkpoints_of(cfg.arch):
        return None
    return every


def checkpoints_of(arch: str) -> bool:
    """Does this family's trainer checkpoint (the gradient trainer does; RFM and the
    Hamiltonian family, whose trials are short, do not)?"""
    fam = get_family(arch)
    return fam.model is not None and fam.train == "gradient"

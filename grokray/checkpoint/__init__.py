"""Checkpoints: what a trial cut short (a worker killed, a node gone, a job's time limit) is
restored from, so that it trains again at most the steps since its last checkpoint.

A gradient-trained trial checkpoints every `checkpoint_every` seconds of trial time (a config
field, not part of the trial's identity; 0: never), and when the sweep's driver asks. A
checkpoint is two files per trial (config), each seed's part on its own inside:

- a *delta* (`<step>.delta.npz`): what the trial recorded since its previous checkpoint: curve
  rows, snapshots, and the outcomes of seeds that finished;
- a *state* (`<step>.state.npz`): everything a still-training seed needs to go on exactly where
  it was: parameters, optimizer moments, Grokfast filter state, its mini-batch stream and its
  model's sampling stream (FORGE's sampled L_assoc above `forge.alg_full_max`), at that step.

The deltas of one run form a chain (each names the step of the one before it); a trial is
restored from the newest state and every delta up to it, and only the newest state is kept.
Nothing is written twice: a delta holds only what is new since the one before it.

One role, one home:

- the file format, the bytes of one file (an npz archive, whose zip CRCs catch damage, with a
  JSON header): `format` here;
- restoring a checkpoint, a chain read back into what a trial is restored from: `restore` here;
- the trial-side checkpointer, the trainer's state to checkpoint files:
  grokray/trainer/checkpointer.py (`Checkpointer`), which talks to whoever keeps them through
  `hook` here (`Hook`); `memory` here keeps them in memory (the driver's per-trial cache, and a
  `Hook` of its own for tests and benchmarks);
- the driver-side store, where checkpoints are stored and the channel that carries them to
  storage: grokray/sweep/checkpoint_store.py (`Files`, `Channel`);
- the Ray actor that carries them between the trials' workers and the driver:
  grokray/sweep/checkpoint_actor.py (`ActorHook`, `RayChannel`).

No Ray in this package.
"""

from __future__ import annotations

from grokray.checkpoint.format import FORMAT_VERSION, Part, Unusable, decode, encode
from grokray.checkpoint.hook import Hook, first_checkpoint_s

__all__ = ["FORMAT_VERSION", "Hook", "Part", "Unusable", "decode", "encode",
           "first_checkpoint_s"]

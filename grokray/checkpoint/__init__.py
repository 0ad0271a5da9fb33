"""Checkpoints: what a trial cut short (a worker killed, a node gone, a job's time limit)
resumes from, so that it trains again at most the steps since its last checkpoint.

A gradient-trained trial checkpoints every `checkpoint_every` seconds of trial time (a config
field, not part of the trial's identity; 0: never), and when the sweep's driver asks. A
checkpoint is two files per trial (config), each seed's part on its own inside:

- a *delta* (`<step>.delta.npz`): what the trial recorded since its previous checkpoint: curve
  rows, snapshots, and the outcomes of seeds that finished;
- a *state* (`<step>.state.npz`): everything a still-training seed needs to go on exactly where
  it was: parameters, optimizer moments, Grokfast filter state, its mini-batch stream and its
  model's sampling stream (FORGE's sampled L_assoc above `forge.alg_full_max`), at that step.

The deltas of one run form a chain (each names the step of the one before it); a trial resumes
from the newest state and every delta up to it, and only the newest state is kept. Nothing is
written twice: a delta holds only what is new since the one before it.

Modules: `format` (the bytes of one file: an npz archive, whose zip CRCs catch damage, with a
JSON header), `restore` (a chain read back into what a trial resumes from), `hook` (how the
trainer talks to whoever stores checkpoints: `Hook`), `memory` (checkpoints held in memory). The
trainer's side, its state to a checkpoint, is grokray/trainer/checkpoints.py; where checkpoints
are stored, and the Ray edge that carries them to the sweep's driver, grokray/sweep/checkpoints.py
and checkpoint_box.py. No Ray here.
"""

from __future__ import annotations

from grokray.checkpoint.format import FORMAT_VERSION, Part, Unusable, decode, encode
from grokray.checkpoint.hook import Hook, first_checkpoint_s

__all__ = ["FORMAT_VERSION", "Hook", "Part", "Unusable", "decode", "encode",
           "first_checkpoint_s"]

"""The gradient trainer: trains the S seeds of one trial together (the `gradient` training of
every gradient-trained family), or the members (config, seed) of a pack of trials of one shape
(grokray.pack). `grokray.trial.run_trial` and `grokray.pack.run_pack` are the entry points; no
Ray here.

Every parameter, optimizer moment and filter state is stacked along a leading seed dimension, and
every operation is per seed (batched matmuls, elementwise updates; the loss is the sum of the
per-seed mean losses), so each seed follows exactly the path it would follow alone, to float
tolerance. Seed s has its own model init, its own sampling stream, and its own split (from
`data_seed`, or from s itself when `data_seed` is null). A seed that finishes (grokked and held)
or diverges (non-finite loss) is dropped from the stack; the others go on.

In a pack the stack holds members: each config's seeds, one config after the other. A member
has its own learning rate (and schedule), weight decay, lambda_alg (and schedule), Grokfast
filter and its settings, init, split, step budget and group table (groups of one order share
the pairs (a, b); the answers y are then [S, N]); everything else is the pack's (grokray.pack.
pack_key: the eval schedule fields and the snapshots section too). So each member evaluates at
its own config's steps (its schedule over its own budget), records its own lr and weight norms,
and its trial's snapshots go to that trial's own recorder (seeds repeat across configs).
Chunk sizes on CPU and FORGE's L_assoc form depend on the member's shape, not on how many
members train: a member does the arithmetic of its trial alone.

The trainer talks to the model only through grokray.models.protocol.Model.

Step convention: the eval at step t is taken after t optimizer steps (t = 0, eval_every, ...,
and the last step; or log-spaced steps: grokray.evals). `steps_run` counts optimizer steps.

Its parts, one job each:

    loop.py            `train`, `train_pack`, `Training.run`: the loop, top to bottom
    stack.py           `Stack`: the members and their stacked state; `drop` when they stop
    step.py            `train_step`: one optimizer step of every member
    evaluate.py        `Evaluator`: the eval and its curve rows; `summarize` at the end
    stopping.py        `StoppingRule`: grokked and held, diverged, budget spent; `outcome`
    snapshot_hooks.py  `SnapshotHooks`: each trial's snapshot recorder, end state included
    checkpointer.py    `Checkpointer`: the trial-side checkpointer (its state to checkpoint files,
                       handed to a grokray.checkpoint.Hook)
    pickup.py          what a trial picks up from an earlier run: a continued run's old rows
                       read back (`read_continued`); a continued or restored member's state
                       put into its slot (`pick_up`) and its earlier evals replayed
    minibatches.py     `MiniBatches`: each member's shuffled mini-batches and their stream

The pairs per logits chunk and their budgets are grokray.models.chunks (`grokray recompute`'s
rebuilt models split their pairs by the same rule).
"""

from grokray.trainer.loop import Training, train, train_pack

__all__ = ["Training", "train", "train_pack"]

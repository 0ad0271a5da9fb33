"""Snapshots: what a trial learned, kept. Each seed's parameters at log-spaced steps, at step 0,
at its memorization step, its grok step and its end, for `grokray.load_model` and later analysis.

When: the first eval at or after each round(10^(k / snapshots.per_decade)) (so every snapshot
has its curve row), plus step 0, the evals where the seed memorized and grokked, and the eval
where it finished (grokked and held, or the budget spent). What: every parameter, or the groups
`snapshots.tensors` names (`E`, `W1a`, the transformer's `W_Q`). A trial's snapshots stay under
`snapshots.max_mb` (all seeds): the log-spaced steps are thinned (every other one dropped, again
as needed) before the trial starts; step 0, memorization, grok and the end are always kept.
A diverged or failed seed keeps no end snapshot (its parameters are not finite or unknown).

Reading them back: `grokray.snapshots.read` (`load_snapshots`, `load_model`, and the
`Snapshot` a metric computed at snapshots receives).

Format: Parquet, `OUT/<sweep>/snapshots/<config_hash>-<run_id>.parquet`, one row per (seed,
step, tensor): key columns like the curves table, `tags` (`log,grok,...`), `tensor`, `shape`,
`dtype` and `values` (the flattened tensor, a list column). Parquet because it is the store's
format: the same atomic writer, file naming, identity columns, resume and repair, object stores
included, and pandas/pyarrow read it without grokray (`np.asarray(row.values).reshape(row.shape)`);
safetensors or npz would need a second writer and reader for one more kind of file.
"""

from grokray.snapshots.record import COLUMNS, MB, STATE, TAGS, Recorder, to_tensor

__all__ = ["COLUMNS", "MB", "STATE", "TAGS", "Recorder", "to_tensor"]

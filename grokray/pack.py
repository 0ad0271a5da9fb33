"""Config-packed trials: `run_pack(configs) -> [TrialResult]` trains configs of one shape as one
stack of members (config, seed), each exactly as its trial alone. No Ray here.

Two configs pack when their `pack_key`s are equal: every field but the per-member ones
(`PER_MEMBER`) is the same, so every parameter, buffer and batch has the same shape and every
member takes the same steps of the same kind. A member's own values: the learning rate and its
schedule, the weight decay (FORGE's split decay too), lambda_alg and its schedule, the Grokfast
filter (none, ema, ma) with its alpha, lamb, window and warmup, the init scale, the split
(`data_seed`), the step budget, the label and what it continues from (grokray.sweep.continuing; the
step it continues from is the pack's); and its group among groups of one order, when the
task is the group's composition: the pairs (a, b) of every group of order n are the same n^2
index pairs, only the answers differ (each member its own table), and neither the MLP nor
FORGE holds anything else of the group (FORGE's algebra losses are over all triples of its
learned embedding, with a learned identity and inverse). A config with mechanism metrics keeps
its group in the key: they read the group's characters. The transformer and RFM do not pack
(their families have no `pack`): their configs run one at a time.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from grokray.config import TrialConfig
from grokray.errors import GrokrayError, error_line
from grokray.families import get_family
from grokray.groups import parse
from grokray.result import TrialResult
from grokray.tasks import canonical_names
from grokray.trial import pack_trainer_of, run_trial, start_run
from grokray.trialrun import ProgressFn, TrialRun

PER_MEMBER = (
    "steps", "seeds", "data_seed", "label",
    "optim.lr", "optim.weight_decay", "optim.lr_schedule", "optim.warmup_steps",
    "model.init_scale",
    "forge.lambda_alg", "forge.lambda_schedule", "forge.lambda_end", "forge.lambda_steps",
    "forge.wd_embed", "forge.wd_dad", "forge.wd_other",
    "grokfast.filter", "grokfast.alpha", "grokfast.lamb", "grokfast.window", "grokfast.warmup",
    "continued_from.config_hash", "continued_from.files", "continued_from.copied",
)
"""the fields a member of a pack holds on its own (dotted: section.field)"""


def pack_key(cfg: TrialConfig) -> str | None:
    """What configs of one pack share: the canonical config without `PER_MEMBER` fields, plus
    the seed count for FORGE (its L_assoc form is chosen for a trial's seeds), with the group
    of a composition task as its order (unless metrics read the group). None: the config's
    family does not pack."""
    if not get_family(cfg.arch).pack:
        return None
    d: dict[str, Any] = cfg.to_dict()
    for name in PER_MEMBER:
        section, _, field = name.rpartition(".")
        (d.get(section, {}) if section else d).pop(field, None)
    if cfg.arch == "forge":
        d["n_seeds"] = len(cfg.seeds)
    if _composes(cfg) and not (cfg.metrics.cheap or cfg.metrics.costly):
        d["group"] = f"order {parse(cfg.group).order}"
    return json.dumps(d, sort_keys=True, default=str)


def _composes(cfg: TrialConfig) -> bool:
    """The task is the group's composition (not a modular op on Z_p)."""
    return canonical_names(cfg.group, cfg.op)[1] == "group"


def run_pack(configs: Sequence[TrialConfig],
             progress: Sequence[ProgressFn | None] | None = None,
             checkpoints: Any = None) -> list[TrialResult]:
    """One TrialResult per config, in order, each as `run_trial(config)` gives it: configs of
    one `pack_key` train as one stack (a family without packing runs them one at a time).
    With `checkpoints` (grokray.checkpoint.Hook) each config is restored from its newest
    checkpoint and keeps new ones; configs whose checkpoints are at different steps train one
    at a time.

    A user's mistake (GrokrayError) is raised; any other exception fails the seeds that have no
    outcome yet, in every config of the pack. Raises ValueError when the keys differ."""
    configs = list(configs)
    progress = list(progress) if progress is not None else [None] * len(configs)
    keys = {pack_key(c) for c in configs}
    if None in keys or len(configs) == 1:
        return [run_trial(c, p, checkpoints) for c, p in zip(configs, progress, strict=True)]
    if len(keys) != 1:
        raise ValueError("run_pack: configs of different shapes (pack_key) do not pack")
    runs = [start_run(c, p, checkpoints) for c, p in zip(configs, progress, strict=True)]
    pack = pack_trainer_of(runs[0].family)
    assert pack is not None
    starts = {_start(r) for r in runs if r.seeds}
    stacks = [runs] if len(starts) <= 1 else [[r] for r in runs]
    try:
        for stack in stacks:
            try:
                pack(stack)
            except GrokrayError:
                raise
            except Exception as exc:  # noqa: BLE001 - a failed trial is a result, not a crash
                for run in stack:
                    run.fail_rest(error_line(exc))
    finally:
        for run in runs:
            if run.checkpoints is not None:
                run.checkpoints.done(run.cfg.config_hash())
    return [run.result() for run in runs]


def _start(run: TrialRun) -> tuple[int, bool]:
    """Where a trial's training starts: (step, whether that step's eval was taken)."""
    res = run.pickup
    return (0, False) if res is None else (res.step, res.evaluated)

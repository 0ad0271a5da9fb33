"""Device memory of a pack of `members` (config, seed) of one shape, from the config alone (no
model is built): what `--pack auto` sizes a pack by on CUDA (`members_that_fit`).

An estimate, on the high side, of what the trainer holds at its peak (a training step):

- per member, its state: parameters, their gradients, the optimizer's moments (AdamW 2, SGD
  with momentum 1), the Grokfast filter's state and its output buffers (EMA 2 tensors, MA the
  window + 2), each the size of the parameters;
- the activations of one chunk of training pairs: on CUDA the trainer takes chunks of
  TRAIN_LOGIT_BUDGET logits over all members (`grokray.models.chunks.chunk_pairs`), so a
  chunk holds members x pairs x (classes + the model's per-pair floats) values, `ACT_COPIES`
  times (the forward buffers, their gradients, the softmax);
- FORGE's algebra losses on top: the exact L_assoc form's n^3 buffer (`models.assoc.FORMS`)
  and its [n, R, R] intermediates per member.

The CUDA context and the allocator's caching are not in it: the caller leaves a margin
(`packing.GPU_MEMORY_SHARE`). Not calibrated on a GPU yet (benchmarks/gpu_check.sh measures
a packed grid when a device is lent); benchmarks/bench_memory.py measures the CPU's peak.
"""

from __future__ import annotations

from typing import Any

ACT_COPIES = 3
"""copies of a chunk's activations alive at once (forward, backward, softmax)"""


def itemsize(cfg: Any) -> int:  # noqa: ANN401 - TrialConfig
    """Bytes per value of the trial's dtype."""
    return 8 if cfg.dtype == "float64" else 4


def state_copies(cfg: Any) -> int:  # noqa: ANN401 - TrialConfig
    """Parameter-sized tensors per member: the parameters, their gradients, the optimizer's
    moments, the Grokfast filter's state and output."""
    o, g = cfg.optim, cfg.grokfast
    moments = 2 if o.name == "adamw" else (1 if o.momentum else 0)
    filt = {"ema": 2, "ma": g.window + 2}.get(g.filter, 0)
    return 2 + moments + filt


def pair_floats(cfg: Any, n_in: int, n_out: int) -> int:  # noqa: ANN401 - TrialConfig
    """The model's floats per training pair and member beyond its logits (each family's
    `pair_floats`, from the config; tests/unit/test_pack_memory.py checks they agree)."""
    if cfg.arch == "mlp":
        from grokray.models.mlp import hidden_width

        return 3 * hidden_width(cfg, n_in, n_out)
    if cfg.arch == "forge":
        return 3 * cfg.model.rank + 2 * cfg.model.d
    if cfg.arch == "transformer":
        t = cfg.transformer
        return 2 * t.d_mlp + 8 * t.d_model
    return 0


def _forge_aux(cfg: Any, n: int, members: int) -> int:  # noqa: ANN401
    """Values of FORGE's algebra-loss buffers for `members` members."""
    from grokray.models.assoc import FORMS, assoc_form

    f, d, R = cfg.forge, cfg.model.d, cfg.model.rank
    if f.lambda_schedule == "off" or n > f.alg_full_max:
        return members * f.alg_samples * (R + d) * ACT_COPIES
    form = FORMS[assoc_form(n, d, R, len(cfg.seeds))]
    per_member = n * R * R + n * n * R
    return members * per_member * ACT_COPIES + form.buffer(n, d, R, members)


def pack_bytes(cfg: Any, members: int) -> int:  # noqa: ANN401 - TrialConfig
    """Estimated peak device bytes of a pack of `members` members of `cfg`'s shape on CUDA."""
    from grokray.cost.work import shape
    from grokray.families import get_family
    from grokray.models.chunks import TRAIN_LOGIT_BUDGET

    s = shape(cfg)
    params = get_family(cfg.arch).model.count_params(cfg, s.n_in, s.n_out)
    state = members * params * state_copies(cfg)
    chunk = max(1, TRAIN_LOGIT_BUDGET // max(1, members * s.n_out))
    pairs = min(s.batch, chunk)
    acts = members * pairs * (s.n_out + pair_floats(cfg, s.n_in, s.n_out)) * ACT_COPIES
    aux = _forge_aux(cfg, s.n_in, members) if cfg.arch == "forge" else 0
    return (state + acts + aux) * itemsize(cfg)


def members_that_fit(cfg: Any, free_bytes: float, cap: int) -> int:  # noqa: ANN401
    """The most members (1..cap) of `cfg`'s shape whose `pack_bytes` fit in `free_bytes`; 1
    when not even one does (a single trial runs as it always did)."""
    lo, hi = 1, max(1, cap)
    while lo < hi:  # pack_bytes grows with members
        mid = (lo + hi + 1) // 2
        if pack_bytes(cfg, mid) <= free_bytes:
            lo = mid
        else:
            hi = mid - 1
    return lo

"""Multiply-adds (millions) of one training step of one seed, forward + backward, from the config
alone (no model, no group table): the size feature the cost model's per-family fit reads."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

KINDS = ("mlp", "forge", "forge_late", "transformer", "rfm", "hamiltonian")
"""the fitted step kinds: FORGE's step with its algebra losses on, and without (`forge_late`)"""


@dataclass(frozen=True)
class Shape:
    """The task's sizes: elements in, classes out, all pairs, training pairs per step."""

    n_in: int
    n_out: int
    pairs: int
    batch: int


def shape(cfg: Any) -> Shape:  # noqa: ANN401 - TrialConfig
    """Sizes from the group name's order (`groups.parse`: no table is built)."""
    from grokray.groups._names import parse

    n = parse(str(cfg.group), cap=10**12).order
    pairs = n * (n - 1) if cfg.op in ("div", "x/y") else n * n
    n_train = max(1, round(cfg.train_frac * pairs))
    bs = cfg.optim.batch_size
    if bs is None:
        bs = n_train if n_train <= cfg.optim.max_full_batch else cfg.optim.max_full_batch
    return Shape(n, n, pairs, min(bs, n_train))


def algebra_steps(cfg: Any) -> int:  # noqa: ANN401 - TrialConfig
    """Steps with FORGE's algebra losses on (lambda_alg(t) > 0), by its schedule."""
    f = cfg.forge
    if f.lambda_schedule == "off" or f.lambda_alg == 0:
        return 0
    if f.lambda_schedule == "constant":
        return cfg.steps
    end = f.lambda_steps if f.lambda_steps is not None else int(f.lambda_end * cfg.steps)
    return min(cfg.steps, end)


def step_macs(cfg: Any, kind: str) -> float:  # noqa: ANN401 - TrialConfig
    """Millions of multiply-adds per seed of one step of `kind` (KINDS) for `cfg`."""
    s = shape(cfg)
    return _MACS[kind](cfg, s) / 1e6


def _mlp(cfg: Any, s: Shape) -> float:  # noqa: ANN401
    from grokray.models.mlp import hidden_width

    d, h = cfg.model.d, hidden_width(cfg, s.n_in, s.n_out)
    return 3.0 * (2 * s.n_in * d * h + s.batch * h * s.n_out)


def _forge_data(cfg: Any, s: Shape) -> float:  # noqa: ANN401
    d, R = cfg.model.d, cfg.model.rank
    return 3.0 * (2 * s.n_in * R * d + s.batch * (R * d + d * s.n_out))


def _forge(cfg: Any, s: Shape) -> float:  # noqa: ANN401
    """The data loss, L_assoc in the form the model picks (exact up to alg_full_max elements,
    sampled triples above) and L_ident + L_inv through g_phi (benchmarks/bench_forge_step.py)."""
    from grokray.models.assoc import FORMS, assoc_form

    f, d, R, n = cfg.forge, cfg.model.d, cfg.model.rank, s.n_in
    if n <= f.alg_full_max:
        assoc = FORMS[assoc_form(n, d, R, len(cfg.seeds))].macs(n, d, R)
    else:
        assoc = 15 * f.alg_samples * R * d
    ni = min(n, f.alg_samples)
    idinv = 3 * (6 * ni * R * d + 2 * ni * d * f.inv_hidden + 2 * R * d)
    return _forge_data(cfg, s) + assoc + idinv


def _transformer(cfg: Any, s: Shape) -> float:  # noqa: ANN401
    """T = 3 tokens: per token the attention projections and the MLP, per pair the T^2 scores,
    the unembedding at the last position."""
    t, T = cfg.transformer, 3
    dm = t.d_model
    per_pair = t.n_layers * (T * (4 * dm * dm + 2 * dm * t.d_mlp) + 2 * T * T * dm)
    return 3.0 * s.batch * (per_pair + dm * s.n_out)


def _rfm(cfg: Any, s: Shape) -> float:  # noqa: ANN401
    """One iteration: the kernel matrix (N^2 D), its solve (N^3 / 3), the AGOP (N D^2 + N^2 D),
    N training pairs of one-hot inputs of D = 2 n."""
    N, D = s.batch, 2 * s.n_in
    return 2.0 * N * N * D + N**3 / 3 + N * D * D


def _hamiltonian(cfg: Any, s: Shape) -> float:  # noqa: ANN401
    """A batch of transitions through the step map: MLP (hidden^2) or DAD (K products, each
    three d x R maps forward and their inverse pass)."""
    h = cfg.hamiltonian
    per = h.hidden * h.hidden if h.step == "mlp" else h.K * 6 * h.d * h.rank
    return 3.0 * h.batch * per


_MACS = {"mlp": _mlp, "forge": _forge, "forge_late": _forge_data,
         "transformer": _transformer, "rfm": _rfm, "hamiltonian": _hamiltonian}

"""The trainer's entry points for the mechanism metrics.

At an evaluation the trainer builds a `MetricInputs` for all S seeds, asks `metrics_due` which
names are due (`cfg.metrics.cheap` every eval, `cfg.metrics.costly` every `costly_every` evals
and at the last one), and calls `compute_eval_metrics`; each returned name becomes a curve column
`metric_<name>`. After training, `summarize(curves, grok_steps)` gives each seed's scalar
summaries for `SeedResult.metrics` (written as trials columns `metric_<name>`).

Metric names (`EVAL_METRICS`; each produces the columns listed):

- `spectrum`: spectrum of the group-indexed embedding E [S, n, d] (isotypic modes, = Fourier
  frequencies on Z_n): `eff_modes`, `n_key_modes`, `top_mode`, `top_mode_frac`.
- `spectrum_readings`: other readings of "effective harmonic modes" of the same spectrum, kept
  beside `spectrum` (never replacing it) for the effective-modes diagnosis: `modes_entropy` (exp of
  the Shannon entropy of the non-trivial mass), `n_modes_99` (fewest modes holding 99% of it;
  `n_key_modes` is the 90% count), and `eff_modes_one` (the participation ratio of one operand
  embedding: the MLP's E_a alone, from its `pair_mlp` view; FORGE's E, which both operands
  share).
- `wedderburn`: class-multiplication recovery of the predicted table [S, n, n]:
  `wedderburn_match` of `wedderburn_total` (= k^3) coefficients, `wedderburn_frac`, and the same
  over the true non-zero coefficients: `wedderburn_match_nz`, `wedderburn_total_nz`,
  `wedderburn_frac_nz` (on abelian groups almost all k^3 coefficients are 0, so use these).
- `nfa`: the neural feature ansatz of an embed-and-concat MLP (the model's `pair_mlp` hook; NaN
  for a model without one): Pearson correlation of the
  NFM W1^T W1 over the one-hot input e_a (+) e_b with AGOP^(1/2) (`nfa_corr`) and with the AGOP
  itself (`nfa_corr_agop`), and with AGOP^(1/2) over off-diagonal entries only
  (`nfa_corr_offdiag`; the diagonal dominates both matrices), the AGOP taken at the seed's
  training pairs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import torch
from torch import Tensor

from grokray.errors import ConfigError
from grokray.metrics.agop import embed_mlp_nfa, pearson, psd_power
from grokray.metrics.axioms import DEFAULT_REL, axiom_emergence
from grokray.metrics.spectra import (
    effective_modes,
    entropy_modes,
    fourier_mass,
    isotypic_mass,
    n_key_modes,
    top_mode,
)
from grokray.metrics.wedderburn import recovery

__all__ = [
    "KEY_FRAC",
    "MetricInputs",
    "EVAL_METRICS",
    "validate_metric_names",
    "metrics_due",
    "compute_eval_metrics",
    "summarize",
]

KEY_FRAC = 0.9
"""key modes hold this fraction of the non-trivial spectral mass"""

NFA_MAX_PAIRS = 16384
"""the `nfa` AGOP is taken at (at most) this many of a seed's training pairs (the first ones of
its split, which is already a random order)"""


@dataclass
class MetricInputs:
    """What the trainer hands to the metrics at one evaluation, for all S seeds at once."""

    group: Any | None
    """the task's Group when the task is its composition (None otherwise: the embedding axis is
    then read as Z_n, n = E.shape[-2], and Wedderburn recovery gives NaN)"""
    E: Tensor | None = None
    """[S, n, d] group-indexed embedding (row x = element x). MLP with separate a/b embeddings:
    concatenate them on the last axis (the spectrum is then the sum of both). None: NaN"""
    pred_table: Tensor | None = None
    """long [S, n, n]: predicted index of a*b for every pair (argmax over train and val pairs);
    None (e.g. a group too big to evaluate every pair): Wedderburn columns are NaN"""
    extra: dict[str, Tensor] = field(default_factory=dict)
    """further named tensors for metrics registered by other modules"""
    hooks: dict[str, Any] = field(default_factory=dict)
    """the model's named views (grokray.models.protocol.Model.hooks), stacked over the same S
    seeds as E: `pair_mlp` = {Ea, Eb, W1a, W1b, b1, W2, act} for an embed-and-concat MLP
    (logits = act(Ea[a] W1a + Eb[b] W1b + b1) W2 + b2); a metric whose view is absent gives NaN"""
    n_seeds: int | None = None
    """S, when no tensor above carries it"""
    pairs: tuple[Tensor, Tensor] | None = None
    """(a, b) long [S, N]: each seed's training pairs, where `nfa` takes the AGOP; None: every
    pair of the n x n grid"""


def _n_seeds(x: MetricInputs) -> int | None:
    for t in (x.E, x.pred_table):
        if t is not None:
            return int(t.shape[0])
    return x.n_seeds


def _nan_columns(x: MetricInputs, columns: Iterable[str]) -> dict[str, Tensor]:
    """NaN per seed where an input is missing (no columns when S is unknown)."""
    S = _n_seeds(x)
    if S is None:
        return {}
    return {c: torch.full((S,), torch.nan, dtype=torch.float64) for c in columns}


def _mass(x: MetricInputs, E: Tensor, metric: str) -> Tensor:
    """Mode masses [S, m] of a group-indexed table E [S, n, d] (isotypic, or Fourier on Z_n)."""
    if x.group is not None and E.shape[-2] != int(x.group.order):
        raise ValueError(
            f"metric {metric!r}: E has {E.shape[-2]} rows, the group {x.group.name} has "
            f"{x.group.order} elements"
        )
    return isotypic_mass(E, x.group) if x.group is not None else fourier_mass(E)


_SPECTRUM_COLUMNS = ("eff_modes", "n_key_modes", "top_mode", "top_mode_frac")


def _spectrum(x: MetricInputs) -> dict[str, Tensor]:
    if x.E is None:  # the model has no group-indexed embedding
        return _nan_columns(x, _SPECTRUM_COLUMNS)
    mass = _mass(x, x.E, "spectrum")  # [S, m]
    nontriv = mass[..., 1:].sum(-1)
    top = top_mode(mass)
    top_mass = mass.gather(-1, top[..., None])[..., 0]
    return {
        "eff_modes": effective_modes(mass),
        "n_key_modes": n_key_modes(mass, KEY_FRAC),
        "top_mode": top.to(torch.float64),
        "top_mode_frac": torch.where(nontriv > 0, top_mass / nontriv, torch.nan),
    }


MODES_99 = 0.99
"""`n_modes_99` counts the modes holding this fraction of the non-trivial mass"""

_READINGS_COLUMNS = ("modes_entropy", "n_modes_99", "eff_modes_one")


def _spectrum_readings(x: MetricInputs) -> dict[str, Tensor]:
    """Other readings of the effective number of modes (see the module docstring)."""
    if x.E is None:
        return _nan_columns(x, _READINGS_COLUMNS)
    mass = _mass(x, x.E, "spectrum_readings")
    view = x.hooks.get("pair_mlp")
    one = view["Ea"].detach() if view is not None else x.E  # [S, n, d]: one operand's table
    return {
        "modes_entropy": entropy_modes(mass),
        "n_modes_99": n_key_modes(mass, MODES_99),
        "eff_modes_one": effective_modes(_mass(x, one, "spectrum_readings")),
    }


_WEDDERBURN_COLUMNS = ("wedderburn_match", "wedderburn_total", "wedderburn_frac",
                       "wedderburn_match_nz", "wedderburn_total_nz", "wedderburn_frac_nz")


def _wedderburn(x: MetricInputs) -> dict[str, Tensor]:
    if x.pred_table is None or x.group is None:  # no full table, or not a group composition
        return _nan_columns(x, _WEDDERBURN_COLUMNS)
    r = recovery(x.pred_table, x.group)
    m, m_nz = r.matched.to(torch.float64), r.matched_nonzero.to(torch.float64)
    return {
        "wedderburn_match": m,
        "wedderburn_total": torch.full_like(m, float(r.total)),
        "wedderburn_frac": m / r.total,
        "wedderburn_match_nz": m_nz,
        "wedderburn_total_nz": torch.full_like(m, float(r.total_nonzero)),
        "wedderburn_frac_nz": m_nz / r.total_nonzero,
    }


_NFA_COLUMNS = ("nfa_corr", "nfa_corr_agop", "nfa_corr_offdiag")


def _nfa(x: MetricInputs) -> dict[str, Tensor]:
    """NFA of the embed-and-concat MLP from its per-element tables (grokray.metrics.agop)."""
    view = x.hooks.get("pair_mlp")
    if view is None:  # no first layer over one-hot pairs
        return _nan_columns(x, _NFA_COLUMNS)
    act = view["act"]
    P = {k: v.detach().double() for k, v in view.items() if k != "act"}
    Ta = torch.bmm(P["Ea"], P["W1a"])  # [S, n, h]
    Tb = torch.bmm(P["Eb"], P["W1b"])  # [S, n, h]
    S, n = Ta.shape[:2]
    if x.pairs is None:
        g = torch.arange(n, device=Ta.device)
        a, b = g.repeat_interleave(n).expand(S, -1), g.repeat(n).expand(S, -1)  # [S, n^2]
    else:
        a, b = (t[:, :NFA_MAX_PAIRS].to(Ta.device) for t in x.pairs)  # [S, N]
    out = {c: torch.empty(S, dtype=torch.float64) for c in _NFA_COLUMNS}
    for s in range(S):
        corr, G = embed_mlp_nfa(Ta[s], Tb[s], P["b1"][s], P["W2"][s], a[s], b[s], act)
        T = torch.cat([Ta[s], Tb[s]], 0)  # [2n, h] = W1^T over e_a (+) e_b
        nfm, root = T @ T.T, psd_power(G, 0.5)  # [2n, 2n] each
        out["nfa_corr"][s] = corr
        out["nfa_corr_agop"][s] = pearson(nfm, G)
        out["nfa_corr_offdiag"][s] = pearson(nfm, root, drop_diag=True)
    return out


EVAL_METRICS: dict[str, Callable[[MetricInputs], dict[str, Tensor]]] = {
    "spectrum": _spectrum,
    "spectrum_readings": _spectrum_readings,
    "wedderburn": _wedderburn,
    "nfa": _nfa,
}
"""metric name (as listed in cfg.metrics.cheap / costly) -> fn(inputs) -> {column: [S]}"""


def validate_metric_names(names: Iterable[str]) -> None:
    """Raise ConfigError on a name that is not in EVAL_METRICS."""
    for name in names:
        if name not in EVAL_METRICS:
            raise ConfigError(
                f"unknown metric {name!r} in metrics.cheap/costly; valid: "
                + ", ".join(sorted(EVAL_METRICS))
            )


def metrics_due(mcfg: Any, eval_index: int, final: bool = False) -> list[str]:
    """Names due at the eval numbered `eval_index` (0 = first eval): cheap ones always, costly ones
    when eval_index % costly_every == 0 or at the final eval."""
    names = list(mcfg.cheap)
    if final or eval_index % int(mcfg.costly_every) == 0:
        names += [n for n in mcfg.costly if n not in names]
    return names


def compute_eval_metrics(inputs: MetricInputs, names: Iterable[str]) -> dict[str, Tensor]:
    """Run the named metrics on all seeds: {column name (no prefix): float64 tensor [S] on CPU}."""
    names = list(names)
    validate_metric_names(names)
    out: dict[str, Tensor] = {}
    with torch.no_grad():
        for name in names:
            for col, val in EVAL_METRICS[name](inputs).items():
                out[col] = val.detach().to("cpu", torch.float64)
    return out


def summarize(
    curves: pd.DataFrame,
    grok_steps: Mapping[int, int | None],
    rel: float = DEFAULT_REL,
) -> dict[int, dict[str, float]]:
    """Per-seed scalar summaries for SeedResult.metrics (keys without the `metric_` prefix).

    - every curve column `metric_<name>`: its last finite value for the seed -> `<name>`;
    - axiom emergence from `loss_assoc/ident/inv` when present: `<axiom>_step`, `<axiom>_lead`
      (see grokray.metrics.axioms; `rel` is the relative threshold).
    """
    out: dict[int, dict[str, float]] = {}
    cols = [c for c in curves.columns if c.startswith("metric_")]
    ordered = curves.sort_values(["seed", "step"])
    for seed, df in ordered.groupby("seed", sort=True):
        row: dict[str, float] = {}
        for c in cols:
            v = df[c].to_numpy(dtype=np.float64)
            v = v[np.isfinite(v)]
            row[c[len("metric_"):]] = float(v[-1]) if v.size else float("nan")
        out[int(seed)] = row
    for seed, row in axiom_emergence(curves, grok_steps, rel).items():
        out.setdefault(seed, {}).update(row)
    return out

"""The metrics `grokray recompute` computes at snapshots: a registry of names, versions and
functions, with the built-in ones and any a user registers.

    from grokray.metrics.registry import register

    @register("restricted_loss", version=1, columns=("restricted_loss", "excluded_loss"))
    def restricted(snap):            # snap: a Snapshot (one seed, one step)
        ...
        return {"restricted_loss": r, "excluded_loss": e}

A metric function takes one `Snapshot` (a seed's parameters at one step: its rebuilt `model`,
`task`, `train`/`val` split, `logits` of every pair, the trainer's `inputs`, `at(step)` for the
seed's other snapshots; the protocol below, which grokray.snapshots.read.Snapshot implements)
and returns `{name: value}` (floats, or one-element tensors). Each
name becomes the curve column `<prefix><name>` (prefix `metric_` unless the metric says
otherwise), next to the online curve columns. `version` is written beside every value: bump it
when the function's numbers change, and `grokray recompute` computes that metric again (the
older version's files stay on disk, never rewritten; readers take the newest version).

Built-in: each trainer metric of `grokray.metrics.mechanism` (`spectrum`, `spectrum_readings`,
`wedderburn`, `nfa`; columns as online, so recomputed values sit in the online columns),
`axioms` (FORGE's algebra losses, the curve columns `loss_assoc`, `loss_ident`, `loss_inv`),
`agop` and `circulant` (below). No torch at import: the built-ins import it when they run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from grokray.errors import GrokrayError
from grokray.schema import METRIC_PREFIX

__all__ = ["Metric", "MetricFn", "Snapshot", "get_metric", "metric_names", "metrics",
           "register", "unregister"]


class Snapshot(Protocol):
    """What a metric function reads: one seed's snapshot at one step (built by
    grokray.snapshots.read; the model, logits and inputs on first use)."""

    config: Any
    """the trial's TrialConfig (seeds: this one seed; device: cpu)"""
    config_hash: str
    seed: int
    step: int
    """the snapshot's step"""
    tags: str
    """why it was taken: log, init, memorize, grok, end (comma-joined)"""
    tensors: dict[str, Any]
    """the kept tensors by name, shaped (numpy; the trial's dtype)"""
    task: Any
    """the task (grokray.tasks.Task: a, b, y over every pair, n_in, n_out, group, modulus)"""
    train: Any
    """indices into the task of the seed's train pairs (LongTensor, sorted)"""
    val: Any
    """indices of its validation pairs"""
    steps: list[int]
    """every snapshot step of this seed"""

    @property
    def model(self) -> Any:
        """The family's model holding this seed (grokray.models.protocol.Model), or None."""

    @property
    def logits(self) -> Any:
        """[N, n_out] logits of every task pair."""

    @property
    def inputs(self) -> Any:
        """The trainer's metric inputs at this step (grokray.metrics.mechanism.MetricInputs)."""

    def at(self, step: int | str) -> Snapshot:
        """The same seed's snapshot at another step, or tag (`end`, `grok`, ..., `last`)."""


MetricFn = Callable[[Snapshot], Mapping[str, Any]]
"""fn(snapshot) -> {name: value} (a float, or a one-element tensor)"""

_NAME_CHARS = set("abcdefghijklmnopqrstuvwxyz0123456789_")


@dataclass(frozen=True)
class Metric:
    """A registered metric."""

    name: str
    """what `--metric` names (lowercase letters, digits, `_`); also its directory under
    `recomputed/`"""
    fn: MetricFn
    """computes it at one snapshot"""
    version: int = 1
    """the version of its numbers (written in the `metric_version` column)"""
    columns: tuple[str, ...] = ()
    """the names it returns (documentation; `--list` shows them); empty: not declared"""
    prefix: str = METRIC_PREFIX
    """curve column = prefix + name (`metric_eff_modes`; the axioms: `loss_assoc`)"""
    description: str = ""
    """one line for `grokray recompute --list` (default: the function's docstring's first
    paragraph)"""
    builtin: bool = False
    """shipped with grokray"""

    def column(self, name: str) -> str:
        """The curve column of one of its names."""
        return f"{self.prefix}{name}"


_METRICS: dict[str, Metric] = {}
_BUILTINS_LOADED = False


def register(name: str, fn: MetricFn | None = None, *, version: int = 1,
             columns: tuple[str, ...] | list[str] = (), prefix: str = METRIC_PREFIX,
             description: str = "", replace: bool = False) -> Any:
    """Register `fn` under `name` (or use as a decorator: `@register("name", version=2)`).

    A name already taken raises GrokrayError unless `replace` (a notebook re-running its cell
    passes replace=True); a built-in cannot be replaced."""
    if not name or not set(name) <= _NAME_CHARS or name[0].isdigit():
        raise GrokrayError(f"metric name {name!r}: use lowercase letters, digits and _ "
                           "(it names a directory and columns)")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise GrokrayError(f"metric {name!r}: version must be an integer >= 1, got {version!r}")

    def add(f: MetricFn) -> MetricFn:
        _load_builtins()
        have = _METRICS.get(name)
        if have is not None and (have.builtin or not replace):
            why = "a built-in metric" if have.builtin else "already registered (replace=True " \
                                                           "replaces it)"
            raise GrokrayError(f"metric {name!r} is {why}; choose another name")
        _METRICS[name] = Metric(name, f, version, tuple(columns), prefix,
                                description or " ".join((f.__doc__ or "").strip()
                                                        .split("\n\n")[0].split()))
        return f

    return add if fn is None else add(fn)


def unregister(name: str) -> None:
    """Remove a user metric (tests, notebooks)."""
    m = _METRICS.get(name)
    if m is not None and not m.builtin:
        del _METRICS[name]


def metrics() -> dict[str, Metric]:
    """Every registered metric by name (built-ins first)."""
    _load_builtins()
    return dict(_METRICS)


def metric_names() -> list[str]:
    """Every registered name, sorted."""
    return sorted(metrics())


def get_metric(name: str) -> Metric:
    """The metric `name`; GrokrayError (one line) listing the valid names otherwise."""
    all_ = metrics()
    if name not in all_:
        raise GrokrayError(f"unknown metric {name!r}; valid: {', '.join(sorted(all_))} (a "
                           "metric of your own: register it in a file and pass --import FILE; "
                           "docs/snapshots.md, Recompute)")
    return all_[name]


# ----------------------------------------------------------------------------- built-ins


def _builtin(name: str, fn: MetricFn, columns: tuple[str, ...], description: str,
             prefix: str = METRIC_PREFIX, version: int = 1) -> None:
    _METRICS[name] = Metric(name, fn, version, columns, prefix, description, builtin=True)


def _online(name: str) -> MetricFn:
    """The trainer's metric `name`, at one snapshot: the same function on the same inputs
    (grokray.metrics.mechanism.compute_eval_metrics; one seed)."""

    def fn(snap: Snapshot) -> dict[str, Any]:
        # torch: only when a metric runs (registering and `recompute --list` stay light)
        from grokray.metrics.mechanism import compute_eval_metrics

        if snap.model is None:
            return {}
        return compute_eval_metrics(snap.inputs, [name])

    fn.__name__ = f"online_{name}"
    return fn


def _axioms(snap: Snapshot) -> dict[str, Any]:
    """FORGE's unweighted algebra losses (the curve columns loss_assoc, loss_ident, loss_inv);
    nothing for a model without them."""
    import torch  # when the metric runs: registering stays light

    m = snap.model
    if m is None or not m.has_aux:
        return {}
    with torch.no_grad():
        return {k: v.detach().double() for k, v in m.aux_losses().items()}


def _feature_matrix(snap: Snapshot) -> Any:
    """The seed's feature matrix over one-hot pairs e_a (+) e_b, [2n, 2n] float64: RFM's M when
    the snapshot keeps it (tensor `M`), else the AGOP of an embed-and-concat MLP (its
    `pair_mlp` view) at the seed's training pairs, as `nfa` takes it; None otherwise."""
    import torch  # when the metric runs: registering stays light

    if "M" in snap.tensors:
        return torch.as_tensor(snap.tensors["M"]).double()
    if snap.model is None:
        return None
    view = snap.model.hooks().get("pair_mlp")
    if view is None:
        return None
    # torch: when the metric runs (registering stays light)
    from grokray.metrics.agop import embed_mlp_nfa
    from grokray.metrics.mechanism import NFA_MAX_PAIRS

    with torch.no_grad():
        P = {k: v.detach().double()[0] for k, v in view.items() if k != "act"}
        Ta, Tb = P["Ea"] @ P["W1a"], P["Eb"] @ P["W1b"]
        a, b = (t[0, :NFA_MAX_PAIRS] for t in snap.inputs.pairs)
        return embed_mlp_nfa(Ta, Tb, P["b1"], P["W2"], a, b, view["act"])[1]


def _agop(snap: Snapshot) -> dict[str, Any]:
    """agop_align: rho(M_t, M_last), the centered alignment of the seed's feature matrix with
    the one at its last snapshot (RFM's online `agop_align`; an MLP's AGOP); NaN without one."""
    from grokray.metrics.agop import agop_alignment  # torch: when it runs

    M = _feature_matrix(snap)
    last = snap.at("last")
    M_last = M if last.step == snap.step else _feature_matrix(last)
    if M is None or M_last is None:
        return {"agop_align": float("nan")}
    return {"agop_align": agop_alignment(M, M_last)}


def _circulant(snap: Snapshot) -> dict[str, Any]:
    """circulant_dev: the circulant deviation of the feature matrix's off-diagonal block, in
    the op's order (RFM's online `circulant_dev`; an MLP's AGOP); NaN unless the task is
    add/sub (any Z_p) or mul/div (p prime) with such a feature matrix."""
    # torch: when the metric runs (registering stays light)
    from grokray.metrics.circulant import feature_circulant_deviation, has_circulant_structure

    task = snap.task
    if task.modulus is None or not has_circulant_structure(task.op, int(task.modulus)):
        return {"circulant_dev": float("nan")}
    M = _feature_matrix(snap)
    if M is None:
        return {"circulant_dev": float("nan")}
    return {"circulant_dev": feature_circulant_deviation(M, task.op)}


def _load_builtins() -> None:
    global _BUILTINS_LOADED
    if _BUILTINS_LOADED:
        return
    _BUILTINS_LOADED = True
    online = {
        "spectrum": (("eff_modes", "n_key_modes", "top_mode", "top_mode_frac"),
                     "spectrum of the group-indexed embedding (as online)"),
        "spectrum_readings": (("modes_entropy", "n_modes_99", "eff_modes_one"),
                              "other readings of the same spectrum (as online)"),
        "wedderburn": (("wedderburn_match", "wedderburn_total", "wedderburn_frac",
                        "wedderburn_match_nz", "wedderburn_total_nz", "wedderburn_frac_nz"),
                       "class-multiplication recovery of the predicted table (as online)"),
        "nfa": (("nfa_corr", "nfa_corr_agop", "nfa_corr_offdiag"),
                "neural feature ansatz of an embed-and-concat MLP (as online; NaN otherwise)"),
    }
    for name, (cols, desc) in online.items():
        _builtin(name, _online(name), cols, desc)
    _builtin("axioms", _axioms, ("assoc", "ident", "inv"),
             "FORGE's algebra losses L_assoc, L_ident, L_inv (the online loss_* columns)",
             prefix="loss_")
    _builtin("agop", _agop, ("agop_align",),
             "alignment of the feature matrix (MLP AGOP, RFM M) with the seed's last one")
    _builtin("circulant", _circulant, ("circulant_dev",),
             "circulant deviation of the feature matrix's off-diagonal block (Z_p ops)")

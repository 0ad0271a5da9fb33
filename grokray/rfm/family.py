"""The `rfm` family: a Recursive Feature Machine fitted on a trial's task (the kernel machine of
grokray/rfm/model.py; section 3 of papers.md).

`fit_trial(run)` is the family's trainer (grokray.trial runs it; `Family.train`): one RFM
iteration is one step. Config: its own `rfm` section (`RFMConfig`, below) and the shared
`metrics` thresholds. The inputs are the one-hot pairs e_a (+) e_b of the task, the targets the
one-hot answers; every seed fits on its own split.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from grokray.errors import GrokrayError, error_line
from grokray.families import Family
from grokray.fields import choice, positive
from grokray.metrics.agop import agop_alignment
from grokray.metrics.circulant import (
    circulant_profile,
    feature_circulant_deviation,
    has_circulant_structure,
    op_block,
)
from grokray.metrics.grokking import GrokDetector
from grokray.result import SeedResult
from grokray.rfm.model import KERNELS, RFM, one_hot_pairs, random_circulant_M
from grokray.snapshots import Recorder

if TYPE_CHECKING:  # pragma: no cover
    from grokray.trialrun import TrialRun

BASELINES = ("none", "random_circulant")


@dataclass
class RFMConfig:
    """Recursive Feature Machine. One step = one iteration."""

    kernel: str = choice("gaussian", KERNELS)
    """gaussian, laplace, or quadratic"""
    bandwidth: float = 2.5
    """kernel bandwidth L"""
    ridge: float = 0.0
    """ridge regularization of the kernel solve"""
    iters: int = positive(25)
    """RFM iterations"""
    power: float = 0.5
    """M <- AGOP^power"""
    centering: bool = True
    """center the Jacobians over the train points before the AGOP (the reference code does)"""
    baseline: str = choice("none", BASELINES)
    """none or random_circulant (a fixed random block-circulant M, no learning)"""


def fit_trial(run: TrialRun) -> None:
    """RFM's trainer (`Family.train`): fit every seed of the trial `run` (grokray.trial).

    Step t of the curves is the kernel machine fitted with M_t (t AGOP updates; step 0 = M_0).
    Curve metrics: metric_circulant_dev (op tasks on Z_p), metric_agop_align (rho(M_t, M_final),
    centered), metric_iter_s (seconds of that iteration). M_t is snapshotted as tensor `M`
    (grokray.snapshots: log-spaced iterations, 0, memorization, grok and the last, under the
    same budget; `grokray.load_snapshots`), the final M also kept in SeedResult.artifacts["M"]
    (a [2n, 2n] float64 array); per-seed scalars in
    SeedResult.metrics (written as trials columns): iter_s, agop_align_first, circulant_dev and
    the dominant frequency of the final circulant profile (circ_top_freq, circ_top_freq_share).
    n_params counts the dual coefficients and M. A seed whose solve or AGOP is not finite is
    `diverged`, one that raises otherwise `failed`; the other seeds go on.
    """
    cfg, task, r = run.cfg, run.task, run.cfg.rfm
    device = str(run.device)
    p = int(task.n_in)
    X_all = one_hot_pairs(task.a, task.b, p)  # [N, 2p]
    Y_all = torch.nn.functional.one_hot(task.y, task.n_out).double()  # [N, n_out]
    circ_op = task.op if has_circulant_structure(task.op, p) else None
    baseline = r.baseline != "none"
    n_train = int(round(cfg.train_frac * len(task)))
    run.n_params = n_train * int(task.n_out) + (2 * p) ** 2  # dual coefs + M
    iters = 0 if baseline else r.iters
    snaps = Recorder(cfg, list(range(iters + 1)), {"M": torch.zeros(1, 2 * p, 2 * p,
                                                                    dtype=torch.float64)}, iters)
    for seed, (tr, va) in zip(run.seeds, run.splits, strict=True):
        data_seed = cfg.seed_data_seed(seed)
        try:
            M_init = None
            if baseline:
                g = torch.Generator().manual_seed(int(seed))
                M_init = random_circulant_M(p, task.op, g)
            est = RFM(kernel=r.kernel, bandwidth=r.bandwidth, ridge=r.ridge,
                      iters=0 if baseline else r.iters, power=r.power, centering=r.centering,
                      M_init=M_init, device=device, store_iterates=True)
            est.fit(X_all[tr], Y_all[tr], eval_set=(X_all[va], Y_all[va]))
        except GrokrayError:
            raise
        except (FloatingPointError, torch.linalg.LinAlgError) as exc:
            run.outcome[seed] = SeedResult(seed=seed, data_seed=data_seed, status="diverged",
                                           error=str(exc).splitlines()[0])
            continue
        except Exception as exc:  # noqa: BLE001 - a failed seed is recorded, not raised
            run.outcome[seed] = SeedResult(seed=seed, data_seed=data_seed, status="failed",
                                           error=error_line(exc))
            continue
        M_final = est.M_.cpu()
        seed_rows = []
        for h, M_t in zip(est.history_, est.Ms_, strict=True):
            row = {"seed": seed, "step": int(h["iter"]), "train_loss": h["train_loss"],
                   "train_acc": h["train_acc"], "val_loss": h["val_loss"],
                   "val_acc": h["val_acc"], "metric_iter_s": h["wall_s"],
                   "metric_agop_align": agop_alignment(M_t, M_final)}
            if circ_op is not None:
                row["metric_circulant_dev"] = feature_circulant_deviation(M_t, circ_op)
            seed_rows.append(row)
        run.rows += seed_rows
        out = run.outcome[seed] = _seed_result(cfg, seed, data_seed, seed_rows, M_final, circ_op)
        for t, M_t in enumerate(est.Ms_):  # M_t at log-spaced iterations, init, memorize, grok
            snaps.at_eval(t, [seed], {"M": M_t[None]}, {seed: out})
        snaps.at_end(seed, out.steps_run, 0, {"M": M_final[None]})
    run.snapshots = snaps.records()


def _seed_result(cfg: Any, seed: int, data_seed: int, rows: list[dict[str, Any]],
                 M: torch.Tensor, circ_op: str | None) -> Any:
    det = GrokDetector(cfg.metrics.grok_threshold, cfg.metrics.memorize_threshold, patience=0)
    for r in rows:
        track = det.update(seed, r["step"], r["train_acc"], r["val_acc"])
    grok, memo, ungrok = track.grok_step, track.memorize_step, track.ungrok_step
    last = rows[-1]
    final = {"final_train_acc": last["train_acc"], "final_val_acc": last["val_acc"],
             "final_train_loss": last["train_loss"], "final_val_loss": last["val_loss"]}
    metrics: dict[str, float] = {"iter_s": float(np.mean([r["metric_iter_s"] for r in rows]))}
    if len(rows) > 1:
        metrics["agop_align_first"] = rows[0]["metric_agop_align"]
    if circ_op is not None:
        p = M.shape[0] // 2
        metrics["circulant_dev"] = rows[-1]["metric_circulant_dev"]
        # the nearest circulant's generating vector in Fourier space: dominant frequency share
        v = circulant_profile(op_block(M[:p, p:], circ_op))
        power = torch.fft.rfft(v - v.mean()).abs().square()
        if float(power.sum()) > 0:
            metrics["circ_top_freq"] = float(power.argmax())
            metrics["circ_top_freq_share"] = float(power.max() / power.sum())
    status = "grokked" if grok is not None else "not_grokked"
    return SeedResult(seed=seed, data_seed=data_seed, status=status, grok_step=grok,
                      grok_step_lo=track.grok_step_lo,
                      memorize_step=memo, ungrok_step=ungrok, steps_run=int(last["step"]),
                      final=final, metrics=metrics,
                      artifacts={"M": M.numpy().astype(np.float64)})


FAMILY = Family("rfm", train=fit_trial, section="rfm", config=RFMConfig, shared=("metrics",))

"""Nanda et al.'s restricted and excluded loss on Z_p addition, as a recomputable metric.

    grokray recompute OUT/SWEEP --metric restricted_loss --import docs/examples/restricted_loss.py

Key frequencies: those of the seed's embedding at its last snapshot (the fewest frequencies
holding 90% of its non-trivial Fourier mass), the same at every step. The logits of every pair
(a, b), one column per answer c, are split into their projection onto the directions
cos(w(a+b)), sin(w(a+b)), w = 2 pi k / p for the key frequencies k, and the rest. Restricted
loss: the cross-entropy of the projection alone over every pair; excluded loss: that of the
rest over the seed's train pairs. NaN unless the task is addition on Z_p.
"""

import math

import torch

from grokray import fourier_mass, key_modes, register_metric


@register_metric("restricted_loss", version=1, columns=("restricted_loss", "excluded_loss"))
def restricted_loss(snap):
    """Nanda et al.'s restricted (key frequencies only) and excluded (key frequencies removed)
    loss on Z_p addition."""
    task = snap.task
    if task.op != "add" or task.modulus is None or snap.model is None:
        return {"restricted_loss": math.nan, "excluded_loss": math.nan}
    p = task.modulus
    E_last = snap.at("last").model.embedding().detach()  # [1, p, d]
    keys = key_modes(fourier_mass(E_last))[0].nonzero().flatten()  # key frequencies k
    s = (task.a + task.b).double() * 2 * math.pi / p  # [p^2]: w (a + b) for w = 2 pi / p
    dirs = [f(k * s) for k in keys.tolist() for f in (torch.cos, torch.sin)]
    B = torch.stack(dirs, 1) / math.sqrt(len(s) / 2)  # [p^2, 2K], orthonormal over the pairs
    logits = snap.logits.double()  # [p^2, p]: every pair, one column per answer
    kept = B @ (B.T @ logits)  # the logits' key-frequency part
    ce = torch.nn.functional.cross_entropy
    return {"restricted_loss": ce(kept, task.y).item(),
            "excluded_loss": ce((logits - kept)[snap.train], task.y[snap.train]).item()}

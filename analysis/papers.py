"""Headline numbers of the three papers grokray serves (from ../shared/papers.md), and which
sweeps they apply to. The report prints each matched paper number beside the measured one.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PaperNumber:
    """One published number a sweep can be compared with."""

    key: str
    """Stable id, e.g. "forge.z97.speedup.forge+grokfast"."""
    paper: str
    """Which paper (short name)."""
    experiment: str
    """The experiment, in words."""
    quantity: str
    """What is measured."""
    value: float
    """The number (for a bound such as p < 0.016, the bound)."""
    text: str
    """How the paper states it."""


FORGE = "FORGE (seed 000)"
GEOM = "Geometric bias (seed 002)"
RFM = "RFM / AGOP (seed 004)"

SPEEDUPS: dict[str, tuple[tuple[str, str, PaperNumber], ...]] = {
    # group -> ((arm, baseline, number), ...): speedup = median(baseline) / median(arm)
    "Z97": (
        ("forge+grokfast", "mlp", PaperNumber(
            "forge.z97.speedup.forge+grokfast", FORGE, "4-way ablation on Z/97",
            "speedup of FORGE+Grokfast vs MLP", 10.20, "10.20x")),
        ("mlp+grokfast", "mlp", PaperNumber(
            "forge.z97.speedup.mlp+grokfast", FORGE, "4-way ablation on Z/97",
            "speedup of MLP+Grokfast vs MLP", 0.86, "0.86x (slower)")),
    ),
    "A5": (
        ("forge", "mlp", PaperNumber(
            "forge.a5.speedup.mlp", FORGE, "ablation on A5", "speedup of FORGE vs MLP",
            10.1, "10.1x")),
        ("forge", "mlp+grokfast", PaperNumber(
            "forge.a5.speedup.mlp+grokfast", FORGE, "ablation on A5",
            "speedup of FORGE vs MLP+Grokfast", 3.0, "3.0x")),
    ),
}

MLP_FAILS = PaperNumber(
    "forge.mlp_fails", FORGE, "matched MLP on S3, D4, A4", "MLP grok rate (val acc 0.000)",
    0.0, "0/9 runs grok within 15,000 steps; FORGE groks within ~10^3 steps",
)
MLP_FAIL_GROUPS = ("S3", "D4", "A4")

SCALING = (
    PaperNumber("forge.scaling.c", FORGE, "scaling law over 20 groups, 68 seeds", "c", 732.0,
                "732"),
    PaperNumber("forge.scaling.alpha", FORGE, "scaling law over 20 groups, 68 seeds", "alpha",
                0.170, "0.170"),
    PaperNumber("forge.scaling.r2", FORGE, "scaling law over 20 groups, 68 seeds", "R^2",
                0.785, "0.785"),
)
SCALING_ARM = "forge"

EFF_MODES = (
    PaperNumber("forge.eff_modes.forge", FORGE, "non-Fourier mechanism, 6 seeds",
                "effective harmonic modes, FORGE", 23.0, "about 23"),
    PaperNumber("forge.eff_modes.mlp", FORGE, "non-Fourier mechanism, 6 seeds",
                "effective harmonic modes, MLP", 16.0, "about 16"),
    PaperNumber("forge.eff_modes.p", FORGE, "non-Fourier mechanism, 6 seeds",
                "sign test p (6/6 pairs one way: one-sided 1/64 = 0.0156)", 0.016, "p < 0.016"),
)
EFF_MODES_METRIC = "metric_eff_modes"

CAPACITY = PaperNumber(
    "forge.capacity.threshold", FORGE, "capacity-lift sweep on S4 over R*d",
    "capacity threshold R*d", 256.0, "about 256",
)
CAPACITY_GROUP = "S4"

RFM_ITERS = {
    "add": PaperNumber("rfm.iters.add", RFM, "RFM on Z_61, train frac 0.5", "grok iteration",
                       12.0, "about 12"),
    "sub": PaperNumber("rfm.iters.sub", RFM, "RFM on Z_61, train frac 0.5", "grok iteration",
                       12.0, "about 12"),
    "mul": PaperNumber("rfm.iters.mul", RFM, "RFM on Z_61, train frac 0.5", "grok iteration",
                       15.0, "about 15"),
    "div": PaperNumber("rfm.iters.div", RFM, "RFM on Z_61, train frac 0.5", "grok iteration",
                       15.0, "about 15"),
}

GEOM_EPOCHS = (
    PaperNumber("geom.baseline", GEOM, "transformer on Z_p addition", "epochs to generalize, "
                "LayerNorm/RMSNorm baseline", 54160.0, "about 54,160"),
    PaperNumber("geom.spherical", GEOM, "transformer on Z_p addition", "epochs to generalize, "
                "fully bounded spherical", 2100.0, "about 2,100 (>20x faster)"),
)

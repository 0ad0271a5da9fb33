"""The ledger's claims as data: `Claim` and its loader from claims.yaml (shipped beside this file).

A claim names the paper's number, the sweep it reads (spec file and output dir), which rows
(`where`) and which measure of analysis/ledger/measures.py computes the value, with what
parameters; the verdict's settings (null, log scale, tolerance) come with it. Those fields are
the CPU scale's; a `scales` block per claim names the sweep of each other scale (`paper`) and
whatever else differs there, so one claim is measured once per scale (`Claim.at`). Loading
checks every claim at every scale against the measures' signatures and the scale's spec
directory, so a typo in the data fails at import, naming the claim and what is valid.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from importlib.resources import files
from typing import Any

from grokray_analysis import papers
from grokray_analysis.ledger.measures import MEASURES

PAPERS = {"forge": papers.FORGE, "geom": papers.GEOM, "rfm": papers.RFM}
"""claims.yaml's paper ids -> the papers' names"""

CLAIMS_FILE = "claims.yaml"
SCALES = {"cpu": "sweeps/cpu", "paper": "sweeps/paper", "decisive": "sweeps/decisive"}
"""the ledger's scales -> the directory of their sweep specs (under the shipped sweeps/ folder,
which an install carries: grokray/shipped.py); a claim's own fields are the CPU scale's, its
`scales` block the others'. decisive: the experiments that decide the CPU ledger's
disagreements and inconclusive rows (more seeds, finer grids, the setups that could flip a
verdict), a second tier of CPU sweeps of their own"""
BASE_SCALE = "cpu"
SCALE_KEYS = ("spec", "sweep", "where", "measure", "params", "analyze", "why_not")
"""what a claim's `scales` block may set for a scale"""


@dataclass(frozen=True)
class Claim:
    """One headline claim of a paper and how to measure it."""

    key: str
    """Stable id, e.g. "forge.z97.speedup.forge+grokfast"."""
    paper: str
    """Which paper (papers.FORGE, papers.GEOM, papers.RFM)."""
    claim: str
    """The claim in words."""
    paper_value: float
    """The paper's number (NaN for a claim that has none)."""
    paper_text: str
    """How the paper states it."""
    spec: str = ""
    """The sweep spec (its path under the shipped sweeps/ folder, e.g. sweeps/cpu/rfm.yaml; the
    CPU scale's, another scale's through `at`); "" when none exists."""
    sweep: str = ""
    """The spec's sweep name: the output dir the claim reads (OUT/<sweep>)."""
    where: Mapping[str, Any] = field(default_factory=dict)
    """Rows the measure reads: column -> value, or a list of values (any of them)."""
    measure: str = ""
    """Name of the measure (grokray_analysis.ledger.measures.MEASURES); "" when no sweep measures
    it."""
    params: Mapping[str, Any] = field(default_factory=dict)
    """The measure's keyword arguments."""
    null_value: float = 1.0
    """The no-effect value: the verdict's direction is the side of it (1 ratio, 0 difference)."""
    log: bool = True
    """Compare on the log scale (ratios, steps) rather than linearly."""
    tol: float = 0.25
    """Relative tolerance for 'reproduced' beside the interval test."""
    band: tuple[float, float] | None = None
    """The band itself where the claim states one (the paper's range, such as 20-150,000x; a
    rate of at most 0.1 for "fails"); replaces the tolerance band."""
    tol_why: str = ""
    """Why this tolerance (or band): the paper's own spread where it gives one. Required of
    every measured claim."""
    analyze: str = ""
    """The `grokray analyze ...` line that shows the computation ({dir}: the sweep dir)."""
    why_not: str = ""
    """For a claim no sweep of its scale measures: why."""
    scales: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Scale (other than cpu) -> the fields that differ there (SCALE_KEYS): its spec and sweep
    (and measure, for a claim no CPU sweep measures), or a why_not."""

    def at(self, scale: str) -> Claim:
        """The claim as the sweeps of `scale` measure it (cpu: itself); a scale it names no
        sweep for gives a claim without a measure (a 'not run' row) that says why."""
        if scale == BASE_SCALE:
            return self
        over = dict(self.scales.get(scale) or
                    {"why_not": self.stated_why_not(scale)
                     or f"no {scale}-scale sweep in {CLAIMS_FILE} (no reason stated)"})
        if "spec" not in over:
            over = {"spec": "", "sweep": "", "measure": "", "where": {}, "params": {},
                    "analyze": "", **over}
        return replace(self, **over, scales={})


    def stated_why_not(self, scale: str) -> str:
        """The reason claims.yaml states for no sweep of `scale` measuring this claim: the
        scale's own `why_not` (the claim's `why_not` at the CPU scale), or the claim's `why_not`
        when no scale measures it (no dataset, a bound, no number); "" when none is stated."""
        if scale == BASE_SCALE:
            return self.why_not
        over = self.scales.get(scale) or {}
        if "why_not" in over:
            return str(over["why_not"])
        if over or self.spec:
            return ""
        return "" if any("spec" in o for o in self.scales.values()) else self.why_not


def load_claims(text: str | None = None) -> tuple[Claim, ...]:
    """The claims of claims.yaml (or of `text` in its format), checked."""
    import yaml

    if text is None:
        text = files("grokray_analysis.ledger").joinpath(CLAIMS_FILE).read_text()
    data = yaml.safe_load(text)
    claims = tuple(_claim(i, d) for i, d in enumerate(data["claims"]))
    keys = [c.key for c in claims]
    dup = sorted({k for k in keys if keys.count(k) > 1})
    if dup:
        raise ValueError(f"{CLAIMS_FILE}: duplicate claim keys {', '.join(dup)}")
    return claims


def _claim(i: int, d: dict[str, Any]) -> Claim:
    where = f"{CLAIMS_FILE}: claim {d.get('key', i)!r}"
    known = {f.name for f in fields(Claim)}
    bad = sorted(map(str, set(d) - known))
    if bad:
        raise ValueError(f"{where}: unknown keys {', '.join(bad)}; valid: "
                         + ", ".join(sorted(known)))
    if d.get("paper") not in PAPERS:
        raise ValueError(f"{where}: paper {d.get('paper')!r}; valid: {', '.join(PAPERS)}")
    band = d.get("band")
    if band is not None and (not isinstance(band, list) or len(band) != 2
                             or not all(isinstance(x, (int, float)) for x in band)
                             or band[0] > band[1]):
        raise ValueError(f"{where}: band {band!r}; valid: [low, high], two numbers, low <= high")
    c = Claim(**{**d, "paper": PAPERS[d["paper"]],
                 "paper_value": _number(d["paper_value"], where),
                 "band": None if band is None else (float(band[0]), float(band[1]))})
    for scale, over in c.scales.items():
        if scale not in SCALES or scale == BASE_SCALE:
            raise ValueError(f"{where}: scale {scale!r}; valid: "
                             + ", ".join(s for s in SCALES if s != BASE_SCALE))
        if not isinstance(over, Mapping) or set(over) - set(SCALE_KEYS):
            raise ValueError(f"{where}: scales.{scale}: valid keys {', '.join(SCALE_KEYS)}")
    for scale in SCALES:
        _check(c.at(scale), scale, where if scale == BASE_SCALE else f"{where} at scale {scale}")
    if any(c.at(s).measure for s in SCALES) and not c.tol_why.strip():
        raise ValueError(f"{where}: tol_why is empty; valid: the reason for its tolerance or "
                         "band (the paper's own spread where it gives one)")
    return c


def _check(c: Claim, scale: str, where: str) -> None:
    """A claim at one scale: spec, sweep and measure together, the spec in the scale's
    directory, the params the measure's."""
    if bool(c.spec) != bool(c.measure) or bool(c.spec) != bool(c.sweep):
        raise ValueError(f"{where}: a measured claim has spec, sweep and measure; one no sweep "
                         "measures has none of them and a why_not")
    if c.spec and not c.spec.startswith(SCALES[scale] + "/"):
        raise ValueError(f"{where}: spec {c.spec}; valid: a spec under {SCALES[scale]}/")
    if c.measure:
        if c.measure not in MEASURES:
            raise ValueError(f"{where}: measure {c.measure!r}; valid: {', '.join(MEASURES)}")
        try:
            inspect.signature(MEASURES[c.measure]).bind(None, **c.params)
        except TypeError as exc:
            raise ValueError(f"{where}: params of {c.measure}: {exc}") from None
    if c.analyze:  # the line a reader runs: a registered analysis with options it takes
        from grokray_analysis.registry import check_command

        problem = check_command(c.analyze.format(dir="OUT/SWEEP"))
        if problem:
            raise ValueError(f"{where}: analyze {c.analyze!r}: {problem}")


def _number(v: Any, where: str) -> float:  # noqa: ANN401 - YAML scalar
    """A paper value: a number, or a ratio "a/b" as the paper states it."""
    if isinstance(v, str) and "/" in v:
        a, _, b = v.partition("/")
        try:
            return float(a) / float(b)
        except ValueError:
            pass
    elif isinstance(v, (int, float)):
        return float(v)
    raise ValueError(f"{where}: paper_value {v!r}; valid: a number or a ratio a/b")


CLAIMS: tuple[Claim, ...] = load_claims()
"""Every claim of the ledger, in ledger order."""

"""The paper-scale specs (sweeps/paper/): each loads, says in its header which ledger claims it
reproduces and what it costs (GPU marked uncalibrated), asks for a GPU, and gives FORGE at least
its group's faithful-block rank and d unless its subject is capacity (`capacity_study`); every
claim has a sweep or a stated reason at every scale, and what a CPU tier measures has its
paper-scale sweep."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from grokray.cprank.faithful import smallest_faithful
from grokray.groups import get_group
from grokray.sweep.spec import load_spec
from grokray_analysis.ledger import CLAIMS, SCALES, load_claims

ROOT = Path(__file__).resolve().parents[2]

PAPER = sorted((ROOT / "sweeps" / "paper").glob("*.yaml"))


@functools.cache
def _bound(group: str) -> dict:
    return smallest_faithful(get_group(group)) or {"rank": 0, "dim": 0}


def _header(path) -> str:
    lines = path.read_text().splitlines()
    return "\n".join(line for line in lines[:next(i for i, x in enumerate(lines)
                                                 if not x.startswith("#"))])


@pytest.mark.parametrize("path", PAPER, ids=[p.name for p in PAPER])
def test_paper_spec_header_names_its_claims_and_cost(path):
    head = _header(path)
    assert head.startswith("# Paper scale (grokray reproduce --scale paper)")
    rel = path.relative_to(ROOT).as_posix()
    keys = [c.key for c in CLAIMS if c.at("paper").spec == rel]
    assert keys
    for k in keys:  # by key, or by its family (forge.z97.speedup.*)
        parts = k.split(".")
        assert k in head or any(".".join(parts[:i]) + ".*" in head
                                for i in range(1, len(parts))), k
    assert f"GROKRAY_HOST_GFLOPS=125 grokray sweep {rel} --dry-run" in head
    assert "h upper bound" in head and "uncalibrated" in head.split("GPU", 1)[1]


@pytest.mark.parametrize("path", PAPER, ids=[p.name for p in PAPER])
def test_paper_spec_asks_for_a_gpu_and_a_faithful_forge(path):
    spec = load_spec(str(path))
    assert spec.gpu > 0 and len(spec.seeds) >= 3
    for cfg in spec.trials():
        assert cfg.device == "auto"  # cuda where there is one
        if cfg.arch != "forge" or spec.capacity_study:
            continue
        b = _bound(cfg.group)
        assert cfg.model.rank >= b["rank"] and cfg.model.d >= b["dim"], (cfg.group, b)


def test_only_the_capacity_grid_goes_below_the_bound():
    spec = load_spec(str(ROOT / "sweeps" / "paper" / "capacity.yaml"))
    assert spec.capacity_study
    b = _bound("S4")
    cells = {(c.model.rank, c.model.d) for c in spec.trials()}
    assert any(r < b["rank"] for r, _ in cells) and any(r >= b["rank"] for r, _ in cells)
    assert [p.name for p in PAPER if load_spec(str(p)).capacity_study] == ["capacity.yaml"]


def _unreasoned(claims) -> list[str]:
    """Claim x scale cells that no sweep measures and whose claim states no reason for it."""
    return [f"{c.key} at scale {s}" for c in claims for s in SCALES
            if not c.at(s).measure and not c.stated_why_not(s).strip()]


def test_every_claim_has_a_sweep_or_a_stated_reason_at_every_scale():
    assert not _unreasoned(CLAIMS), "add the sweep, or the scale's why_not in claims.yaml"


def test_every_claim_a_cpu_tier_measures_has_its_paper_scale_sweep():
    # the CPU and decisive tiers are CPU-sized; what they measure, the paper column measures at
    # the papers' budgets, seeds and groups, or says why not in its own block
    missing = [c.key for c in CLAIMS
               if (c.at("cpu").measure or c.at("decisive").measure) and not c.at("paper").measure
               and "why_not" not in (c.scales.get("paper") or {})]
    assert not missing


def test_the_coverage_check_fails_on_a_scale_with_no_sweep_and_no_reason():
    text = """claims:
  - key: x.cpu_only
    paper: forge
    claim: c
    paper_value: 10.1
    paper_text: t
    spec: sweeps/cpu/a5_ablation.yaml
    sweep: a5_ablation_cpu
    measure: speedup
    params: {arm: forge, base: mlp}
    tol_why: the paper gives no spread
    scales:
      paper: {spec: sweeps/paper/a5_ablation.yaml, sweep: a5_ablation_paper}
  - key: x.nowhere
    paper: forge
    claim: c
    paper_value: 15.3
    paper_text: t
    why_not: no dataset
"""
    claims = load_claims(text)
    assert _unreasoned(claims) == ["x.cpu_only at scale decisive"]
    assert "no reason stated" in claims[0].at("decisive").why_not
    stated = load_claims(text.replace(
        "a5_ablation_paper}\n", "a5_ablation_paper}\n      decisive: {why_not: decided at CPU}\n"))
    assert _unreasoned(stated) == []
    assert stated[1].at("paper").why_not == "no dataset"

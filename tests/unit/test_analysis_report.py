import math

import numpy as np
import pandas as pd
import pytest

from grokray_analysis.report import build_report, paper_comparisons


def z97_ablation() -> pd.DataFrame:
    rows = []
    for arm, step in (("mlp", 10200.0), ("mlp+grokfast", 11860.0), ("forge", 3000.0),
                      ("forge+grokfast", 1000.0)):
        for s in range(3):
            rows.append({"group": "Z97", "group_order": 97, "arm": arm, "seed": s,
                         "status": "grokked", "grok_step": step + 10 * s, "steps_run": 15000})
    return pd.DataFrame(rows)


def test_paper_speedups_matched_beside_measured():
    comps = {c.number.key: c for c in paper_comparisons(z97_ablation(), n_boot=50)}
    assert set(comps) == {"forge.z97.speedup.forge+grokfast", "forge.z97.speedup.mlp+grokfast"}
    fg = comps["forge.z97.speedup.forge+grokfast"]
    assert fg.number.value == 10.20 and fg.measured == pytest.approx(10210 / 1010)
    assert comps["forge.z97.speedup.mlp+grokfast"].measured == pytest.approx(10210 / 11870)


def test_capacity_threshold_matched_only_on_s4():
    rows = [{"group": "S4", "arm": "forge", "seed": s, "model_rank": R, "model_d": 16,
             "status": "grokked" if R * 16 >= 256 else "not_grokked",
             "grok_step": 500.0 if R * 16 >= 256 else np.nan, "steps_run": 1000}
            for R in (4, 8, 16, 32) for s in range(2)]
    comps = paper_comparisons(pd.DataFrame(rows))
    assert [c.number.key for c in comps] == ["forge.capacity.threshold"]
    assert comps[0].measured == pytest.approx(math.sqrt(128 * 256))
    other = pd.DataFrame(rows).assign(group="A4")
    assert paper_comparisons(other) == []


def test_report_on_fixture_sweeps(tmp_path, tiny):
    a = tiny.write_ablation(tmp_path / "tiny_ablation")
    c = tiny.write_capacity(tmp_path / "tiny_capacity")
    out = build_report([a, c], tmp_path / "rep" / "report.md", n_boot=50)
    text = out.read_text()
    for heading in ("## Sweep `tiny_ablation`", "### Speedup vs mlp", "### Curves: val_acc",
                    "### Power law", "### Sign test: metric_eff_modes, forge vs mlp",
                    "## Sweep `tiny_capacity`", "### Capacity threshold",
                    "### Paper numbers beside measured ones", "| 0/9 runs grok"):
        assert heading in text, heading
    pngs = sorted(p.name for p in out.parent.glob("*.png"))
    assert "tiny_ablation-scaling.png" in pngs and "tiny_capacity-phase.png" in pngs
    for p in pngs:
        assert f"]({p})" in text


def test_topology_comparison_uses_config_columns_not_arm_names():
    # arms named freely; uniform attention and S5 runs must join neither side
    arms = [("layernorm", "layernorm", "standard", "add", 900.0),
            ("rms", "rmsnorm", "standard", "add", 1000.0),
            ("uniform", "layernorm", "uniform", "add", 500.0),
            ("spherical_wd0", "spherical", "standard", "add", 700.0),
            ("bounded", "spherical_bounded", "standard", "add", 200.0),
            ("bounded_s5", "spherical_bounded", "standard", "group", 50.0)]
    rows = [{"group": "Z59" if op != "group" else "S5", "arch": "transformer", "op": op,
             "arm": arm, "seed": s, "transformer_norm": norm, "transformer_attention": attn,
             "status": "grokked", "grok_step": step + s}
            for arm, norm, attn, op, step in arms for s in range(3)]
    comps = {c.number.key: c for c in paper_comparisons(pd.DataFrame(rows), n_boot=10)}
    base, sph = (c for c in comps.values() if c.number.key.startswith("geom"))
    assert base.measured == pytest.approx(951.0)  # median over layernorm + rmsnorm, 6 runs
    assert "6/6" in base.detail
    assert sph.measured == pytest.approx(201.0) and "3/3" in sph.detail

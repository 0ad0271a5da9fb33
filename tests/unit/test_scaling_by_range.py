"""scripts/scaling_by_range.py: alpha per arm over all orders and per order range, the fit
`grokray analyze scaling` makes, on the tiny ablation fixture (Z5, S3, Z7, D4, A4)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from grokray_analysis.load import load
from grokray_analysis.powerlaw import fit_power_law

ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str) -> list[str]:
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "scaling_by_range.py"), *args],
                         capture_output=True, text=True, check=True).stdout
    return [line for line in out.splitlines() if line.startswith("| forge |")]


def test_rows_per_arm_and_range(tmp_path, tiny):
    d = tiny.write_ablation(tmp_path / "abl")
    rows = _run(str(d), "--split", "8")
    fit = fit_power_law(load([d]).trials, "forge", n_boot=0)
    assert rows[0].startswith(f"| forge | all | 5-12 | {fit.alpha:.3f} |")
    assert f"[{fit.alpha_ci[0]:.3f}, {fit.alpha_ci[1]:.3f}]" in rows[0]
    assert rows[0].endswith("| 5 / 14/15 |")
    low = fit_power_law(load([d]).trials.query("group_order <= 8"), "forge", n_boot=0)
    assert rows[1].startswith(f"| forge | order <= 8 | 5-8 | {low.alpha:.3f} |")
    assert "| order > 8 | 12-12 | not fitted" in rows[2]  # one group: no slope
    only = _run(str(d), "--groups", "S3", "A4", "--seeds", "0", "1")
    assert only[0].startswith("| forge | all | 6-12 |") and "| 2 / 4/4 |" in only[0]
    assert "a group-unit interval needs >= 3" in only[0]

"""`grokray status`'s grok-rate table: one row per arm, its architecture shown beside an arm
named otherwise (a sweep's summary prints the same table)."""

import json

import pandas as pd

from grokray.commands.status import (
    RUNS_SHOWN,
    arm_table,
    render_status,
    runs_line,
    status_json,
)


def _status(ok: pd.DataFrame) -> dict:
    return {"trials": 3, "trials_failed": 0, "rows": len(ok), "planned_rows": None,
            "pending_rows": None, "by_status": {"grokked": 2}, "run_ids": ["r"],
            "duplicate_rows": 0, "grok_rate": arm_table(ok)}


def test_one_row_per_arm():
    ok = pd.DataFrame({"arm": ["forge", "forge", "forge+grokfast", "mlp"],
                       "arch": ["forge", "forge", "forge", "mlp"],
                       "status": ["grokked", "not_grokked", "grokked", "not_grokked"]})
    t = arm_table(ok)
    assert list(t.index) == ["forge", "forge+grokfast", "mlp"]
    assert list(t["seeds"]) == [2, 1, 1] and list(t["grokked"]) == [1, 1, 0]
    assert list(t["grok_rate"]) == [0.5, 1.0, 0.0]
    text = render_status("OUT/s", _status(ok)).splitlines()
    head = text.index(next(x for x in text if x.startswith("arm ")))
    assert [x.split("  ")[0].strip() for x in text[head + 1:]] == [
        "forge", "forge+grokfast (forge)", "mlp"]
    rows = json.loads(status_json(_status(ok)))["grok_rate"]
    assert rows[1] == {"arm": "forge+grokfast", "arch": "forge", "seeds": 1, "grokked": 1,
                       "grok_rate": 1.0}


def test_rows_without_an_arm_group_by_arch():
    ok = pd.DataFrame({"arch": ["mlp", "mlp", "rfm"], "status": ["grokked"] * 3})
    assert list(arm_table(ok).index) == ["mlp", "rfm"]
    assert arm_table(ok.iloc[:0]).empty


def test_many_runs_are_counted_not_listed():
    ids = [f"20260101T0000{i:02d}000000Z-{i:04x}" for i in range(RUNS_SHOWN)]
    assert runs_line([]) == "runs: -"
    assert runs_line(ids[:2]) == f"runs: {ids[0]}, {ids[1]}"
    assert runs_line(ids[:RUNS_SHOWN]) == "runs: " + ", ".join(ids[:RUNS_SHOWN])
    many = [f"20260101T{i // 60:04d}{i % 60:02d}000000Z-{i:04x}" for i in range(3000)]
    assert runs_line(many) == f"runs: 3000 (first {many[0]}, last {many[-1]})"
    ok = pd.DataFrame({"arm": ["mlp"], "arch": ["mlp"], "status": ["grokked"]})
    s = {**_status(ok), "run_ids": many}
    line = next(x for x in render_status("OUT/s", s).splitlines() if x.startswith("runs: "))
    assert line == f"runs: 3000 (first {many[0]}, last {many[-1]})"
    assert json.loads(status_json(s))["run_ids"] == many  # --json: every run

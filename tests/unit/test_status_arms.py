"""`grokray status`'s grok-rate table: one row per arm, its architecture shown beside an arm
named otherwise (a sweep's summary prints the same table)."""

import json

import pandas as pd

from grokray.commands.status import arm_table, render_status, status_json


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

"""`grokray analyze ...` end to end on the tiny fixture sweeps, through grokray.cli.main."""

import csv
import io
import json

import pytest

from grokray.cli import main


@pytest.fixture(scope="module")
def out(tmp_path_factory, tiny):
    root = tmp_path_factory.mktemp("out")
    tiny.write_ablation(root / "tiny_ablation")
    tiny.write_capacity(root / "tiny_capacity")
    return root


def test_scaling_json_and_plot(out, capsys, tmp_path):
    rc = main(["analyze", "scaling", str(out / "tiny_ablation"), "--arms", "forge",
               "forge+grokfast", "--compare", "forge", "forge+grokfast", "--bootstrap", "50",
               "--format", "json", "--plot", str(tmp_path / "s.png")])
    assert rc == 0 and (tmp_path / "s.png").stat().st_size > 0
    tables = json.loads(capsys.readouterr().out)
    fits = {r["arm"]: r for r in tables[0]["rows"]}
    # forge: one not_grokked run; forge+grokfast: one diverged run (censored at the budget)
    assert fits["forge"]["censored"] == 1 and fits["forge+grokfast"]["censored"] == 1
    assert fits["forge"]["method"] == "aft" and fits["forge"]["alpha"] > 0
    assert tables[2]["rows"][0]["arm_b"] == "forge+grokfast"


def test_scaling_interval_group_by_default_per_run_by_name(out, capsys):
    args = ["analyze", "scaling", str(out / "tiny_ablation"), "--arms", "forge", "--format",
            "json", "--bootstrap", "0"]
    assert main(args) == 0
    grp = json.loads(capsys.readouterr().out)[0]["rows"][0]
    assert main(args + ["--interval", "per-run"]) == 0
    run = json.loads(capsys.readouterr().out)[0]["rows"][0]
    assert grp["interval"] == "group" and run["interval"] == "per-run"
    assert grp["alpha"] == run["alpha"] and grp["alpha_run_lo"] == run["alpha_lo"]
    assert grp["alpha_lo"] != run["alpha_lo"] and grp["groups"] == 5


def test_scaling_with_a_never_grokked_arm_exits_0(out, capsys):
    rc = main(["analyze", "scaling", str(out / "tiny_ablation"), "--method", "both",
               "--compare", "mlp", "forge", "--format", "json", "--where", "group=S3",
               "--where", "group=S3"])
    assert rc == 0
    tables = json.loads(capsys.readouterr().out)
    mlp = [r for r in tables[0]["rows"] if r["arm"] == "mlp"]
    assert {r["method"] for r in mlp} == {"aft", "ols"}
    assert all(r["alpha"] is None and r["note"].startswith("not fitted") for r in mlp)
    groups = {(r["arm"], r["group"]): r for r in tables[1]["rows"]}
    assert groups[("mlp", "S3")]["km_median"] == {"bound": ">", "value": 4000}
    assert tables[2]["rows"][0]["note"].startswith("not compared")


def test_signtest_csv(out, capsys):
    rc = main(["analyze", "signtest", str(out / "tiny_ablation"), "--arms", "forge", "mlp",
               "--metric", "metric_eff_modes", "--alternative", "greater", "--format", "csv",
               "--where", "group=Z5"])
    assert rc == 0
    row = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))[0]
    assert (row["pairs"], row["a>b"], row["p_sign"]) == ("3", "3", "0.125")


@pytest.mark.parametrize("cmd", [
    ["speedup", "tiny_ablation", "--baseline", "mlp", "--format", "tex"],
    ["phase", "tiny_capacity"],
    ["curves", "tiny_ablation", "--arms", "forge", "mlp"],
])
def test_table_commands_with_plots(out, capsys, tmp_path, cmd):
    png = tmp_path / "x.png"
    args = ["analyze", cmd[0], str(out / cmd[1]), *cmd[2:], "--plot", str(png)]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert text.strip() and png.read_bytes()[:4] == b"\x89PNG"


def test_curves_where_seed_filters(out, capsys):
    rc = main(["analyze", "curves", str(out / "tiny_ablation"), "--where", "seed=1",
               "--format", "json"])
    assert rc == 0
    rows = json.loads(capsys.readouterr().out)[0]["rows"]
    # 5 groups, one config per (group, arm): seed 1 alone is 5 runs per arm (3 seeds: 15);
    # mlp+grokfast has a failed run on Z7 seed 1 (no curve)
    assert {(r["arm"], r["runs"]) for r in rows if r["metric"] == "val_acc"} == {
        ("forge", 5), ("forge+grokfast", 5), ("mlp", 5), ("mlp+grokfast", 4)}
    assert {r["metric"] for r in rows} == {"val_acc", "train_acc"}


def test_report(out, capsys):
    rc = main(["analyze", "report", str(out / "tiny_ablation"), str(out / "tiny_capacity"),
               "--bootstrap", "50"])
    assert rc == 0
    report = out / "tiny_ablation" / "report" / "report.md"
    assert str(report) in capsys.readouterr().out
    assert "Paper numbers beside measured ones" in report.read_text()


@pytest.mark.parametrize("args, msg", [
    (["phase", "NOPE"], "no such sweep output dir"),
    (["signtest", "tiny_ablation", "--arms", "forge", "gpt"], "arm 'gpt' not present"),
    (["scaling", "tiny_ablation", "--arms", "mlp", "--medians"], "apply to the OLS fit"),
    (["scaling", "tiny_ablation", "--method", "ols", "--interval", "group-bootstrap"],
     "applies to the censored fit"),
    (["curves", "tiny_capacity"], "no curves"),
])
def test_user_errors_exit_2_with_one_line(out, capsys, args, msg):
    path = args[1] if args[1] == "NOPE" else str(out / args[1])
    assert main(["analyze", args[0], path, *args[2:]]) == 2
    err = capsys.readouterr().err.strip()
    assert msg in err and "\n" not in err and err.startswith("grokray analyze: error:")

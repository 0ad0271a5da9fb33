import json
import subprocess
import sys

import pandas as pd

from grokray.cli import main

SMALL = ["--set", "group=S3", "--set", "steps=30", "--set", "eval_every=10",
         "--set", "model.d=8", "--set", "model.rank=8", "--set", "model.hidden=16",
         "--set", "forge.inv_hidden=8", "--threads", "1"]


def test_run_json_and_out(tmp_path, capsys):
    rc = main(["run", *SMALL, "--set", "arch=forge", "--seeds", "2", "--json",
               "--out", str(tmp_path)])
    assert rc == 0
    cap = capsys.readouterr()
    rows = json.loads(cap.out.strip().splitlines()[-1])
    assert [r["seed"] for r in rows] == [0, 1]
    for k in ("status", "grok_step", "memorize_step", "final_train_acc", "final_val_acc",
              "steps_run"):
        assert k in rows[0]
    assert "reproduce: grokray run" in cap.err and "--set arch=forge" in cap.err
    trials = pd.concat(pd.read_parquet(p) for p in (tmp_path / "trials").glob("*.parquet"))
    curves = pd.concat(pd.read_parquet(p) for p in (tmp_path / "curves").glob("*.parquet"))
    assert len(trials) == 2 and set(trials.arch) == {"forge"}
    assert len(curves) == 2 * 4 and {"loss_assoc", "lambda_alg"} <= set(curves.columns)


def test_reproduce_command_reruns_the_same_config(tmp_path, capsys):
    from grokray.commands.run import reproduce_command
    from grokray.config import TrialConfig

    cfg = TrialConfig().with_overrides({"group": "Z7", "op": "add", "model.rank": 3,
                                        "seeds": [1, 2], "data_seed": 4})
    cmd = reproduce_command(cfg)
    argv = cmd.split()[1:]
    from grokray.cli import build_parser
    from grokray.commands.run import build_config

    args = build_parser().parse_args(argv)
    assert build_config(args) == cfg


def test_yaml_config_and_errors(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("group: Z5\nop: add\narch: mlp\nsteps: 20\neval_every: 10\nmodel:\n  d: 4\n")
    out = subprocess.run([sys.executable, "-m", "grokray.cli", "run", str(cfg), "--json",
                          "--threads", "1"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)[0]["steps_run"] == 20
    bad = subprocess.run([sys.executable, "-m", "grokray.cli", "run", "--set", "model.rnk=3"],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2
    err = bad.stderr.strip().splitlines()
    assert len(err) == 1 and "model.rnk" in err[0] and "model.rank" in err[0]


def test_run_trains_on_the_rules_threads_and_gives_the_callers_back(tmp_path, capsys,
                                                                     monkeypatch):
    import torch

    import grokray.trial

    seen = []
    real = grokray.trial.run_trial

    def spy(cfg, **kw):
        seen.append(torch.get_num_threads())
        return real(cfg, **kw)

    monkeypatch.setattr(grokray.trial, "run_trial", spy)
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        assert main(["run", "--set", "group=Z5", "--set", "steps=10", "--set", "eval_every=5",
                     "--set", "model.d=4"]) == 0
        assert main(["run", "--set", "group=Z5", "--set", "steps=10", "--set", "eval_every=5",
                     "--set", "model.d=4", "--threads", "3"]) == 0
        assert seen == [1, 3] and torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
    err = capsys.readouterr().err
    assert err.count("--threads 3") == 1  # the second run's reproduce line names its threads
    assert main(["run", "--threads", "0"]) == 2
    assert capsys.readouterr().err.strip() == "grokray run: error: --threads must be >= 1, got 0"

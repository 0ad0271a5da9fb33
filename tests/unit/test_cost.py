"""The cost model (grokray/cost): estimates from the stored table, host scaling, the prior when
no rows exist, expected steps from real rows, and the dry run's JSON keys."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from grokray.cli import main as cli_main
from grokray.config import TrialConfig
from grokray.cost import table
from grokray.cost.model import trial_cost
from grokray.cost.steps import PRIOR, budget, expected_steps
from grokray.cost.sweep import estimate_plan, makespan
from grokray.cost.work import algebra_steps, shape, step_macs
from tests.helpers import specs

SPEC = """\
name: tiny_cost
out: {out}
config:
  train_frac: 0.6
  device: cpu
  model: {{d: 8, hidden: 16, rank: 8}}
  metrics: {{patience: 2}}
axes:
  group: [Z5, S3]
  arch: [mlp, forge]
seeds: 2
steps: 60
eval_every: 10
resources: {{cpu: 1}}
concurrency: 2
"""


@pytest.fixture
def ref_host(monkeypatch):
    """This host at the calibration host's sgemm rate: estimates equal the table's."""
    ref = table.load()["reference_host"]["sgemm_gflops"]
    monkeypatch.setenv("GROKRAY_HOST_GFLOPS", str(ref))
    return ref


@pytest.fixture
def one_thread():
    """One torch thread, as a `cpu: 1` trial runs (two threads on a loaded 2-core machine run
    a tiny trial 20x slower)."""
    import torch

    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def _spec(tmp_path):
    return str(specs.write(tmp_path, SPEC, "tiny_cost.yaml", out=tmp_path / "out"))


def test_the_stored_table_says_what_made_it():
    t = table.load()
    assert t["command"].startswith("python benchmarks/calibrate_cost.py") and t["date"]
    assert t["reference_host"]["sgemm_gflops"] > 0 and t["gpu"]["calibrated"] is False
    assert set(t["kinds"]) == {"mlp", "forge", "forge_late", "transformer", "rfm",
                               "hamiltonian"}


def test_the_fit_reproduces_its_probes_within_2x():
    t = table.load()
    for p in t["probes"]:
        k = t["kinds"][p["kind"]]
        model = k["a"] + p["seeds"] * (k["b"] + k["c"] * p["macs_m"])
        assert 0.5 <= model / p["step_s"] <= 2.0, p


def test_forge_s4_estimate_from_the_table():
    """FORGE on S4 (d 32, R 256 auto), 3 seeds to a 4,000-step budget: algebra losses on for the
    first 2,000 steps (linear to 0 at half), the data loss alone after."""
    cfg = TrialConfig.from_dict({"group": "S4", "arch": "forge", "steps": 4000,
                                 "seeds": [0, 1, 2], "train_frac": 0.5, "device": "cpu"})
    assert algebra_steps(cfg) == 2000 and shape(cfg).pairs == 576 and shape(cfg).batch == 288
    assert step_macs(cfg, "forge") == pytest.approx(129.39264)  # bench_forge_step's floor
    k, late = table.load()["kinds"]["forge"], table.load()["kinds"]["forge_late"]
    want = (k["s0"] + k["s1"] * 576e-6
            + 2000 * (k["a"] + 3 * (k["b"] + k["c"] * 129.39264))
            + 2000 * (late["a"] + 3 * (late["b"] + late["c"] * 8.921088)))
    assert trial_cost(cfg, [4000] * 3).cpu_s == pytest.approx(want)
    # a seed that stops at 500 steps costs its share only: less than the budget, more than 0
    assert 0 < trial_cost(cfg, [500, 4000, 4000]).cpu_s < want
    # the matched MLP at Z97 (the host-rate shape): 219 M multiply-adds per seed and step
    mlp = TrialConfig.from_dict({"group": "Z97", "op": "add", "arch": "mlp", "train_frac": 0.5,
                                 "model.matched_budget": True})
    assert step_macs(mlp, "mlp") == pytest.approx(219.223104)


def test_every_metric_the_ledger_uses_is_priced():
    assert {"spectrum", "nfa", "wedderburn"} <= set(table.load()["metrics"])
    base = {"group": "S4", "arch": "forge", "steps": 1000, "seeds": [0, 1], "device": "cpu"}
    plain = trial_cost(TrialConfig.from_dict(base), [1000, 1000]).cpu_s
    w = trial_cost(TrialConfig.from_dict({**base, "metrics.cheap": ["wedderburn"]}),
                   [1000, 1000]).cpu_s
    assert w > plain


def test_makespan_takes_the_longest_first():
    assert makespan([3, 5, 3, 4, 3], 2) == 10  # 5, 3 then 3 | 4, 3: 8 | 10
    assert makespan([10, 1, 1], 2) == 10 and makespan([], 2) == 0


def test_host_speed_scales_the_cpu_figures(tmp_path, monkeypatch, ref_host):
    from grokray.sweep.plan import make_plan
    from grokray.sweep.spec import load_spec

    plan = make_plan(load_spec(_spec(tmp_path)), build=False)
    at_ref = estimate_plan(plan)
    monkeypatch.setenv("GROKRAY_HOST_GFLOPS", str(ref_host / 2))
    slow = estimate_plan(plan)
    assert slow.cpu_s_upper == pytest.approx(2 * at_ref.cpu_s_upper)
    assert slow.gpu_s_upper == pytest.approx(at_ref.gpu_s_upper)  # a GPU is not this CPU


def test_the_prior_when_no_rows_exist(tmp_path, ref_host):
    from grokray.sweep.plan import make_plan
    from grokray.sweep.spec import load_spec

    spec = load_spec(_spec(tmp_path))
    forge = next(c for c in spec.trials() if c.arch == "forge")
    steps, seen = expected_steps(forge, None)
    assert not seen and steps == [round(60 * PRIOR["forge"]) + 2 * 10] * 2  # + patience
    zero = forge.with_overrides({"metrics.patience": 0})  # nothing stops a seed early
    assert expected_steps(zero, None) == ([60, 60], False)
    c = estimate_plan(make_plan(spec, build=False))
    assert c.trials == 4 and c.from_rows == 0
    assert 0 < c.cpu_s_expected < c.cpu_s_upper and c.wall_s_expected < c.wall_s_upper
    assert c.wall_s_upper >= c.cpu_s_upper / 2  # 2 slots


def test_expected_time_from_real_rows(tmp_path, ref_host, one_thread):
    """A tiny sweep's rows written through the real store: a forced rerun's expected time uses
    the steps each seed ran, and a config with a new seed uses the mean of its rows."""
    from grokray.sweep import store
    from grokray.sweep.plan import make_plan
    from grokray.sweep.spec import load_spec
    from grokray.trial import run_trial

    spec = load_spec(_spec(tmp_path))
    ran = {}
    for cfg in spec.trials():
        res = run_trial(cfg)
        store.write_result(res, spec.sweep_dir, sweep=spec.name, run_id="r0")
        ran[cfg.config_hash()] = [s.steps_run for s in res.seeds]
    plan = make_plan(spec, force=True, build=False)
    c = estimate_plan(plan)
    assert c.from_rows == c.trials == 4
    prior = estimate_plan(plan, trials_df=pd.DataFrame())
    assert prior.from_rows == 0 and prior.cpu_s_expected != pytest.approx(c.cpu_s_expected)
    want = sum(trial_cost(cfg, ran[cfg.config_hash()]).cpu_s for cfg in plan.todo)
    assert c.cpu_s_expected == pytest.approx(want)
    # a third seed of each config: the mean of the config's two rows
    cfg = plan.todo[0].with_overrides({"seeds": [0, 1, 2]})
    rows = dict(zip([0, 1], ran[cfg.config_hash()], strict=True))
    assert expected_steps(cfg, rows) == ([*rows.values(), round(sum(rows.values()) / 2)], True)
    assert budget(cfg) == 60


def test_dry_run_json_adds_the_cost_keys(tmp_path, capsys, ref_host):
    spec = _spec(tmp_path)
    assert cli_main(["sweep", spec, "--dry-run", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["trials"] == 4 and out["seed_runs"] == 8 and out["todo_seed_steps"] == 480
    for key in ("cpu_hours", "wall_hours", "gpu_hours"):
        assert 0 < out[f"{key}_expected"] <= out[f"{key}_upper"]
    assert out["gpu_calibrated"] is False
    m = out["cost_model"]
    assert m["expected_from_prior"] == 4 and m["expected_from_rows"] == 0
    assert m["prior_share_of_budget"] == PRIOR and m["slots"] == 2
    assert m["host_sgemm_source"] == "env GROKRAY_HOST_GFLOPS"
    assert cli_main(["sweep", spec, "--dry-run"]) == 0
    text = capsys.readouterr().out
    assert "upper bound (every seed to its budget)" in text and "uncalibrated" in text
    assert "a prior: a share of the budget (forge 0.06, mlp 0.5" in text


def test_forge_below_its_faithful_bound_is_expected_to_run_its_budget():
    """S4's smallest faithful real sum is M_3(R): rank 23, dimension 9 (grokray/cprank)."""
    base = {"group": "S4", "arch": "forge", "steps": 4000, "seeds": [0], "device": "cpu"}
    small = TrialConfig.from_dict({**base, "model.rank": 16, "model.d": 32})
    thin = TrialConfig.from_dict({**base, "model.rank": 64, "model.d": 8})
    ok = TrialConfig.from_dict({**base, "model.rank": 24, "model.d": 12})
    auto = TrialConfig.from_dict(base)
    assert expected_steps(small, None)[0] == expected_steps(thin, None)[0] == [4000]
    prior = round(4000 * PRIOR["forge"]) + 5 * 100  # then patience 5 evals every 100 steps
    assert expected_steps(ok, None)[0] == expected_steps(auto, None)[0] == [prior]


def test_host_rate_is_cached_per_host_and_a_refresh_keeps_the_best(tmp_path, monkeypatch):
    from grokray.cost import host

    monkeypatch.delenv("GROKRAY_HOST_GFLOPS", raising=False)
    monkeypatch.setenv("GROKRAY_CACHE", str(tmp_path))
    rate, source = host.host_gflops()
    assert rate > 1 and source == "measured now"
    f = tmp_path / "host" / "sgemm.json"
    rec = json.loads(f.read_text())
    assert rec["key"] == host.host_key()
    # the rate measured now is the one the cache gives back: every estimate of this host, the
    # first included, uses one rate
    assert host.host_gflops() == (rate, f"cached {rec['date']}")
    f.write_text(json.dumps({**rec, "gflops": 1e6}))  # a rate no measurement here reaches
    assert host.host_gflops()[0] == 1e6 and host.host_gflops()[1].startswith("cached")
    assert host.host_gflops(refresh=True)[0] == 1e6
    f.write_text(json.dumps({**rec, "key": "another host", "gflops": 1e6}))
    assert host.host_gflops()[0] < 1e6  # another host's rate is not this one's

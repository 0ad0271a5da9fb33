"""One effective config, one identity (schema v2), and v1 output dirs after the change."""

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from grokray.config import ModelConfig, OptimConfig, TrialConfig
from grokray.models.forge import ForgeConfig
from grokray.schema import SCHEMA_VERSION

V1_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "v1_dir"


def _h(d):
    return TrialConfig.from_dict(d).config_hash()


@pytest.mark.parametrize("spellings", [
    [{"group": "S4"}, {"group": "s4"}, {"group": "S4", "op": "group"},
     {"group": "s4", "op": "compose"}, {"op": "composition"}, {}],
    [{"group": "Z5", "op": "add"}, {"group": "C5", "op": "x+y"}, {"group": "z5", "op": "+"},
     {"group": "c5", "op": "ADD"}],
    [{"group": "Z2xZ4"}, {"group": "z2xz4"}, {"group": "C2xC4"}],
    [{"group": "Dic3"}, {"group": "dic3"}],
    # defaults given or omitted, numbers however written (as strings, ints for floats)
    [{"arch": "forge"},
     {"arch": "forge", "model.rank": ModelConfig().rank,
      "forge.lambda_alg": str(ForgeConfig().lambda_alg)},
     {"arch": "forge", "optim": {"lr": repr(OptimConfig().lr),
                                 "weight_decay": int(OptimConfig().weight_decay)}}],
])
def test_every_spelling_has_one_identity(spellings):
    assert len({_h(d) for d in spellings}) == 1


@pytest.mark.parametrize("arch, other", [
    ("mlp", {"forge.lambda_alg": 1.0, "forge.decode": "separate", "rfm.iters": 3,
             "transformer.norm": "rmsnorm", "model.rank": 7}),
    ("forge", {"rfm.kernel": "laplace", "transformer.d_model": 64, "model.hidden": 7,
               "model.act": "gelu"}),
    ("transformer", {"forge.w_assoc": 2.0, "rfm.ridge": 1e-3, "model.d": 7}),
    ("rfm", {"forge.lambda_alg": 1.0, "optim.lr": 0.1, "grokfast.filter": "ema",
             "model.d": 4}),
])
def test_an_identity_ignores_the_sections_its_arch_does_not_read(arch, other):
    assert _h({"arch": arch}) == _h({"arch": arch, **other})


@pytest.mark.parametrize("a, b", [
    ({"arch": "mlp"}, {"arch": "forge"}),
    ({"arch": "forge"}, {"arch": "forge", "forge.lambda_alg": 0.1}),
    ({"arch": "rfm"}, {"arch": "rfm", "rfm.iters": 3}),
    ({"arch": "transformer"}, {"arch": "transformer", "optim.lr": 0.01}),
    ({"group": "S4"}, {"group": "A4"}),
    ({"group": "Z5", "op": "add"}, {"group": "Z5"}),  # a modular op is another task
    # the matched-budget MLP reads forge (its width follows FORGE's parameter count)
    ({"model.matched_budget": True}, {"model.matched_budget": True, "forge.inv_hidden": 8}),
    ({"model.matched_budget": True}, {"model.matched_budget": True, "model.rank": 8}),
    ({"arch": "forge"}, {"arch": "forge", "model.rank": 8}),
    ({"arch": "transformer"}, {"arch": "transformer", "model.init_scale": 0.5}),
])
def test_different_effective_configs_differ(a, b):
    assert _h(a) != _h(b)


def test_the_parquet_holds_canonical_names_and_the_effective_config(tmp_path):
    from grokray.schema import curve_frame, trial_frame
    from grokray.trial import run_trial

    cfg = TrialConfig.from_dict({"group": "s3", "op": "compose", "steps": 2, "eval_every": 1,
                                 "model.d": 4, "model.hidden": 4, "device": "cpu"})
    r = run_trial(cfg)
    t, c = trial_frame(r, "x", "r"), curve_frame(r, "x", "r")
    assert set(t["group"]) == set(c["group"]) == {"S3"} and set(t["op"]) == {"group"}
    assert set(t["schema_version"]) == {SCHEMA_VERSION} == {4}
    stored = json.loads(t["config_json"].iloc[0])
    assert "forge" not in stored and "rfm" not in stored and stored["model"]["d"] == 4
    assert "rank" not in stored["model"]
    assert TrialConfig.from_dict(stored).config_hash() == t["config_hash"].iloc[0]


def _v1_copy(tmp_path):
    out = tmp_path / "out"
    shutil.copytree(V1_DIR / "v1", out / "v1")
    return out


def test_a_v1_dir_is_read_and_resumed_without_rerunning(tmp_path):
    from grokray.sweep import store
    from grokray.sweep.plan import make_plan
    from grokray.sweep.spec import load_spec
    from grokray_analysis.load import load

    out = _v1_copy(tmp_path)
    sweep = load([out / "v1"])  # the analysis reads v1 rows as they are
    assert len(sweep.trials) == 4 and set(sweep.trials["schema_version"]) == {1}
    assert set(sweep.trials["group"]) == {"s3", "C5"}  # v1 stored names as written

    mlp = TrialConfig.from_dict({"group": "S3", "arch": "mlp", "steps": 10, "eval_every": 5,
                                 "model.d": 4, "model.hidden": 8, "device": "cpu"})
    rfm = TrialConfig.from_dict({"group": "Z5", "op": "add", "arch": "rfm", "rfm.iters": 2,
                                 "device": "cpu"})
    v1_hashes = set(sweep.trials["config_hash"])
    assert not v1_hashes & {mlp.config_hash(), rfm.config_hash()}  # the hash did change
    done = store.Manifest.load(out / "v1").done()
    assert done == {(h, s) for h in (mlp.config_hash(), rfm.config_hash()) for s in (0, 1)}

    spec = tmp_path / "v1.yaml"
    spec.write_text(f"""\
name: v1
out: {out}
config: {{arch: mlp, steps: 10, eval_every: 5, model: {{d: 4, hidden: 8}}, device: cpu}}
axes:
  group: [S3]
seeds: 2
""")
    plan = make_plan(load_spec(spec))
    assert plan.todo == [] and plan.done_rows == 2  # nothing reruns
    before = sorted(p.name for p in (out / "v1" / "trials").iterdir())
    assert store.repair(out / "v1") == {"temp_files": 0, "orphan_curves": 0,
                                        "orphan_snapshots": 0, "superseded_rows": 0,
                                        "orphan_recomputed": 0, "duplicate_recomputed": 0}
    assert sorted(p.name for p in (out / "v1" / "trials").iterdir()) == before  # nothing lost


def test_a_v1_row_rerun_under_v2_supersedes_it_once(tmp_path):
    """--force on a v1 dir: the new v2 row and the old v1 row share one identity, so repair
    keeps exactly one (the newer)."""
    from grokray.sweep import store
    from grokray.sweep.store import write_result
    from grokray.trial import run_trial

    out = _v1_copy(tmp_path) / "v1"
    cfg = TrialConfig.from_dict({"group": "S3", "arch": "mlp", "steps": 10, "eval_every": 5,
                                 "model.d": 4, "model.hidden": 8, "device": "cpu",
                                 "seeds": [0, 1]})
    write_result(run_trial(cfg), out, sweep="v1", run_id=store.new_run_id())
    assert store.repair(out)["superseded_rows"] == 2
    rows = store.Manifest.load(out).rows
    assert len(rows) == 4 and rows.groupby(["config_hash", "seed"]).size().eq(1).all()
    t = pd.concat(pd.read_parquet(p) for p in (out / "trials").glob("*.parquet"))
    assert sorted(t["schema_version"]) == [1, 1, SCHEMA_VERSION, SCHEMA_VERSION]

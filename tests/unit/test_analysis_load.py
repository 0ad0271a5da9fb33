from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from grokray.errors import GrokrayError, SchemaError
from grokray_analysis.errors import AnalysisError
from grokray_analysis.load import SCHEMA_VERSION, load, parse_where, require_arms, select


@pytest.fixture(scope="module")
def ablation(tmp_path_factory, tiny):
    return tiny.write_ablation(tmp_path_factory.mktemp("out") / "tiny_ablation")


def test_loads_and_concatenates_files_with_different_columns(ablation):
    s = load(ablation)
    assert len(s.trials) == 60 and s.name == "tiny_ablation"
    assert s.trials["grok_step"].dtype == float
    # only forge files carry forge_lambda_alg: mlp rows read it as missing
    mlp = s.trials[s.trials["arch"] == "mlp"]
    assert mlp["forge_lambda_alg"].isna().all()
    assert (s.trials.loc[s.trials["arch"] == "forge", "forge_lambda_alg"] == 1.0).all()
    # mlp+grokfast files have no metric_eff_modes
    assert s.trials.loc[s.trials["arm"] == "mlp+grokfast", "metric_eff_modes"].isna().all()
    assert s.trials["status"].value_counts().to_dict() == {
        "grokked": 39, "not_grokked": 19, "diverged": 1, "failed": 1
    }
    assert not s.curves.empty and set(s.curves["arm"]) == set(s.trials["arm"])


def test_censored_rows_kept_with_nan_grok_step(ablation):
    T = load(ablation).trials
    cens = T[T["status"] == "not_grokked"]
    assert len(cens) == 19 and cens["grok_step"].isna().all()


def test_several_dirs(ablation, tmp_path, tiny):
    other = tiny.write_capacity(tmp_path / "tiny_capacity")
    s = load([ablation, other])
    assert len(s.trials) == 60 + 48
    assert s.name == "tiny_ablation+tiny_capacity"


def test_fixture_has_every_contract_column(ablation):
    schema = pytest.importorskip("grokray.schema")
    assert schema.SCHEMA_VERSION == SCHEMA_VERSION
    T = load(ablation).trials
    for col in schema.IDENTITY_COLUMNS + schema.OUTCOME_COLUMNS + schema.PROVENANCE_COLUMNS:
        assert col in T.columns, col
    C = load(ablation).curves
    for col in schema.CURVE_REQUIRED_COLUMNS:
        assert col in C.columns, col


def _write(tmp_path: Path, df: pd.DataFrame) -> Path:
    (tmp_path / "trials").mkdir(parents=True, exist_ok=True)
    df.to_parquet(tmp_path / "trials" / "x.parquet", index=False)
    return tmp_path


def _minimal(version: int = 1) -> pd.DataFrame:
    return pd.DataFrame({
        "schema_version": [version], "config_hash": ["h"], "seed": [0], "status": ["grokked"],
        "grok_step": [100], "arch": ["mlp"],
    })


def test_errors_are_one_line_grokray_errors(tmp_path):
    with pytest.raises(SchemaError, match="no such sweep output dir"):
        load(tmp_path / "nope")
    with pytest.raises(SchemaError, match="no trials/ dir"):
        load(tmp_path)
    with pytest.raises(SchemaError, match="newer"):
        load(_write(tmp_path / "a", _minimal(SCHEMA_VERSION + 1)))
    with pytest.raises(SchemaError, match="missing column.*schema_version"):
        load(_write(tmp_path / "b", _minimal().drop(columns="schema_version")))
    (tmp_path / "c" / "trials").mkdir(parents=True)
    (tmp_path / "c" / "trials" / "bad.parquet").write_text("not parquet")
    with pytest.raises(SchemaError, match="cannot read"):
        load(tmp_path / "c")
    assert issubclass(SchemaError, GrokrayError) and issubclass(AnalysisError, GrokrayError)


def test_arm_defaults_to_arch(tmp_path):
    T = load(_write(tmp_path, _minimal())).trials
    assert T["arm"].tolist() == ["mlp"]


def test_where_and_arms(ablation):
    T = load(ablation).trials
    sub = select(T, parse_where(["group=S3", "seed=1"]))
    assert len(sub) == 4 and set(sub["group"]) == {"S3"} and set(sub["seed"]) == {1}
    assert np.all(select(T, {"group_order": "6"})["group"] == "S3")
    with pytest.raises(AnalysisError, match="KEY=VALUE"):
        parse_where(["group"])
    with pytest.raises(AnalysisError, match="no column 'nope'"):
        select(T, {"nope": "1"})
    with pytest.raises(AnalysisError, match="arm 'x' not present; arms are: forge"):
        require_arms(T, ["x"])


def test_analysis_never_imports_training_code():
    import subprocess
    import sys

    code = (
        "import sys, grokray_analysis.cli, grokray_analysis.report, grokray_analysis.tables,"
        " grokray_analysis.plots;"
        "bad = [m for m in sys.modules if m in ('torch', 'ray') or m.startswith("
        "('grokray.trainer', 'grokray.models', 'grokray.sweep', 'grokray.optim'))];"
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def _plain(C: pd.DataFrame) -> pd.DataFrame:
    """Curve rows with Categoricals as text, in a fixed order (to compare two reads)."""
    key = ["config_hash", "seed", "step"]
    out = C.astype({c: str for c in C.columns if isinstance(C[c].dtype, pd.CategoricalDtype)})
    return out.sort_values(key).reset_index(drop=True)


def test_curves_of_reads_the_selected_trials_with_categorical_keys(ablation, tmp_path, tiny):
    s = load(ablation)
    forge = s.curves_of({"arm": "forge"})
    every = s.curves
    want = every[every["arm"] == "forge"]
    assert len(forge) == len(want) > 0
    pd.testing.assert_frame_equal(_plain(forge)[list(want.columns)], _plain(want),
                                  check_dtype=False)
    for c in ("config_hash", "run_id", "arm", "group", "arch", "sweep"):
        assert isinstance(forge[c].dtype, pd.CategoricalDtype), c
    assert list(forge["arm"].cat.categories) == ["forge"]  # only the values present
    assert set(forge["config_hash"].cat.categories) == set(
        s.trials.loc[s.trials["arm"] == "forge", "config_hash"])
    assert forge["seed"].dtype == every["seed"].dtype and forge["val_acc"].dtype == float
    some = s.curves_of({"group": [str(s.trials["group"].iloc[0])]}, columns=["val_acc"])
    assert some.columns[-1] == "val_acc" and "train_loss" not in some.columns
    assert s.curves_of({"arm": "no such arm"}).empty
    # two dirs: the categories of both, the rows of both
    both = load([ablation, tiny.write_capacity(tmp_path / "tiny_capacity")])
    arms = sorted(both.trials["arm"].unique())
    C = both.curves_of({"arm": arms})
    assert isinstance(C["config_hash"].dtype, pd.CategoricalDtype)
    assert len(C) == len(both.curves)
    assert set(C["config_hash"].astype(str)) == set(both.curves["config_hash"])


def test_curves_of_a_v1_dir(tmp_path):
    """Schema 1 wrote large strings: read as Categoricals too, values as before."""
    import shutil

    v1 = Path(__file__).resolve().parents[1] / "fixtures" / "v1_dir" / "v1"
    shutil.copytree(v1, tmp_path / "v1")
    s = load(tmp_path / "v1")
    arm = str(s.trials["arm"].iloc[0])
    C = s.curves_of({"arm": arm})
    want = s.curves[s.curves["arm"] == arm].dropna(axis=1, how="all")  # the other file's
    assert len(C) == len(want) > 0 and isinstance(C["config_hash"].dtype, pd.CategoricalDtype)
    assert sorted(C.columns) == sorted(want.columns)
    pd.testing.assert_frame_equal(_plain(C)[list(want.columns)], _plain(want),
                                  check_dtype=False)

"""The dashboard's in-memory index: the same rows as grokray_analysis.load, only new files read on
a
refresh, damaged files and symlinks out of the dir named, not read."""

import os

import numpy as np
import pandas as pd
import pytest

from grokray_analysis.curves import curve_bands
from grokray_analysis.dashboard import views
from grokray_analysis.dashboard.index import SweepIndex
from grokray_analysis.load import load


@pytest.fixture()
def sweep(tmp_path, sweepdir):
    out = str(tmp_path / "syn")
    sweepdir.write_sweep(out, trials=12, seeds=3, evals=20)
    sweepdir.write_plan(out, trials=16, seeds=3)
    return out


def test_rows_equal_analysis_load(sweep):
    ix = SweepIndex(sweep, "syn")
    assert ix.refresh()
    ref = load(sweep)
    mine = ix.trials.sort_values(["config_hash", "seed"]).reset_index(drop=True)
    theirs = ref.trials.sort_values(["config_hash", "seed"]).reset_index(drop=True)
    assert len(mine) == len(theirs) == 36
    for col in ("status", "grok_step", "arm", "seed", "memorize_step"):
        pd.testing.assert_series_equal(mine[col], theirs[col], check_dtype=False)
    assert len(ix.curves) == len(ref.curves) == 12 * 3 * 20  # 12 trials x 3 seeds x 20 evals
    assert ix.last_read == 24 and not ix.refresh() and ix.last_read == 0


def test_refresh_reads_only_new_files(sweep, sweepdir):
    ix = SweepIndex(sweep, "syn")
    ix.refresh()
    v = ix.version
    sweepdir.write_sweep(sweep, trials=2, seeds=3, evals=20, start=12)
    assert ix.refresh() and ix.version == v + 1
    assert ix.last_read == 4  # two trials files, two curves files
    assert len(ix.trials) == 42 and len(ix.trials) == len(load(sweep).trials)
    assert len(ix.curves) == len(load(sweep).curves)


def test_removed_file_drops_its_rows(sweep):
    ix = SweepIndex(sweep, "syn")
    ix.refresh()
    name = sorted(os.listdir(os.path.join(sweep, "trials")))[0]
    n_curves = len(ix.curves)
    for sub in ("trials", "curves"):
        os.makedirs(os.path.join(sweep, "quarantine", sub), exist_ok=True)
        os.rename(os.path.join(sweep, sub, name), os.path.join(sweep, "quarantine", sub, name))
    assert ix.refresh()
    assert len(ix.trials) == 33 and len(ix.curves) == n_curves - 3 * 20


def test_damaged_and_symlinked_files_are_named_not_read(sweep, tmp_path, sweepdir):
    outside = tmp_path / "secret"
    sweepdir.write_sweep(str(outside), trials=1, seeds=1, evals=5, start=40)
    secret = next((outside / "trials").iterdir())
    os.symlink(secret, os.path.join(sweep, "trials", "aaaa-link.parquet"))
    with open(os.path.join(sweep, "trials", "bbbb-bad.parquet"), "wb") as f:
        f.write(b"PAR1 not really")
    ix = SweepIndex(sweep, "syn")
    ix.refresh()
    lines = "\n".join(ix.problems.values())
    assert "aaaa-link.parquet: a symlink to a file outside the dir: not read" in lines
    assert "bbbb-bad.parquet: cannot read" in lines and "grokray status --repair" in lines
    assert len(ix.trials) == 36  # neither file's rows


def test_curve_bands_are_analysis_curves(sweep):
    ix = SweepIndex(sweep, "syn")
    ix.refresh()
    got = views.curves(ix, "val_acc", {"group": ["Z5", "S3"]})
    ref = load(sweep)
    T = ref.trials[ref.trials["group"].isin(["Z5", "S3"])]
    C = ref.curves.merge(T[["config_hash", "seed"]], on=["config_hash", "seed"])
    want = curve_bands(C, metric="val_acc")
    assert [b["arm"] for b in got["bands"]] == [b.arm for b in want.bands]
    for g, w in zip(got["bands"], want.bands, strict=True):
        assert g["n_runs"] == w.n_runs
        np.testing.assert_allclose(g["median"], w.median)
        np.testing.assert_allclose(g["lo"], w.lo)
        np.testing.assert_allclose(g["hi"], w.hi)


def test_overview_counts(sweep):
    ix = SweepIndex(sweep, "syn")
    ix.refresh()
    o = views.overview(ix)
    T = load(sweep).trials
    assert o["rows"] == 36 and o["planned_rows"] == 48 and o["pending_rows"] == 12
    assert o["by_status"]["grokked"] == int((T["status"] == "grokked").sum())
    forge = next(a for a in o["arms"] if a["arm"] == "forge")
    sub = T[T["arm"] == "forge"]
    assert forge["grokked"] == int((sub["status"] == "grokked").sum())
    assert forge["censored"] == int(sub["status"].isin(["not_grokked", "diverged"]).sum())
    assert o["eta_s"] == pytest.approx(12 * (10 * 11 + 9) / 36)
    assert o["swept"][:2] == ["arm", "group"]


def test_seed_curves_mark_censored(sweep):
    ix = SweepIndex(sweep, "syn")
    ix.refresh()
    r = views.seed_curves(ix, "mlp", "val_acc", {})
    assert r["n_total"] == 9 and len(r["runs"]) == 9
    for run in r["runs"]:
        assert run["censored"] == (run["status"] in ("not_grokked", "diverged"))
        assert len(run["step"]) == len(run["value"]) == 20


def test_a_band_draws_at_most_its_bound_of_runs(sweep, monkeypatch):
    ix = SweepIndex(sweep, "syn")
    ix.refresh()
    full = views.curves(ix, "val_acc", {})
    assert full["runs_drawn"] == full["runs"] == 36
    monkeypatch.setattr(views, "BAND_RUNS_MAX", 16)  # 4 runs for each of the 4 arms
    got = views.curves(ix, "val_acc", {})
    assert got["runs"] == 36 and got["runs_drawn"] == sum(b["n_runs"] for b in got["bands"])
    assert all(b["n_runs"] <= 4 for b in got["bands"]) and got["runs_drawn"] < 36
    T = ix.trials
    for b in got["bands"]:  # the markers count every run of the arm
        assert b["grokked"] == int((T[T["arm"] == b["arm"]]["status"] == "grokked").sum())


def test_trials_view_sends_one_page_filtered_and_sorted_here(sweep):
    ix = SweepIndex(sweep, "syn")
    ix.refresh()
    T = load(sweep).trials
    t = views.trials_table(ix)
    assert t["n_rows"] == t["n_match"] == len(t["rows"]) == 36
    assert t["columns"][:2] == ["config_hash", "seed"] and "status" in t["columns"]
    assert sorted(t["values"]["group"]) == sorted(T["group"].unique())
    assert sorted(t["values"]["arm"]) == sorted(T["arm"].unique())
    ng = views.trials_table(ix, q="DIVerged")  # any case, any cell
    assert ng["n_rows"] == 36 and ng["n_match"] == int((T["status"] == "diverged").sum()) > 0
    assert {r[ng["columns"].index("status")] for r in ng["rows"]} == {"diverged"}
    h = T["config_hash"].iloc[0]
    assert views.trials_table(ix, q=h[:10])["n_match"] == int((T["config_hash"] == h).sum())
    i = t["columns"].index("grok_step")
    up = views.trials_table(ix, sort="grok_step")
    down = views.trials_table(ix, sort="grok_step", desc=True)
    steps = sorted(T["grok_step"].dropna())
    assert [r[i] for r in up["rows"][:len(steps)]] == steps
    assert [r[i] for r in down["rows"][:len(steps)]] == steps[::-1]
    assert all(r[i] is None for r in up["rows"][len(steps):])  # missing last, either way
    assert all(r[i] is None for r in down["rows"][len(steps):])
    page = views.trials_table(ix, sort="grok_step", limit=5)
    assert page["n_match"] == 36 and page["rows"] == up["rows"][:5]


def test_swept_in_arrow_equals_swept_of_the_frame(sweep):
    ix = SweepIndex(sweep, "syn")
    ix.refresh()
    assert ix.swept() == views.swept(load(sweep).trials)
    assert ix.swept()[:2] == ["arm", "group"]


def test_frames_hold_the_asked_columns_one_row_per_identity(sweep, sweepdir):
    ix = SweepIndex(sweep, "syn")
    ix.refresh()
    f = ix.frame(["memorize_step"])
    assert {"config_hash", "seed", "status", "grok_step", "arm", "cfg", "memorize_step"} == \
        set(f.columns) - {"arch", "run_id"}
    assert ix.n_rows == len(f) == 36 and f["grok_step"].dtype == float
    assert f["config_hash"].dtype == object  # strings as analysis reads them
    sweepdir.write_sweep(sweep, trials=2, seeds=3, evals=20, start=0)  # the same identities
    ix.refresh()
    assert ix.n_rows == len(ix.frame([])) == len(load(sweep).trials) == 36


def test_parcoords_draws_at_most_its_bound_of_lines(sweep, monkeypatch):
    ix = SweepIndex(sweep, "syn")
    ix.refresh()
    n = int((load(sweep).trials["status"] != "failed").sum())
    full = views.parcoords(ix)["figure"]
    assert len(full["data"][0]["dimensions"][0]["values"]) == n
    assert full["layout"]["title"]["text"].startswith(f"{n} runs:")
    monkeypatch.setattr(views, "PARCOORDS_RUNS_MAX", 10)
    few = views.parcoords(ix)["figure"]
    assert all(len(d["values"]) == 10 for d in few["data"][0]["dimensions"])
    assert few["layout"]["title"]["text"].startswith(f"10 of {n} runs, evenly spaced:")


def test_every_column_equals_analysis_load(sweep):
    """`trials` is assembled from columns converted apart (dictionaries spread over rows)."""
    ix = SweepIndex(sweep, "syn")
    ix.refresh()
    mine = ix.trials.sort_values(["config_hash", "seed"]).reset_index(drop=True)
    theirs = load(sweep).trials.sort_values(["config_hash", "seed"]).reset_index(drop=True)
    assert "cfg" not in mine and "_file" not in mine
    cols = [c for c in theirs.columns if c != "config_json"]
    assert sorted(mine.columns) == sorted(cols)
    def plain(df):  # load reads some text columns as pandas strings: compare the values
        return df.astype(object).where(df.notna(), None)
    pd.testing.assert_frame_equal(plain(mine[cols]), plain(theirs[cols]), check_dtype=False)


def test_a_grokked_row_without_grok_step_leaves_every_frame(sweep):
    """The normalized BASE columns drop the row; the columns converted beside them follow."""
    name = sorted(os.listdir(os.path.join(sweep, "trials")))[0]
    path = os.path.join(sweep, "trials", name)
    df = pd.read_parquet(path)
    df.loc[0, "status"], df.loc[0, "grok_step"] = "grokked", None
    df.to_parquet(path, index=False)
    bad = (df.loc[0, "config_hash"], int(df.loc[0, "seed"]))
    ix = SweepIndex(sweep, "syn")
    ix.refresh()
    f = ix.frame(["memorize_step", "group"])
    assert len(f) == 35 and "no grok_step" in "\n".join(ix.problems.values())
    assert bad not in set(zip(f["config_hash"], f["seed"], strict=True))
    T = ix.trials.set_index(["config_hash", "seed"])
    got = f.set_index(["config_hash", "seed"])
    assert got["memorize_step"].equals(T.loc[got.index, "memorize_step"])
    assert got["group"].equals(T.loc[got.index, "group"])
    assert views.overview(ix)["rows"] == 35


def test_varies_counts_a_missing_value_as_one():
    import pyarrow as pa

    from grokray_analysis.dashboard.index import _varies

    def v(values, typ=None):
        return _varies(pa.chunked_array([pa.array(values, typ)]))

    assert not v([1.0, 1.0]) and v([1.0, 2.0]) and v([1.0, float("nan")]) and v([1.0, None])
    assert not v([float("nan"), None]) and not v([None, None], pa.null())
    d = pa.chunked_array([pa.array(["a", "b", "a"]).dictionary_encode().take([0, 2]),
                          pa.array(["b", "a"]).dictionary_encode().take([1])])
    assert not _varies(d)  # two chunks, each dictionary holding an unused value
    assert _varies(pa.chunked_array([pa.array(["a", "b"]).dictionary_encode()]))
    assert not v([True, True]) and v([True, False])
    assert v([[1], [2]]) and not v([[1], [1]])

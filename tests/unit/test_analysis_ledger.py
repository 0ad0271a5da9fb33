"""The reproduction ledger (analysis/ledger/) on the tiny fixture sweeps: verdicts, values and
'not run' rows; `grokray analyze ledger` and `grokray reproduce --dry-run` through the CLI."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from grokray.cli import main
from grokray_analysis import ledger as L
from grokray_analysis.ledger.build import needed as build_needed
from grokray_analysis.load import load
from grokray_analysis.powerlaw import fit_power_law

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("paper", "value", "ci", "null", "log", "expected"), [
    (10.2, 9.0, (8.5, 9.5), 1.0, True, L.REPRODUCED),  # inside the band 8.16-12.75 (log 25%)
    (10.2, 3.8, (3.0, 4.5), 1.0, True, L.SAME_DIRECTION),
    (10.2, 0.5, (0.3, 0.8), 1.0, True, L.OPPOSITE),
    (0.7, 1.5, (1.2, 1.9), 1.0, True, L.OPPOSITE),  # paper slower, measured faster
    (583.0, -200.0, (-400.0, -50.0), 0.0, False, L.OPPOSITE),  # after instead of before
    (0.17, 0.45, (0.25, 0.64), 0.0, False, L.SAME_DIRECTION),
    (0.17, math.nan, L.NAN2, 0.0, False, L.NOT_RUN),
    # the interval holds the paper's value and values outside the band: it does not decide
    (10.2, 8.0, (5.0, 12.0), 1.0, True, L.INCONCLUSIVE),
    (0.17, 0.314, (0.074, 0.554), 0.0, False, L.INCONCLUSIVE),  # the ledger's alpha
    (10.2, 9.0, (5.0, 9.5), 1.0, True, L.INCONCLUSIVE),  # reproduced or smaller
    (10.2, 3.8, (0.5, 4.5), 1.0, True, L.INCONCLUSIVE),  # same direction or opposite
    (20.0, 15.0, (13.3, math.inf), 1.0, True, L.INCONCLUSIVE),  # a lower bound below the band
    (3.0, 15.0, (13.3, math.inf), 1.0, True, L.SAME_DIRECTION),  # a lower bound above it
    (15.0, 17.0, (17.0, 17.0), math.inf, True, L.REPRODUCED),  # 17/15 within 25%
    (12.0, 17.0, (17.0, 18.0), math.inf, True, L.SAME_DIRECTION),  # no opposite side of inf
    (10.2, 9.0, L.NAN2, 1.0, True, L.INCONCLUSIVE),  # a point value decides nothing
    # the band 0.688-1.075 holds the null 1, whatever the data
    (0.86, 0.875, (0.61, 1.11), 1.0, True, L.UNTESTABLE),
    (0.86, 0.86, (0.85, 0.87), 1.0, True, L.UNTESTABLE),
])
def test_verdicts(paper, value, ci, null, log, expected):
    assert L.verdict_of(paper, value, ci, null=null, log=log, tol=0.25) == expected


def test_the_rule_has_no_side_door():
    from grokray_analysis import intervals
    from grokray_analysis.intervals import clopper_pearson

    # a qualitative claim (the matched MLP fails: a grok rate of 0) is a rate like any other:
    # 0 of 9 runs gives the exact interval [0, 0.34], not inside the band [0, 0.1], and no count
    # of 9 could be: too few runs, and 36 (0 of 36: [0, 0.097]) would do
    band, null = (0.0, 0.1), 0.5
    ci = clopper_pearson(0, 9)
    assert ci == pytest.approx((0.0, 0.3363), abs=1e-4)
    assert L.verdict_of(0.0, 0.0, ci, null=null, log=False, tol=0, band=band,
                        n=9, rate_n=9) == L.TOO_FEW
    assert L.verdicts.rate_n_needed(9, 0.0, 0.0, band, null=null) == 36
    assert L.verdict_of(0.0, 0.0, clopper_pearson(0, 36), null=null, log=False, tol=0,
                        band=band, n=36, rate_n=36) == L.REPRODUCED
    # 9 of 9 grokked: the interval [0.66, 1] lies beyond the null 0.5 (a rate that neither
    # fails nor groks as a rule): opposite
    assert L.verdict_of(0.0, 1.0, clopper_pearson(9, 9), null=null, log=False, tol=0,
                        band=band, n=9, rate_n=9) == L.OPPOSITE
    # a point-only measure (NaN bounds) inside the band is not reproduced
    assert L.verdict_of(10.2, 10.2, L.NAN2, null=1.0, log=True, tol=0.25) == L.INCONCLUSIVE
    # a band that contains its null: untestable, whatever the interval
    assert L.verdict_of(0.86, 0.86, (0.86, 0.86), null=1.0, log=True,
                        tol=0.25) == L.UNTESTABLE
    assert L.verdict_of(0.86, 0.86, (0.86, 0.86), null=1.0, log=True, tol=0.1) == L.REPRODUCED
    # n = 2: no order-statistic interval for a median exists below 6 runs, however tight the
    # two values: too few runs, with the 6 it would need
    assert intervals.order_median_ci([17.0, 17.0]) is None and intervals.ORDER_MIN_N == 6
    assert L.verdict_of(15.0, 17.0, L.NAN2, null=math.inf, log=True, tol=0.25, n=2,
                        n_needed=6) == L.TOO_FEW
    # and a ratio of two medians needs 7 runs per arm
    assert intervals.RATIO_MIN_N == 7
    # runs that give no value (both arms censored: no ratio of medians) are a result, not
    # "not run": with an interval that meets every region, inconclusive; with none, not run
    assert L.verdict_of(20.0, math.nan, (0.0, math.inf), null=1.0, log=True, tol=0.25, n=7,
                        n_needed=7) == L.INCONCLUSIVE
    assert L.verdict_of(20.0, math.nan, (0.0, math.inf), null=1.0, log=True, tol=0.25, n=3,
                        n_needed=7) == L.TOO_FEW
    assert L.verdict_of(20.0, math.nan, L.NAN2, null=1.0, log=True, tol=0.25) == L.NOT_RUN


def test_order_statistic_intervals():
    from grokray_analysis.intervals import order_median_ci, order_rank, order_ratio_ci

    # n = 6: [min, max], coverage 1 - 2/64; n = 9: the 2nd smallest and 2nd largest (1 - 20/512)
    assert order_rank(5) == 0 and order_rank(6) == 1 and order_rank(9) == 2
    assert order_median_ci(np.arange(6.0)) == (0.0, 5.0)
    assert order_median_ci(np.arange(9.0)) == (1.0, 7.0)
    # each run known only to lie in [lo, hi]: a censored run is [budget, inf)
    lo = np.array([100, 200, 300, 400, 6000, 6000, 6000.0])
    hi = np.array([150, 250, 350, 450, math.inf, math.inf, math.inf])
    assert order_median_ci(lo, hi) == (100.0, math.inf)
    # a ratio: each median at sqrt(0.95), 7 runs per arm: [min, max] of each
    # a censored baseline over a grokked arm: a lower bound, [6000 / 450, inf)
    r = order_ratio_ci(np.full(7, 6000.0), np.full(7, math.inf), lo[:4].repeat(2)[:7],
                       hi[:4].repeat(2)[:7])
    assert r == pytest.approx((6000.0 / 450.0, math.inf))
    r = order_ratio_ci(np.arange(10.0, 17.0), np.arange(10.0, 17.0), np.arange(1.0, 8.0),
                       np.arange(1.0, 8.0))
    assert r == pytest.approx((10.0 / 7.0, 16.0 / 1.0))
    assert order_ratio_ci(np.ones(6), np.ones(6), np.ones(7), np.ones(7)) is None


def test_a_wider_interval_never_makes_a_verdict_easier():
    # the same value with wider and wider intervals: a verdict holds until the interval leaves
    # its region, then it is inconclusive, never another decided verdict
    for paper, value, null, log in ((0.17, 0.314, 0.0, False), (10.2, 9.0, 1.0, True),
                                    (10.2, 3.8, 1.0, True), (583.0, -200.0, 0.0, False)):
        seen = []
        for half in (0.0, 0.01, 0.1, 0.3, 1.0, 3.0, 10.0):
            ci = ((value * math.exp(-half), value * math.exp(half)) if log
                  else (value - half * abs(value), value + half * abs(value)))
            seen.append(L.verdict_of(paper, value, ci, null=null, log=log, tol=0.25))
        assert seen[0] != L.INCONCLUSIVE and seen[-1] == L.INCONCLUSIVE
        first = seen.index(L.INCONCLUSIVE)
        assert set(seen[:first]) == {seen[0]} and set(seen[first:]) == {L.INCONCLUSIVE}


def test_regions_met_and_the_band():
    assert L.tolerance_band(0.17, log=False, tol=0.25) == pytest.approx((0.1275, 0.2125))
    assert L.tolerance_band(10.0, log=True, tol=0.25) == pytest.approx((8.0, 12.5))
    band = L.tolerance_band(0.86, log=True, tol=0.25)  # 0.688-1.075: it holds the null 1
    assert L.regions_met(0.61, 1.11, 0.86, band, null=1.0) == L.REGIONS
    assert L.regions_met(0.7, 1.05, 0.86, band, null=1.0) == (L.REPRODUCED,)
    assert L.regions_met(-math.inf, math.inf, 0.17, (0.1275, 0.2125), null=0.0) == L.REGIONS
    # a range claim (20-150,000x lower drift): the range is the band
    assert L.verdict_of(20.0, 2.6, (0.51, 6.7), null=1.0, log=True, tol=0.0,
                        band=(20.0, 150000.0)) == L.INCONCLUSIVE
    assert L.verdict_of(20.0, 33.0, (20.0, 60.0), null=1.0, log=True, tol=0.0,
                        band=(20.0, 150000.0)) == L.REPRODUCED


@pytest.fixture(scope="module")
def out(tmp_path_factory, tiny):
    root = tmp_path_factory.mktemp("ledger")
    # the fixture sweeps stand in for the ledger's sweeps (by output dir name)
    tiny.write_ablation(root / "nonabelian_cpu")
    tiny.write_ablation(root / "scaling_cpu")
    tiny.write_ablation(root / "fourier_sign_cpu")
    tiny.write_capacity(root / "capacity_cpu")
    return root


def _write_plan(d: Path, spec: str) -> None:
    """The plan.json a run of `spec` writes into sweep dir `d`."""
    from grokray.sweep import store
    from grokray.sweep.plan import make_plan, plan_record
    from grokray.sweep.spec import load_spec

    store.write_plan(d, plan_record(make_plan(load_spec(str(ROOT / spec)))))


def _rows(out, *, current_only=False, scale="cpu"):
    """The ledger's rows of one scale by claim key."""
    return {r.claim.key: r for r in L.ledger(out, current_only=current_only).columns[scale]}


def test_ledger_rows_from_the_fixture(out):
    rows = _rows(out)
    assert len(rows) == len(L.CLAIMS)
    na = rows["forge.nonabelian.mlp_fails"]
    # fixture: the MLP never groks S3/D4/A4 (9 runs); FORGE 8/9 (A4 seed 2 censored)
    assert na.measured.value == 0.0 and na.measured.ci == pytest.approx((0.0, 0.3363), abs=1e-4)
    assert (na.measured.grokked, na.measured.censored) == (0, 9)
    assert "FORGE grokked 8/9" in na.measured.detail
    # 0 of 9 cannot show a rate below 0.1 (0 of 36 can): too few runs, not reproduced
    assert na.verdict == L.TOO_FEW and "the interval needs 36" in na.measured.detail
    al = rows["forge.scaling.alpha"]  # fixture: 300 |G|^0.5, one A4 run censored at 4,000
    fit = fit_power_law(load([out / "scaling_cpu"]).trials, "forge", n_boot=0)
    assert al.measured.value == fit.alpha and al.measured.ci == fit.alpha_ci
    assert al.measured.value > 0.4 and al.measured.censored == 1
    assert al.verdict == L.SAME_DIRECTION
    grok = rows["forge.all_groups_grok"]
    assert grok.measured.value == pytest.approx(14 / 15)
    # a rate over the groups: 5 groups cannot show a rate of 0.9 or more (36 could)
    assert grok.verdict == L.TOO_FEW and "groups below 90%: A4" in grok.measured.detail
    assert "the interval needs 36" in grok.measured.detail
    em = rows["forge.eff_modes"]  # fixture: 23 vs 16 modes
    assert em.measured.value == pytest.approx(7.0, abs=1.5) and em.verdict == L.REPRODUCED
    cap = rows["forge.capacity.threshold"]  # fixture: P(grok) = 1/2 at R*d = 100
    assert 40 < cap.measured.value < 250
    assert cap.measured.grokked + cap.measured.censored == 48
    assert "grokray sweep sweeps/cpu/capacity.yaml" in cap.command


def test_claims_without_data_are_not_run_rows(out, tmp_path):
    rows = _rows(out)
    for key in ("forge.z97.speedup.forge+grokfast", "geom.spherical.speedup", "rfm.iters.add",
                "forge.cp_rank_s4"):
        assert rows[key].verdict == L.NOT_RUN and math.isnan(rows[key].measured.value)
    empty = L.ledger(tmp_path / "nothing")
    assert {r.verdict for s in L.SCALES for r in empty.columns[s]} == {L.NOT_RUN}


def test_rows_of_other_configs_are_not_read_as_the_claim(tmp_path, tiny):
    # the fixture's configs are not those sweeps/cpu/scaling.yaml runs, which the dir's plan
    # names (as `grokray sweep` writes it): by default they are not taken for the claim (a
    # sweep dir may hold rows of an older default)
    _write_plan(tiny.write_ablation(tmp_path / "scaling_cpu"), "sweeps/cpu/scaling.yaml")
    r = _rows(tmp_path, current_only=True)["forge.scaling.alpha"]
    assert r.verdict == L.NOT_RUN and "other configs" in r.measured.detail


def test_a_damaged_sweep_is_a_not_run_row(tmp_path, tiny):
    tiny.write_ablation(tmp_path / "scaling_cpu")
    (tmp_path / "scaling_cpu" / "trials" / "zz-broken.parquet").write_text("not parquet")
    rows = _rows(tmp_path)
    r = rows["forge.scaling.alpha"]
    assert r.verdict == L.NOT_RUN and "cannot read" in r.measured.detail


def test_cli_ledger_json_and_files(out, capsys):
    assert main(["analyze", "ledger", str(out), "--format", "json", "--all-rows"]) == 0
    tables = json.loads(capsys.readouterr().out)
    rows = {r["claim"]: r for r in tables[0]["rows"]}
    assert rows["forge.eff_modes"]["verdict"] == L.REPRODUCED
    assert rows["rfm.iters.mul"]["verdict"] == L.NOT_RUN
    assert (out / "ledger.md").read_text().startswith("# Reproduction ledger")
    on_disk = json.loads((out / "ledger.json").read_text())
    assert on_disk[0]["rows"] == tables[0]["rows"]


def test_cli_ledger_on_a_file_is_exit_2(tmp_path, capsys):
    f = tmp_path / "f.txt"
    f.write_text("x")
    assert main(["analyze", "ledger", str(f)]) == 2
    assert "not a directory" in capsys.readouterr().err


def test_reproduce_dry_run_lists_every_ledger_sweep(tmp_path, capsys):
    assert main(["reproduce", "--scale", "cpu", "--out", str(tmp_path), "--dry-run"]) == 0
    text = capsys.readouterr().out
    for name in ("nonabelian_cpu", "z97_ablation_cpu", "a5_ablation_cpu", "scaling_cpu",
                 "fourier_sign_cpu", "axioms_cpu", "capacity_cpu", "topology_cpu", "rfm_cpu",
                 "hamiltonian_cpu"):
        assert f"sweep {name}:" in text
    assert not any(tmp_path.iterdir())  # a dry run writes nothing


def test_the_decisive_tier_is_its_own_scale_and_prints_its_cost(tmp_path, capsys):
    assert main(["reproduce", "--scale", "decisive", "--out", str(tmp_path), "--dry-run"]) == 0
    text = capsys.readouterr().out
    for name in ("topology", "modes", "axioms", "z97_ablation", "rfm", "nn_quadratic",
                 "split_wd", "alpha"):
        assert f"sweep {name}_decisive:" in text
    assert "estimated wall time left (cost model" in text
    assert not any(tmp_path.iterdir())


def test_reproduce_unknown_sweep_is_exit_2(tmp_path, capsys):
    assert main(["reproduce", "--out", str(tmp_path), "--only", "nope"]) == 2
    err = capsys.readouterr().err
    assert "unknown ledger sweep" in err and "scaling_cpu" in err


def test_topology_and_rfm_rows_use_kaplan_meier(tmp_path, tiny):
    from grokray_analysis.survival import durations, km_median

    # the ablation fixture relabelled as topology arms: layernorm = mlp, spherical_bounded = forge
    tiny.write_ablation(tmp_path / "topology_cpu")
    T = load([tmp_path / "topology_cpu"]).trials
    T = T[T["arm"].isin(["mlp", "forge"]) & (T["group"] == "Z5")].copy()
    T["arm"] = T["arm"].map({"mlp": "layernorm", "forge": "spherical_bounded"})
    T["arch"], T["op"] = "transformer", "add"
    m = L.measure(L.claim("geom.spherical.speedup"), T)

    def km(df):
        d = durations(df)
        return km_median(d["time"], d["event"])

    base, fast = km(T[T["arm"] == "layernorm"]), km(T[T["arm"] == "spherical_bounded"])
    assert m.value == pytest.approx(base.median / fast.median)  # fixture factor 4
    assert m.value == pytest.approx(4.0, rel=0.3) and m.grokked == 6
    R = T.assign(arch="rfm", op="add", arm="rfm_gaussian")
    r = L.measure(L.claim("rfm.iters.add"), R)
    k = km(R)
    assert (r.value, r.ci) == (k.median, (k.lo, k.hi))


def test_hamiltonian_drift_claim_verdicts():
    def frame(mlp, alg):
        rows = [{"hamiltonian_system": "kepler", "arm": a, "status": "not_grokked", "seed": i,
                 "metric_drift_energy": v}
                for a, vals in (("mlp", mlp), ("dad+algebra", alg)) for i, v in enumerate(vals)]
        return pd.DataFrame(rows)

    c = L.claim("forge.hamiltonian.kepler.energy")
    assert c.band == (20.0, 150000.0)
    mlp = [0.5, 0.6, 0.45, 0.55, 0.45, 0.5, 0.52]
    good = L.measure(c, frame(mlp, [0.01, 0.02, 0.015, 0.012, 0.018, 0.011, 0.016]))
    # 7 seeds per arm: each median's interval at 97.5% is [min, max]
    assert good.value == pytest.approx(0.5 / 0.015)
    assert good.ci == pytest.approx((0.45 / 0.02, 0.6 / 0.01))
    assert L.judge(c, good) == L.REPRODUCED
    worse = L.measure(c, frame(mlp, [0.7, 0.8, 0.9, 0.75, 0.85, 0.8, 0.8]))
    assert L.judge(c, worse) == L.OPPOSITE
    failures = L.measure(c, frame([4000.0] * 7, [190.0, 200.0, 210.0, 200, 200, 200, 200]))
    assert failures.value == pytest.approx(20.0) and "neither conserves" in failures.detail
    # three seeds per arm: no 95% interval of a ratio of medians exists (7 per arm needed)
    three = L.measure(c, frame([0.5, 0.6, 0.4], [0.01, 0.02, 0.015]))
    assert math.isnan(three.ci[0]) and (three.n, three.n_needed) == (3, 7)
    assert L.judge(c, three) == L.TOO_FEW



def test_the_two_failures_check_is_a_rate_the_rule_judges():
    # a drift ratio between two arms that both drift by 100% or more is a ratio of two
    # failures: forge.hamiltonian.<system>.conserved is the arm's share of runs that keep every
    # invariant of the system below 100%, Clopper-Pearson over the runs, through the one rule
    def frame(energy, ang):
        return pd.DataFrame([{"hamiltonian_system": "kepler", "arm": a, "status": "not_grokked",
                              "seed": i, "metric_drift_energy": e,
                              "metric_drift_angular_momentum": m}
                             for a in ("mlp", "dad+algebra")
                             for i, (e, m) in enumerate(zip(energy, ang, strict=True))])

    c = L.claim("forge.hamiltonian.kepler.conserved")
    assert (c.band, c.null_value, c.log) == ((0.9, 1.0), 0.5, False)
    fail3 = L.measure(c, frame([196.0, 823.0, 64.0], [210.0, 354.0, 8.5]))
    assert (fail3.value, fail3.n, fail3.rate_n) == (0.0, 3, 3)
    assert fail3.ci == pytest.approx((0.0, 0.7076), abs=1e-4)
    # 0 of 3 points to the other side of the null, but no count of 3 can say so: too few runs,
    # with the 6 runs that could
    assert L.judge(c, fail3) == L.TOO_FEW
    assert build_needed(c, fail3) == 6
    assert L.judge(c, L.measure(c, frame([196.0] * 6, [210.0] * 6))) == L.OPPOSITE
    # a run keeps the system's invariants only if it keeps every one (and a blow-up keeps none)
    mixed = L.measure(c, frame([0.1] * 6, [0.2] * 5 + [5.0]))
    assert mixed.value == pytest.approx(5 / 6)
    blown = L.measure(c, frame([0.1] * 5 + [math.inf], [0.2] * 6))
    assert blown.value == pytest.approx(5 / 6)
    ok36 = L.measure(c, frame([0.1] * 36, [0.2] * 36))
    assert L.judge(c, ok36) == L.REPRODUCED and "36 of 36 dad+algebra" in ok36.detail


def test_every_group_groks_reads_every_run_of_a_family_sweep():
    # arm "": every run of the sweep (the decisive alpha sweep's arms are group families)
    T = pd.DataFrame({"arm": ["cyclic", "dihedral"] * 18, "group": [f"G{i}" for i in range(36)],
                      "status": "grokked"})
    m = L.all_grok(T, arm="", max_fail=0.1)
    assert (m.value, m.n) == (1.0, 36) and m.ci[0] > 0.9
    assert L.judge(L.claim("forge.all_groups_grok").at("decisive"), m) == L.REPRODUCED


def test_axiom_claims_read_the_metric_columns_the_store_writes():
    # the trials table holds per-seed metrics as metric_<name> (grokray.result), e.g. an
    # axioms_cpu run: identity axiom 100-250 steps after grokking, every coefficient recovered
    leads = [-250.0, -100.0, -150.0, -200.0, -125.0, -175.0]
    T = pd.DataFrame({"arm": "forge", "group": ["S4"] * 3 + ["A4"] * 3, "status": "grokked",
                      "grok_step": 1000.0, "steps_run": 1250.0,
                      "metric_ident_lead": leads,
                      "metric_wedderburn_frac": [1.0, 1.0, 0.98, 1.0, 1.0, 1.0]})
    c = L.claim("forge.axioms.ident_lead")
    m = L.measure(c, T)
    assert m.value == -162.5 and m.grokked == 6 and m.ci == (-250.0, -100.0)
    assert L.judge(c, m) == L.OPPOSITE
    w = L.measure(L.claim("forge.wedderburn"), T)
    assert w.value == 1.0 and "A4 1.0000" in w.detail and w.ci == (0.98, 1.0)
    # an axiom never met is a result, not a missing row: its lead is below grok - last step
    never = T.assign(metric_ident_lead=math.nan)
    m = L.measure(c, never)
    assert "never met in 6 of 6 runs" in m.detail
    assert m.value == -250.0 and m.ci == (-math.inf, -250.0)
    assert L.judge(c, m) == L.OPPOSITE
    # three runs: too few for a median's interval
    assert L.judge(c, L.measure(c, T.iloc[:3])) == L.TOO_FEW


def test_a_censored_baseline_gives_a_one_sided_interval_not_a_free_verdict():
    # the MLP never groks A5 within 6,000 steps, FORGE groks at 300-450: the speedup is only
    # known to exceed 6000 / 450 = 13.3, so a paper value of 3.0 or 10.1 is not 'reproduced'
    T = pd.DataFrame({"group": "A5", "arm": ["mlp"] * 7 + ["forge"] * 7,
                      "status": ["not_grokked"] * 7 + ["grokked"] * 7,
                      "grok_step": [None] * 7 + [300, 400, 400, 450, 400, 350, 400],
                      "grok_step_lo": [None] * 7 + [250, 350, 350, 400, 350, 300, 350],
                      "steps": 6000, "steps_run": [6000] * 7 + [550, 650, 650, 700, 650, 600,
                                                              650]})
    c = L.claim("forge.a5.speedup.mlp")
    m = L.measure(c, T)
    assert m.value == 15.0 and "lower bound" in m.detail
    assert m.ci[0] == pytest.approx(6000 / 450) and math.isinf(m.ci[1])
    assert L.judge(c, m) == L.SAME_DIRECTION  # [13.3, inf) lies above the band 8.1-12.6
    for paper in (3.0, 10.1):
        assert L.verdict_of(paper, m.value, m.ci, null=1.0, log=True,
                            tol=0.25) == L.SAME_DIRECTION
    # a paper value of 20 lies in [13.3, inf), as do values far above it: not decided
    assert L.verdict_of(20.0, m.value, m.ci, null=1.0, log=True, tol=0.25) == L.INCONCLUSIVE
    # five runs per arm (the CPU sweep's): too few for a ratio's interval
    five = T[T["seed"].isin(range(5))] if "seed" in T else T.groupby("arm").head(5)
    assert L.judge(c, L.measure(c, five)) == L.TOO_FEW


def _plan(d: Path, hashes, seeds) -> None:
    (d / "plan.json").write_text(json.dumps({"config_hashes": list(hashes), "seeds": seeds}))


def test_current_rows_are_the_identities_the_plan_names(tmp_path, tiny):
    d = tiny.write_ablation(tmp_path / "nonabelian_cpu")
    T = load([d]).trials
    _plan(d, sorted(set(T["config_hash"])), [0, 1])  # the sweep now runs seeds 0 and 1 only
    r = _rows(tmp_path, current_only=True)["forge.nonabelian.mlp_fails"]
    sub = T[T["seed"].isin([0, 1]) & T["group"].isin(["S3", "D4", "A4"])
            & (T["arm"] == "mlp") & (T["status"] != "failed")]
    g = int((sub["status"] == "grokked").sum())
    assert (r.measured.grokked, r.measured.censored) == (g, len(sub) - g)
    assert (g, len(sub) - g) != (0, 9)  # every row: the fixture test above
    assert L.sweeps.NO_PLAN not in r.measured.detail


def test_a_dir_without_a_plan_has_every_row_read_and_says_so(tmp_path, tiny):
    tiny.write_ablation(tmp_path / "nonabelian_cpu")
    r = _rows(tmp_path, current_only=True)["forge.nonabelian.mlp_fails"]
    assert (r.measured.grokked, r.measured.censored) == (0, 9)
    assert L.sweeps.NO_PLAN in r.measured.detail


def test_a_plan_that_is_not_a_plan_is_a_not_run_row(tmp_path, tiny):
    d = tiny.write_ablation(tmp_path / "nonabelian_cpu")
    (d / "plan.json").write_text('{"config_hashes": ["ab"]}')  # no seeds
    r = _rows(tmp_path, current_only=True)["forge.nonabelian.mlp_fails"]
    assert r.verdict == L.NOT_RUN and "cannot read" in r.measured.detail


def test_each_claim_names_its_specs_sweep_and_reproduce_runs_them():
    from grokray.commands.reproduce import ledger_specs
    from grokray.sweep.spec import load_spec

    measured = [c for c in L.CLAIMS if c.spec]
    for c in measured:
        assert load_spec(str(ROOT / c.spec)).name == c.sweep, c.key
    assert ledger_specs("cpu") == list(dict.fromkeys(c.spec for c in measured))
    assert len(measured) == 29 and len(L.CLAIMS) == 52


GOOD = """claims:
  - key: k
    paper: forge
    claim: c
    paper_value: 10.1
    paper_text: t
    spec: sweeps/cpu/a5_ablation.yaml
    sweep: a5_ablation_cpu
    measure: speedup
    params: {arm: forge, base: mlp}
    tol: 0.25
    tol_why: the paper gives no spread
    scales:
      paper: {spec: sweeps/paper/a5_ablation.yaml, sweep: a5_ablation_paper}
"""


@pytest.mark.parametrize(("edit", "message"), [
    ("measure: speedup", "measure 'speedups'; valid: speedup,"),
    ("params: {arm: forge, base: mlp}", "params of speedup: got an unexpected keyword"),
    ("tol: 0.25", "unknown keys tolerance; valid:"),
    ("paper_value: 10.1", "paper_value 'ten'; valid: a number or a ratio a/b"),
    ("paper: forge", "paper 'forge2'; valid: forge, geom, rfm"),
])
def test_a_claim_the_measures_cannot_run_fails_at_load(edit, message):
    assert L.load_claims(GOOD)[0].params == {"arm": "forge", "base": "mlp"}
    bad = {"measure: speedup": "measure: speedups",
           "params: {arm: forge, base: mlp}": "params: {arm: forge, base: mlp, by: op}",
           "tol: 0.25": "tolerance: 0.25", "paper_value: 10.1": "paper_value: ten",
           "paper: forge": "paper: forge2"}[edit]
    with pytest.raises(ValueError, match="claim 'k'") as err:
        L.load_claims(GOOD.replace(edit, bad))
    assert message in str(err.value)


def test_a_scale_block_overrides_only_what_differs():
    c = L.load_claims(GOOD.replace("a5_ablation_paper}", "a5_ablation_paper, "
                                   "params: {arm: forge+grokfast, base: mlp}}"))[0]
    p = c.at("paper")
    assert (p.spec, p.sweep, p.measure) == ("sweeps/paper/a5_ablation.yaml",
                                            "a5_ablation_paper", "speedup")
    assert p.params == {"arm": "forge+grokfast", "base": "mlp"} and c.at("cpu") is c
    none = L.load_claims(GOOD.replace("      paper: {spec: sweeps/paper/a5_ablation.yaml, "
                                      "sweep: a5_ablation_paper}\n",
                                      "      paper: {why_not: needs QM9}\n"))[0].at("paper")
    assert (none.spec, none.measure, none.why_not) == ("", "", "needs QM9")


@pytest.mark.parametrize(("old", "new", "message"), [
    ("      paper: {", "      gpu: {", "scale 'gpu'; valid: paper"),
    ("sweep: a5_ablation_paper}", "sweep: a5_ablation_paper, seeds: 9}",
     "scales.paper: valid keys spec, sweep, where, measure, params, analyze, why_not"),
    ("spec: sweeps/paper/a5", "spec: sweeps/cpu/a5",
     "at scale paper: spec sweeps/cpu/a5_ablation.yaml; valid: a spec under sweeps/paper/"),
    ("spec: sweeps/cpu/a5", "spec: sweeps/paper/a5",
     "spec sweeps/paper/a5_ablation.yaml; valid: a spec under sweeps/cpu/"),
    ("sweep: a5_ablation_paper}", "sweep: a5_ablation_paper, params: {arms: forge}}",
     "at scale paper: params of speedup: "),
    ("{spec: sweeps/paper/a5_ablation.yaml, ", "{",
     "at scale paper: a measured claim has spec, sweep and measure"),
])
def test_a_bad_scale_block_fails_at_load(old, new, message):
    assert old in GOOD
    with pytest.raises(ValueError, match="claim 'k'") as err:
        L.load_claims(GOOD.replace(old, new, 1))
    assert message in str(err.value)


def test_all_groups_grok_is_a_rate_over_the_groups():
    # 13 groups x 5 seeds, all grokked: the interval over 13 groups reaches down to 0.75, below
    # the band [0.9, 1]; no count of 13 groups could lie inside it: too few runs (36 groups)
    c = L.claim("forge.all_groups_grok")

    def frame(G):
        return pd.DataFrame({"arm": "forge", "group": [f"G{i}" for i in range(G) for _ in
                                                        range(5)], "status": "grokked"})

    T = frame(13)
    m = L.measure(c, T)
    assert m.value == 1.0 and m.ci[0] == pytest.approx(0.7529, abs=1e-3)
    assert L.judge(c, m) == L.TOO_FEW and L.build.needed(c, m) == 36
    assert L.judge(c, L.measure(c, frame(36))) == L.REPRODUCED
    T.loc[T["group"] == "G3", "status"] = "not_grokked"
    m = L.measure(c, T)
    assert m.value == pytest.approx(60 / 65) and "groups below 90%: G3" in m.detail
    T["status"] = "not_grokked"
    # no run groks: [0, 0.25] lies below the null 0.5 (a rate that neither fails nor groks as a
    # rule), on the other side from the paper's 1
    assert L.judge(c, L.measure(c, T)) == L.OPPOSITE


def test_the_designed_alpha_rows_per_family_and_common():
    # four families of 9 groups, one true alpha 0.2 with group effects: each family's exponent,
    # the common one near 0.2 and the test of one alpha not rejecting it
    rng = np.random.default_rng(0)
    rows = []
    for fam in ("cyclic", "dihedral", "dicyclic", "abelian"):
        for o in (8, 12, 16, 24, 32, 48, 64, 96, 120):
            u = rng.normal(0, 0.2)
            for seed in range(5):
                t = round(300 * o**0.2 * np.exp(u + rng.normal(0, 0.1)) / 10) * 10
                rows.append({"arm": fam, "group": f"{fam}{o}", "group_order": o, "seed": seed,
                             "status": "grokked", "grok_step": t, "steps": 4000,
                             "steps_run": t + 50})
    T = pd.DataFrame(rows)
    c = L.claim("forge.scaling.alpha_common").at("decisive")
    m = L.measure(c, T)
    assert m.ci[0] < 0.2 < m.ci[1] and m.n == 36
    assert "one common alpha: Wald Q" in m.detail and "power law vs saturating" in m.detail
    p = float(m.detail.split("p = ")[1].split(" ")[0])
    assert p > 0.05
    fam = L.measure(L.claim("forge.scaling.alpha.cyclic").at("decisive"), T)
    assert fam.n == 9 and fam.ci[0] < 0.2 < fam.ci[1]


def test_ungrok_rate_and_metric_median_rows():
    T = pd.DataFrame({"arm": ["split_wd"] * 12 + ["single_wd"] * 12, "status": "grokked",
                      "ungrok_step": [None] * 12 + [3000] * 6 + [None] * 6})
    c = L.claim("forge.split_wd.ungrok").at("decisive")
    m = L.measure(c, T)
    assert m.value == 0.0 and "single_wd: 6 of 12" in m.detail
    assert L.judge(c, m) == L.TOO_FEW  # 0 of 12 is [0, 0.26]: 36 runs would show <= 0.1
    N = pd.DataFrame({"op": "add", "status": "grokked",
                      "metric_nfa_corr": [0.95, 0.94, 0.96, 0.93, 0.95, 0.94, 0.95]})
    c = L.claim("rfm.nfm_agop.add").at("decisive")
    m = L.measure(c, N)
    assert m.value == 0.95 and m.ci == (0.93, 0.96) and L.judge(c, m) == L.REPRODUCED

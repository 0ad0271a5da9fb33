"""Each identical trial once (grokray.service.reuse): the compatibility rule (training semantics
and device kind), the provenance of a copied row, and a sweep that trains only what nobody has,
on real trials (tiny, in process) and the service's real state (SQLite)."""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest

import grokray
from grokray.cli import main as cli
from grokray.schema import TRAINING_SEMANTICS
from grokray.service import reuse
from grokray.service.state import State
from tests.helpers.service import local_spec


def _sweep(tmp_path, name, wds):
    from grokray.sweep.spec import load_spec

    p = tmp_path / f"{name}.yaml"
    p.write_text(local_spec(name, tmp_path / "store", wds, seeds=2, steps=30))
    return str(p), load_spec(str(p))


def _run(path):
    assert cli(["sweep", path, "--local", "--plain", "--no-summary"]) == 0


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """Alice's sweep A (weight decays 0.5, 1.0) trained and indexed."""
    tmp = tmp_path_factory.mktemp("lab")
    st = State.open(str(tmp / "service.db"))
    alice, _ = st.add_user("alice")
    path, spec = _sweep(tmp, "a", [0.5, 1.0])
    _run(path)
    # a store at scale keeps its rows in compacted parts: reuse reads them there
    from grokray.sweep.compact import compact

    compact(spec.sweep_dir)
    assert [p.name for p in (tmp / "store" / "a" / "trials").iterdir()
            if p.suffix == ".parquet"][0].startswith("part-")
    sa, _ = st.submit(alice, name="a", spec_text="", spec_source=path, sweep_dir=spec.sweep_dir)
    n = reuse.index_dir(st, spec.sweep_dir, sweep_id=sa.id, owner_id=alice.id)
    assert n == 4
    yield tmp, st, spec
    st.close()


def test_rows_carry_their_training_semantics_and_device_kind(lab):
    _, _, spec = lab
    t = grokray.load(spec.sweep_dir).trials
    assert set(t["training_semantics"]) == {TRAINING_SEMANTICS}
    kind = reuse.expected_device_kind(spec)
    assert kind.startswith("cpu:") and kind.endswith(":t1")
    assert set(t["device_kind"]) == {kind}
    assert t["reused_from"].isna().all()


def test_a_compatible_row_is_copied_with_its_provenance_and_only_the_rest_trains(lab):
    tmp, st, a = lab
    path, b = _sweep(tmp, "b", [1.0, 2.0])  # shares wd 1.0 (both seeds) with A
    keys = reuse.identities_of(b)
    m = reuse.match(st, keys, b.sweep_dir, reuse.current_semantics(),
                    reuse.expected_device_kind(b))
    shared = {k for k in keys if k[0] in {c.config_hash() for c in a.trials()}}
    assert set(m.found) == shared and len(shared) == 2
    assert not m.training and not m.refused and m.why_not() == ""
    assert reuse.copy_rows(m.found, b.sweep_dir, b.name) == 2
    _run(path)  # trains wd 2.0 only
    tb = grokray.load(b.sweep_dir).trials
    assert len(tb) == 4 and not tb.duplicated(["config_hash", "seed"]).any()
    copied = tb[tb["reused_from"].notna()]
    assert set(zip(copied["config_hash"], copied["seed"], strict=True)) == shared
    assert set(copied["reused_from"]) == {a.sweep_dir} and set(tb["sweep"]) == {"b"}
    ta = grokray.load(a.sweep_dir).trials.set_index(["config_hash", "seed"])
    for _, r in copied.iterrows():  # the same numbers, the same run
        src = ta.loc[(r["config_hash"], r["seed"])]
        assert r["final_val_loss"] == src["final_val_loss"] and r["run_id"] == src["run_id"]
    trained = tb[tb["reused_from"].isna()]
    assert set(trained["run_id"]) != set(copied["run_id"])
    # the copied curves came along: the dir reads whole without the service
    cb = grokray.load(b.sweep_dir).curves
    assert set(cb["config_hash"]) == set(tb["config_hash"])


def test_rows_of_another_semantics_or_device_kind_are_not_reused_and_say_why(lab):
    tmp, st, a = lab
    keys = reuse.identities_of(a)
    here = str(tmp / "store" / "c")
    kind = reuse.expected_device_kind(a)
    m = reuse.match(st, keys, here, f"{TRAINING_SEMANTICS + 1}+torch0", kind)
    assert not m.found and len(m.refused) == 4
    assert m.why_not() == (f"not reused: 4 trained by semantics {reuse.current_semantics()}, "
                           f"here {TRAINING_SEMANTICS + 1}+torch0")
    m = reuse.match(st, keys, here, reuse.current_semantics(), "cuda:NVIDIA H100")
    assert not m.found
    assert m.why_not() == f"not reused: 4 trained on {kind}, here cuda:NVIDIA H100"


def test_an_identity_being_trained_is_waited_for_not_trained_twice(lab):
    tmp, st, a = lab
    bob, _ = st.add_user("bob")
    key = ("f" * 16, 0)
    d = str(tmp / "store" / "d")
    sd, _ = st.submit(bob, name="d", spec_text="", spec_source="d", sweep_dir=d)
    sem, kind = reuse.current_semantics(), reuse.expected_device_kind(a)
    reuse.claim(st, [key], sweep_id=sd.id, owner_id=bob.id, sweep_dir=d, semantics=sem,
                device_kind=kind)
    m = reuse.match(st, [key], str(tmp / "store" / "e"), sem, kind)
    assert list(m.training) == [key] and m.training[key].sweep_id == sd.id
    assert reuse.match(st, [key], d, sem, kind).training == {}  # its own claim
    reuse.release(st, [key], sweep_dir=d)  # d was cancelled: nobody waits, nobody is told why
    m = reuse.match(st, [key], str(tmp / "store" / "e"), sem, kind)
    assert not m.training and not m.found and not m.refused


def test_rows_written_before_the_column_are_of_unknown_semantics():
    assert reuse.semantics_key(None, "2.13.0") == "unknown"
    assert reuse.semantics_key(pd.NA, "2.13.0") == "unknown"
    assert reuse.semantics_key(1, "2.13.0") == "1+torch2.13.0"


def test_a_search_has_no_identities_ahead():
    spec = type("S", (), {"search": object()})()
    assert reuse.identities_of(spec) == []
    assert dataclasses.is_dataclass(reuse.Match)

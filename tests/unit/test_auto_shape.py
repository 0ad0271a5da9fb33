"""`model.d` / `model.rank: auto`: FORGE sized from its group's smallest faithful real Wedderburn
sum (issue 13), resolved when the config is built, and hashed and stored as the number."""

import pytest

from grokray.config import MODEL_AUTO, TrialConfig
from grokray.errors import ConfigError
from grokray.models.forge import AUTO_MARGIN, auto_shape
from tests.helpers.configs import defaults

_cfg = defaults


@pytest.mark.parametrize("group, dim, rank, d, R", [
    ("S3", 4, 7, 32, 256),       # M_2(R)
    ("S4", 9, 23, 32, 256),      # M_3(R)
    ("A5", 9, 23, 32, 256),
    ("F21", 18, 69, 32, 256),    # M_3(C): 3.7 x 69 = 255.3
    ("Heis3", 18, 69, 32, 256),
    ("F20", 16, 49, 32, 256),    # M_4(R)
    ("F42", 36, 153, 36, 568),   # M_6(R)
    ("F55", 50, 279, 50, 1040),  # M_5(C)
    ("Z60", 2, 3, 32, 256),      # M_1(C)
    ("Z2xZ2xZ2xZ2", 4, 4, 32, 256),  # four M_1(R): a faithful sum of more than 3 parts
])
def test_auto_shape_follows_the_smallest_faithful_sum(group, dim, rank, d, R):
    from grokray.cprank.faithful import smallest_faithful
    from grokray.groups import get_group

    f = smallest_faithful(get_group(group))
    assert (f["dim"], f["rank"]) == (dim, rank)
    assert auto_shape(group) == {"d": d, "rank": R}
    assert R >= AUTO_MARGIN * rank and R % 8 == 0 and d == max(MODEL_AUTO["d"], dim)
    assert R == MODEL_AUTO["rank"] or R - 8 < AUTO_MARGIN * rank


def test_the_default_is_auto_and_resolved_to_numbers():
    c = _cfg(arch="forge", group="F55")
    assert (c.model.d, c.model.rank) == (50, 1040) and c.auto_fields == ("d", "rank")
    assert c.to_dict()["model"]["d"] == 50 and c.flat()["model_rank"] == 1040
    assert '"d":50' in c.canonical_json() and '"rank":1040' in c.canonical_json()


def test_auto_and_its_resolved_value_have_one_identity():
    for group in ("F55", "F42", "S4", "F21"):
        auto = _cfg(arch="forge", group=group)
        explicit = _cfg(arch="forge", group=group, **{"model.d": auto.model.d,
                                                     "model.rank": auto.model.rank})
        spelled = _cfg(arch="forge", group=group, **{"model.d": "auto", "model.rank": "AUTO"})
        assert auto.config_hash() == explicit.config_hash() == spelled.config_hash()
        assert explicit.auto_fields == ()
        # the stored config rebuilds to the same identity
        assert TrialConfig.from_dict(auto.to_dict()).config_hash() == auto.config_hash()
    assert _cfg(arch="forge", group="F55").config_hash() != \
        _cfg(arch="forge", group="F55", **{"model.d": 32, "model.rank": 256}).config_hash()


def test_an_explicit_number_wins():
    c = _cfg(arch="forge", group="F55", **{"model.d": 40})
    assert (c.model.d, c.model.rank) == (40, 1040) and c.auto_fields == ("rank",)
    c = _cfg(arch="forge", group="F55", **{"model.rank": 64})
    assert (c.model.d, c.model.rank) == (50, 64)


def test_auto_is_resolved_again_when_the_group_or_arch_changes():
    base = TrialConfig.from_dict({"arch": "forge", "group": "S3"})
    assert (base.model.d, base.model.rank) == (32, 256)
    f42 = base.with_overrides({"group": "F42"})
    assert (f42.model.d, f42.model.rank) == (36, 568)
    assert (f42.with_overrides({"group": "S3"}).model.rank) == 256
    mlp = f42.with_overrides({"arch": "mlp"})  # an MLP of its own: the plain default
    assert (mlp.model.d, mlp.model.rank) == (32, 256)
    # an explicit number set once stays through later overrides
    fixed = base.with_overrides({"model.rank": 300}).with_overrides({"group": "F55"})
    assert (fixed.model.d, fixed.model.rank) == (50, 300)


def test_the_matched_mlp_sees_the_resolved_forge_shape():
    from grokray.models.mlp import hidden_width

    forge = _cfg(arch="forge", group="F42")
    mlp = _cfg(arch="mlp", group="F42", **{"model.matched_budget": True})
    assert (mlp.model.d, mlp.model.rank) == (forge.model.d, forge.model.rank) == (36, 568)
    explicit = _cfg(arch="mlp", group="F42", **{"model.matched_budget": True,
                                                "model.d": 36, "model.rank": 568})
    assert mlp.config_hash() == explicit.config_hash()
    assert hidden_width(mlp, 42, 42) == hidden_width(explicit, 42, 42)
    small = _cfg(arch="mlp", group="F42", **{"model.matched_budget": True, "model.d": 36,
                                             "model.rank": 256})
    assert hidden_width(mlp, 42, 42) > hidden_width(small, 42, 42)


@pytest.mark.parametrize("value", ["big", "-1", "1.5"])
def test_a_bad_shape_value_is_one_line(value):
    with pytest.raises(ConfigError) as e:
        _cfg(arch="forge", **{"model.d": value})
    msg = str(e.value)
    assert "\n" not in msg and "model.d" in msg
    if value == "big":
        assert "'auto'" in msg


def test_a_dry_run_shows_the_resolved_shapes(tmp_path, capsys):
    import json

    from grokray.cli import main as cli_main

    spec = tmp_path / "s.yaml"
    spec.write_text("name: auto\nconfig: {arch: forge, steps: 100}\n"
                    "axes:\n  group: [S4, F42, F55]\n  model.rank: [auto, 64]\n")
    assert cli_main(["sweep", str(spec), "--dry-run", "--out", str(tmp_path / "o")]) == 0
    text = capsys.readouterr().out
    line = next(x for x in text.splitlines() if x.startswith("model.d/model.rank auto"))
    assert "d 32 R 256 (1 configs: S4)" in line and "d 36 R 568 (1 configs: F42)" in line
    assert "d 50 R 1040 (1 configs: F55)" in line and "d 50 R 64 (1 configs: F55)" in line
    assert cli_main(["sweep", str(spec), "--dry-run", "--json", "--out",
                     str(tmp_path / "o")]) == 0
    shapes = json.loads(capsys.readouterr().out)["auto_shapes"]
    assert {(s["d"], s["rank"]) for s in shapes} == {(32, 256), (36, 568), (50, 1040), (32, 64),
                                                    (36, 64), (50, 64)}
    assert not (tmp_path / "o").exists()

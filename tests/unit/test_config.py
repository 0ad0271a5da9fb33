import pytest

from grokray.config import TrialConfig, load_yaml, valid_keys
from grokray.errors import ConfigError, GrokrayError


def test_defaults_round_trip():
    cfg = TrialConfig()
    assert TrialConfig.from_dict(cfg.to_dict()) == cfg


def test_unknown_key_lists_valid_ones():
    with pytest.raises(ConfigError) as e:
        TrialConfig.from_dict({"grp": "S4"})
    msg = str(e.value)
    assert "'grp'" in msg and "group" in msg and "model.rank" in msg
    assert isinstance(e.value, GrokrayError)
    with pytest.raises(ConfigError, match="model.rnk"):
        TrialConfig.from_dict({"model": {"rnk": 3}})


def test_bad_values():
    with pytest.raises(ConfigError, match="optim.lr"):
        TrialConfig().with_overrides({"optim.lr": "fast"})
    with pytest.raises(ConfigError, match="valid: mlp, forge"):
        TrialConfig().with_overrides({"arch": "cnn"})
    with pytest.raises(ConfigError, match="train_frac"):
        TrialConfig().with_overrides({"train_frac": 1.5})
    with pytest.raises(ConfigError, match="steps"):
        TrialConfig().with_overrides({"steps": "2.5"})


def test_overrides_parse_strings_by_type():
    cfg = TrialConfig().with_overrides({
        "model.rank": "32", "optim.lr": "1e-3", "group": "S3", "seeds": "0,1,2",
        "data_seed": "null", "model.matched_budget": "true", "forge.wd_dad": "0.5",
    })
    assert cfg.model.rank == 32 and cfg.optim.lr == 1e-3 and cfg.group == "S3"
    assert cfg.seeds == [0, 1, 2] and cfg.data_seed is None
    assert cfg.model.matched_budget is True and cfg.forge.wd_dad == 0.5
    assert TrialConfig().with_overrides({"seeds": "[3, 4]"}).seeds == [3, 4]


def test_hash_excludes_seeds_and_normalizes_numbers():
    a = TrialConfig.from_dict({"group": "S3", "optim": {"lr": 0.001}, "seeds": [0]})
    b = TrialConfig.from_dict({"group": "S3", "optim": {"lr": "1e-3"}, "seeds": [5, 6]})
    assert a.config_hash() == b.config_hash()
    assert len(a.config_hash()) == 16
    c = a.with_overrides({"model.hidden": 8})  # a field the MLP reads
    assert c.config_hash() != a.config_hash()
    assert a.with_overrides({"device": "cpu"}).config_hash() != a.config_hash()
    assert a.with_overrides({"label": "x"}).config_hash() == a.config_hash()


def test_flat():
    f = TrialConfig().with_overrides({"model.rank": 7, "metrics.cheap": "spectrum"}).flat()
    assert f["model_rank"] == 7 and f["group"] == "S4" and f["optim_lr"] == 1e-3
    assert "seeds" not in f and f["metrics_cheap"] == "spectrum"
    assert all(not isinstance(v, (list, dict)) for v in f.values())


def test_arm_and_data_seed():
    cfg = TrialConfig(arch="forge")
    assert cfg.arm == "forge"
    assert cfg.with_overrides({"grokfast.filter": "ema"}).arm == "forge+grokfast"
    assert cfg.with_overrides({"label": "mine"}).arm == "mine"
    assert cfg.seed_data_seed(3) == 3
    assert cfg.with_overrides({"data_seed": 9}).seed_data_seed(3) == 9


def test_dotted_keys_in_from_dict_and_sections_merge():
    cfg = TrialConfig.from_dict({"model": {"d": 8}, "model.rank": 4})
    assert cfg.model.d == 8 and cfg.model.rank == 4
    assert "optim.lr" in valid_keys()


def test_load_yaml(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text("group: Z7\nop: add\noptim:\n  lr: 1e-2\n")
    cfg = load_yaml(str(p))
    assert cfg.group == "Z7" and cfg.optim.lr == 0.01
    with pytest.raises(ConfigError, match="not found"):
        load_yaml(str(tmp_path / "missing.yaml"))

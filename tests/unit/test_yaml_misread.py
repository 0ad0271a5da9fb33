"""A text field whose unquoted value YAML 1.1 reads as a boolean or number (`name: off`,
`act: on`, `label: 1.5`, `name: 1:30`) gets one line saying what YAML read and to quote it, in
sweep specs (the spec's own fields, config:, axes, zip blocks, search choices) and run
configs; numbers in number fields, and quoted text, pass."""

from __future__ import annotations

import pytest

from grokray.config import load_yaml, text_keys
from grokray.errors import ConfigError, SpecError
from grokray.sweep.spec import parse_spec


def _problems(text: str) -> list[str]:
    with pytest.raises(SpecError) as exc:
        parse_spec(text, "s.yaml")
    return str(exc.value).splitlines()


def test_the_text_fields_of_a_config():
    keys = text_keys()
    assert {"group", "op", "arch", "label", "device", "dtype", "model.act", "optim.name",
            "grokfast.filter"} <= keys
    assert not {"steps", "seeds", "model.d", "model.rank", "optim.lr", "train_frac"} & keys


def test_the_specs_own_fields():
    got = _problems("name: off\ndescription: yes\nconfig: {group: S3}\n")
    assert got == [
        's.yaml:1: name: YAML read the unquoted off as the boolean false, not as text; quote '
        'it ("off") if you meant the text',
        's.yaml:2: description: YAML read the unquoted yes as the boolean true, not as text; '
        'quote it ("yes") if you meant the text']
    (line,) = _problems("name: 1:30\nconfig: {group: S3}\n")
    assert "YAML read the unquoted 1:30 as the number 90" in line


def test_config_axes_zip_and_search_values():
    got = _problems("name: t\nconfig: {group: S3, op: yes, label: 1.5, model: {act: off}}\n"
                    "zip:\n  - {optim.name: [adamw, no], model.d: [8, 16]}\n")
    assert [g.split(": YAML read")[0] for g in got] == [
        "s.yaml:2: op", "s.yaml:2: label", "s.yaml:2: model.act", "s.yaml:4: optim.name"]
    assert "the unquoted 1.5 as the number 1.5" in got[1]
    (line,) = _problems("name: t\nconfig: {group: S3}\naxes:\n  model.act: [relu, on]\n")
    assert line.startswith("s.yaml:4: model.act: YAML read the unquoted on as the boolean true")
    (line,) = _problems("name: t\nconfig: {group: S3}\nsearch:\n  space: {model.act: {choice: "
                        "[relu, off]}}\n  metric: final_val_acc\n  mode: max\n  num_samples: 2\n")
    assert line.startswith("s.yaml:4: model.act: YAML read the unquoted off")


def test_other_problems_still_show_and_numbers_in_number_fields_pass():
    got = _problems("name: t\ndescription: no\nconfig: {group: S3, optim: {name: null}}\n")
    assert len(got) == 2 and "bad value 'None' for optim.name" in got[1]
    spec = parse_spec('name: "off"\nconfig: {group: S3, label: "1.5", model: {d: 16}, optim: '
                      '{lr: 1.0e-3}}\nsteps: 100\n', "s.yaml")
    assert spec.name == "off" and spec.base.label == "1.5" and spec.base.model.d == 16


def test_run_config(tmp_path):
    p = tmp_path / "r.yaml"
    p.write_text("group: S3\narch: no\nmodel: {act: on, d: 16}\nsteps: 20\n")
    with pytest.raises(ConfigError) as exc:
        load_yaml(str(p))
    assert str(exc.value).splitlines() == [
        f'{p}:2: arch: YAML read the unquoted no as the boolean false, not as text; quote it '
        '("no") if you meant the text',
        f'{p}:3: model.act: YAML read the unquoted on as the boolean true, not as text; quote '
        'it ("on") if you meant the text']
    p.write_text("group: S3\narch: mlp\nmodel: {act: relu, d: 16}\nsteps: 20\n")
    assert load_yaml(str(p)).model.d == 16

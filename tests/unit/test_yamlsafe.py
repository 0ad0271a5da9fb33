"""The bounded YAML loader (grokray.yamlsafe) behind `grokray run CONFIG.yaml`: a config file
that is not UTF-8, a directory, an alias bomb, a recursive alias, a key given twice or not a
mapping gets one line naming the file (and line), exit 2. Sweep specs: tests/unit/test_spec*."""

from __future__ import annotations

import pytest

from grokray.cli import main as cli_main
from grokray.config import TrialConfig, load_yaml
from grokray.errors import ConfigError
from grokray.yamlsafe import LIMITS

BOMB = "a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1]\n" + "".join(
    f"{k}: &{k} [{', '.join([f'*{j}'] * 9)}]\n" for j, k in zip("abcdefg", "bcdefgh", strict=True)
)  # 9^8 values once expanded, 8 lines of text

BAD: list[tuple[str | bytes, str]] = [  # (file content, the start of the one-line error)
    (b"group: Z5\nop: \xff\xfe\n", "F:2: (file): not UTF-8 text (byte 0xff at offset 14)"),
    (BOMB, "F:6: (file): more than 200,000 values once YAML aliases are expanded"),
    ("a: &x [*x]\n", "F:1: (file): a YAML alias refers to a value that contains it"),
    ("group: Z5\ngroup: S3\n", "F:2: group: duplicate key; give each key once"),
    ("model:\n  d: 8\n  d: 16\n", "F:3: model.d: duplicate key"),
    ("? [a]\n: 1\n", "F:1: (top level): a key must be a plain name"),
    ("- group\n- Z5\n", "F: a run config is a mapping of config keys"),
    ("group: [Z5\n", "F:2: (file): not valid YAML"),
    ("x: " + "[" * 20 + "]" * 20 + "\n", "F:1: (file): nested more than 16 levels deep"),
    ("# " + "x" * LIMITS["bytes"] + "\n", "F: (file): larger than 1,048,576 bytes"),
]  # fmt: skip


@pytest.mark.parametrize("content,start", BAD, ids=[f"bad{i}" for i in range(len(BAD))])
def test_a_bad_run_config_is_one_line_exit_2(content, start, tmp_path, capsys):
    path = tmp_path / "c.yaml"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    assert cli_main(["run", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    where = start.replace("F", str(path), 1)
    assert len(err) == 1 and err[0].startswith(f"grokray run: error: {where}")


def test_missing_and_directory(tmp_path):
    with pytest.raises(ConfigError, match=r"missing.yaml: run config not found$"):
        load_yaml(str(tmp_path / "missing.yaml"))
    with pytest.raises(ConfigError, match="is a directory; give a run config YAML file"):
        load_yaml(str(tmp_path))


def test_an_empty_file_is_the_default_config(tmp_path):
    path = tmp_path / "empty.yaml"
    path.write_text("# nothing set\n")
    assert load_yaml(str(path)).config_hash() == TrialConfig().config_hash()

"""Sweep spec parsing: expansion, and one-line errors (exit 2, nothing written) for bad specs."""

from __future__ import annotations

import glob
import os

import pytest

from grokray.cli import main as cli_main
from grokray.errors import SpecError
from grokray.sweep.spec import parse_spec

GOOD = """\
name: t
out: {out}
config:
  train_frac: 0.5
  model: {{d: 16}}
axes:
  group: [Z5, S3]
  arch: [mlp, forge]
zip:
  - {{model.rank: [4, 8], optim.lr: [0.01, 0.001]}}
seeds: 3
steps: 100
eval_every: 10
resources: {{cpu: 1, gpu: 0.25}}
concurrency: 2
retries: 1
"""


def test_expansion_product_zip_seeds():
    spec = parse_spec(GOOD.format(out="o"), "good.yaml")
    cfgs = spec.trials()
    assert len(cfgs) == 2 * 2 * 2
    assert spec.seeds == [0, 1, 2] and all(c.seeds == [0, 1, 2] for c in cfgs)
    assert {(c.model.rank, c.optim.lr) for c in cfgs} == {(4, 0.01), (8, 0.001)}
    assert {c.steps for c in cfgs} == {100} and {c.eval_every for c in cfgs} == {10}
    assert len({c.config_hash() for c in cfgs}) == 8
    assert spec.gpu == 0.25 and spec.concurrency == 2 and spec.sweep_dir == "o/t"


def test_zip_values_may_repeat_per_key():
    spec = parse_spec("name: z\nconfig: {arch: forge}\n"  # FORGE reads model.rank (an MLP not)
                      "zip:\n  - {model.d: [8, 8, 16], model.rank: [4, 8, 8]}\n")
    assert [(c.model.d, c.model.rank) for c in spec.trials()] == [(8, 4), (8, 8), (16, 8)]


def test_seed_list_and_search():
    spec = parse_spec("name: s\nseeds: [3, 7]\nsearch:\n  space: {optim.lr: {loguniform: "
                      "[1.0e-4, 1.0e-2]}}\n  metric: final_val_acc\n  mode: max\n"
                      "  num_samples: 4\n", "s.yaml")
    assert spec.seeds == [3, 7] and spec.trials() == []
    from grokray.sweep.search import LogUniform

    assert spec.search.space == {"optim.lr": LogUniform(1e-4, 1e-2)}


# each: (spec text, a fragment the one error line must contain)
BAD = [
    ("name: t\nfoo: 1\n", "t.yaml:2: foo: unknown key"),
    ("foo: [\n", "not valid YAML"),
    ("- a\n- b\n", "a sweep spec is a mapping"),
    ("axes: {group: [S3]}\n", "name: missing"),
    ("name: 'a b'\n", "bad name"),
    ("name: t\nconfig: {model: {rnk: 3}}\n", "did you mean 'model.rank'"),
    ("name: t\nconfig:\n  optim:\n    lr: fast\n", "t.yaml:4: config.optim.lr: bad value"),
    ("name: t\nconfig: [1, 2]\n", "config: expected a mapping"),
    ("name: t\nconfig: {seeds: [1]}\n", "set seeds at the top level"),
    ("name: t\naxes:\n  group: []\n", "t.yaml:3: axes.group: empty axis"),
    ("name: t\naxes: {}\n", "expected a non-empty mapping"),
    ("name: t\naxes:\n  group: S3\n", "expected a list of values"),
    ("name: t\naxes:\n  group: [S3, Q9]\n", "bad group 'Q9'"),
    ("name: t\naxes:\n  arch: [mlp, cnn]\n", "bad value 'cnn' for arch"),
    ("name: t\naxes:\n  model.width: [1, 2]\n", "unknown config key"),
    ("name: t\naxes:\n  model: [1, 2]\n", "is a section"),
    ("name: t\naxes:\n  group: [S3, S3]\n", "duplicate value"),
    ("name: t\nzip:\n  - {model.d: [8, 16], model.rank: [4]}\n", "equal lengths"),
    ("name: t\naxes: {model.d: [8]}\nzip:\n  - {model.d: [8, 16]}\n", "already an axis"),
    ("name: t\nseeds: 0\n", "seed count must be in 1..1024"),
    ("name: t\nseeds: [1, 1]\n", "seeds must be distinct"),
    ("name: t\nseeds: two\n", "seeds: expected a count"),
    ("name: t\nsteps: -5\n", "steps: expected an int in 1.."),
    ("name: t\neval_every: 2.5\n", "eval_every: expected an int in 1.."),
    ("name: t\nsteps: 10\nconfig: {steps: 20}\n", "set it once"),
    ("name: t\nresources: {cpu: 0}\n", "resources.cpu: expected a number in (0, "),
    ("name: t\nresources: {gpu: -1}\n", "resources.gpu"),
    ("name: t\nresources: {tpu: 1}\n", "resources.tpu: unknown key"),
    ("name: t\nconcurrency: 0\n", "concurrency: expected an int in 1.."),
    ("name: t\nretries: -1\n", "retries: expected an int in 0..100"),
    ("name: t\nconfig: {group: NotAGroup}\n", "config.group: unknown group"),
    ("name: t\nsearch: {space: {optim.lr: {normal: [0, 1]}}, metric: final_val_acc, "
     "num_samples: 2}\n", "unknown distribution"),
    ("name: t\nsearch: {space: {optim.lr: {loguniform: [0, 1]}}, metric: final_val_acc, "
     "num_samples: 2}\n", "low > 0"),
    ("name: t\nsearch: {space: {optim.lr: {uniform: [0.1, 0.2]}}, metric: accuracy, "
     "num_samples: 2}\n", "unknown metric"),
    ("name: t\nsearch: {space: {optim.lr: {uniform: [0.1, 0.2]}}, metric: grok_step, "
     "num_samples: 0}\n", "num_samples: expected an int >= 1"),
    ("name: t\naxes: {group: [S3]}\nsearch: {space: {optim.lr: {uniform: [0.1, 0.2]}}, "
     "metric: grok_step, num_samples: 2}\n", "move the axes into search.space"),
    ("name: t\nname: u\n", "duplicate key"),
    ("name: t\nzip:\n  - {model.d: [8, 8], model.rank: [4, 4]}\n", "duplicate rows"),
]


@pytest.mark.parametrize("text,fragment", BAD, ids=[f"bad{i}" for i in range(len(BAD))])
def test_malformed_spec_one_line_exit_2(text, fragment, tmp_path, capsys):
    path = tmp_path / "t.yaml"
    path.write_text(text)
    with pytest.raises(SpecError) as info:
        parse_spec(text, str(path))
    msg = str(info.value)
    assert len(msg.splitlines()) == 1, msg
    assert fragment.replace("t.yaml", str(path)) in msg or fragment in msg, msg
    out_root = tmp_path / "out"
    rc = cli_main(["sweep", str(path), "--out", str(out_root)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2
    assert len(err) == 1 and str(path) in err[0], err
    assert not out_root.exists()


def test_missing_file_exit_2(tmp_path, capsys):
    assert cli_main(["sweep", str(tmp_path / "nope.yaml"), "--dry-run"]) == 2
    assert "not found" in capsys.readouterr().err


_SWEEPS_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "sweeps")
SWEEPS = sorted(glob.glob(os.path.join(_SWEEPS_DIR, "*.yaml"))
                + glob.glob(os.path.join(_SWEEPS_DIR, "cpu", "*.yaml")))


@pytest.mark.parametrize("path", SWEEPS, ids=[os.path.relpath(p, _SWEEPS_DIR) for p in SWEEPS])
def test_shipped_sweeps_validate(path):
    from grokray.sweep.spec import load_spec

    spec = load_spec(path)
    assert spec.trials() or spec.search is not None
    assert len(spec.seeds) >= 2

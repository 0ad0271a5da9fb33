"""A corpus of malformed sweep specs: each gets one line `FILE:LINE: key: problem`, exit 2, and
nothing is written; plus the bounds (file size, nesting, aliases, seeds, grid) and the dry run,
which counts a grid instead of building it."""

from __future__ import annotations

import json
import re

import pytest

from grokray.cli import main as cli_main
from grokray.errors import SpecError
from grokray.sweep.spec import load_spec, parse_spec
from grokray.yamlsafe import LIMITS

OK = "name: t\nconfig: {group: Z5, arch: mlp}\nsteps: 10\n"

# (spec text or bytes, the key the line names, a fragment of the problem)
CORPUS: list[tuple[str | bytes, str, str]] = [
    # the name: a plain slug
    ("name: ..\n", "name", "bad name"),
    ("name: .\n", "name", "bad name"),
    ("name: ../escape\n", "name", "bad name"),
    ("name: /abs\n", "name", "bad name"),
    ("name: a/b\n", "name", "bad name"),
    ("name: -dash\n", "name", "bad name"),
    ("name: ''\n", "name", "bad name"),
    ("name: 12\n", "name", "YAML read the unquoted 12 as the number 12"),
    ("name: [a]\n", "name", "bad name"),
    ("name: " + "a" * 65 + "\n", "name", "at most 64"),
    ("name: 'a\\u0000b'\n", "name", "bad name"),
    ("name: .hidden\n", "name", "bad name"),
    ("name: ~\n", "name", "missing"),
    # out
    ("name: t\nout: ftp://host/x\n", "out", "unsupported URL scheme 'ftp'"),
    ("name: t\nout: http://host/x\n", "out", "unsupported URL scheme 'http'"),
    ("name: t\nout: ''\n", "out", "expected a directory path"),
    ("name: t\nout: 3\n", "out", "YAML read the unquoted 3 as the number 3"),
    ("name: t\nout: [a, b]\n", "out", "expected a directory path"),
    # seeds
    ("name: t\nseeds: 1000000000\n", "seeds", "seed count must be in 1..1024"),
    ("name: t\nseeds: -3\n", "seeds", "seed count must be in"),
    ("name: t\nseeds: [0, -1]\n", "seeds", "ints in 0.."),
    ("name: t\nseeds: [0, 4294967296]\n", "seeds", "ints in 0.."),
    ("name: t\nseeds: []\n", "seeds", "expected a count"),
    ("name: t\nseeds: [a]\n", "seeds", "expected a count"),
    ("name: t\nseeds: true\n", "seeds", "expected a count"),
    ("name: t\nseeds: 2.5\n", "seeds", "expected a count"),
    ("name: t\nseeds: {a: 1}\n", "seeds", "expected a count"),
    ("name: t\nseeds: [" + ", ".join(map(str, range(1025))) + "]\n", "seeds", "at most 1024"),
    # steps, eval_every, resources, concurrency, retries
    ("name: t\nsteps: 1.0e+30\n", "steps", "expected an int in 1.."),
    ("name: t\nsteps: 10000000000\n", "steps", "expected an int in 1.."),
    ("name: t\nsteps: .inf\n", "steps", "expected an int in 1.."),
    ("name: t\nsteps: .nan\n", "steps", "expected an int in 1.."),
    ("name: t\nsteps: '100'\n", "steps", "expected an int in 1.."),
    ("name: t\neval_every: 0\n", "eval_every", "expected an int in 1.."),
    ("name: t\nresources: {cpu: .inf}\n", "resources.cpu", "expected a number in"),
    ("name: t\nresources: {cpu: 100000}\n", "resources.cpu", "expected a number in"),
    ("name: t\nresources: {gpu: 1.5}\n", "resources.gpu", "fraction of a GPU"),
    ("name: t\nresources: {gpu: 1000}\n", "resources.gpu", "expected a number in"),
    ("name: t\nresources: 4\n", "resources", "expected a mapping"),
    ("name: t\nconcurrency: 1.5\n", "concurrency", "expected an int in"),
    ("name: t\nconcurrency: 10000000\n", "concurrency", "expected an int in"),
    ("name: t\nretries: 1000\n", "retries", "expected an int in 0..100"),
    ("name: t\nretries: yes\n", "retries", "expected an int in 0..100"),
    ("name: t\ncapacity_study: 1\n", "capacity_study", "expected true or false, got 1"),
    ("name: t\ncapacity_study: maybe\n", "capacity_study", "expected true or false"),
    ("name: t\ncapacity_study: ~\n", "capacity_study", "expected true or false, got None"),
    ("name: t\ndescription: [a]\n", "description", "expected free text"),
    # the grid
    ("name: t\naxes:\n  optim.lr: [" + ", ".join(f"{i}.0e-5" for i in range(1, 501)) + "]\n"
     "  model.d: [" + ", ".join(map(str, range(1, 501))) + "]\n", "axes",
     "250,000 configs; at most 100,000"),
    ("name: t\nseeds: 100\naxes:\n  model.d: [" + ", ".join(map(str, range(1, 20001))) + "]\n",
     "seeds", "2,000,000 seed-runs"),
    ("name: t\naxes:\n  model.d: [8, 8.0]\n", "axes.model.d", "same config"),
    ("name: t\naxes:\n  group: [S4, s4]\n", "axes.group", "same config"),
    ("name: t\nconfig: {group: Z7}\naxes:\n  op: [add, x+y]\n", "axes.op", "same config"),
    ("name: t\naxes:\n  optim.lr: [0.001, 1.0e-3]\n", "axes.optim.lr", "duplicate value"),
    ("name: t\naxes:\n  seeds: [1, 2]\n", "axes.seeds", "not an axis"),
    ("name: t\naxes:\n  group: [Z5, [S3]]\n", "axes.group", "value"),
    ("name: t\naxes:\n  model.d: [8, {a: 1}]\n", "axes.model.d", "value"),
    ("name: t\naxes:\n  model.d: [8, -1]\n", "axes.model.d", "must be > 0"),
    ("name: t\nzip: 5\n", "zip", "expected a list of mappings"),
    ("name: t\nzip:\n  - [1, 2]\n", "zip.0", "expected a mapping"),
    ("name: t\nzip:\n  - {model.d: 8}\n", "zip.0.model.d", "expected a list"),
    # ops against groups, at load time
    ("name: t\nconfig: {group: Z6, op: div}\n", "config.op", "prime modulus"),
    ("name: t\nconfig: {group: S4, op: add}\n", "config.op", "must be Z<p>"),
    ("name: t\nconfig: {group: Z5, op: pow}\n", "config.op", "unknown op"),
    ("name: t\nconfig: {op: div}\naxes:\n  group: [Z5, Z6]\n", "axes.group", "prime modulus"),
    ("name: t\nconfig: {group: Z9}\naxes:\n  op: [add, div]\n", "axes.op", "prime modulus"),
    ("name: t\nzip:\n  - {group: [Z5, Z8], op: [div, div]}\n", "zip.0.group", "prime modulus"),
    ("name: t\nsearch: {space: {op: {choice: [add, div]}}, metric: grok_step, num_samples: 2}\n"
     "config: {group: Z4}\n", "search.space.op", "prime modulus"),
    # search
    ("name: t\nsearch: {space: {optim.lr: {uniform: [1, .inf]}}, metric: grok_step, "
     "num_samples: 2}\n", "search.space.optim.lr.uniform", "expected [low, high]"),
    ("name: t\nsearch: {space: {optim.lr: {quniform: [0, 1, 0]}}, metric: grok_step, "
     "num_samples: 2}\n", "search.space.optim.lr.quniform", "q must be > 0"),
    ("name: t\nsearch: {space: {model.d: {randint: [1.5, 8]}}, metric: grok_step, "
     "num_samples: 2}\n", "search.space.model.d.randint", "needs ints"),
    ("name: t\nsearch: {space: {model.d: {choice: []}}, metric: grok_step, num_samples: 2}\n",
     "search.space.model.d.choice", "non-empty list"),
    ("name: t\nsearch: {space: {model.d: {choice: [8, 8]}}, metric: grok_step, "
     "num_samples: 2}\n", "search.space.model.d.choice", "duplicate choices"),
    ("name: t\nsearch: {space: {model.d: {choice: [8, -2]}}, metric: grok_step, "
     "num_samples: 2}\n", "search.space.model.d", "must be > 0"),
    ("name: t\nsearch: {space: {seeds: {choice: [1, 2]}}, metric: grok_step, num_samples: 2}\n",
     "search.space.seeds", "not searched"),
    ("name: t\nsearch: {space: {optim.lr: {uniform: [0.1, 0.2]}}, metric: grok_step, "
     "num_samples: 10000000}\n", "search.num_samples", "at most 100,000"),
    ("name: t\nsearch: {space: {optim.lr: {uniform: [0.1, 0.2]}}, metric: grok_step, "
     "num_samples: 2, seed: -1}\n", "search.seed", "expected an int in 0.."),
    ("name: t\nsearch: {space: {optim.lr: {uniform: [0.1, 0.2]}}, metric: [a], "
     "num_samples: 2}\n", "search.metric", "unknown metric"),
    ("name: t\nsearch: {space: {optim.lr: {uniform: [0.1, 0.2]}}, metric: grok_step, "
     "num_samples: 2, mode: up}\n", "search.mode", "expected min or max"),
    ("name: t\nsearch: [1]\n", "search", "expected a mapping"),
    ("name: t\nsearch: {space: {optim.lr: 0.1}, metric: grok_step, num_samples: 2}\n",
     "search.space.optim.lr", "expected one {distribution: args}"),
    # YAML itself: bounded before it is built
    ("name: t\n" + "x: " + "[" * 5000 + "]" * 5000 + "\n", "(file)", "nested more than 16"),
    ("name: t\nconfig:\n" + "".join("  " * (i + 1) + f"k{i}:\n" for i in range(40)) + "\n",
     "(file)", "nested more than 16"),
    ("name: t\na: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
     "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
     "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]\n",
     "(file)", "aliases"),
    ("name: t\n" + "".join(f"k{i}: &a{i} 1\n" for i in range(70))
     + "".join(f"v{i}: *a{i}\n" for i in range(70)), "(file)", "more than 64 YAML aliases"),
    (b"name: t\nconfig: {group: \xff\xfe}\n", "(file)", "not UTF-8"),
    (b"name: t\x00\n", "(file)", "not valid YAML"),
    ("name: t\nconfig: !!python/object:os.system {}\n", "(file)", "not valid YAML"),
    ("name: t\n? [a, b]\n: 1\n", "(top level)", "plain name"),
    ("name: t\nseeds: 1" + "0" * 5000 + "\n", "(file)", "a value YAML cannot hold"),
    ("name: t\n---\nname: u\n", "(file)", "not valid YAML"),
    ("name: t\nsteps: 5\nsteps: 6\n", "steps", "duplicate key"),
    ("", "(top level)", "an empty file"),
    ("just a string\n", "(top level)", "a sweep spec is a mapping"),
    ("name: t\nconfig: {model: 3}\n", "config.model", "is a section"),
    ("name: t\nconfig: {train_frac: 2}\n", "config.train_frac", "train_frac"),
    ("name: t\nconfig: {group: Z1000000000000}\n", "config.group", ""),
]


def _write(tmp_path, text: str | bytes):
    path = tmp_path / "spec.yaml"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def test_corpus_is_large():
    assert len(CORPUS) >= 60


@pytest.mark.parametrize("text,key,fragment", CORPUS,
                         ids=[f"c{i:02d}" for i in range(len(CORPUS))])
def test_malformed_spec(text, key, fragment, tmp_path, capsys):
    path = _write(tmp_path, text)
    with pytest.raises(SpecError) as info:
        load_spec(path)
    lines = str(info.value).splitlines()
    assert len(lines) == 1, lines
    line = lines[0]
    m = re.match(rf"^{re.escape(str(path))}(:\d+)?: (\(top level\)|\S+): (.+)$", line)
    assert m, line
    assert m.group(2) == key, line
    assert fragment in m.group(3), line
    out = tmp_path / "out"
    rc = cli_main(["sweep", str(path), "--out", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and err == [line]
    assert not out.exists()


def test_huge_file_is_refused_unread(tmp_path):
    path = tmp_path / "big.yaml"
    path.write_text("name: t\n" + "# " + "x" * LIMITS["bytes"] + "\n")
    with pytest.raises(SpecError, match=r"big.yaml: \(file\): larger than 1,048,576 bytes"):
        load_spec(path)


def test_line_numbers_point_at_the_value(tmp_path):
    path = _write(tmp_path, "name: t\naxes:\n  group:\n    - Z5\n    - NotAGroup\n")
    with pytest.raises(SpecError) as info:
        load_spec(path)
    assert str(info.value).startswith(f"{path}:5: axes.group: ")


def test_every_problem_has_its_line(tmp_path):
    path = _write(tmp_path, "name: ..\nseeds: 0\nretries: -1\n")
    with pytest.raises(SpecError) as info:
        load_spec(path)
    lines = str(info.value).splitlines()
    assert [ln.split(": ")[0] for ln in lines] == [f"{path}:1", f"{path}:2", f"{path}:3"]


def test_a_valid_alias_is_fine():
    spec = parse_spec("name: t\nconfig:\n  model: &m {d: 8}\n  transformer: {d_model: 16}\n"
                      "axes:\n  group: [Z5, S3]\n")
    assert [c.model.d for c in spec.trials()] == [8, 8]


def test_merged_points_run_once():
    # an axis value equal to the fixed config's value gives the same identity as the fixed one
    spec = parse_spec("name: t\nconfig: {group: Z5}\naxes:\n  model.d: [8, 16]\n"
                      "  optim.lr: [0.001, 0.01]\n")
    assert spec.n_points == 4 and len(spec.trials()) == 4 and spec.merged == 0


def test_points_of_one_identity_run_once():
    # an MLP reads no forge.* setting: its two lambda_alg points are one trial
    spec = parse_spec("name: t\nconfig: {group: Z5}\naxes:\n  arch: [mlp, forge]\n"
                      "  forge.lambda_alg: [0.1, 0.2]\n")
    assert spec.n_points == 4 and len(spec.trials()) == 3 and spec.merged == 1
    assert len({c.config_hash() for c in spec.trials()}) == 3


def _grid(n_axes: int, per_axis: int) -> str:
    keys = ["model.d", "model.hidden", "model.rank", "optim.lr", "optim.weight_decay",
            "train_frac", "model.init_scale"]
    lines = ["name: big", "config: {group: Z5}", "axes:"]
    for i in range(n_axes):
        k = keys[i]
        vals = [f"{0.01 + 0.001 * j:.3f}" if k in ("optim.lr", "train_frac") else
                (f"{0.5 + j:.1f}" if k in ("optim.weight_decay", "model.init_scale") else
                 str(j + 1)) for j in range(per_axis)]
        lines.append(f"  {k}: [{', '.join(vals)}]")
    return "\n".join(lines) + "\n"


def test_dry_run_counts_without_building(tmp_path, capsys, monkeypatch):
    from grokray.sweep.spec import SweepSpec

    def no_build(self):
        raise AssertionError("the grid was built")

    monkeypatch.setattr(SweepSpec, "trials", no_build)
    path = tmp_path / "big.yaml"
    path.write_text(_grid(5, 10))  # 10^5 points, at the limit
    rc = cli_main(["sweep", str(path), "--dry-run", "--json", "--out", str(tmp_path / "o")])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert out["grid_points"] == 100_000 and out["trials"] == 100_000
    assert out["seed_runs"] == 100_000 and out["todo_trials"] == 100_000
    assert out["todo_seed_steps"] == 100_000 * 15000 and out["counted_not_built"] is True
    assert not (tmp_path / "o").exists()


def test_dry_run_of_ten_million_points_answers_with_the_count(tmp_path, capsys):
    path = tmp_path / "huge.yaml"
    path.write_text(_grid(7, 10))  # 10^7 points
    rc = cli_main(["sweep", str(path), "--dry-run"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1
    assert "the sweep has 10,000,000 configs; at most 100,000" in err[0]


def test_dry_run_json_small(tmp_path, capsys):
    path = tmp_path / "s.yaml"
    path.write_text("name: s\nconfig: {group: Z5}\naxes:\n  arch: [mlp, forge]\n"
                    "  model.d: [8, 16, 32]\nseeds: 2\nsteps: 10\n")
    assert cli_main(["sweep", str(path), "--dry-run", "--json", "--out", str(tmp_path)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["grid_points"] == 6 and out["seed_runs"] == 12 and out["todo_seed_steps"] == 120
    assert [a["keys"] for a in out["axes"]] == [["arch"], ["model.d"]]
    assert out["axes"][1]["values"] == [8, 16, 32]


def test_seed_steps_with_a_steps_axis():
    # a top-level steps is the default; an axis on steps overrides it per trial
    spec = parse_spec("name: s\nconfig: {group: Z5}\nseeds: 3\nsteps: 99\naxes:\n"
                      "  steps: [10, 20]\n  model.d: [8, 16]\n")
    assert spec.seed_steps() == 3 * 2 * (10 + 20)
    assert spec.seed_steps() == sum(len(c.seeds) * c.steps for c in spec.trials())


def test_capacity_study_is_a_flag_outside_every_identity():
    text = "name: s\nconfig: {group: Z5}\naxes:\n  arch: [mlp, forge]\n"
    plain, study = parse_spec(text), parse_spec(text + "capacity_study: true\n")
    assert plain.capacity_study is False and study.capacity_study is True
    assert parse_spec(text + "capacity_study: false\n").capacity_study is False
    assert [c.config_hash() for c in study.trials()] == [c.config_hash() for c in plain.trials()]


def test_axes_hold_keys_rows_and_their_yaml_paths():
    spec = parse_spec("name: s\nconfig: {group: Z5}\naxes:\n  model.d: [8, 16]\n"
                      "zip:\n  - {optim.lr: [0.1, 0.2, 0.3], model.rank: [4, 8, 16]}\n")
    d, block = spec.axes
    assert (d.keys, d.rows, d.where) == (("model.d",), ((8,), (16,)),
                                          (("axes", "model.d", 0), ("axes", "model.d", 1)))
    assert block.keys == ("optim.lr", "model.rank") and block.label == "optim.lr+model.rank"
    assert block.rows[2] == (0.3, 16) and block.where[2] == ("zip", 0, "optim.lr", 2)
    assert len(block) == 3 and block.index("model.rank") == 1 and block.index("arch") is None
    assert [d.shown(r) for r in d.rows] == [8, 16] and block.shown(block.rows[0]) == (0.1, 4)
    assert spec.n_points == 6 and spec.swept_keys == ["model.d", "optim.lr", "model.rank"]
    assert list(spec.points())[-1] == {"model.d": 16, "optim.lr": 0.3, "model.rank": 16}

"""Sweep specs on disk for tests: a file's own YAML template written into tmp_path with its
fields (`write`), or also loaded (`load`); and the tiny two-group spec most sweep tests share
(`tiny_spec`)."""

from __future__ import annotations

from pathlib import Path


def write(tmp_path, template: str, file: str, /, **fields) -> Path:
    """`template.format(**fields)` written to tmp_path/file; its path. (A field may be called
    `name`, as a spec's is.)"""
    path = Path(tmp_path) / file
    path.write_text(template.format(**fields))
    return path


def load(tmp_path, template: str, file: str, /, **fields):
    """`write`, then the SweepSpec that `grokray sweep` would load from it."""
    from grokray.sweep.spec import load_spec

    return load_spec(str(write(tmp_path, template, file, **fields)))


TINY = """\
name: tiny
out: {out}
config:
  train_frac: 0.6
  device: cpu
  model: {{d: 8, hidden: 16, rank: 8}}
axes:
  group: {groups}
  arch: [mlp, forge]
seeds: 2
steps: {steps}
eval_every: 10
resources: {{cpu: 1}}
concurrency: {concurrency}
retries: 1
"""


def tiny_spec(tmp_path, groups=("Z5", "S3"), steps=20, concurrency=2, name="tiny.yaml") -> Path:
    """The spec `tiny` (groups x MLP/FORGE, two seeds, a CPU each, one retry) writing into
    tmp_path/out; its path."""
    return write(tmp_path, TINY, name, out=Path(tmp_path) / "out",
                 groups="[" + ", ".join(groups) + "]", steps=steps, concurrency=concurrency)

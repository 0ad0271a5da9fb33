"""Every shipped sweep and run config gives FORGE at least its group's smallest faithful block.

An exact FORGE solution needs d >= the dimension and R >= the real-rank bound of the group's
smallest faithful real Wedderburn sum (grokray/cprank/faithful.py); below it the ledger saw
FORGE memorize and stay (F21 at R 64 < 69: docs/reproduction.md). Only sweeps whose subject is
capacity itself declare `capacity_study: true` and may go below.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from grokray.config import TrialConfig, load_yaml
from grokray.cprank.faithful import smallest_faithful
from grokray.errors import SpecError
from grokray.groups import get_group
from grokray.sweep.spec import SweepSpec, load_spec, parse_spec

SWEEPS = Path(__file__).resolve().parents[2] / "sweeps"
FILES = sorted(SWEEPS.rglob("*.yaml"))
RUN_DIR = SWEEPS / "run"


def _load(path: Path) -> tuple[list[TrialConfig], SweepSpec | None]:
    """The configs a file gives, as what it is: a run config under sweeps/run/, else a spec."""
    if RUN_DIR in path.parents:
        return [load_yaml(str(path))], None
    spec = load_spec(path)
    return spec.trials(), spec


def below_faithful(configs: list[TrialConfig]) -> list[str]:
    """One line per FORGE config whose d or rank is below its group's faithful-block bound."""
    out = []
    for cfg in configs:
        if cfg.arch != "forge":
            continue
        f = smallest_faithful(get_group(cfg.group))
        if f is not None and (cfg.model.d < f["dim"] or cfg.model.rank < f["rank"]):
            out.append(f"{cfg.group}: d {cfg.model.d} R {cfg.model.rank}; its smallest faithful "
                       f"block {'+'.join(f['components'])} needs d >= {f['dim']}, "
                       f"R >= {f['rank']}")
    return out


def test_every_file_is_loaded():
    assert len(FILES) >= 27 and any(RUN_DIR in p.parents for p in FILES)


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(SWEEPS)) for p in FILES])
def test_forge_shapes_cover_the_faithful_block(path):
    configs, spec = _load(path)
    assert configs
    if spec is not None and spec.capacity_study:
        # the subject is capacity: the shapes are what the sweep varies
        assert {"model.rank", "model.d"} & set(spec.swept_keys), spec.swept_keys
        return
    assert below_faithful(configs) == []


def test_the_capacity_studies_are_the_capacity_grids():
    studies = {str(p.relative_to(SWEEPS)) for p in FILES
               if RUN_DIR not in p.parents and load_spec(p).capacity_study}
    assert studies == {"capacity_lift.yaml", "cpu/capacity.yaml", "cpu/diag_capacity.yaml",
                       "cpu/diag_capacity_long.yaml", "paper/capacity.yaml"}


def test_the_old_scaling_shape_is_caught():
    """What sweeps/scaling.yaml had (d 64, R 64) fails on the M_3(C) and M_5(C) groups."""
    spec = parse_spec("""
name: old
config: {arch: forge, model: {d: 64, rank: 64}}
axes: {group: [S4, F21, Heis3, F55, A5]}
steps: 10
eval_every: 5
""")
    bad = below_faithful(spec.trials())
    assert [b.split(":")[0] for b in bad] == ["F21", "Heis3", "F55"]
    assert "M_5(C) needs d >= 50, R >= 279" in bad[2]


def test_capacity_study_is_a_bool_outside_identity():
    text = "name: c\nconfig: {arch: forge, group: S4}\naxes: {model.rank: [4, 8]}\n" \
           "steps: 10\neval_every: 5\n"
    plain, study = parse_spec(text), parse_spec(text + "capacity_study: true\n")
    assert (plain.capacity_study, study.capacity_study) == (False, True)
    assert [c.config_hash() for c in plain.trials()] == [c.config_hash() for c in study.trials()]
    with pytest.raises(SpecError, match="capacity_study: expected true or false, got 'yes"):
        parse_spec(text + "capacity_study: yes please\n")

"""The packs a dry run counts from a grid's axes are the packs `pack_groups` builds."""

from __future__ import annotations

import pytest

from grokray.sweep.executors.packing import pack_groups
from grokray.sweep.pack_count import counted_pack_sizes
from grokray.sweep.spec import parse_spec

HEAD = """name: counted
out: /tmp/grokray-unused
config:
  group: {group}
  device: cpu
  model: {{d: 8, hidden: 16, rank: 8}}
  grokfast: {{alpha: 0.98, lamb: 2.0}}
{extra}axes:
{axes}
seeds: 2
steps: 40
"""

SPECS = {
    # the CPU ledger's ablations: MLP / MLP+Grokfast / FORGE / FORGE+Grokfast
    "ablation": ("Z97", "  op: add\n", "  arch: [mlp, forge]\n  grokfast.filter: [none, ema]"),
    "groups": ("S3", "", "  group: [D4, S3, Q8, Z2xZ4, Z6, Z8, A4]\n  optim.lr: [0.001, 0.01]"),
    "groups-archs": ("S3", "", "  arch: [transformer, mlp, forge]\n"
                               "  group: [D4, Q8, S3]\n  model.hidden: [16, 32]"),
    "filters": ("S3", "", "  arch: [mlp, forge]\n  grokfast.filter: [none, ema, ma]\n"
                          "  grokfast.window: [10, 20]\n  optim.weight_decay: [0.1, 1.0, 2.0]"),
    "metrics": ("D4", "", "  group: [D4, Q8, Z8]\n"
                          "  metrics.cheap: [[], [spectrum]]"),
    "transformer": ("S3", "  arch: transformer\n", "  optim.lr: [0.001, 0.01]"),
}


@pytest.mark.parametrize("name", list(SPECS))
@pytest.mark.parametrize("size", [1, 2, 3, 64])
def test_counted_packs_are_the_built_packs(name, size):
    group, extra, axes = SPECS[name]
    spec = parse_spec(HEAD.format(group=group, extra=extra, axes=axes))
    points = [spec.base.with_overrides(ov) for ov in spec.points()]  # before merging
    built = sorted(len(g) for g in pack_groups(points, size))
    assert sorted(counted_pack_sizes(spec, size)) == built


def test_ablation_arms_of_one_arch_form_one_pack():
    group, extra, axes = SPECS["ablation"]
    spec = parse_spec(HEAD.format(group=group, extra=extra, axes=axes))
    assert sorted(counted_pack_sizes(spec, 64)) == [2, 2]

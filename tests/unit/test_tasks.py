"""Tasks: group composition, Power et al. modular ops, and the deterministic split."""

from __future__ import annotations

import pytest
import torch

from grokray.errors import ConfigError, GroupError
from grokray.groups import get_group
from grokray.tasks import MOD_OPS, OPS, make_task, split


def test_composition_task_is_the_table():
    G = get_group("S3")
    task = make_task("S3")
    assert task.name == "S3" and task.op == "compose" and task.group is G
    assert len(task) == 36 and task.n_in == task.n_out == 6
    assert task.a.dtype == task.b.dtype == task.y.dtype == torch.int64
    assert torch.equal(task.y, G.table[task.a, task.b])
    pairs = set(zip(task.a.tolist(), task.b.tolist(), strict=True))
    assert len(pairs) == 36  # all pairs once
    assert make_task(G).y.equal(task.y) and make_task("s3", op="group").y.equal(task.y)


@pytest.mark.parametrize(
    "op,formula",
    [
        ("add", lambda a, b, p: (a + b) % p),
        ("sub", lambda a, b, p: (a - b) % p),
        ("mul", lambda a, b, p: (a * b) % p),
        ("x2+y2", lambda a, b, p: (a * a + b * b) % p),
        ("x2+xy+y2", lambda a, b, p: (a * a + a * b + b * b) % p),
        ("x2+xy+y2+x", lambda a, b, p: (a * a + a * b + b * b + a) % p),
        ("x3+xy", lambda a, b, p: (a**3 + a * b) % p),
        ("x3+xy2+y", lambda a, b, p: (a**3 + a * b * b + b) % p),
    ],
)
def test_modular_ops(op, formula):
    p = 11
    task = make_task("Z11", op=op)
    assert task.name == f"Z11:{op}" and task.modulus == p
    assert len(task) == p * p and task.n_in == task.n_out == p
    for a, b, y in zip(task.a.tolist(), task.b.tolist(), task.y.tolist(), strict=True):
        assert y == formula(a, b, p)
    assert int(task.y.min()) >= 0 and int(task.y.max()) < p


def test_division_excludes_zero_and_inverts():
    p = 13
    task = make_task("Z13", op="x/y")
    assert task.op == "div" and len(task) == p * (p - 1)
    assert int(task.b.min()) == 1
    assert torch.equal((task.y * task.b) % p, task.a)  # y = a / b  <=>  y b = a
    odd = make_task("Z13", op="div_odd")
    even = odd.b % 2 == 0
    assert torch.equal(odd.y[even], (odd.a[even] - odd.b[even]) % p)
    assert torch.equal((odd.y[~even] * odd.b[~even]) % p, odd.a[~even])


def test_add_task_keeps_the_group_others_do_not():
    assert make_task("Z7", op="add").group is get_group("Z7")
    assert make_task("Z7", op="mul").group is None
    assert set(OPS) == {"compose", *MOD_OPS}


def test_task_errors():
    with pytest.raises(ConfigError, match="unknown op 'pow'.*add, sub"):
        make_task("Z7", op="pow")
    with pytest.raises(GroupError, match="must be Z<p>"):
        make_task("S3", op="add")
    with pytest.raises(GroupError, match="prime modulus"):
        make_task("Z8", op="div")
    with pytest.raises(GroupError, match="unknown group"):
        make_task("nope")


def test_split_disjoint_complete_sized():
    task = make_task("Z7", op="add")
    train, val = split(task, train_frac=0.3, data_seed=0)
    assert len(train) == round(0.3 * 49) and len(train) + len(val) == 49
    assert set(train.tolist()).isdisjoint(val.tolist())
    assert sorted(train.tolist() + val.tolist()) == list(range(49))
    assert train.dtype == val.dtype == torch.int64
    assert torch.equal(train, train.sort().values)


def test_split_deterministic_golden():
    """Pinned values: NumPy PCG64 permutations are platform independent. If this changes, every
    stored split changes: bump the data version rather than the test."""
    train, val = split(make_task("Z7", op="add"), 0.3, data_seed=0)
    assert train.tolist() == [1, 2, 3, 4, 10, 11, 18, 20, 21, 22, 23, 27, 35, 36, 46]
    assert val[:8].tolist() == [0, 5, 6, 7, 8, 9, 12, 13]
    train, _ = split(make_task("S3"), 0.5, data_seed=1234)
    assert train[:8].tolist() == [0, 5, 9, 10, 11, 12, 15, 17]


def test_split_seed_dependence():
    task = make_task("S4")
    a = split(task, 0.5, data_seed=3)
    b = split(task, 0.5, data_seed=3)
    c = split(task, 0.5, data_seed=4)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert not torch.equal(a[0], c[0])
    torch.manual_seed(0)  # the global torch RNG does not matter
    d = split(task, 0.5, data_seed=3)
    torch.manual_seed(99)
    assert torch.equal(d[0], split(task, 0.5, data_seed=3)[0])


def test_split_edges_and_errors():
    task = make_task("Z5")
    assert len(split(task, 0.001, 0)[0]) == 1  # at least one of each
    assert len(split(task, 0.999, 0)[1]) == 1
    for bad in (0.0, 1.0, -0.1, 1.5):
        with pytest.raises(ConfigError, match="train_frac"):
            split(task, bad, 0)
    with pytest.raises(ConfigError, match="data_seed"):
        split(task, 0.5, -1)

"""Finite groups: known invariants, group axioms per family, names, errors, caching."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from grokray.errors import GroupError
from grokray.groups import EXAMPLES, FAMILIES, SCALING_GROUPS, get_group, parse
from grokray.groups import _build as build_cached


@pytest.fixture(autouse=True)
def _tmp_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("GROKRAY_CACHE", str(tmp_path / "cache"))


# name -> (canonical name, order, abelian, sorted irrep degrees); the number of classes is the
# number of degrees. Values from standard character tables (e.g. James & Liebeck).
KNOWN = {
    "S3": ("S3", 6, False, [1, 1, 2]),
    "S4": ("S4", 24, False, [1, 1, 2, 3, 3]),
    "S5": ("S5", 120, False, [1, 1, 4, 4, 5, 5, 6]),
    "D4": ("D4", 8, False, [1, 1, 1, 1, 2]),
    "D5": ("D5", 10, False, [1, 1, 2, 2]),
    "D6": ("D6", 12, False, [1, 1, 1, 1, 2, 2]),
    "Q8": ("Q8", 8, False, [1, 1, 1, 1, 2]),
    "Q16": ("Q16", 16, False, [1, 1, 1, 1, 2, 2, 2]),
    "Dic3": ("Dic3", 12, False, [1, 1, 1, 1, 2, 2]),
    "A4": ("A4", 12, False, [1, 1, 1, 3]),
    "A5": ("A5", 60, False, [1, 3, 3, 4, 5]),
    "A6": ("A6", 360, False, [1, 5, 5, 8, 8, 9, 10]),
    "Z12": ("Z12", 12, True, [1] * 12),
    "V4": ("V4", 4, True, [1] * 4),
    "F20": ("F20", 20, False, [1, 1, 1, 1, 4]),
    "F21": ("F21", 21, False, [1, 1, 1, 3, 3]),
    "PSL(2,7)": ("PSL(2,7)", 168, False, [1, 3, 3, 6, 7, 8]),
    "PSL(2,5)": ("PSL(2,5)", 60, False, [1, 3, 3, 4, 5]),  # = A5
    "Heis3": ("Heis3", 27, False, [1] * 9 + [3, 3]),
    "Z2xZ4": ("Z2xZ4", 8, True, [1] * 8),
    "S3xZ3": ("S3xZ3", 18, False, [1] * 6 + [2] * 3),
}


@pytest.mark.parametrize("name", list(KNOWN))
def test_known_invariants(name):
    canonical, order, abelian, degrees = KNOWN[name]
    G = get_group(name)
    assert G.name == canonical
    assert G.order == order == len(G.labels)
    assert G.is_abelian is abelian
    assert len(G.class_sizes) == len(degrees)
    assert sorted(G.irrep_degrees) == degrees
    assert G.irrep_degrees == sorted(G.irrep_degrees)
    assert sum(G.class_sizes) == order


def test_known_class_sizes():
    assert get_group("S4").class_sizes == [1, 6, 8, 3, 6]
    assert sorted(get_group("A5").class_sizes) == [1, 12, 12, 15, 20]
    assert sorted(get_group("PSL(2,7)").class_sizes) == [1, 21, 24, 24, 42, 56]
    assert sorted(get_group("Q8").class_sizes) == [1, 1, 2, 2, 2]


# every family at several sizes
FAMILY_MEMBERS = [
    "Z2", "Z7", "Z30", "D2", "D3", "D8", "D25", "S2", "S3", "S4", "S5",
    "A3", "A4", "A5", "Q8", "Q16", "Dic3", "Dic5", "V4", "F20", "F21", "F55",
    "Heis2", "Heis3", "Heis5", "PSL(2,2)", "PSL(2,3)", "PSL(2,5)", "PSL(2,7)",
    "Z2xZ2xZ2", "S3xZ3", "D4xZ2", "Q8xZ3",
]  # fmt: skip
LARGE_MEMBERS = ["S6", "A6", "PSL(2,11)", "D300", "Heis7", "Dic150", "F57xZ5", "Z997"]


def _check_axioms(G, triples):
    T = G.table
    n = G.order
    assert T.dtype == torch.int64 and T.shape == (n, n)
    assert G.identity == 0
    assert torch.equal(T[0], torch.arange(n)) and torch.equal(T[:, 0], torch.arange(n))
    # Latin square: each row and column is a permutation
    assert torch.equal(T.sort(dim=1).values, torch.arange(n).expand(n, n))
    assert torch.equal(T.sort(dim=0).values, torch.arange(n)[:, None].expand(n, n))
    g = torch.arange(n)
    assert torch.equal(T[g, G.inverse], torch.zeros(n, dtype=torch.long))
    assert torch.equal(T[G.inverse, g], torch.zeros(n, dtype=torch.long))
    a, b, c = triples
    assert torch.equal(T[T[a, b], c], T[a, T[b, c]])  # associativity
    assert G.is_abelian == bool(torch.equal(T, T.T))


@pytest.mark.parametrize("name", FAMILY_MEMBERS)
def test_axioms_exhaustive(name):
    G = get_group(name)
    n = G.order
    i = torch.arange(n**3)
    _check_axioms(G, (i // n**2, (i // n) % n, i % n))


@pytest.mark.parametrize("name", LARGE_MEMBERS)
def test_axioms_sampled(name):
    G = get_group(name)
    gen = torch.Generator().manual_seed(0)
    _check_axioms(G, tuple(torch.randint(G.order, (20_000,), generator=gen) for _ in range(3)))


def test_permutation_labels_and_convention():
    G = get_group("S3")
    assert G.labels[0] == "(0 1 2)"
    perms = [tuple(int(x) for x in label[1:-1].split()) for label in G.labels]
    for a in range(6):
        for b in range(6):  # (a*b)(x) = a(b(x))
            assert perms[int(G.table[a, b])] == tuple(perms[a][perms[b][x]] for x in range(3))


def test_dihedral_and_quaternion_structure():
    D = get_group("D4")
    orders = _element_orders(D)
    assert sorted(orders) == [1, 2, 2, 2, 2, 2, 4, 4]
    Q = get_group("Q8")
    assert sorted(_element_orders(Q)) == [1, 2, 4, 4, 4, 4, 4, 4]
    assert sorted(_element_orders(get_group("Heis3"))) == [1] + [3] * 26


def _element_orders(G):
    out = []
    for g in range(G.order):
        x, k = g, 1
        while x != 0:
            x, k = int(G.table[x, g]), k + 1
        out.append(k)
    return out


def test_classes_are_conjugacy_classes():
    for name in ["S4", "Dic3", "F21", "PSL(2,7)"]:
        G = get_group(name)
        T, inv, cls = G.table, G.inverse, G.class_of
        h, g = torch.meshgrid(torch.arange(G.order), torch.arange(G.order), indexing="ij")
        conj = T[T[h, g], inv[h]]  # h g h^-1
        assert torch.equal(cls[conj], cls[g])  # conjugation stays in the class
        # and reaches the whole class: orbit sizes equal class sizes
        orbit = [len(set(conj[:, c[0]].tolist())) for c in G.classes]
        assert orbit == G.class_sizes
        assert G.classes[0].tolist() == [0]
        assert [int(c.min()) for c in G.classes] == sorted(int(c.min()) for c in G.classes)


def test_class_mult():
    G = get_group("S3")  # classes: e, transpositions, 3-cycles
    c = G.class_mult
    assert c.shape == (3, 3, 3)
    assert c[1, 1].tolist() == [3, 0, 3]  # (transpositions)^2 = 3 e + 3 (3-cycles)
    assert c[1, 2].tolist() == [0, 2, 0]
    for name in ["A5", "Q8", "F21"]:
        H = get_group(name)
        h = np.array(H.class_sizes)
        c = H.class_mult
        assert (c @ h == np.outer(h, h)).all()  # |C_i||C_j| = sum_l c_ijl |C_l|
        assert (c == c.transpose(1, 0, 2)).all()  # class sums are central
        assert (H.class_matrix(2) == c[2]).all()


def test_class_mult_refused_when_huge():
    G = get_group("Z1009")
    with pytest.raises(GroupError, match="class_matrix"):
        _ = G.class_mult
    assert G.class_matrix(3).shape == (1009, 1009)


@pytest.mark.parametrize(
    "alias,canonical",
    [
        ("c12", "Z12"), ("Z_12", "Z12"), ("cyclic12", "Z12"), ("s4", "S4"), ("Sym4", "S4"),
        ("alt5", "A5"), ("dih5", "D5"), ("dic2", "Q8"), ("Q12", "Dic3"), ("dic4", "Q16"),
        ("K4", "V4"), ("klein", "V4"), ("psl2_7", "PSL(2,7)"), ("PSL2(7)", "PSL(2,7)"),
        ("l2(7)", "PSL(2,7)"), ("psl(2, 7)", "PSL(2,7)"), ("heisenberg3", "Heis3"),
        ("z2 x z4", "Z2xZ4"), ("Z2×Z4", "Z2xZ4"), ("frobenius21", "F21"),
    ],
)  # fmt: skip
def test_aliases(alias, canonical):
    assert get_group(alias).name == canonical
    assert get_group(alias) is get_group(canonical)  # one cached object


@pytest.mark.parametrize(
    "name,fragment",
    [
        ("D1", "nearest valid names: D2, D3"),
        ("Z0", "nearest valid names: Z2"),
        ("A1", "nearest valid names: A3"),
        ("A2", "n must be >= 3"),
        ("Heis4", "p must be prime"),
        ("PSL(2,8)", "p must be prime"),
        ("Q10", "order must be 4m"),
        ("F22x", "unknown group"),
        ("F23", "Frobenius"),
        ("foo", "unknown group 'foo'"),
        ("S", "unknown group"),
        ("Z-3", "unknown group"),
        ("", "empty group name"),
        ("S8", "above the cap 10000"),
        ("Z20000", "nearest valid names: Z10000"),
    ],
)
def test_errors(name, fragment):
    with pytest.raises(GroupError) as info:
        get_group(name)
    msg = str(info.value)
    assert fragment in msg
    assert "\n" not in msg
    assert "nearest valid names" in msg or "grammar" in msg


def test_error_lists_grammar_and_suggestion():
    with pytest.raises(GroupError) as info:
        get_group("Sx4")
    msg = str(info.value)
    assert "grammar: Z<n>|C<n>" in msg and "PSL(2,p)" in msg
    assert "nearest valid names: S4" in msg


def test_cap_reports_memory_and_is_configurable(monkeypatch):
    with pytest.raises(GroupError, match=r"order 40320.*12\.1 GiB.*nearest valid names: S7"):
        get_group("S8")
    with pytest.raises(GroupError, match="above the cap 100"):
        get_group("S5", max_order=100)
    monkeypatch.setenv("GROKRAY_MAX_GROUP_ORDER", "50")
    with pytest.raises(GroupError, match="above the cap 50"):
        get_group("A5")
    assert get_group("A4").order == 12


def test_every_example_parses():
    for name in EXAMPLES:
        assert parse(name).order >= 2
    assert set(FAMILIES) >= {"Z", "D", "S", "A", "Q", "Dic", "V4", "F", "Heis", "PSL"}


def test_disk_cache_roundtrip(tmp_path, monkeypatch):
    monkeypatch.setenv("GROKRAY_CACHE", str(tmp_path / "c"))
    build_cached.cache_clear()
    G = get_group("PSL(2,11)")
    X = G.characters
    files = sorted(p.name for p in (tmp_path / "c").rglob("*.npz"))
    assert files == [
        "PSL_2_11_.characters.npz", "PSL_2_11_.classes.npz", "PSL_2_11_.table.npz"
    ]  # fmt: skip
    build_cached.cache_clear()
    H = get_group("PSL(2,11)")
    assert H is not G
    assert torch.equal(H.table, G.table) and H.labels == G.labels
    assert np.array_equal(H.characters, X)
    # a corrupt file is ignored and rebuilt
    (next((tmp_path / "c").rglob("*.table.npz"))).write_bytes(b"garbage")
    build_cached.cache_clear()
    assert torch.equal(get_group("PSL(2,11)").table, G.table)


def test_disk_cache_off(tmp_path, monkeypatch):
    monkeypatch.setenv("GROKRAY_CACHE", "off")
    build_cached.cache_clear()
    assert get_group("D200").order == 400
    assert not any(tmp_path.rglob("*.npz"))


def test_scaling_groups_span_6_to_2520():
    orders = [parse(name).order for name in SCALING_GROUPS]
    assert len(set(SCALING_GROUPS)) == 20
    assert min(orders) == 6 and max(orders) == 2520 and 1009 in orders


def test_group_pickles():
    import pickle

    G = get_group("D5")
    _ = G.characters
    H = pickle.loads(pickle.dumps(G))
    assert H.name == "D5" and torch.equal(H.table, G.table)
    assert np.array_equal(H.characters, G.characters)

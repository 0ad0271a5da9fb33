import numpy as np
import pytest
import torch

from grokray.groups import get_group
from grokray.metrics.wedderburn import class_mult_from_table, class_pair_counts, recovery
from tests.helpers.toy_groups import cyclic, s3


@pytest.mark.parametrize("make", [s3, lambda: cyclic(6)])
def test_true_table_recovers_every_coefficient(make):
    G = make()
    c_hat = class_mult_from_table(G.table, G)
    assert np.array_equal(c_hat.numpy(), G.class_mult)  # brute force, representative z
    r = recovery(G.table, G)
    k = len(G.class_sizes)
    assert r.total == k**3 and r.matched.item() == k**3
    assert r.total_nonzero == int((G.class_mult != 0).sum())
    assert r.matched_nonzero.item() == r.total_nonzero
    assert r.frac.item() == 1.0


def test_s3_known_class_products():
    G = s3()  # classes: 0 identity, 1 transpositions (3), 2 three-cycles (2)
    c = class_mult_from_table(G.table, G)
    assert c[1, 1].tolist() == [3.0, 0.0, 3.0]  # T T = 3 e + 3 R
    assert c[2, 2].tolist() == [2.0, 0.0, 1.0]  # R R = 2 e + R
    assert c[1, 2].tolist() == [0.0, 2.0, 0.0]  # T R = 2 T


def test_shuffled_and_random_tables_recover_few():
    gen = torch.Generator().manual_seed(0)
    G = s3()
    n = G.order
    shuffled = torch.stack([
        G.table.flatten()[torch.randperm(n * n, generator=gen)].reshape(n, n) for _ in range(50)
    ])  # [50, n, n]: same multiset of outputs, wrong places
    r = recovery(shuffled, G)
    assert r.matched.shape == (50,)
    assert r.matched.double().mean() < 0.4 * r.total  # measured about 7 of 27
    assert r.matched_nonzero.double().mean() < 0.3 * r.total_nonzero
    Z = cyclic(7)  # abelian: most coefficients are 0, so count the non-zero ones
    rand = torch.randint(0, 7, (50, 7, 7), generator=gen)
    rz = recovery(rand, Z)
    assert rz.matched_nonzero.double().mean() < 0.3 * rz.total_nonzero  # about 1/7


def test_one_wrong_cell_breaks_two_coefficients_per_seed():
    G = s3()
    T = G.table.clone()
    x, y = 1, 2
    old = int(T[x, y])
    new = next(int(z) for z in range(6) if G.class_of[z] != G.class_of[old])
    T[x, y] = new
    batch = torch.stack([G.table, T])  # [S=2, n, n]
    r = recovery(batch, G)
    assert r.matched.tolist() == [27, 25]


def test_counts_are_a_partition_of_all_pairs():
    G = s3()
    T = torch.randint(0, 6, (3, 6, 6), generator=torch.Generator().manual_seed(1))
    N = class_pair_counts(T, G.class_of, 3)  # [3, k, k, k]
    sizes = torch.tensor(G.class_sizes)
    assert torch.equal(N.sum(-1), (sizes[:, None] * sizes[None, :]).expand(3, 3, 3))


def test_library_groups():
    for name in ("S4", "D4", "A4", "Q8"):
        G = get_group(name)
        r = recovery(G.table, G)
        assert r.matched.item() == r.total


def test_sparse_comparison_equals_dense(monkeypatch):
    import grokray.metrics.wedderburn as W

    gen = torch.Generator().manual_seed(2)
    for G in (s3(), cyclic(5)):  # cyclic: the abelian shortcut against the histograms
        n = G.order
        T = torch.stack([G.table, torch.randint(0, n, (n, n), generator=gen)])
        T = torch.cat([T, G.table.clone()[None]])
        T[2, 0, 1] = (T[2, 0, 1] + 1) % n
        N = class_pair_counts(T, G.class_of, len(G.class_sizes))  # dense reference
        ref = (N == torch.as_tensor(G.class_mult * np.array(G.class_sizes))).flatten(1).sum(1)
        dense = W.recovery(T, G)
        monkeypatch.setattr(W, "_DENSE_MAX", 1)
        sparse = W.recovery(T, G)
        monkeypatch.setattr(W, "_DENSE_MAX", 1 << 22)
        assert torch.equal(dense.matched, ref)
        assert torch.equal(sparse.matched, ref)
        assert torch.equal(dense.matched_nonzero, sparse.matched_nonzero)

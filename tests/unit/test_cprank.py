"""CP-rank bounds of T_G (pure) and the numerical ALS search (tiny: Z3, S3)."""

from __future__ import annotations

import numpy as np
import pytest

from grokray.cprank.bounds import (
    MATMUL_RANKS,
    bounds,
    lower_bound,
    matmul_rank,
    trivial_bound,
    wedderburn_bound,
)
from grokray.cprank.search import cp_als, mult_tensor, reconstruct, search
from grokray.groups import get_group


@pytest.mark.parametrize("n", [2, 3, 5, 7, 12])
def test_cyclic_bound_is_n(n):
    G = get_group(f"Z{n}")
    b = bounds(G.order, G.irrep_degrees)
    # C[Z_n] is diagonal: n one-dimensional irreps, rank exactly n over C
    assert b["wedderburn_bound"] == n and b["lower_bound"] == n and b["exact"]
    assert b["trivial_bound"] == n * n


def test_s4_bound_is_55():
    G = get_group("S4")
    b = bounds(G.order, G.irrep_degrees)
    assert b["irrep_degrees"] == [1, 1, 2, 3, 3]
    assert b["wedderburn_terms"] == [1, 1, 7, 23, 23]
    assert b["wedderburn_bound"] == 55 and b["lower_bound"] == 43 and b["trivial_bound"] == 576


def test_matmul_table_and_derived():
    assert [MATMUL_RANKS[d].rank for d in range(1, 7)] == [1, 7, 23, 48, 93, 153]
    assert MATMUL_RANKS[2].exact and not MATMUL_RANKS[3].exact
    assert matmul_rank(8).rank == 7 * 48  # 8 = 2 x 4
    assert matmul_rank(9).rank == 23 * 23
    assert matmul_rank(7).rank == 7 * 48  # pad 7 -> 8 beats 7^3 = 343
    assert all(matmul_rank(d).rank <= d**3 for d in range(1, 40))


def test_bounds_refuse_bad_degrees():
    with pytest.raises(ValueError, match="square-sum"):
        bounds(6, [1, 1, 1])
    assert trivial_bound(4) == 16 and lower_bound(24, 5) == 43
    assert wedderburn_bound([1, 1, 2]) == 9


def test_mult_tensor_of_z3():
    T = mult_tensor(get_group("Z3").table.numpy())
    assert T.shape == (3, 3, 3) and T.sum() == 9
    assert T[1, 2, 0] == 1 and T[1, 1, 2] == 1 and T[1, 1, 1] == 0


def test_als_finds_s3_at_its_rank_and_reconstructs():
    T = mult_tensor(get_group("S3").table.numpy())
    res = search(T, 9, floor=9, restarts=4, field="C", tol=1e-6, iters=1000, time_limit=120)
    assert res.best_rank == 9 and res.stopped == "floor"
    A, B, C = res.factors
    assert A.shape == (6, 9)
    assert np.abs(reconstruct(A, B, C) - T).max() < 1e-6
    # same seed, same numbers
    again, (A2, _, _) = cp_als(T, 9, res.best_seed, field="C", tol=1e-6, iters=1000)
    assert again.ok and np.array_equal(A, A2)


def test_real_rank_of_z3_is_4():
    # R[Z3] = R + C: complex multiplication has real rank 3, so rank over R is 4 (over C: 3)
    T = mult_tensor(get_group("Z3").table.numpy())
    real = search(T, 3, floor=3, restarts=3, field="R", tol=1e-6, time_limit=120)
    assert real.best_rank == 4
    assert all(not a.ok for a in real.attempts if a.rank == 3)
    cplx = search(T, 3, floor=3, restarts=3, field="C", tol=1e-6, time_limit=120)
    assert cplx.best_rank == 3
    assert np.abs(reconstruct(*cplx.factors) - T).max() < 1e-6


@pytest.mark.parametrize("name, parts, dim, rank", [
    ("S3", ["M_2(R)"], 4, 7), ("Q8", ["M_1(H)"], 4, 8), ("Z2xZ4", ["M_1(R)", "M_1(C)"], 3, 4),
    ("S4", ["M_3(R)"], 9, 23), ("F21", ["M_3(C)"], 18, 69), ("Z5", ["M_1(C)"], 2, 3),
])
def test_smallest_faithful_real_component(name, parts, dim, rank):
    from grokray.cprank.faithful import smallest_faithful

    f = smallest_faithful(get_group(name))
    assert f["components"] == parts and f["dim"] == dim and f["rank"] == rank
    assert f["capacity"] == dim * rank

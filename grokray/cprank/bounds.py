"""Bounds on the CP rank of a group's multiplication tensor T_G (pure Python, no dependencies).

T_G[a, b, c] = 1 when a*b = c, an n x n x n tensor (n = |G|). FORGE's DAD product
mu(x, y) = W((U x) * (V y)) of rank R is a rank-R CP factorization of it on one-hot inputs.

Bounds over C:
- trivial: rank <= n^2 (one rank-1 term per Cayley-table cell).
- Wedderburn: C[G] = (+)_i M_{d_i}(C), one matrix algebra per irreducible representation, and a
  change of basis does not change rank, so rank(T_G) <= sum_i R(d_i) with R(d) the best known rank
  of d x d matrix multiplication over C (`MATMUL_RANKS`). For S4 (degrees 1, 1, 2, 3, 3):
  1 + 1 + 7 + 23 + 23 = 55.
- lower: Alder-Strassen (1981): the rank of an associative algebra A is at least 2 dim A - t, t the
  number of maximal two-sided ideals; for C[G], t = k (number of irreps = conjugacy classes),
  so rank(T_G) >= 2n - k. For abelian groups (k = n) this gives n, and the Wedderburn bound is n:
  rank(T_{Z_n}) = n exactly.

Over R the ranks can be larger (R[Z_3] = R + C, and C as an R-algebra has rank 3, so the real
rank of T_{Z_3} is 4): every bound here is over C.

The analysis package may import this module (it imports nothing).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache


@dataclass(frozen=True)
class MatmulRank:
    """Best known rank of d x d matrix multiplication <d, d, d> (a Wedderburn bound term)."""

    d: int
    """Matrix size."""
    rank: int
    """Best known rank over C (an upper bound unless `exact`)."""
    exact: bool
    """True when a matching lower bound is proved."""
    source: str
    """Where the figure comes from."""
    field: str
    """The coefficients the cited scheme needs ("any field", "C", or as stated)."""


MATMUL_RANKS: dict[int, MatmulRank] = {
    m.d: m
    for m in (
        MatmulRank(1, 1, True, "one product", "any field"),
        MatmulRank(
            2, 7, True,
            "Strassen 1969, Numer. Math. 13:354-356 (upper); optimal: Hopcroft & Kerr 1971, "
            "SIAM J. Appl. Math. 20:30-36; Winograd 1971, Linear Algebra Appl. 4:381-388",
            "any field",
        ),
        MatmulRank(
            3, 23, False,
            "Laderman 1976, Bull. AMS 82:126-128 (lower bound 19: Blaser 2003, J. Complexity "
            "19:43-60)",
            "any field",
        ),
        MatmulRank(
            4, 48, False,
            "Novikov et al. 2025, AlphaEvolve white paper (Google DeepMind): 48 with complex "
            "coefficients; 49 over any field is Strassen 1969 applied to 2 x 2 blocks",
            "C",
        ),
        MatmulRank(
            5, 93, False,
            "Moosbauer & Poole 2025, Flip graphs with symmetry and new matrix multiplication "
            "schemes, arXiv:2502.04514",
            "as stated there (not re-verified here)",
        ),
        MatmulRank(
            6, 153, False,
            "Moosbauer & Poole 2025, arXiv:2502.04514",
            "as stated there (not re-verified here)",
        ),
    )
}
"""Cited best known ranks over C. Larger d: `matmul_rank` derives a bound from these."""


def matmul_rank(d: int) -> MatmulRank:
    """Best known rank of <d, d, d> over C: the table, else a bound derived from it.

    Derived bound: rank(<ab, ab, ab>) <= rank(<a,a,a>) rank(<b,b,b>) (block product), and
    padding d x d to D x D (d <= D < 2d) never lowers the work needed, so R(d) <= R(D); the naive
    d^3 when nothing smaller is known.
    """
    if d < 1:
        raise ValueError(f"matrix size must be >= 1, got {d}")
    if d in MATMUL_RANKS:
        return MATMUL_RANKS[d]
    r, how = _derived(d)
    return MatmulRank(d, r, False, how, "C")


@cache
def _derived(d: int) -> tuple[int, str]:
    """(bound, how) for <d, d, d> from the table by padding and block products."""
    best, how = d**3, f"naive d^3 = {d**3}"
    for D in range(d, 2 * d):
        if D in MATMUL_RANKS and MATMUL_RANKS[D].rank < best:
            best, how = MATMUL_RANKS[D].rank, f"derived: pad {d} -> {D}, R({D})"
        for a in range(2, int(D**0.5) + 1):
            if D % a == 0:
                r = _best(a) * _best(D // a)
                if r < best:
                    pad = f"pad {d} -> {D} = " if D != d else f"{d} = "
                    best, how = r, f"derived: {pad}{a} x {D // a}, R({a}) R({D // a})"
    return best, how


def _best(d: int) -> int:
    return MATMUL_RANKS[d].rank if d in MATMUL_RANKS else _derived(d)[0]


def trivial_bound(order: int) -> int:
    """rank(T_G) <= |G|^2."""
    return order * order


def wedderburn_bound(degrees: list[int] | tuple[int, ...]) -> int:
    """rank(T_G) <= sum_i R(d_i) over C, from the irrep degrees."""
    return sum(matmul_rank(int(d)).rank for d in degrees)


def lower_bound(order: int, num_classes: int) -> int:
    """Alder-Strassen: rank(T_G) >= 2|G| - k over C (k conjugacy classes = irreps)."""
    return 2 * order - num_classes


def bounds(order: int, degrees: list[int] | tuple[int, ...]) -> dict:
    """Every bound of one group as plain values (the numbers `grokray cprank` prints)."""
    k = len(degrees)
    if sum(int(d) ** 2 for d in degrees) != order:
        raise ValueError(f"irrep degrees {list(degrees)} do not square-sum to the order {order}")
    return {
        "order": order,
        "num_classes": k,
        "irrep_degrees": [int(d) for d in degrees],
        "lower_bound": lower_bound(order, k),
        "wedderburn_bound": wedderburn_bound(degrees),
        "wedderburn_terms": [matmul_rank(int(d)).rank for d in degrees],
        "trivial_bound": trivial_bound(order),
        "exact": lower_bound(order, k) == wedderburn_bound(degrees),
    }

"""The group name grammar: parse a name into factors, give its canonical name and order, and
explain bad input with the grammar and the nearest valid names (difflib)."""

from __future__ import annotations

import difflib
import functools
import math
import os
import re
from collections.abc import Callable
from dataclasses import dataclass

from grokray.errors import GroupError
from grokray.groups import _families as fam

GRAMMAR = (
    "Z<n>|C<n> (n>=2), D<n> (order 2n, n>=2), S<n> (n>=2), A<n> (n>=3), Q8, Q<4m>|Dic<m> (m>=2), "
    "V4, F<pq> (Frobenius, q|p-1), Heis<p> (p prime), PSL(2,p) (p prime), products AxB"
)

# default cap on the order; override with get_group(max_order=...) or GROKRAY_MAX_GROUP_ORDER
DEFAULT_MAX_ORDER = 10_000
SHOWN_ORDER = 10**18
"""an order above this (and above the cap) is not computed, and an error says 'above 10^18'"""


@dataclass(frozen=True)
class Family:
    """One family of groups and how to read, check, name and build its members."""

    key: str
    """Short key, e.g. "S"."""
    title: str
    """One line description, e.g. "symmetric group on n points"."""
    pattern: str
    """Regex on the lower-cased, space-free name; group 1 (if any) is the integer parameter."""
    check: Callable[[int], str | None]
    """Returns why a parameter is out of range, or None when it is valid."""
    order: Callable[[int], int]
    """Order of the group for a valid parameter."""
    canonical: Callable[[int], str]
    """Canonical name for a valid parameter."""
    build: Callable[[int], fam.Table]
    """Builds (table, labels) for a valid parameter."""
    examples: tuple[str, ...]
    """Example names, shown by `grokray groups` and used for suggestions."""


def _at_least(k: int, what: str) -> Callable[[int], str | None]:
    return lambda n: None if n >= k else f"{what} must be >= {k}"


def _prime(n: int) -> str | None:
    return None if fam.is_prime(n) else "p must be prime"


def _frobenius_pq(n: int) -> tuple[int, int] | None:
    """n = p*q with p prime and 1 < q | p-1 (p is then the largest prime factor), else None."""
    if n < 6:
        return None
    p, rest, f = 1, n, 2
    while f * f <= rest:  # trial division: p ends as the largest prime factor
        while rest % f == 0:
            p, rest = f, rest // f
        f += 1
    p = max(p, rest)
    q = n // p
    return (p, q) if q > 1 and (p - 1) % q == 0 else None


def _dic_name(m: int) -> str:
    return f"Q{4 * m}" if m & (m - 1) == 0 else f"Dic{m}"


FAMILIES: dict[str, Family] = {
    f.key: f
    for f in [
        Family(
            "Z",
            "cyclic group of order n (alias C<n>)",
            r"(?:z|c|cyclic)_?(\d+)",
            _at_least(2, "n"),
            lambda n: n,
            lambda n: f"Z{n}",
            fam.cyclic,
            ("Z2", "Z12", "Z97", "Z113", "Z1009"),
        ),
        Family(
            "D",
            "dihedral group of order 2n, symmetries of the n-gon",
            r"(?:d|dih)_?(\d+)",
            _at_least(2, "n"),
            lambda n: 2 * n,
            lambda n: f"D{n}",
            fam.dihedral,
            ("D3", "D4", "D5", "D12", "D60"),
        ),
        Family(
            "S",
            "symmetric group on n points, order n!",
            r"(?:s|sym)_?(\d+)",
            _at_least(2, "n"),
            math.factorial,
            lambda n: f"S{n}",
            fam.symmetric,
            ("S3", "S4", "S5", "S6", "S7"),
        ),
        Family(
            "A",
            "alternating group on n points, order n!/2",
            r"(?:a|alt)_?(\d+)",
            _at_least(3, "n"),
            lambda n: math.factorial(n) // 2,
            lambda n: f"A{n}",
            fam.alternating,
            ("A4", "A5", "A6", "A7"),
        ),
        Family(
            "Q",
            "quaternion Q8, generalized quaternion / dicyclic group of order 4m",
            r"q_?(\d+)",
            lambda n: None if n % 4 == 0 and n >= 8 else "order must be 4m, m>=2",
            lambda n: n,
            lambda n: _dic_name(n // 4),
            lambda n: fam.dicyclic(n // 4),
            ("Q8", "Q16", "Q32"),
        ),
        Family(
            "Dic",
            "dicyclic group of order 4m (Dic2 = Q8)",
            r"(?:dic|dicyclic)_?(\d+)",
            _at_least(2, "m"),
            lambda m: 4 * m,
            _dic_name,
            fam.dicyclic,
            ("Dic3", "Dic5", "Dic6"),
        ),
        Family(
            "V4",
            "Klein four-group Z2xZ2 (alias K4)",
            r"(?:v4|k4|v|klein|klein4)",
            lambda _: None,
            lambda _: 4,
            lambda _: "V4",
            lambda _: fam.direct_product(fam.cyclic(2), fam.cyclic(2)),
            ("V4",),
        ),
        Family(
            "F",
            "Frobenius group Z_p x| Z_q of order pq, q | p-1 (F21, F20, F55)",
            r"(?:f|frob|frobenius)_?(\d+)",
            lambda n: None if _frobenius_pq(n) else "n must be p*q, p prime, 1<q dividing p-1",
            lambda n: n,
            lambda n: f"F{n}",
            lambda n: fam.frobenius(*_frobenius_pq(n)),
            ("F20", "F21", "F55", "F57"),
        ),
        Family(
            "Heis",
            "Heisenberg group mod p (unitriangular 3x3), order p^3",
            r"(?:heis|heisenberg)_?(\d+)",
            _prime,
            lambda p: p**3,
            lambda p: f"Heis{p}",
            fam.heisenberg,
            ("Heis2", "Heis3", "Heis5", "Heis7"),
        ),
        Family(
            "PSL",
            "projective special linear group PSL(2,p), p prime, order p(p^2-1)/2",
            r"(?:psl|l)_?\(?2[,_)]?\(?(\d+)\)?",
            _prime,
            lambda p: p * (p * p - 1) // (2 if p > 2 else 1),
            lambda p: f"PSL(2,{p})",
            fam.psl2,
            ("PSL(2,5)", "PSL(2,7)", "PSL(2,11)", "PSL(2,13)"),
        ),
    ]
}

EXAMPLES: tuple[str, ...] = tuple(e for f in FAMILIES.values() for e in f.examples) + (
    "Z2xZ4",
    "S3xZ3",
    "Z2xZ2xZ2",
    "D4xZ2",
)


@dataclass(frozen=True)
class Spec:
    """A parsed group name: its factors and what follows from them."""

    factors: tuple[tuple[str, int], ...]
    """(family key, parameter) per direct factor, in the order written."""

    @property
    def name(self) -> str:
        """Canonical name, e.g. "Z2xZ4"."""
        return "x".join(FAMILIES[k].canonical(p) for k, p in self.factors)

    @property
    def order(self) -> int:
        return math.prod(FAMILIES[k].order(p) for k, p in self.factors)

    def build(self) -> fam.Table:
        parts = [FAMILIES[k].build(p) for k, p in self.factors]
        return parts[0] if len(parts) == 1 else fam.direct_product(*parts)


def max_order() -> int:
    """The order cap: $GROKRAY_MAX_GROUP_ORDER, else DEFAULT_MAX_ORDER."""
    raw = os.environ.get("GROKRAY_MAX_GROUP_ORDER", "")
    return int(raw) if raw.strip().isdigit() else DEFAULT_MAX_ORDER


def parse(name: str, cap: int | None = None, hints: bool = True) -> Spec:
    """Parse a group name (case-insensitive); raise GroupError on bad input or order > cap.

    hints: name the nearest valid names in the error (False where the error is discarded)."""
    if not isinstance(name, str) or not name.strip():
        raise GroupError(f"empty group name; grammar: {GRAMMAR}")
    text = re.sub(r"\s+", "", name.lower()).replace("×", "x")
    factors = []
    cap = max_order() if cap is None else cap
    for part in text.split("x"):
        factors.append(_parse_factor(part, name, cap, hints))
    spec = Spec(tuple(factors))
    if any(p > cap for _, p in spec.factors):  # every order >= its parameter: skip huge n!
        raise GroupError(
            f"group {name!r} has a parameter above the order cap {cap} (GROKRAY_MAX_GROUP_ORDER)"
            + _hint(spec, cap, hints)
        )
    shown = max(cap, SHOWN_ORDER)
    # a factor of order above `shown` makes the order too large to compute or print
    order = None if any(p > param_bound(k, shown) for k, p in spec.factors) else spec.order
    if order is None or order > shown:
        raise GroupError(
            f"group {name!r} ({spec.name}) has order above 10^{len(str(shown)) - 1}, above the "
            f"cap {cap} (GROKRAY_MAX_GROUP_ORDER)" + _hint(spec, cap, hints)
        )
    if order > cap:
        gib = order**2 * 8 / 2**30
        raise GroupError(
            f"group {name!r} ({spec.name}) has order {order}, above the cap {cap} "
            f"(GROKRAY_MAX_GROUP_ORDER); its Cayley table alone would need {gib:,.1f} GiB"
            + _hint(spec, cap, hints)
        )
    return spec


def _parse_factor(part: str, name: str, cap: int, hints: bool) -> tuple[str, int]:
    for f in FAMILIES.values():
        m = re.fullmatch(f.pattern, part)
        if m is None:
            continue
        p = int(m.group(1)) if m.groups() else 0
        why = f.check(p) if p <= cap else None
        if why is not None:
            near = f"nearest valid names: {', '.join(_nearby_params(f, p, cap))}; " if hints \
                else ""
            raise GroupError(
                f"bad group {name!r}: in {part!r}, {why} ({f.key}: {f.title}); "
                f"{near}grammar: {GRAMMAR}"
            )
        return f.key, p
    raise GroupError(
        f"unknown group {name!r}; grammar: {GRAMMAR}; nearest valid names: {suggest(name)}"
    )


def suggest(name: str, n: int = 3) -> str:
    """Up to n close example names (difflib), comma-separated."""
    pool = {e.lower(): e for e in EXAMPLES}
    close = difflib.get_close_matches(name.lower().replace(" ", ""), list(pool), n=n, cutoff=0.3)
    return ", ".join(pool[c] for c in close) or ", ".join(EXAMPLES[:3])


@functools.lru_cache(maxsize=256)
def param_bound(key: str, cap: int) -> int:
    """The largest parameter of family `key` whose order is <= cap (orders grow with the
    parameter): doubling, then bisection, so no order far above cap is ever computed (the
    order of S at 2x the bound, not at cap/2)."""
    order = FAMILIES[key].order
    lo, hi = 0, 1
    while hi <= cap and order(hi) <= cap:
        lo, hi = hi, 2 * hi
    hi = min(hi, cap + 1)  # order(hi) > cap, or hi is past the cap (every order >= parameter)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if order(mid) <= cap else (lo, mid)
    return lo


def _nearby_params(f: Family, p: int, cap: int, n: int = 3) -> list[str]:
    """Canonical names of the valid parameters closest to p with order <= cap."""
    out: list[str] = []
    top = param_bound(f.key, cap)
    p = min(p, top)
    pool = set(range(max(0, p - 200), p + 200)) | set(range(0, 200))
    for q in sorted(pool, key=lambda q: (abs(q - p), q)):
        if q <= top and f.check(q) is None:
            name = f.canonical(q)
            if name not in out:
                out.append(name)
        if len(out) == n:
            break
    return out or list(f.examples[:n])


def _hint(spec: Spec, cap: int, hints: bool) -> str:
    """`; nearest valid names: ...` for an error about `spec` (empty without hints)."""
    if not hints:
        return ""
    if len(spec.factors) == 1:
        k, p = spec.factors[0]
        return "; nearest valid names: " + ", ".join(_nearby_params(FAMILIES[k], p, cap))
    return "; nearest valid names: " + suggest(spec.name)

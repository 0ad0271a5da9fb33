"""Grokking datasets: group composition and Power et al. modular arithmetic, and the split.

    task = make_task("S4")              # (a, b) -> a*b for all |G|^2 pairs
    task = make_task("Z97", op="add")   # a+b mod 97; also sub, mul, div, x2+y2, ...
    train_idx, val_idx = split(task, train_frac=0.5, data_seed=0)

The split uses NumPy's PCG64 bit generator seeded with `data_seed` (`numpy.random.Generator(
PCG64(data_seed)).permutation(N)`): integer-only, identical on every platform, and independent
of torch's RNG and of the model seed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from grokray.errors import ConfigError, GroupError
from grokray.groups import get_group, parse

if TYPE_CHECKING:  # torch is imported where tensors are made: checking names needs no torch
    import torch

    from grokray.groups import Group

# op name -> (a, b, p) -> y, all int64 arrays mod p; b ranges over 1..p-1 for the ops in NONZERO_B
ModOp = Callable[[np.ndarray, np.ndarray, int], np.ndarray]

MOD_OPS: dict[str, ModOp] = {
    "add": lambda a, b, p: (a + b) % p,
    "sub": lambda a, b, p: (a - b) % p,
    "mul": lambda a, b, p: (a * b) % p,
    "div": lambda a, b, p: (a * _inverse_mod(b, p)) % p,
    "div_odd": lambda a, b, p: np.where(b % 2 == 1, (a * _inverse_mod(b, p)) % p, (a - b) % p),
    "x2+y2": lambda a, b, p: (a * a + b * b) % p,
    "x2+xy+y2": lambda a, b, p: (a * a + a * b + b * b) % p,
    "x2+xy+y2+x": lambda a, b, p: (a * a + a * b + b * b + a) % p,
    "x3+xy": lambda a, b, p: (a**3 + a * b) % p,
    "x3+xy2+y": lambda a, b, p: (a**3 + a * b * b + b) % p,
}
NONZERO_B = {"div", "div_odd"}
PRIME_ONLY = {"div", "div_odd"}
COMPOSE = "compose"
ALIASES = {
    "x+y": "add",
    "+": "add",
    "x-y": "sub",
    "-": "sub",
    "x*y": "mul",
    "*": "mul",
    "x/y": "div",
    "/": "div",
    "x^2+y^2": "x2+y2",
    "x^2+xy+y^2": "x2+xy+y2",
    "x^2+xy+y^2+x": "x2+xy+y2+x",
    "x^3+xy": "x3+xy",
    "x^3+xy^2+y": "x3+xy2+y",
    "mul_group": COMPOSE,
    "group": COMPOSE,
    "composition": COMPOSE,
}
OPS = (COMPOSE, *MOD_OPS)


@dataclass(frozen=True, eq=False)
class Task:
    """A finite dataset of pairs (a, b) -> y, all pairs of the input alphabet (or a subset)."""

    name: str
    """E.g. "S4" (composition) or "Z97:add"."""
    op: str
    """"compose" or a key of MOD_OPS."""
    a: torch.Tensor
    """LongTensor [N]: left operand."""
    b: torch.Tensor
    """LongTensor [N]: right operand."""
    y: torch.Tensor
    """LongTensor [N]: the answer."""
    n_in: int
    """Input alphabet size (|G| or p)."""
    n_out: int
    """Output alphabet size (|G| or p)."""
    group: Group | None
    """The group whose table this is (composition, and `add` on Z_p), else None."""
    modulus: int | None = None
    """p for the modular ops, else None."""

    def __len__(self) -> int:
        return int(self.y.shape[0])


def pred_table(task: Task, pred: torch.Tensor) -> torch.Tensor | None:
    """The predicted table [S, n, n] from predictions [S, N] over every task pair (None when
    the task's pairs are not every (a, b) of its n elements)."""
    n = task.n_in
    if len(task) != n * n:
        return None
    table = pred.new_empty(pred.shape)
    table[:, task.a * n + task.b] = pred
    return table.view(-1, n, n)


def make_task(group: str | Group, op: str | None = None) -> Task:
    """Group composition (op None or "compose") or a modular op on Z_p (group "Z<p>")."""
    import torch  # here, not at the top: checking names needs no torch

    key = _op_key(op)
    if key == COMPOSE:
        G = get_group(group)
        n = G.order
        a = torch.arange(n).repeat_interleave(n)  # [n^2]
        b = torch.arange(n).repeat(n)  # [n^2]
        return Task(G.name, COMPOSE, a, b, G.table[a, b], n, n, G)
    p = _modulus(group, key)
    a = np.repeat(np.arange(p), p)
    b = np.tile(np.arange(p), p)
    if key in NONZERO_B:
        a, b = a[b != 0], b[b != 0]
    y = MOD_OPS[key](a, b, p)
    G = get_group(group) if key == "add" else None
    t = torch.from_numpy
    return Task(f"Z{p}:{key}", key, t(a), t(b), t(y.astype(np.int64)), p, p, G, p)


def canonical_names(group: str, op: str | None) -> tuple[str, str]:
    """(group, op) as the library spells them: `s4` -> S4, `C5` -> Z5, `x+y` -> add, and the
    composition (`group`, `compose`, omitted) -> group. A name that does not parse is returned
    as given (make_task and the spec checks report it)."""
    try:
        group = parse(str(group), cap=10**12, hints=False).name  # the cap is checked when built
    except GroupError:
        pass
    try:
        key = _op_key(op)
    except ConfigError:
        return group, str(op)
    return group, "group" if key == COMPOSE else key


def split(task: Task, train_frac: float, data_seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Disjoint (train_idx, val_idx), sorted LongTensors; round(train_frac * N) train examples,
    at least one of each. Deterministic from data_seed via NumPy PCG64 (see module doc)."""
    import torch  # here, not at the top: checking names needs no torch

    if not 0.0 < float(train_frac) < 1.0:
        raise ConfigError(f"train_frac must be in (0, 1), got {train_frac!r}")
    if int(data_seed) != data_seed or data_seed < 0:
        raise ConfigError(f"data_seed must be a non-negative integer, got {data_seed!r}")
    N = len(task)
    n_train = min(max(int(round(train_frac * N)), 1), N - 1)
    perm = np.random.Generator(np.random.PCG64(int(data_seed))).permutation(N)
    train = np.sort(perm[:n_train])
    val = np.sort(perm[n_train:])
    return torch.from_numpy(train), torch.from_numpy(val)


def _op_key(op: str | None) -> str:
    if op is None:
        return COMPOSE
    key = str(op).strip().lower().replace(" ", "")
    key = ALIASES.get(key, key)
    if key not in OPS:
        raise ConfigError(f"unknown op {op!r}; valid: {', '.join(OPS)} (aliases x+y, x/y, ...)")
    return key


def _modulus(group: str | Group, key: str) -> int:
    name = group if isinstance(group, str) else group.name
    spec = parse(name)
    if len(spec.factors) != 1 or spec.factors[0][0] != "Z":
        raise GroupError(f"op {key!r} is modular arithmetic: the group must be Z<p>, got {name!r}")
    p = spec.factors[0][1]
    if key in PRIME_ONLY and not _is_prime(p):
        raise GroupError(f"op {key!r} needs a prime modulus, got Z{p}")
    return p


def _inverse_mod(b: np.ndarray, p: int) -> np.ndarray:
    inv = np.array([pow(int(x), -1, p) if x % p else 0 for x in range(p)], dtype=np.int64)
    return inv[b % p]


def _is_prime(n: int) -> bool:
    return n >= 2 and all(n % f for f in range(2, int(n**0.5) + 1))


def op_problem(group: str, op: str | None) -> str | None:
    """Why `make_task(group, op)` would fail on the names alone, or None; builds nothing."""
    try:
        key = _op_key(op)
        if key == COMPOSE:
            parse(group)
        else:
            _modulus(group, key)
    except (ConfigError, GroupError) as exc:
        return (str(exc).splitlines()[0] + "; valid: group (any group), or on Z<p>: "
                + ", ".join(MOD_OPS) + " (div, div_odd: p prime)")
    return None

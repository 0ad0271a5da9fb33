"""The service's scheduling decisions, as pure functions of plain data (no database, no Ray).

The service asks three questions; each is answered here from values it passes in:

- **May this sweep be queued?** (`check_quota`) A user's quota is CPU-hours and GPU-hours
  over a window (`Policy.quota_window_s`, default 30 days). At submission the sweep is priced by
  the cost model (`grokray.cost.sweep.estimate_plan`, what `grokray sweep --dry-run` prints;
  the expected figure by default, `Policy.price="upper"` for the bound). The sweep is over quota
  when the user's hours used in the window, plus the estimates still to come of their queued and
  running sweeps, plus this sweep's estimate exceed the quota; it is then refused with one line
  saying by how much, or held (`Policy.over_quota="hold"`) until it fits.
- **Which sweeps run next, on how many slots?** (`decide`) Queued sweeps are ordered by
  priority (higher first); between sweeps of equal priority the user with the smaller fair-share
  score goes first (`share_scores`), then the earlier submission. A sweep is granted as many
  trial slots as the cluster's free resources hold, up to what it wants (its trials left, at
  most its spec's concurrency); a slot is one trial's `resources` (cpu, gpu). A sweep for which
  not one slot is free blocks: the resources of its slots are reserved, and sweeps behind it
  start only on what is left (no backfill into its share).
- **Whom to preempt?** A blocked sweep that has running sweeps of strictly lower priority
  below it takes their slots: the lowest priority first, among equals the one started last (it
  has the least done), until the slots freed (with those already being stopped) cover what the
  blocked sweep wants. A preempted sweep is asked to checkpoint and stop (the driver's graceful
  stop); it goes back to the queue and resumes from its checkpoints later. Sweeps of equal
  priority never preempt one another.

Fair share: a user's score is their recorded usage, each record weighted by
2 ** -(age / half_life) (`Policy.half_life_s`, default one day), plus the expected usage still
to come of their running sweeps (what they have been granted counts at once, so that two users
of equal priority alternate instead of the first taking every slot until its usage lands). Usage
is CPU-seconds plus `Policy.gpu_weight` (default 8) CPU-seconds per GPU-second. The score is
updated within one decision as sweeps are granted.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

EPS = 1e-9


@dataclass(frozen=True)
class Resources:
    """CPUs and GPUs (logical, as Ray counts them)."""

    cpu: float = 0.0
    gpu: float = 0.0

    def __add__(self, o: Resources) -> Resources:
        return Resources(self.cpu + o.cpu, self.gpu + o.gpu)

    def __sub__(self, o: Resources) -> Resources:
        return Resources(self.cpu - o.cpu, self.gpu - o.gpu)

    def times(self, n: float) -> Resources:
        return Resources(self.cpu * n, self.gpu * n)

    def clamp(self) -> Resources:
        """No dimension below zero."""
        return Resources(max(0.0, self.cpu), max(0.0, self.gpu))

    def slots(self, per: Resources) -> int:
        """How many of `per` fit in these resources (a very large number when `per` is 0)."""
        n = math.inf
        for have, need in ((self.cpu, per.cpu), (self.gpu, per.gpu)):
            if need > EPS:
                n = min(n, math.floor((have + EPS) / need))
        return 10**9 if n == math.inf else max(0, int(n))


@dataclass(frozen=True)
class Usage:
    """Seconds of use: CPU-seconds and GPU-seconds."""

    cpu_s: float = 0.0
    gpu_s: float = 0.0

    def __add__(self, o: Usage) -> Usage:
        return Usage(self.cpu_s + o.cpu_s, self.gpu_s + o.gpu_s)

    def __sub__(self, o: Usage) -> Usage:
        return Usage(self.cpu_s - o.cpu_s, self.gpu_s - o.gpu_s)

    def clamp(self) -> Usage:
        return Usage(max(0.0, self.cpu_s), max(0.0, self.gpu_s))

    @property
    def cpu_h(self) -> float:
        return self.cpu_s / 3600

    @property
    def gpu_h(self) -> float:
        return self.gpu_s / 3600


@dataclass(frozen=True)
class Charge:
    """Usage recorded for a user at a time (seconds since the epoch): a trial's CPU and GPU
    seconds when its rows land."""

    user: str
    at: float
    usage: Usage


@dataclass(frozen=True)
class Policy:
    """How the scheduler decides (the service's settings)."""

    half_life_s: float = 86400.0
    """fair share: a charge's weight halves every this many seconds"""
    gpu_weight: float = 8.0
    """fair share: CPU-seconds one GPU-second counts as"""
    quota_window_s: float = 30 * 86400.0
    """quota: usage older than this no longer counts against it"""
    over_quota: Literal["refuse", "hold"] = "refuse"
    """a sweep over its user's quota: refused at submission, or held until it fits"""
    price: Literal["expected", "upper"] = "expected"
    """which of the cost model's figures a sweep is priced at"""

    def __post_init__(self) -> None:
        if self.over_quota not in ("refuse", "hold"):
            raise ValueError(f"over_quota {self.over_quota!r}; valid: refuse, hold")
        if self.price not in ("expected", "upper"):
            raise ValueError(f"price {self.price!r}; valid: expected, upper")
        if not self.half_life_s > 0:
            raise ValueError(f"half_life_s {self.half_life_s!r}; valid: a number > 0")


@dataclass(frozen=True)
class Quota:
    """A user's hours per window; None: no limit on that kind."""

    cpu_h: float | None = None
    gpu_h: float | None = None


@dataclass(frozen=True)
class Sweep:
    """A sweep as the scheduler sees it."""

    id: str
    user: str
    priority: int
    submitted: float
    """submission order (a time or a sequence number)"""
    per_trial: Resources
    """one trial's resources (the spec's `resources`)"""
    trials_left: int
    """trials still to run"""
    concurrency: int | None = None
    """the spec's cap on trials at once (None: as many as fit)"""
    expected: Usage = Usage()
    """what its trials still to run are expected to use (the cost model)"""

    @property
    def want(self) -> int:
        """Slots it can use."""
        n = max(0, self.trials_left)
        return n if self.concurrency is None else min(n, max(1, self.concurrency))


@dataclass(frozen=True)
class Running:
    """A sweep that holds slots."""

    sweep: Sweep
    slots: int
    started: float
    stopping: bool = False
    """asked to stop (preempted, or cancelled); its slots free when it has"""
    used: Usage = Usage()
    """what it has used so far (its rows' and running trials' seconds)"""

    @property
    def holds(self) -> Resources:
        return self.sweep.per_trial.times(self.slots)


@dataclass(frozen=True)
class Grant:
    """Start sweep `id` on `slots` trials at once."""

    id: str
    slots: int


@dataclass
class Decision:
    """What one scheduling pass decided."""

    start: list[Grant] = field(default_factory=list)
    preempt: list[str] = field(default_factory=list)
    """running sweeps to checkpoint and stop (they go back to the queue)"""
    order: list[str] = field(default_factory=list)
    """the queue in the order it is served (position 1 first)"""
    why: dict[str, str] = field(default_factory=dict)
    """a queued sweep not started: why (one line each)"""


def decayed(charges: Iterable[Charge], now: float, policy: Policy) -> dict[str, float]:
    """Each user's recent usage: sum of (cpu_s + gpu_weight * gpu_s) * 2 ** -(age / half_life)
    (a charge in the future counts whole)."""
    out: dict[str, float] = {}
    for c in charges:
        age = max(0.0, now - c.at)
        w = 2.0 ** (-age / policy.half_life_s)
        out[c.user] = out.get(c.user, 0.0) + w * _weight(c.usage, policy)
    return out


def _weight(u: Usage, policy: Policy) -> float:
    return u.cpu_s + policy.gpu_weight * u.gpu_s


def share_scores(charges: Iterable[Charge], running: Iterable[Running], now: float,
                 policy: Policy) -> dict[str, float]:
    """Fair-share score per user: decayed usage plus the expected usage still to come of their
    running sweeps (lower goes first)."""
    score = decayed(charges, now, policy)
    for r in running:
        if r.stopping:
            continue
        left = (r.sweep.expected - r.used).clamp()
        score[r.sweep.user] = score.get(r.sweep.user, 0.0) + _weight(left, policy)
    return score


def queue_order(waiting: Iterable[Sweep], scores: Mapping[str, float],
                policy: Policy) -> list[Sweep]:
    """The queue in the order it is served: priority (higher first); among equal priorities,
    the lower fair-share score, each sweep taken adding its expected usage to its user's score;
    then the earlier submission, then the id."""
    left = list(waiting)
    score = dict(scores)
    out: list[Sweep] = []
    while left:
        best = min(left, key=lambda s: (-s.priority, score.get(s.user, 0.0), s.submitted, s.id))
        left.remove(best)
        out.append(best)
        score[best.user] = score.get(best.user, 0.0) + _weight(best.expected, policy)
    return out


def decide(waiting: Iterable[Sweep], running: Iterable[Running], capacity: Resources,
           charges: Iterable[Charge], now: float, policy: Policy | None = None) -> Decision:
    """One scheduling pass: which queued sweeps start (on how many slots) and which running
    ones are preempted, for a cluster of `capacity` (the module's docstring states the
    rules)."""
    policy = policy or Policy()
    running = list(running)
    order = queue_order(waiting, share_scores(charges, running, now, policy), policy)
    free = capacity
    for r in running:
        free = free - r.holds
    free = free.clamp()
    # slots already being stopped free later: counted toward a blocked sweep's need only
    coming = Resources()
    for r in running:
        if r.stopping:
            coming = coming + r.holds
    victims = sorted((r for r in running if not r.stopping),
                     key=lambda r: (r.sweep.priority, -r.started, r.sweep.id))
    d = Decision(order=[s.id for s in order])
    for s in order:
        want = s.want
        if want <= 0:
            d.why[s.id] = "nothing left to run"
            continue
        if capacity.slots(s.per_trial) < 1:
            d.why[s.id] = (f"one trial needs cpu {s.per_trial.cpu:g} gpu {s.per_trial.gpu:g}; "
                           f"the cluster has cpu {capacity.cpu:g} gpu {capacity.gpu:g}")
            continue
        fit = free.slots(s.per_trial)
        if fit >= 1:
            n = min(want, fit)
            d.start.append(Grant(s.id, n))
            free = (free - s.per_trial.times(n)).clamp()
            continue
        need = s.per_trial.times(want)
        freed = free + coming
        taken: list[Running] = []
        for v in victims:
            if v.sweep.priority >= s.priority or freed.slots(s.per_trial) >= want:
                break
            taken.append(v)
            freed = freed + v.holds
        for v in taken:
            victims.remove(v)
            d.preempt.append(v.sweep.id)
            coming = coming + v.holds
        if taken:
            d.why[s.id] = (f"waits for {', '.join(v.sweep.id for v in taken)} (lower priority) "
                           "to checkpoint and stop")
        else:
            d.why[s.id] = "waits for free resources"
        # reserve its slots: sweeps behind it start only on what is left
        free = (free - need).clamp()
    return d


def check_quota(user: str, estimate: Usage, used: Usage, pending: Usage, quota: Quota | None,
                policy: Policy | None = None) -> tuple[str, str]:
    """('admit', '') when the sweep fits its user's quota; else (`policy.over_quota`, the one
    line saying by how much). `used`: the user's usage in the quota window; `pending`: the
    expected usage still to come of their queued and running sweeps; `estimate`: this sweep's
    price (the cost model's expected or upper figure, as `policy.price` says)."""
    policy = policy or Policy()
    if quota is None:
        return "admit", ""
    over = []
    total = used + pending + estimate
    for kind, have, limit, u, p, e in (
            ("CPU", total.cpu_h, quota.cpu_h, used.cpu_h, pending.cpu_h, estimate.cpu_h),
            ("GPU", total.gpu_h, quota.gpu_h, used.gpu_h, pending.gpu_h, estimate.gpu_h)):
        if limit is not None and have > limit + EPS:
            over.append(f"{have - limit:.3g} {kind}-hours (quota {limit:g} h; used {u:.3g}, "
                        f"queued and running {p:.3g}, this sweep {e:.3g} {policy.price})")
    if not over:
        return "admit", ""
    days = policy.quota_window_s / 86400
    verb = "refused" if policy.over_quota == "refuse" else "held"
    return policy.over_quota, (f"sweep {verb}: {user} over quota by " + " and ".join(over) +
                               f" over the last {days:g} days")


def price(cost: object, policy: Policy | None = None) -> Usage:
    """A `grokray.cost.sweep.SweepCost` as the Usage its sweep is priced at."""
    policy = policy or Policy()
    if policy.price == "upper":
        return Usage(cost.cpu_s_upper, cost.gpu_s_upper)  # type: ignore[attr-defined]
    return Usage(cost.cpu_s_expected, cost.gpu_s_expected)  # type: ignore[attr-defined]


__all__ = ["Charge", "Decision", "Grant", "Policy", "Quota", "Resources", "Running", "Sweep",
           "Usage", "check_quota", "decayed", "decide", "price", "queue_order",
           "share_scores"]

"""The lab's accounting, from the service's database: CPU/GPU-hours per sweep and per user, used
against the cost model's estimate at submission, the seed-runs reused from other sweeps' rows
and the hours that saved.

- **used**: the seconds of the rows a sweep trained (each trial's wall time times the CPUs and
  GPUs its `resources` hold; grokray.service.reuse.index_dir), recorded as they land;
- **estimated**: the cost model's expected figure when the sweep was submitted
  (grokray.cost.sweep.estimate_plan, what `grokray sweep --dry-run` prints);
- **reused**: seed-runs whose row was copied from another sweep instead of trained;
- **saved**: what training those rows cost where they were trained (the source identity's
  seconds in the index).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

COLUMNS = ["sweep", "owner", "name", "state", "cpu_h_used", "cpu_h_estimated", "gpu_h_used",
           "gpu_h_estimated", "seed_runs", "seed_runs_reused", "cpu_h_saved", "gpu_h_saved"]


@dataclass(frozen=True)
class Line:
    """One sweep's (or one user's: `sweep` 0, `name` '') account, in hours."""

    sweep: int
    owner: str
    name: str
    state: str
    cpu_h_used: float
    cpu_h_estimated: float
    gpu_h_used: float
    gpu_h_estimated: float
    seed_runs: int
    seed_runs_reused: int
    cpu_h_saved: float
    gpu_h_saved: float


def saved_seconds(state: Any, sweep_id: int) -> tuple[float, float]:  # noqa: ANN401 - State
    """(CPU s, GPU s) the reused rows of a sweep cost where they were trained."""
    reused = [i for i in state.identities_of(sweep_id)
              if i.source_dir and i.source_dir != "released" and i.status == "ok"]
    if not reused:
        return 0.0, 0.0
    src = {(i.config_hash, i.seed, i.source_dir) for i in reused}
    cpu = gpu = 0.0
    for r in state.find_identities([(i.config_hash, i.seed) for i in reused]):
        if (r.config_hash, r.seed, r.sweep_dir) in src and not r.source_dir:
            cpu, gpu = cpu + r.cpu_s, gpu + r.gpu_s
    return cpu, gpu


def per_sweep(state: Any, states: tuple[str, ...] | None = None) -> list[Line]:  # noqa: ANN401
    """Every sweep's account (all states unless `states`), in submission order."""
    from grokray.service.db import STATES

    out = []
    for sv in sorted(state.list_queue(states=states or STATES), key=lambda v: v.seq):
        cpu_saved, gpu_saved = saved_seconds(state, sv.id)
        out.append(Line(
            sweep=sv.id, owner=sv.owner, name=sv.name, state=sv.state,
            cpu_h_used=sv.used_cpu_s / 3600, cpu_h_estimated=sv.estimate_cpu_s / 3600,
            gpu_h_used=sv.used_gpu_s / 3600, gpu_h_estimated=sv.estimate_gpu_s / 3600,
            seed_runs=sv.seed_runs_total, seed_runs_reused=sv.seed_runs_reused,
            cpu_h_saved=cpu_saved / 3600, gpu_h_saved=gpu_saved / 3600))
    return out


def per_user(lines: list[Line]) -> list[Line]:
    """The sweeps' accounts summed by owner (alphabetical)."""
    users: dict[str, list[Line]] = {}
    for ln in lines:
        users.setdefault(ln.owner, []).append(ln)
    out = []
    for owner, ls in sorted(users.items()):
        out.append(Line(0, owner, "", f"{len(ls)} sweeps",
                        *(sum(getattr(x, k) for x in ls) for k in COLUMNS[4:])))
    return out


def as_json(state: Any) -> dict[str, Any]:  # noqa: ANN401 - State
    """{'sweeps': [...], 'users': [...]}: plain values (what the accounting page reads)."""
    sweeps = per_sweep(state)
    return {"columns": COLUMNS, "sweeps": [asdict(x) for x in sweeps],
            "users": [asdict(x) for x in per_user(sweeps)]}


def text(state: Any) -> str:  # noqa: ANN401 - State
    """The accounting as two fixed-width tables (per user, then per sweep; hours)."""
    sweeps = per_sweep(state)
    head = (f"{'user':<10} {'sweep':>5} {'name':<12} {'state':<10} {'CPU h used':>10} "
            f"{'estimated':>10} {'GPU h used':>10} {'estimated':>9} {'seed-runs':>9} "
            f"{'reused':>6} {'CPU h saved':>11}")

    def row(x: Line) -> str:
        return (f"{x.owner:<10} {x.sweep or '':>5} {x.name:<12} {x.state:<10} "
                f"{x.cpu_h_used:>10.4f} {x.cpu_h_estimated:>10.4f} {x.gpu_h_used:>10.4f} "
                f"{x.gpu_h_estimated:>9.4f} {x.seed_runs:>9} {x.seed_runs_reused:>6} "
                f"{x.cpu_h_saved:>11.4f}")

    return "\n".join(["per user", head, *map(row, per_user(sweeps)), "", "per sweep", head,
                      *map(row, sweeps)])

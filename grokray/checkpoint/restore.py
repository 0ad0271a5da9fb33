"""Restoring a checkpoint: a chain of checkpoint files read back into what a trial is restored
from (`restore`): the seeds that had finished (outcome, curve rows, snapshots) and, for each
seed still training, its rows, snapshots, parameters and training state (names as
grokray/trainer/checkpointer.py writes them). Read on the worker (grokray.trial, before the
trainer starts); the driver checks a chain whole (`check_chain`) before it hands it out."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from grokray.checkpoint.format import Unusable, decode
from grokray.checkpoint.hook import Chain
from grokray.pickup import SeedPickup
from grokray.result import SeedResult

PARAM = "param."
"""the name prefix of a seed's parameters in its state"""


@dataclass
class Restored:
    """A trial's newest checkpoint, read back."""

    step: int
    """the step it was taken at (training goes on from there; its eval is done)"""
    chain_start: int
    """the step its chain began at"""
    origin: tuple[str | None, int | None]
    """(continued_from, continued_from_step) of its continued seeds"""
    seeds: dict[int, SeedPickup] = field(default_factory=dict)
    """seeds still training"""
    finished: dict[int, tuple[SeedResult, list[dict[str, Any]], list[dict[str, Any]]]] = \
        field(default_factory=dict)
    """seeds that had finished: (outcome, curve rows, snapshot records)"""


def restore(chain: Chain, config_hash: str) -> Restored:
    """Read a chain (Unusable: damaged, another version or trial's, or broken)."""
    state = decode(chain.state, config_hash)
    deltas = sorted((decode(d, config_hash) for d in chain.deltas), key=lambda p: p.step)
    if state.kind != "state" or any(d.kind != "delta" for d in deltas):
        raise Unusable("a chain of the wrong kinds of file")
    check_chain(state.step, [(d.step, d.prev, bool(d.meta.get("first"))) for d in deltas])
    out = Restored(step=state.step, chain_start=int(state.meta.get("start", 0)),
                   origin=tuple(state.meta.get("origin") or (None, None)))
    rows: dict[int, list[dict[str, Any]]] = {}
    snaps: dict[int, list[dict[str, Any]]] = {}
    finished: dict[int, SeedResult] = {}
    for d in deltas:
        for r in d.meta.get("rows", []):
            rows.setdefault(int(r["seed"]), []).append(r)
        for sn in d.meta.get("snapshots", []):
            for name, idx in sn["tensors"].items():
                a = d.arrays[idx]
                snaps.setdefault(int(sn["seed"]), []).append({
                    "seed": int(sn["seed"]), "step": int(sn["step"]),
                    "tags": ",".join(sn["tags"]), "tensor": name, "shape": list(a.shape),
                    "dtype": str(a.dtype), "values": a.reshape(-1)})
        for f in d.meta.get("finished", []):
            finished[int(f["seed"])] = SeedResult(**f)
    for s, res in finished.items():
        out.finished[s] = (res, rows.get(s, []), snaps.get(s, []))
    for s, names in state.meta.get("seeds", {}).items():
        seed = int(s)
        arrays = {k: state.arrays[i] for k, i in names.items()}
        out.seeds[seed] = SeedPickup(
            rows=rows.get(seed, []), snapshots=snaps.get(seed, []),
            params={k[len(PARAM):]: v for k, v in arrays.items() if k.startswith(PARAM)},
            state={k: v for k, v in arrays.items() if not k.startswith(PARAM)})
    return out


def check_chain(step: int, deltas: list[tuple[int, int, bool]]) -> list[int]:
    """The steps of the deltas a state at `step` needs, oldest first (Unusable: one is
    missing). `deltas`: (step, prev, first) of every delta at hand."""
    by_step = {s: (p, f) for s, p, f in deltas}
    need, cur = [], step
    while True:
        if cur not in by_step:
            raise Unusable(f"the delta of step {cur} is missing")
        need.append(cur)
        prev, first = by_step[cur]
        if first:
            return need[::-1]
        if prev >= cur:
            raise Unusable(f"the delta of step {cur} points forward")
        cur = prev

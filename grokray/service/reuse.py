"""Each identical trial once, for everyone: a submitted sweep's (config_hash, seed) identities
that already have a compatible row anywhere in the lab's store get that row copied into the
sweep's dir instead of being trained; identities a running sweep is training are waited for.

**The compatibility rule.** Two rows of one identity (the same effective config and seed) are
the same trial when they were trained by the same *training semantics* and on the same *device
kind*:

- the training semantics is `grokray.schema.TRAINING_SEMANTICS` (bumped by any change that
  moves a trial's float64 numbers: tests/unit/test_pins.py fails when the pinned curves move
  without it) together with the torch version (`1+torch2.13.0`);
- the device kind is what the trial trained on as far as its numbers depend on it: `cuda:<GPU
  name>`, or `cpu:<machine>:<torch's CPU capability>:t<threads>` (the BLAS kernels and the
  thread count change a sum's last bits; grokray.trialrun.device_kind).

Rows that differ in either are other trials for this purpose and are trained again; the sweep's
message says how many and why ("not reused: 4 trained by semantics 0+torch2.12.0, here
1+torch2.13.0"). Failed rows are never reused.

**What a reused row promises**: the numbers a training run here would give, bit for bit (the
same code and torch, the same device kind, the same config and seed: grokray's training is
deterministic on one device kind, as the float64 pins and the z97 ablation twice on one machine
show). It does not promise the same numbers on another device kind (the same experiment there:
the same z97 ablation's MLP+Grokfast median ratio read 0.879 on one machine and 0.936 on
another); such a row is not reused.

**Provenance**: a copied row keeps its run_id, times, host and device columns (where and when
it was trained), takes the sweep's name in `sweep`, and names the dir it came from in
`reused_from` (grokray.schema.OPTIONAL_PROVENANCE_COLUMNS); its curves and snapshots are copied
with it, so the sweep's dir stays self-contained (`grokray.load`, `analyze`, `dashboard` read it
without the service).

The lookup goes through the service database's `identities` table (`state.find_identities`),
never a scan of the store: each sweep's rows are indexed there when they land (`index_dir`).
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Protocol

import pandas as pd

from grokray.schema import TRAINING_SEMANTICS


class IdentityIndex(Protocol):
    """What reuse needs of the service's state (grokray.service.state.State)."""

    def find_identities(self, keys: Any, *, semantics: str | None = None,  # noqa: ANN401
                        device_kind: str | None = None, statuses: Any = ("ok",)) -> list: ...

    def add_identities(self, rows: Any) -> int: ...  # noqa: ANN401


def semantics_key(training_semantics: Any, torch_version: Any) -> str:  # noqa: ANN401
    """The training semantics of a row: grokray's version of it and torch's ("1+torch2.13.0";
    "unknown" for rows written before the column)."""
    if training_semantics is None or pd.isna(training_semantics):
        return "unknown"
    return f"{int(training_semantics)}+torch{torch_version}"


def current_semantics() -> str:
    """The training semantics of this installation."""
    import torch

    return semantics_key(TRAINING_SEMANTICS, torch.__version__)


def expected_device_kind(spec: Any) -> str:  # noqa: ANN401 - SweepSpec
    """The device kind a sweep's trials train on when run here: its config's device (auto: a
    GPU when this host has one) with the thread count of its `resources.cpu`."""

    from grokray.threads import torch_threads, trial_threads
    from grokray.trialrun import device_kind, resolve_device

    with torch_threads(trial_threads(spec.cpu)):
        return device_kind(resolve_device(spec.base.device))


@dataclass
class Match:
    """What the index holds for a sweep's identities."""

    found: dict[tuple[str, int], Any] = field(default_factory=dict)
    """identity -> a compatible row elsewhere (an IdentityView), to copy"""
    training: dict[tuple[str, int], Any] = field(default_factory=dict)
    """identity -> the claim of another sweep training it now: wait for it"""
    refused: dict[tuple[str, int], str] = field(default_factory=dict)
    """identity -> why the rows that exist of it are not reused"""

    def why_not(self) -> str:
        """One line: how many seed-runs were not reused and why ('' when none)."""
        if not self.refused:
            return ""
        parts = [f"{n} {why}" for why, n in sorted(Counter(self.refused.values()).items())]
        return "not reused: " + "; ".join(parts)


def match(index: IdentityIndex, keys: list[tuple[str, int]], sweep_dir: str, semantics: str,
          device_kind: str) -> Match:
    """Look `keys` up in the index: compatible finished rows in other dirs (`found`), claims of
    other sweeps (`training`), and rows that exist but may not be reused (`refused`, with the
    reason: another training semantics, another device kind, a failed row)."""
    out = Match()
    here = os.path.normpath(sweep_dir)
    rows = index.find_identities(keys, statuses=("ok", "training", "failed"))
    by_key: dict[tuple[str, int], list[Any]] = {}
    for r in rows:
        if os.path.normpath(r.sweep_dir) != here:
            by_key.setdefault((r.config_hash, int(r.seed)), []).append(r)
    for key, found in by_key.items():
        ok = [r for r in found if r.semantics == semantics and r.device_kind == device_kind]
        done = [r for r in ok if r.status == "ok"]
        if done:
            out.found[key] = done[0]
        elif [r for r in ok if r.status == "training"]:
            out.training[key] = next(r for r in ok if r.status == "training")
        elif [r for r in found if r.status == "ok" and r.semantics != semantics]:
            r = next(r for r in found if r.status == "ok" and r.semantics != semantics)
            out.refused[key] = f"trained by semantics {r.semantics}, here {semantics}"
        elif [r for r in found if r.status == "ok"]:
            r = next(r for r in found if r.status == "ok")
            out.refused[key] = f"trained on {r.device_kind}, here {device_kind}"
        elif [r for r in found if r.status == "failed" and r.source_dir != "released"]:
            out.refused[key] = "failed where they ran (trained again)"
    return out


def claim(index: IdentityIndex, keys: list[tuple[str, int]], *, sweep_id: int, owner_id: int,
          sweep_dir: str, semantics: str, device_kind: str) -> int:
    """Mark `keys` as being trained by this sweep (status `training`), so that another sweep
    waits for them instead of training them twice. Returns how many were claimed."""
    rows = [{"config_hash": h, "seed": int(s), "sweep_dir": sweep_dir, "sweep_id": sweep_id,
             "owner_id": owner_id, "semantics": semantics, "device_kind": device_kind,
             "status": "training"} for h, s in keys]
    index.add_identities(rows)
    return len(rows)


def release(index: IdentityIndex, keys: list[tuple[str, int]], *, sweep_dir: str) -> None:
    """Give up the claims of a sweep that will not train them (cancelled, failed): they are
    marked failed with `source_dir` 'released', which no one waits for and no reason quotes."""
    index.add_identities([{"config_hash": h, "seed": int(s), "sweep_dir": sweep_dir,
                           "status": "failed", "source_dir": "released"} for h, s in keys])


ROW_COLUMNS = ["config_hash", "seed", "status", "wall_s", "device", "torch_version",
               "training_semantics", "device_kind", "reused_from", "started_at"]


def index_dir(index: IdentityIndex, sweep_dir: str, *, sweep_id: int | None,
              owner_id: int | None, cpu: float = 1.0, gpu: float = 0.0) -> int:
    """Index the rows of one sweep dir (its own trials files, not the store): each identity
    with its semantics, device kind and cost: the trial's wall seconds split over its seeds,
    times the `cpu` CPUs and `gpu` GPUs a trial holds (a reused row cost nothing here). Returns
    how many identities are new to the index."""
    df = read_rows(sweep_dir)
    if not len(df):
        return 0
    rows = []
    per_seed = df.groupby(["config_hash", "file"])["seed"].transform("count").clip(lower=1)
    for (_, r), n in zip(df.iterrows(), per_seed, strict=True):
        wall = float(r["wall_s"]) / float(n) if pd.notna(r.get("wall_s")) else 0.0
        src = r.get("reused_from")
        src = None if src is None or pd.isna(src) else str(src)
        rows.append({
            "config_hash": r["config_hash"], "seed": int(r["seed"]), "sweep_dir": sweep_dir,
            "sweep_id": sweep_id, "owner_id": owner_id,
            "semantics": semantics_key(r.get("training_semantics"), r.get("torch_version")),
            "device_kind": _kind(r), "status": "failed" if r["status"] == "failed" else "ok",
            "source_dir": src, "cpu_s": 0.0 if src else wall * cpu,
            "gpu_s": 0.0 if src else wall * gpu})
    return index.add_identities(rows)


def _kind(r: Any) -> str:  # noqa: ANN401 - a row
    k = r.get("device_kind")
    if k is None or pd.isna(k):
        return f"{r.get('device')}:unknown"
    return str(k)


def read_rows(sweep_dir: str) -> pd.DataFrame:
    """The reuse columns of a sweep dir's trials (one row per identity; newest run wins)."""
    from grokray import reader

    t = reader.read_dir(sweep_dir, "trials", columns=ROW_COLUMNS,
                        required=["config_hash", "seed", "status"])
    df = t.frame
    for c in ROW_COLUMNS:
        if c not in df:
            df[c] = None
    if len(df) and "started_at" in df:
        df = df.sort_values("file").drop_duplicates(["config_hash", "seed"], keep="last")
    return df.reset_index(drop=True)


def copy_rows(found: dict[tuple[str, int], Any], sweep_dir: str, sweep_name: str) -> int:
    """Copy each found identity's row (trials, curves, snapshots) into `sweep_dir`, named for
    the sweep, with `reused_from` set (module docstring); the source dirs are read only for
    those config_hashes (per-trial files or compacted parts alike: grokray.reader.read_dir's
    row filter). Returns how many seed-runs."""
    from grokray import reader
    from grokray.sweep import store

    by_source: dict[str, set[tuple[str, int]]] = {}
    for (h, s), r in found.items():
        by_source.setdefault(r.sweep_dir, set()).add((h, int(s)))
    n = 0
    for src, keys in sorted(by_source.items()):
        where = {"config_hash": sorted({h for h, _ in keys})}
        tables = {}
        for sub in (store.TRIALS, store.CURVES, store.SNAPSHOTS):
            t = reader.read_dir(src, sub, where=where)
            tables[sub] = t.frame.drop(columns="file", errors="ignore")
        trials = tables[store.TRIALS]
        if not len(trials):
            continue
        pairs = list(zip(trials["config_hash"], trials["seed"].astype(int), strict=True))
        trials = trials[[k in keys for k in pairs]]
        trials = trials.drop_duplicates(["config_hash", "seed"], keep="last")
        for (h, run_id), rows in trials.groupby(["config_hash", "run_id"], sort=True):
            seeds = set(rows["seed"].astype(int))
            rows = rows.copy()
            origin = rows.get("reused_from")
            rows["reused_from"] = src if origin is None else origin.where(origin.notna(), src)
            rows["reused_from"] = rows["reused_from"].astype("string")
            rows["sweep"] = sweep_name
            parts = {}
            for sub in (store.CURVES, store.SNAPSHOTS):
                df = tables[sub]
                if len(df):
                    df = df[(df["config_hash"] == h) & (df["run_id"] == run_id)
                            & df["seed"].astype(int).isin(seeds)].copy()
                    df["sweep"] = sweep_name
                    parts[sub] = df.reset_index(drop=True)
            store.write_frames(sweep_dir, rows.reset_index(drop=True), parts.get(store.CURVES),
                               config_hash=h, run_id=run_id,
                               snapshots=parts.get(store.SNAPSHOTS))
            n += len(rows)
    return n


def identities_of(spec: Any) -> list[tuple[str, int]]:  # noqa: ANN401 - SweepSpec
    """Every (config_hash, seed) a grid sweep's spec names (a search has none known ahead)."""
    if spec.search is not None:
        return []
    return [(c.config_hash(), int(s)) for c in spec.trials() for s in c.seeds]

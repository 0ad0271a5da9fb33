"""Checkpoints on the sweep's driver: where they are stored (`Files`), and the channel that
carries them from the trials to storage and asks the trials for one (`Channel`).

Layout, in the sweep dir's storage (a local dir or an object store, like every result):

    checkpoints/<config_hash>/<step:010d>.delta.npz    what the trial recorded since the one
                                                       before (grokray.checkpoint)
    checkpoints/<config_hash>/<step:010d>.state.npz    its training state at that step; the
                                                       newest only

Only the driver writes them, through the same atomic writes as the results (a trial hands its
checkpoint to the channel; a thread of the driver writes it), so checkpoints work wherever the
results do: a local `--out` on a `ray up` head, an object store whose credentials only the
driver has. Analysis, the dashboard and recompute never read them (they read trials/, curves/,
snapshots/ and recomputed/ only). A trial's checkpoints are deleted when its rows land, unless
it was lost to its worker or node on every try (its row is failed, `Outcome.lost`): those stay
for `--rerun-failed`. Those of a trial whose rows are on disk and did not fail (the driver died
between the two) are orphans, which `grokray status --repair` and the next run of the sweep
remove.

At the start of a run, the driver reads the newest checkpoint of every config still to run; one
that cannot be used (damaged, another format version, another config_hash, a broken chain) is
removed, with one line, and its trial starts at step 0. Within a run the channel holds each
trial's newest chain in memory, so a trial whose worker was lost is restored from it when the retry
policy runs it again. Each checkpoint the channel writes to storage is told to its `stored` hook
(the sweep driver's CheckpointStored event, grokray.sweep.events).
"""

from __future__ import annotations

import re
import sys
import threading
from collections.abc import Callable, Iterable
from typing import Any

from grokray.checkpoint.format import Unusable, header
from grokray.checkpoint.hook import Chain, first_checkpoint_s
from grokray.checkpoint.memory import Held, MemoryStore
from grokray.checkpoint.restore import check_chain
from grokray.sweep import store

CHECKPOINTS = "checkpoints"
_NAME = re.compile(r"^(\d{10})\.(delta|state)\.npz$")


def file_name(step: int, kind: str) -> str:
    """`<step:010d>.<kind>.npz`."""
    return f"{step:010d}.{kind}.npz"


class Files:
    """The checkpoint files of one sweep dir."""

    def __init__(self, sweep_dir: str) -> None:
        self.sweep_dir = sweep_dir
        self.loc = store.Location.of(sweep_dir)

    def _dir(self, config_hash: str) -> str:
        return f"{CHECKPOINTS}/{config_hash}"

    def _listing(self, config_hash: str) -> dict[tuple[int, str], str]:
        """(step, kind) -> path of each checkpoint file of a trial."""
        out = {}
        for info in self.loc.listdir(self._dir(config_hash)):
            m = _NAME.match(info.base_name)
            if m:
                out[(int(m.group(1)), m.group(2))] = info.path
        return out

    def state_steps(self, config_hash: str) -> list[int]:
        """The steps of a trial's checkpoint states, oldest first (from the file names; whether
        one can be used is for `load` to find out)."""
        return sorted(step for step, kind in self._listing(config_hash) if kind == "state")

    def hashes(self) -> list[str]:
        """The trials that have a checkpoint dir."""
        return self.loc.subdirs(CHECKPOINTS)

    def write(self, config_hash: str, step: int, delta: bytes, state: bytes) -> None:
        """Write a checkpoint: its delta, then its state (each atomic), then remove the older
        state and the deltas it does not follow (a lost run's, or a chain begun again)."""
        head = header(delta)
        d = self._dir(config_hash)
        for kind, data in (("delta", delta), ("state", state)):
            self.loc.write_bytes_atomic(self.loc.join(d, file_name(step, kind)),
                                        lambda out, data=data: out.write(data))
        prev = int(head["prev"])
        for (s, kind), path in self._listing(config_hash).items():
            stale = (kind == "state" and s != step) or (
                kind == "delta" and s != step and (head.get("first") or s > prev))
            if stale:
                self._delete(path)

    def _delete(self, path: str) -> None:
        try:
            self.loc.fs.delete_file(path)
        except (OSError, FileNotFoundError):
            pass  # removed by another hand (repair)

    def remove(self, config_hash: str) -> None:
        """Remove a trial's checkpoints."""
        try:
            self.loc.fs.delete_dir(self.loc.join(self._dir(config_hash)))
        except (OSError, FileNotFoundError):
            pass

    def read(self, path: str) -> bytes:
        with self.loc.fs.open_input_stream(path) as f:
            return f.read()

    def load(self, config_hash: str) -> tuple[Chain | None, str | None]:
        """The newest checkpoint of a trial as a chain, checked (every file's CRCs, version,
        config_hash, the chain whole): (chain, None), (None, why it cannot be used), or
        (None, None) when there is none."""
        files = self._listing(config_hash)
        states = sorted(s for s, k in files if k == "state")
        if not states:
            return None, ("no state file" if files else None)
        step = states[-1]
        try:
            datas = {key: self.read(path) for key, path in files.items()
                     if key[1] == "delta" and key[0] <= step}
            state = self.read(files[(step, "state")])
            heads = {key: header(data) for key, data in datas.items()}
            sh = header(state)
            for h in [sh, *heads.values()]:
                if h.get("config_hash") != config_hash:
                    raise Unusable(f"of config_hash {h.get('config_hash')}")
            need = check_chain(step, [(s, int(h["prev"]), bool(h.get("first")))
                                      for (s, _), h in heads.items()])
        except Unusable as exc:
            return None, str(exc)
        except OSError as exc:
            return None, f"unreadable ({type(exc).__name__})"
        return Chain(state, [datas[(s, "delta")] for s in need]), None

    def temp_files(self) -> list[str]:
        """Temporary files a killed writer left in the checkpoint dirs."""
        out = []
        for h in self.hashes():
            out += [i.path for i in self.loc.listdir(self._dir(h))
                    if i.base_name.startswith(store._TMP_PREFIX)]
        return out

    def seeds_held(self, config_hash: str) -> set[int] | None:
        """The seeds a trial's newest checkpoint holds (None: none readable)."""
        chain, _ = self.load(config_hash)
        return None if chain is None else _seeds(chain)


def _seeds(chain: Chain) -> set[int]:
    """The seeds a chain holds: those still training and those that had finished."""
    seeds = {int(s) for s in header(chain.state).get("seeds", {})}
    for d in chain.deltas:
        seeds |= {int(f["seed"]) for f in header(d).get("finished", [])}
    return seeds


def repair(sweep_dir: str, done: set[tuple[str, int]] | None = None) -> dict[str, int]:
    """Remove what no trial will be restored from: checkpoint temporary files, and checkpoints of
    trials whose rows are on disk (`done`: the (config_hash, seed) identities with a row that
    did not fail; read when not given: a failed trial's checkpoints are those of a trial lost to
    its worker or node, kept for `--rerun-failed`) or that hold nothing readable."""
    files = Files(sweep_dir)
    removed = {"checkpoint_temp_files": 0, "orphan_checkpoints": 0}
    hashes = files.hashes()
    for path in files.temp_files():
        files._delete(path)
        removed["checkpoint_temp_files"] += 1
    if not hashes:
        return removed
    if done is None:
        done = store.Manifest.load(sweep_dir).done(include_failed=False)
    for h in hashes:
        seeds = files.seeds_held(h)
        if seeds is None or all((h, s) in done for s in seeds):
            files.remove(h)
            removed["orphan_checkpoints"] += 1
    return removed


# ----------------------------------------------------------------------------- the channel


Say = Callable[[str], None]
Stored = Callable[[str, int], None]


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


class Channel:
    """Carries checkpoints between a sweep's trials and its storage, on the driver; one per
    driver process (`channel()`), serving one sweep dir at a time (`open`).

    In this process (`--local`) it is the trials' hook itself; on Ray the trials reach it
    through a small actor on the driver's node (grokray/sweep/checkpoint_actor.py), which holds
    what they hand over until this process's pump thread writes it."""

    def __init__(self) -> None:
        self.files: Files | None = None
        self.memory = MemoryStore()
        self.landed: set[str] = set()
        """trials whose rows are written: a late checkpoint of theirs is dropped"""
        self.lock = threading.RLock()
        """held while writing or removing files; re-entrant: a graceful stop's request runs in
        the signal handler, which may interrupt this thread inside `close`'s last pump"""
        self.asking = 0
        """the generation of the driver's last request"""
        self.answered = 0
        self.stored: Stored | None = None
        """called with (config_hash, step) once a trial's checkpoint is written to storage, on
        the thread that wrote it (the trial's, the pump's, or a stop's), after the channel's
        lock is released; `close` unsets it (grokray.sweep.writer.run_plan sets it for a run)"""

    # -- the sweep's lifetime (the driver)

    def open(self, sweep_dir: str, configs: Iterable[Any], say: Say = _stderr) -> int:
        """Serve the sweep in `sweep_dir` whose configs still to run are `configs`: read the
        newest usable checkpoint of each (one line for each that cannot be used; it is
        removed) and remove orphans; returns how many trials will be restored."""
        self.close()
        self.files = files = Files(sweep_dir)
        self.memory = MemoryStore()
        self.landed = set()
        have = set(files.hashes())
        for path in files.temp_files():  # a killed writer's
            files._delete(path)
        n = 0
        for cfg in configs:
            h = cfg.config_hash()
            if h not in have:
                continue
            have.discard(h)
            if first_checkpoint_s(cfg) is None:
                continue
            chain, why = files.load(h)
            if chain is not None and not set(cfg.seeds) <= _seeds(chain):
                chain, why = None, f"holds other seeds than {cfg.seeds}"
            if chain is None:
                if why:
                    say(f"checkpoint of {h} not used ({why}): training it from step 0")
                    files.remove(h)
                continue
            self._offer(h, chain)
            n += 1
        if have:  # trials not to run now: orphans when their rows are on disk (not failed ones:
            # a trial lost to its worker or node keeps its checkpoints for --rerun-failed)
            done = store.Manifest.load(sweep_dir).done(include_failed=False)
            for h in have:
                seeds = files.seeds_held(h)
                if seeds is not None and all((h, s) in done for s in seeds):
                    files.remove(h)
        return n

    def _offer(self, config_hash: str, chain: Chain) -> None:
        held = Held()
        step = int(header(chain.state)["step"])
        held.state = (step, chain.state)
        for d in chain.deltas:
            held.deltas[int(header(d)["step"])] = d
        self.memory.held[config_hash] = held

    def land(self, config_hash: str) -> None:
        """The trial's rows are written: forget and remove its checkpoints."""
        with self.lock:
            self.landed.add(config_hash)
            self.memory.drop(config_hash)
            if self.files is not None:
                self.files.remove(config_hash)

    def close(self) -> None:
        """Stop serving the sweep (what was handed over is written)."""
        self._tidy()
        self.files = None
        self.stored = None

    def _tell_stored(self, written: list[tuple[str, int]]) -> None:
        """`stored` each (config_hash, step) written; called outside the lock (the hook runs the
        driver's subscribers)."""
        hook = self.stored
        if hook is not None:
            for h, step in written:
                hook(h, step)

    def _tidy(self) -> None:
        """Remove checkpoints/ when no trial has one left."""
        files = self.files
        if files is not None and not files.hashes():
            try:
                files.loc.fs.delete_dir(files.loc.join(CHECKPOINTS))
            except (OSError, FileNotFoundError):
                pass

    # -- the trials' side (a Hook, in this process)

    def chain(self, config_hash: str, every_s: float = 0.0) -> Chain | None:
        with self.lock:
            return self.memory.chain(config_hash)

    def save(self, config_hash: str, step: int, delta: bytes, state: bytes) -> None:
        with self.lock:
            if config_hash in self.landed or self.files is None:
                return
            self.memory.put(config_hash, step, delta, state)
            self.files.write(config_hash, step, delta, state)
            self.answered = self.asking
        self._tell_stored([(config_hash, step)])

    def asked(self) -> bool:
        return self.answered < self.asking

    def asked_at_end(self) -> bool:
        return self.answered < self.asking

    def done(self, config_hash: str) -> None:
        return None

    # -- what the driver asks (grokray slurm's stop)

    def request(self) -> int:
        """Ask every running trial to checkpoint at its next step; the request's number."""
        self.asking += 1
        return self.asking

    def wait(self, gen: int, timeout_s: float) -> int:
        """In this process a trial checkpoints between steps of this very thread: nothing to
        wait for. Returns the trials that did not answer (0)."""
        return 0

    def running(self) -> list[Any]:
        return []


_CHANNEL: Channel | None = None


def channel() -> Channel | None:
    """This driver's channel (None: no sweep has opened one)."""
    return _CHANNEL


def set_channel(ch: Channel | None) -> None:
    """Make `ch` this driver's channel (grokray.sweep.checkpoint_actor.serve)."""
    global _CHANNEL
    _CHANNEL = ch

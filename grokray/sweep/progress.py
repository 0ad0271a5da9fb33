"""Progress on the terminal: a live rich panel on a terminal, plain lines otherwise.

`Display` shows a running sweep: trials done / running / failed / pending, seeds grokked out of
seeds finished, and an ETA from the seed-steps finished so far and the seed-steps left (the
sweep driver's events reach it through `DisplaySubscriber`). `CountDisplay` shows work counted
in units (`grokray recompute`'s values): done of the total, a line per item, an ETA. Both are a
`Panel`: where the lines go, the live panel's life, `say`, elapsed time and ETA.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

from rich.console import Console
from rich.live import Live
from rich.progress_bar import ProgressBar
from rich.table import Table

from grokray.config import TrialConfig, get_key


def fmt_seconds(s: float | None) -> str:
    """`1h02m`, `3m05s`, `12s`, or `?`."""
    if s is None or s != s or s == float("inf"):
        return "?"
    s = int(round(s))
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    if s >= 60:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s}s"


def _fmt(v: Any) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


class Panel:
    """What every progress display shares: lines to `stream` (stderr), a live rich panel
    instead on a terminal (`live` None) or when asked (True), the time since it was made, and
    an ETA from the rate of the work done so far. A subclass renders itself (`__rich__`)."""

    def __init__(self, *, live: bool | None = None, stream: TextIO | None = None):
        self.stream = stream or sys.stderr
        self.live = self.stream.isatty() if live is None else live
        self.t0 = time.monotonic()
        self._live: Any = None

    def __enter__(self) -> Panel:
        if self.live:

            self._live = Live(self, console=Console(file=self.stream), refresh_per_second=4,
                              transient=False)
            self._live.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._live is not None:
            self._live.__exit__(*exc)
            self._live = None

    def say(self, line: str) -> None:
        """One line to the user, above the live panel or between the progress lines."""
        if self._live is not None:
            self._live.console.print(line, markup=False, highlight=False)
        else:
            print(line, file=self.stream, flush=True)

    def elapsed(self) -> float:
        return time.monotonic() - self.t0

    def eta_of(self, done: float, total: float) -> float | None:
        """Seconds left at the rate of `done` units so far, `total` in all (None: none done)."""
        if not done:
            return None
        return max(0.0, total - done) / (done / self.elapsed())

    def __rich__(self) -> Any:
        raise NotImplementedError


class Display(Panel):
    """Receives trial events from the writer and shows them."""

    def __init__(self, n_trials: int, seed_steps: int, *, live: bool | None = None,
                 stream: TextIO | None = None, title: str = "sweep",
                 keys: list[str] | None = None, context: Callable[[], str] | None = None):
        super().__init__(live=live, stream=stream)
        self.n_trials = n_trials
        """trials this run will run"""
        self.seed_steps_total = seed_steps
        """seed-steps this run will run"""
        self.title = title
        self.keys = list(keys or [])
        """the swept dotted keys: each progress line shows the trial's values of them"""
        self.context = context
        """a line about the run around this sweep (e.g. the ledger: which sweep of how many,
        elapsed), shown after each progress line and under the live panel"""
        self.running: dict[str, TrialConfig] = {}
        self.done = self.failed = 0
        self.seeds_done = self.seeds_grokked = 0
        self.seed_steps_done = 0
        self.cpu_fallback = False
        """a trial given a GPU ran on the CPU under `device: auto` (said once)"""

    # ------------------------------------------------------------------ events

    def started(self, config: TrialConfig) -> None:
        self.running[config.config_hash()] = config

    def finished(self, outcome: Any, result: Any) -> None:
        cfg = outcome.config
        self.running.pop(cfg.config_hash(), None)
        statuses = [s.status for s in result.seeds]
        if outcome.error is not None:
            self.failed += 1
        else:
            self.done += 1
        self.seeds_done += len(statuses)
        self.seeds_grokked += statuses.count("grokked")
        self.seed_steps_done += len(cfg.seeds) * cfg.steps
        visible = getattr(result, "cuda_visible_devices", None)
        if visible and cfg.device == "auto" and result.device == "cpu" and not self.cpu_fallback:
            self.cpu_fallback = True
            self.say(f"device auto: Ray gave trials GPUs (CUDA_VISIBLE_DEVICES={visible}) but "
                     "CUDA is not available there: they run on the CPU (device: cuda makes "
                     "this an error)")
        if not self.live:
            what = f"FAILED {outcome.error}" if outcome.error else \
                f"{statuses.count('grokked')}/{len(statuses)} grokked"
            ctx = f" | {self.context()}" if self.context is not None else ""
            cpu = getattr(outcome, "cpu_s", 0.0)
            print(f"[{self.done + self.failed}/{self.n_trials}] {self.label(cfg)}: {what} "
                  f"({outcome.wall_s:.1f}s, cpu {cpu:.1f}s) | {self.counts()}{ctx}",
                  file=self.stream, flush=True)

    def label(self, cfg: TrialConfig) -> str:
        """`key=value ...` of the swept keys (arm and group when nothing is swept), then the
        config hash."""
        shown = [f"{k}={_fmt(get_key(cfg, k))}" for k in self.keys] or [cfg.arm, cfg.group]
        return " ".join(shown) + f" ({cfg.config_hash()})"

    # ------------------------------------------------------------------ rendering

    @property
    def pending(self) -> int:
        return max(0, self.n_trials - self.done - self.failed - len(self.running))

    def eta(self) -> float | None:
        """Seconds left, from the rate of seed-steps finished so far."""
        return self.eta_of(self.seed_steps_done, self.seed_steps_total)

    def counts(self) -> str:
        return (f"done {self.done}, running {len(self.running)}, failed {self.failed}, "
                f"pending {self.pending}; seeds grokked {self.seeds_grokked}/{self.seeds_done}; "
                f"elapsed {fmt_seconds(self.elapsed())}, "
                f"ETA {fmt_seconds(self.eta())}")

    def __rich__(self) -> Any:
        t = Table.grid(padding=(0, 2))
        finished = self.done + self.failed
        t.add_row(f"[bold]{self.title}[/]",
                  ProgressBar(total=max(1, self.n_trials), completed=finished, width=40),
                  f"{finished}/{self.n_trials} trials")
        t.add_row("", f"done [green]{self.done}[/]  running [cyan]{len(self.running)}[/]  "
                      f"failed [red]{self.failed}[/]  pending {self.pending}", "")
        t.add_row("", f"seeds grokked {self.seeds_grokked}/{self.seeds_done}  "
                      f"elapsed {fmt_seconds(self.elapsed())}  "
                      f"ETA {fmt_seconds(self.eta())}", "")
        if self.context is not None:
            t.add_row("", self.context(), "")
        return t


class CountDisplay(Panel):
    """Work counted in units (`grokray recompute`'s values): `step` as units finish, `less`
    when some turn out done already, `item_done` after each item (a config), which prints
    `[k/N] LINE | done/total UNIT, elapsed, ETA` where there is no live panel."""

    def __init__(self, total: int, n_items: int, *, title: str, unit: str,
                 live: bool | None = None, stream: TextIO | None = None):
        super().__init__(live=live, stream=stream)
        if not total:  # nothing to show a bar of
            self.live = False
        self.total, self.n_items = total, n_items
        self.title, self.unit = title, unit
        self.done = self.items_done = 0
        self.what = ""
        """what the last unit was (shown under the live bar)"""

    def less(self, n: int) -> None:
        """`n` units fewer to do (found done meanwhile)."""
        self.total -= n

    def step(self, n: int, what: str) -> None:
        self.done += n
        self.what = what

    def item_done(self, line: str) -> None:
        self.items_done += 1
        if self._live is not None:
            return
        print(f"[{self.items_done}/{self.n_items}] {line} | {self.done}/{self.total} "
              f"{self.unit}, elapsed {fmt_seconds(self.elapsed())}, "
              f"ETA {fmt_seconds(self.eta_of(self.done, self.total))}", file=self.stream,
              flush=True)

    def __rich__(self) -> Any:
        t = Table.grid(padding=(0, 2))
        t.add_row(f"[bold]{self.title}[/]",
                  ProgressBar(total=max(1, self.total), completed=self.done, width=40),
                  f"{self.done}/{self.total} {self.unit}",
                  f"elapsed {fmt_seconds(self.elapsed())}  "
                  f"ETA {fmt_seconds(self.eta_of(self.done, self.total))}")
        if self.what:
            t.add_row("", self.what, "", "")
        return t


class DisplaySubscriber:
    """The progress display as a subscriber of the sweep driver (grokray.sweep.events): a
    `Display` of the plan's trials from SweepStarted (when it has any) to SweepEnded; `plain`:
    plain lines even on a terminal; `context`: the line under each progress line."""

    def __init__(self, *, plain: bool = False, context: Callable[[], str] | None = None,
                 stream: TextIO | None = None):
        self.plain = plain
        self.context = context
        self.stream = stream
        self.display: Display | None = None

    def __call__(self, event: Any) -> None:
        # lazy: the events name the driver's types
        from grokray.sweep import events as ev

        if isinstance(event, ev.SweepStarted) and event.plan.n_todo_trials:
            plan = event.plan
            self.display = Display(plan.n_todo_trials, plan.todo_seed_steps,
                                   title=plan.spec.name, live=False if self.plain else None,
                                   stream=self.stream, keys=plan.spec.swept_keys,
                                   context=self.context)
            self.display.__enter__()
        elif self.display is None:
            return
        elif isinstance(event, ev.TrialStarted):
            self.display.started(event.config)
        elif isinstance(event, ev.TrialWritten):
            self.display.finished(event.outcome, event.result)
        elif isinstance(event, ev.SweepEnded):
            self.display.__exit__(None, None, None)
            self.display = None

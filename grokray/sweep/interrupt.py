"""Ctrl-C and SIGTERM during a sweep: stop cleanly, say what was kept, exit 130 / 143.

    with on_signals() as signals:   # SIGINT and SIGTERM raise Interrupted in the main thread
        ...
        signals.install()           # again, after a library (Ray) installed its own handlers

`Interrupted` subclasses KeyboardInterrupt, so that no `except Exception` on the way swallows it.
It may still arrive as a plain KeyboardInterrupt (Ray's core worker runs the handler while it
waits and re-raises its own), so the command catches KeyboardInterrupt and asks the context which
signal came (`exit_code`: 128 + the signal number, 130 for SIGINT, 143 for SIGTERM), then prints
`interrupted: N trials written; run the same command to resume`. Ray Tune's own SIGINT handler
(which stops the experiment and prints a `Tuner.restore` hint) is disabled by the Ray session
(`session.TUNE_ENV`).
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from typing import Any


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM arrived."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        """128 + the signal number: 130 for SIGINT, 143 for SIGTERM."""
        return 128 + self.signum


class on_signals:  # noqa: N801 - used as a context manager, like a function
    """Raise `Interrupted` on SIGINT/SIGTERM while inside; the old handlers come back after."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self._old: dict[int, Any] = {}
        self.received: int | None = None
        """the first signal that arrived"""
        self.on_term: Callable[[], None] | None = None
        """called on SIGTERM before `Interrupted` is raised, while the trials still run (the
        graceful stop: `grokray sweep` asks them to checkpoint, grokray.checkpoint)"""

    @property
    def exit_code(self) -> int:
        """128 + the signal received (130 when none was recorded: a plain Ctrl-C)."""
        return 128 + (self.received or signal.SIGINT)

    def _handler(self, signum: int, frame: Any) -> None:
        if self.received is not None:  # a second signal while stopping: keep stopping
            return
        self.received = signum
        if signum == signal.SIGTERM and self.on_term is not None:
            try:
                self.on_term()
            except Exception:  # noqa: BLE001 - the stop goes on whatever the callback did
                pass
        raise Interrupted(signum)

    def install(self) -> None:
        """(Re)install the handlers (main thread only)."""
        for s in self.SIGNALS:
            old = signal.signal(s, self._handler)
            self._old.setdefault(s, old)

    def __enter__(self) -> on_signals:
        self.install()
        return self

    def __exit__(self, *exc: Any) -> None:
        for s, old in self._old.items():
            signal.signal(s, old if old is not None else signal.SIG_DFL)

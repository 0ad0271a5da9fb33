"""What an analysis is (`Analysis`: its options, its computation, its tables, drawings and report
sections; `Data`, what it computes from; `Section`, what it adds to a report) and the built-in
analyses as `grokray analyze` offers them, one file each (curves.py, speedup.py, ...), each
ending with its `ANALYSIS`; grokray_analysis.registry registers them. The statistics themselves
live in the modules one level up (powerlaw, signtest, speedup, ...). Nothing heavy is imported
here or by a declaration at import: `grokray --help` reads every one.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

from grokray_analysis.errors import AnalysisError

if TYPE_CHECKING:
    from pathlib import Path

    import pandas as pd

    from grokray_analysis.load import Sweep

__all__ = ["Analysis", "Data", "Section", "slug"]


def slug(s: str) -> str:
    """`s` as a file-name stem (runs of other characters than letters, digits, `_.-` -> `_`)."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", s).strip("_") or "sweep"


class Data:
    """What an analysis computes from on the command line: the loaded sweep dirs and the trials
    `--where` keeps; `curves` (the curve rows of those trials) is read on first use."""

    def __init__(self, sweep: Sweep, where: dict[str, list[str]] | None = None):
        from grokray_analysis.load import select

        self.sweep = sweep
        """the loaded sweep dirs (grokray_analysis.load.Sweep)"""
        self.where = where or {}
        """the `--where` filters, column -> accepted values"""
        self.trials: pd.DataFrame = select(sweep.trials, self.where)
        """one row per (config, seed), narrowed by `--where`"""

    @cached_property
    def curves(self) -> pd.DataFrame:
        """The curve rows of `trials`."""
        from grokray_analysis.curves import select_curves

        return select_curves(self.sweep.curves, self.trials, self.where)


@dataclass(frozen=True)
class Section:
    """One section an analysis adds to a sweep's report: a heading, the file stem of its plot,
    and the computation (a frozen result; an AnalysisError becomes 'Skipped: why')."""

    title: str
    name: str
    compute: Callable[[], Any]


@dataclass(frozen=True)
class Analysis:
    """One analysis: what `grokray analyze NAME` offers and what the report shows of it."""

    name: str
    """`grokray analyze NAME` (lowercase letters, digits, `_`, `-`)"""
    help: str
    """one line for `grokray analyze --help`"""
    compute: Callable[[Data, argparse.Namespace], Any]
    """fn(data, args) -> a frozen result: the analysis of the loaded sweep (`Data`) with the
    parsed command line (`args`: its own options and the common ones); raise AnalysisError (one
    line, what is valid) on input it cannot analyze"""
    results: tuple[type | str, ...] = ()
    """the result types `compute` (and `report`) return, as types or "module:QualName" strings
    (a declaration that must not import them); `tables_of`, `plot` and `figure_of` find the
    analysis of a result by them"""
    tables: Callable[[Any], list[Any]] | None = None
    """fn(result) -> [Table]: what the CLI prints (any `--format`) and the report shows"""
    options: Callable[[argparse.ArgumentParser], None] | None = None
    """fn(parser) adding its own options; every analysis has OUT/SWEEP..., `--where`,
    `--format` (and `--plot` when it has a `plot`)"""
    cli_tables: Callable[[Any, argparse.Namespace, Data], list[Any]] | None = None
    """fn(result, args, data) -> [Table]: the CLI's tables where its options change them
    (speedup's layout per format, phase's `--cprank` comparison); None: `tables(result)`"""
    plot: Callable[[Any, Path], Path] | None = None
    """fn(result, path) -> path: the PNG (`--plot FILE.png`, the Markdown report); None: no
    `--plot`"""
    figure: Callable[[Any], dict] | None = None
    """fn(result) -> a Plotly figure dict (the HTML report, the dashboard); None: tables only"""
    report: Callable[..., Iterable[Section]] | None = None
    """fn(trials, curves, *, n_boot, seed) -> the `Section`s it adds to one sweep's report
    (none when it does not apply to these rows; `curves` may be None: the dashboard draws the
    curves itself); None: not in the report"""
    description: str = ""
    """the longer text of `grokray analyze NAME --help` (default: `help`)"""

    def tables_of(self, result: Any) -> list[Any]:  # noqa: ANN401 - its own result type
        """Its tables of `result`."""
        if self.tables is None:
            raise AnalysisError(f"analysis {self.name!r} declares no tables")
        return self.tables(result)

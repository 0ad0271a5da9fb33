"""The analysis registry: `grokray analyze NAME` -> `Analysis` (its CLI options, its computation,
its tables and drawings, and the sections it adds to the report).

An analysis is declared in one file, at its end:

    ANALYSIS = Analysis("speedup", help="median grok step, k/n and speedup vs a baseline arm",
                        options=_options, compute=_compute, results=(SpeedupTable,),
                        tables=speedup_tables, plot=plot_speedup, figure=speedup_figure,
                        report=_report)

and registered by one line in `_builtins` (its module, imported on first use), or at run
time by `register(ANALYSIS)` (an analysis defined in a test or a notebook), or by a package of
your own through the entry-point group `grokray.analyses` (`name = "pkg.module:ANALYSIS"`).
What reads the registry: the CLI (`grokray analyze NAME`: one subcommand per analysis), the
report (`grokray_analysis.report.report_items`, the Markdown and HTML reports, and through them
the dashboard's analysis view), `tables_of`/`plot`/`figure_of` (a result's tables and drawings,
by its type), and the ledger (a claim's `analyze` line must name a registered analysis).

A built-in declaration stays cheap to import (`grokray --help` reads every one): its functions
import the statistics, tables and drawings they call when they run, and its result types are
named as "module:QualName" strings (`results`), compared without importing them.
"""

from __future__ import annotations

import argparse
import functools
import sys
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any

from grokray_analysis.analyses import Analysis, Data, Section, slug
from grokray_analysis.errors import AnalysisError

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["ENTRY_POINTS", "FORMATS", "Analysis", "Data", "Section", "add_parsers", "analyses",
           "analysis_of", "check_command", "figure_of", "get_analysis", "plot", "register",
           "slug", "tables_of", "unregister"]

ENTRY_POINTS = "grokray.analyses"
"""the entry-point group through which an installed package adds analyses (each entry point
names an `Analysis`)"""

FORMATS = ("md", "csv", "tex", "json")
"""the table formats of `--format`"""

RESERVED = ("report", "ledger")
"""`grokray analyze` subcommands that read every analysis, not analyses themselves"""

_NAME_CHARS = set("abcdefghijklmnopqrstuvwxyz0123456789_-")


def _type_key(t: type | str) -> str:
    return t if isinstance(t, str) else f"{t.__module__}:{t.__qualname__}"


_ANALYSES: dict[str, Analysis] = {}
_LOADED = False


def register(analysis: Analysis, *, replace: bool = False) -> Analysis:
    """Add an analysis (a name already taken raises unless `replace`: a notebook re-running its
    cell). Returns it."""
    n = analysis.name
    if not n or not set(n) <= _NAME_CHARS or not n[0].isalpha() or n in RESERVED:
        raise ValueError(f"analysis name {n!r}: use lowercase letters, digits, _ and -, "
                         f"starting with a letter, not {' or '.join(RESERVED)}")
    if analysis.compute is None or not analysis.help:
        raise ValueError(f"analysis {n!r}: needs its compute and a one-line help")
    _load()
    if n in _ANALYSES and not replace:
        raise ValueError(f"analysis {n!r} is already registered (replace=True replaces it)")
    _ANALYSES[n] = analysis
    return analysis


def unregister(name: str) -> None:
    """Remove an analysis (tests, notebooks)."""
    _ANALYSES.pop(name, None)


def _builtins() -> tuple[Analysis, ...]:
    """The built-in analyses, one line each, in report order (`analysis/analyses/`)."""
    from grokray_analysis.analyses import (
        atgrok,
        axioms,
        curves,
        drift,
        phase,
        scaling,
        signtest,
        speedup,
    )

    return (curves.ANALYSIS, speedup.ANALYSIS, signtest.ANALYSIS, scaling.ANALYSIS,
            phase.ANALYSIS, drift.ANALYSIS, atgrok.ANALYSIS, axioms.ANALYSIS)


def _load() -> None:
    """The built-ins, then those of installed packages (entry points), once."""
    global _LOADED
    if _LOADED:
        return
    _LOADED = True
    for a in _builtins():
        _ANALYSES.setdefault(a.name, a)
    for ep in entry_points(group=ENTRY_POINTS):
        try:
            a = ep.load()
            if not isinstance(a, Analysis):
                raise TypeError(f"{type(a).__name__}, not an Analysis")
        except Exception as exc:  # noqa: BLE001 - one broken plugin must not stop the CLI
            print(f"grokray: analysis {ep.name} = {ep.value} ({ENTRY_POINTS}) not loaded: "
                  f"{type(exc).__name__}: {exc}", file=sys.stderr)
            continue
        _ANALYSES.setdefault(a.name, a)


def analyses() -> dict[str, Analysis]:
    """Every registered analysis by name: the built-ins in `_builtins` order, then the others in
    the order they were registered."""
    _load()
    return dict(_ANALYSES)


def get_analysis(name: str) -> Analysis:
    """The analysis `name`; AnalysisError naming the valid ones otherwise."""
    all_ = analyses()
    if name not in all_:
        raise AnalysisError(f"unknown analysis {name!r}; valid: {', '.join(all_)}")
    return all_[name]


def analysis_of(result: object) -> Analysis:
    """The analysis that declares `type(result)` among its results."""
    key = _type_key(type(result))
    for a in analyses().values():
        if any(_type_key(t) == key for t in a.results):
            return a
    raise AnalysisError(f"no registered analysis returns a {type(result).__name__}")


def tables_of(result: object) -> list[Any]:
    """The tables (grokray_analysis.tables.Table) of any computed result: those of the
    registered analysis that returns its type."""
    return analysis_of(result).tables_of(result)


def plot(result: object, path: str | Path) -> Path:
    """Draw any computed result to a PNG: the plot of the registered analysis that returns its
    type."""
    from pathlib import Path

    a = analysis_of(result)
    if a.plot is None:
        raise AnalysisError(f"analysis {a.name!r} has no plot")
    return a.plot(result, Path(path))


def figure_of(result: object) -> dict | None:
    """The Plotly figure of any analysis result (that of the registered analysis that returns
    its type); None when it has no drawing."""
    try:
        a = analysis_of(result)
    except AnalysisError:
        return None
    return a.figure(result) if a.figure is not None else None


# ---- the command line ------------------------------------------------------------------------


def add_parsers(sub) -> None:
    """One `grokray analyze NAME` subparser per registered analysis: the options every analysis
    shares (OUT/SWEEP..., --where, --format, and --plot when it has a plot), then its own."""
    for a in analyses().values():
        p = sub.add_parser(a.name, help=a.help, description=a.description or None)
        p.add_argument("paths", nargs="+", metavar="OUT/SWEEP", help="sweep output dir(s)")
        p.add_argument("--where", action="append", metavar="KEY=VALUE",
                       help="keep only rows with this column value (repeatable), e.g. group=S4")
        p.add_argument("--format", choices=FORMATS, default="md",
                       help="table format (default md)")
        if a.plot is not None:
            p.add_argument("--plot", metavar="FILE.png", help="also draw the result to this PNG")
        if a.options is not None:
            a.options(p)


def check_command(line: str) -> str:
    """Why `line` (`grokray analyze NAME ARGS...`) is not a command of a registered analysis
    ("" when it is): the ledger checks each claim's `analyze` line with it."""
    import shlex

    words = shlex.split(line)
    if words[:2] != ["grokray", "analyze"]:
        return "not a `grokray analyze NAME ...` line"
    try:
        _checking_parser(tuple(analyses())).parse_args(words[2:])
    except ValueError as exc:
        return str(exc)
    return ""


class _RaisingParser(argparse.ArgumentParser):
    def error(self, message: str):  # noqa: ANN201 - raises instead of exiting
        raise ValueError(message)


@functools.cache
def _checking_parser(names: tuple[str, ...]) -> argparse.ArgumentParser:
    """A parser of the analyses registered now (`names`: the cache key)."""
    top = _RaisingParser(prog="grokray analyze")
    sub = top.add_subparsers(dest="analysis", metavar="ANALYSIS", parser_class=_RaisingParser)
    sub.required = True
    add_parsers(sub)
    return top

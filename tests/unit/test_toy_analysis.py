"""A new analysis is one file, registered: the worked example of docs/architecture.md ("Adding
an analysis"), executed from the doc itself, registers `grokrate` and nothing else is edited;
`grokray analyze grokrate` (the real CLI entry, in-process) takes its option, and the Markdown
report, the HTML report and the dashboard's analysis view show it. An installed package's entry
point reaches the registry the same way."""

from __future__ import annotations

import json
import re
import sys
import types
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

from grokray.cli import main
from grokray_analysis import registry
from grokray_analysis.load import load

DOC = Path(__file__).resolve().parents[2] / "docs" / "architecture.md"
BLOCK = re.search(r"```python\n(# my_analyses/grokrate\.py\n.*?)```", DOC.read_text(), re.S)


def _run_documented_module(name: str = "grokrate_doc") -> types.ModuleType:
    """The doc's ```python block that starts `# my_analyses/grokrate.py`, run as a module."""
    mod = types.ModuleType(name)
    sys.modules[name] = mod  # dataclasses look their module up
    exec(compile(BLOCK.group(1), str(DOC), "exec"), mod.__dict__)  # noqa: S102
    return mod


@pytest.fixture
def grokrate():
    mod = _run_documented_module()
    yield mod
    registry.unregister("grokrate")
    sys.modules.pop(mod.__name__, None)


@pytest.fixture(scope="module")
def sweep(tmp_path_factory, tiny):
    return tiny.write_ablation(tmp_path_factory.mktemp("out") / "tiny_ablation")


def _expected(sweep, by: str) -> dict[str, tuple[int, int]]:
    T = load(sweep).trials
    return {str(k): (len(g), int((g["status"] == "grokked").sum()))
            for k, g in T.groupby(T[by].astype(str))}


def test_the_cli_runs_the_registered_analysis_with_its_option(grokrate, sweep, capsys):
    assert registry.get_analysis("grokrate") is grokrate.ANALYSIS
    assert main(["analyze", "grokrate", str(sweep), "--by", "group", "--format", "json"]) == 0
    (table,) = json.loads(capsys.readouterr().out)
    got = {r["group"]: (r["runs"], r["grokked"]) for r in table["rows"]}
    assert got == _expected(sweep, "group") and len(got) == 5
    assert all(r["rate"] == r["grokked"] / r["runs"] for r in table["rows"])
    # the default option, and the shared ones (--where) from the CLI, not from the declaration
    assert main(["analyze", "grokrate", str(sweep), "--where", "arm=forge", "--format",
                 "csv"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "arm,runs,grokked,rate", f"forge,15,{_expected(sweep, 'arm')['forge'][1]},"
        f"{_expected(sweep, 'arm')['forge'][1] / 15:.4g}"]
    with pytest.raises(SystemExit):
        main(["analyze", "--help"])
    assert "grokrate" in capsys.readouterr().out
    with pytest.raises(SystemExit):  # no plot declared: no --plot
        main(["analyze", "grokrate", str(sweep), "--plot", "x.png"])
    assert "unrecognized arguments: --plot" in capsys.readouterr().err


def test_a_bad_option_value_is_one_line_exit_2(grokrate, sweep, capsys):
    assert main(["analyze", "grokrate", str(sweep), "--by", "nosuch"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "nosuch" in err and "Traceback" not in err


def test_the_reports_show_the_registered_analysis(grokrate, sweep, tmp_path):
    from grokray_analysis.dashboard.analyses import analysis_views
    from grokray_analysis.htmlreport import build_html_report
    from grokray_analysis.report import build_report

    small = tmp_path / "small"  # two configs of one group: curves, speedup, a sign test
    for kind in ("trials", "curves"):
        (small / kind).mkdir(parents=True)
        files = sorted((sweep / kind).glob("*.parquet"), key=lambda f: f.stem[-3:])
        for f in files[:2]:  # the fixture's first two configs: one group, two arms
            (small / kind / f.name).write_bytes(f.read_bytes())
    runs = _expected(small, "arm")
    assert len(runs) == 2 and len(_expected(small, "group")) == 1
    md = build_report([small], tmp_path / "report.md", n_boot=0).read_text()
    for arm, (n, k) in runs.items():
        assert f"| {arm} | {n} | {k} |" in md
    # after the built-in sections, in registry order
    at = [md.index(h) for h in ("### Curves:", "### Speedup vs", "### Sign test:",
                                "### Grok rate by arm")]
    assert at == sorted(at)
    html = build_html_report([small], tmp_path / "report.html", n_boot=0).read_text()
    assert "<h3>Grok rate</h3>" in html and "<th>grokked</th>" in html
    views = analysis_views(load(small).trials, None, n_boot=0)
    titles = [v["title"] for v in views]
    assert titles.index("Speedup") < titles.index("Grok rate")  # curves: the dashboard's own
    (view,) = [v for v in views if v["title"] == "Grok rate"]
    assert view["skipped"] == "" and view["figure"] is None
    assert all(f"<td class=\"\">{arm}</td>" in view["html"] for arm in runs)


def test_an_installed_packages_entry_point_reaches_the_registry(monkeypatch, tmp_path,
                                                                 sweep, capsys):
    """What pip makes of `[project.entry-points."grokray.analyses"]`: the registry loads it
    with the built-ins, and a broken one is one line on stderr, never a stopped CLI."""
    (tmp_path / "grokrate_pkg.py").write_text(BLOCK.group(1).replace(
        "ANALYSIS = register(Analysis(", "ANALYSIS = (Analysis("))
    monkeypatch.syspath_prepend(str(tmp_path))
    eps = [EntryPoint("grokrate", "grokrate_pkg:ANALYSIS", registry.ENTRY_POINTS),
           EntryPoint("broken", "no_such_module_here:ANALYSIS", registry.ENTRY_POINTS)]
    monkeypatch.setattr(registry, "entry_points", lambda group: eps)
    monkeypatch.setattr(registry, "_ANALYSES", {})
    monkeypatch.setattr(registry, "_LOADED", False)
    try:
        assert list(registry.analyses())[-1] == "grokrate"
        assert "not loaded: ModuleNotFoundError" in capsys.readouterr().err
        assert main(["analyze", "grokrate", str(sweep), "--format", "csv"]) == 0
        assert capsys.readouterr().out.startswith("arm,runs,grokked,rate\n")
    finally:
        sys.modules.pop("grokrate_pkg", None)


def test_names_and_duplicates_are_refused(grokrate):
    with pytest.raises(ValueError, match="already registered"):
        registry.register(grokrate.ANALYSIS)
    assert registry.register(grokrate.ANALYSIS, replace=True) is grokrate.ANALYSIS
    for bad in ("report", "Grok", "9x", ""):
        with pytest.raises(ValueError, match="analysis name"):
            registry.register(registry.Analysis(bad, help="x", compute=lambda d, a: None))

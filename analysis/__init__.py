"""Analysis of grokray sweep outputs: reads the Parquet contract only, never training code.

The functions a notebook uses (docs/api.md), each imported on first use so that importing the
package stays light: `fit_power_law` and `scaling` (grok step = c |G|^alpha), `sign_test`
(paired arms on a metric), `speedup_table` (Kaplan-Meier medians and speedups vs a baseline
arm) and `phase_diagram` (the capacity threshold over R*d). A sweep is read with
`grokray.load(OUT)`; the reproduction ledger is its own package, `grokray_analysis.ledger`
(`ledger`, `ledger_table`). No name here is also a submodule's (`load`, `ledger`): importing
the submodule would replace the function with the module.
"""

__all__ = ["fit_power_law", "phase_diagram", "scaling", "sign_test", "speedup_table"]


def __getattr__(name: str):
    # explicit imports (not importlib): tests/unit/test_analysis_imports.py reads every import
    if name in ("fit_power_law", "scaling"):
        from grokray_analysis import powerlaw as mod
    elif name == "sign_test":
        from grokray_analysis import signtest as mod
    elif name == "speedup_table":
        from grokray_analysis import speedup as mod
    elif name == "phase_diagram":
        from grokray_analysis import phase as mod
    else:
        raise AttributeError(f"module 'grokray_analysis' has no attribute {name!r}")
    return getattr(mod, name)

"""grokray: a distributed sweep service for grokking research.

`grokray.load(OUT)`, `grokray.load_snapshots(OUT)` and `grokray.load_model(OUT, config_hash,
seed, step)` read a sweep back (grokray_analysis.load; grokray/snapshots/read.py);
`grokray.recompute(OUT, metric)` computes a metric at every snapshot (grokray/sweep/recompute.py)
and `grokray.register_metric` registers one of your own (grokray/metrics/registry.py);
`grokray.SweepDriver(spec)` runs a sweep in this process (grokray/sweep/driver.py). Each is
imported on first use, so `import grokray` stays cheap.
"""

import importlib

__version__ = "0.1.0"

_LAZY = {"load": "grokray_analysis.load", "load_model": "grokray.snapshots.read",
         "load_snapshots": "grokray.snapshots.read", "recompute": "grokray.sweep.recompute",
         "register_metric": "grokray.metrics.registry"}


# the metric registry's listing, the spectra helpers and a snapshot row's tensor (what
# docs/examples/restricted_loss.py uses); docs/api.md documents every public name
_LAZY.update({"metric_names": "grokray.metrics.registry",
              "fourier_mass": "grokray.metrics.spectra", "key_modes": "grokray.metrics.spectra",
              "to_tensor": "grokray.snapshots"})
# the sweep driver: run a sweep in this process (docs/api.md)
_LAZY["SweepDriver"] = "grokray.sweep.driver"
__all__ = sorted(_LAZY)


def __getattr__(name: str):
    if name in _LAZY:
        attr = "register" if name == "register_metric" else name
        return getattr(importlib.import_module(_LAZY[name]), attr)
    raise AttributeError(f"module 'grokray' has no attribute {name!r}")

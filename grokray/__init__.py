"""grokray: a distributed sweep service for grokking research.

`grokray.load(OUT)`, `grokray.load_snapshots(OUT)` and `grokray.load_model(OUT, config_hash,
seed, step)` read a sweep back (grokray/loading.py; imported on first use, so `import grokray`
stays cheap).
"""

import importlib

__version__ = "0.1.0"

_LAZY = ("load", "load_model", "load_snapshots")


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module("grokray.loading"), name)
    raise AttributeError(f"module 'grokray' has no attribute {name!r}")

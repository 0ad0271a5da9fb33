"""Hidden-layer activations shared by every model family: name -> elementwise function.

The names are the config's choices (grokray.config.ACTIVATIONS); this table gives each its
function, in the same order.
"""

from __future__ import annotations

import torch

from grokray.config import ACTIVATIONS

_FUNCTIONS = {
    "relu": torch.relu,
    "gelu": torch.nn.functional.gelu,
    "tanh": torch.tanh,
    "silu": torch.nn.functional.silu,
    "quadratic": torch.square,
    "identity": lambda x: x,
}
ACTS = {name: _FUNCTIONS[name] for name in ACTIVATIONS}
"""activation name -> function, for every config choice (a name without a function fails here,
at import)"""

"""Hidden-layer activations shared by every model family: name -> elementwise function."""

from __future__ import annotations

import torch

ACTS = {
    "relu": torch.relu,
    "gelu": torch.nn.functional.gelu,
    "tanh": torch.tanh,
    "silu": torch.nn.functional.silu,
    "quadratic": torch.square,
    "identity": lambda x: x,
}
ACTIVATIONS = tuple(ACTS)
"""the valid activation names (config choices)"""

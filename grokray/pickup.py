"""What a seed that trains on from an earlier run picks up (`SeedPickup`): a continued seed from
its end snapshot at the old budget (grokray.trainer.pickup.read_continued), a seed restored from a
checkpoint from that checkpoint's chain (grokray.checkpoint.restore). The trainer puts it into
the seed's slot of the stack either way (grokray.trainer.pickup). No torch here: the checkpoint
layer reads it without the trainer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass
class SeedPickup:
    """What a seed picks up: its rows and snapshots before the step it trains on from, and its
    parameters and training state at that step."""

    rows: list[dict[str, Any]]
    """its curve rows before that step"""
    snapshots: list[dict[str, Any]]
    """its snapshot records before that step (grokray.snapshots.COLUMNS)"""
    params: dict[str, np.ndarray]
    """its parameters at that step"""
    state: dict[str, np.ndarray]
    """its optimizer, filter and stream state there (names without the `state/` prefix)"""

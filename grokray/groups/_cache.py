"""On-disk cache of built groups: one .npz per (group, part), written atomically.

Location: $GROKRAY_CACHE (set it to "off" to disable), else ~/.cache/grokray. Only groups of
order >= DISK_MIN_ORDER are stored: smaller ones build faster than they load.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

import numpy as np

FORMAT = 2  # bump when the layout or the numbering of elements or classes changes
DISK_MIN_ORDER = 256


def cache_root() -> Path | None:
    """The groups cache directory, or None when caching on disk is off."""
    raw = os.environ.get("GROKRAY_CACHE")
    if raw is not None and raw.strip().lower() in ("", "0", "off", "none", "false"):
        return None
    base = Path(raw).expanduser() if raw else Path.home() / ".cache" / "grokray"
    return base / "groups" / f"v{FORMAT}"


def _path(name: str, part: str) -> Path | None:
    root = cache_root()
    if root is None:
        return None
    return root / f"{re.sub(r'[^A-Za-z0-9]+', '_', name)}.{part}.npz"


def load(name: str, part: str) -> dict[str, np.ndarray] | None:
    """The stored arrays, or None if absent or unreadable (then the caller rebuilds)."""
    path = _path(name, part)
    if path is None or not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as data:
            return {key: data[key] for key in data.files}
    except Exception:  # a truncated or foreign file: ignore it, it will be rewritten
        return None


def save(name: str, part: str, **arrays: np.ndarray) -> None:
    """Write arrays to a temporary file in the cache directory, then rename it into place."""
    path = _path(name, part)
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                np.savez(f, **arrays)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    except OSError:  # a read-only or full disk only costs a rebuild next time
        pass

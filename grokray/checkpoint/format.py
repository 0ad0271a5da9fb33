"""One checkpoint file as bytes: an uncompressed npz archive (numpy's zip of .npy arrays, each
with its zip CRC-32) holding a JSON header `meta` and the arrays `a0`, `a1`, ... it names.

Why npz: every array keeps its dtype and shape exactly (float64 bit for bit), the zip CRCs catch
a damaged file when it is read, numpy reads it without pickle (`allow_pickle=False`), and the
driver can read a file's header without its arrays. The header holds what is small and not an
array (curve rows, outcomes, which array is which) as JSON: Python writes a float's shortest
repr, which reads back to the same float, NaN and infinities included.
"""

from __future__ import annotations

import io
import json
import zipfile
from dataclasses import dataclass, field
from typing import Any

import numpy as np

FORMAT_VERSION = 1
"""the checkpoint format; a file of another version is not used"""
KINDS = ("delta", "state")


class Unusable(Exception):
    """A checkpoint file that cannot be used; the message says why, in a few words."""


@dataclass
class Part:
    """One checkpoint file: a delta or a state of one trial at one step."""

    kind: str
    """delta or state"""
    config_hash: str
    """the trial's identity"""
    step: int
    """the step it was taken at (the top of that step: its eval done, its update not)"""
    prev: int
    """the step of the checkpoint before it in this chain (or the step the chain started at)"""
    meta: dict[str, Any] = field(default_factory=dict)
    """what is not an array (JSON-able)"""
    arrays: list[np.ndarray] = field(default_factory=list)
    """the arrays `meta` refers to by position"""

    def add(self, a: np.ndarray) -> int:
        """Keep array `a`; its position (how `meta` refers to it)."""
        a = np.asarray(a)
        self.arrays.append(a if a.flags.c_contiguous else np.ascontiguousarray(a))
        return len(self.arrays) - 1


def _json_default(v: Any) -> Any:
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, np.ndarray):
        return v.tolist()
    raise TypeError(f"not JSON: {type(v).__name__}")


def encode(part: Part) -> bytes:
    """The file's bytes."""
    head = {"format": FORMAT_VERSION, "kind": part.kind, "config_hash": part.config_hash,
            "step": int(part.step), "prev": int(part.prev), **part.meta}
    text = json.dumps(head, default=_json_default, allow_nan=True).encode()
    buf = io.BytesIO()
    np.savez(buf, meta=np.frombuffer(text, dtype=np.uint8),
             **{f"a{i}": a for i, a in enumerate(part.arrays)})
    return buf.getvalue()


def header(data: bytes) -> dict[str, Any]:
    """The JSON header of a file, every archive member checked against its CRC (Unusable:
    damaged, or not a checkpoint)."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            bad = z.testzip()
            if bad is not None:
                raise Unusable(f"damaged (CRC of {bad})")
            with z.open("meta.npy") as f:
                raw = np.lib.format.read_array(f, allow_pickle=False)
        head = json.loads(raw.tobytes().decode())
    except Unusable:
        raise
    except Exception as exc:  # noqa: BLE001 - any failure to read is a damaged file
        raise Unusable(f"damaged ({type(exc).__name__})") from None
    if not isinstance(head, dict) or head.get("kind") not in KINDS:
        raise Unusable("not a grokray checkpoint")
    if head.get("format") != FORMAT_VERSION:
        raise Unusable(f"format version {head.get('format')}, this grokray reads "
                       f"{FORMAT_VERSION}")
    return head


def decode(data: bytes, config_hash: str | None = None) -> Part:
    """The Part in `data` (Unusable: damaged, another format version, or, with `config_hash`,
    another trial's)."""
    head = header(data)
    if config_hash is not None and head.get("config_hash") != config_hash:
        raise Unusable(f"of config_hash {head.get('config_hash')}, not {config_hash}")
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            n = sum(1 for k in z.files if k.startswith("a"))
            arrays = [z[f"a{i}"] for i in range(n)]
    except Exception as exc:  # noqa: BLE001
        raise Unusable(f"damaged ({type(exc).__name__})") from None
    meta = {k: v for k, v in head.items()
            if k not in ("format", "kind", "config_hash", "step", "prev")}
    return Part(kind=head["kind"], config_hash=head["config_hash"], step=int(head["step"]),
                prev=int(head["prev"]), meta=meta, arrays=arrays)

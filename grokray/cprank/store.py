"""Where `grokray cprank` keeps its results: OUT/<GROUP>/ (each file written whole, temp + rename).

- `cprank.parquet`: one row per (group, field): the bounds, the search settings and its outcome.
  `grokray analyze phase --cprank OUT` reads these rows (the columns are `CPRANK_COLUMNS`).
- `attempts_<field>.parquet`: one row per ALS run (rank, seed, residual, iterations, seconds,
  largest factor norm).
- `cp_<field>_R<rank>_seed<seed>.npz`: the best decomposition, arrays A, B, C [n, R] with
  T_G = sum_r A[:, r] (x) B[:, r] (x) C[:, r], and the Cayley table it decomposes.
"""

from __future__ import annotations

import io
import os
import uuid
from dataclasses import asdict

import numpy as np
import pandas as pd

CPRANK_COLUMNS = (
    "group", "order", "num_classes", "irrep_degrees", "lower_bound", "wedderburn_bound",
    "trivial_bound", "field", "tol", "best_rank", "best_seed", "attempts", "restarts", "iters",
    "time_limit_s", "seconds", "stopped", "decomposition", "grokray_version",
    "faithful_components", "faithful_dim", "faithful_rank", "faithful_capacity",
)


def _write_atomic(path: str, data: bytes) -> None:
    tmp = f"{path}.{uuid.uuid4().hex[:8]}.tmp"
    try:
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def save(out: str, info: dict, result, table: np.ndarray, settings: dict) -> dict:
    """Write the row, the attempts and the best decomposition; returns {kind: path}."""
    from grokray import __version__

    d = os.path.join(out, info["group"])
    os.makedirs(d, exist_ok=True)
    paths = {}
    npz = ""
    if result.best_rank is not None:
        A, B, C = result.factors
        npz = os.path.join(d, f"cp_{result.field}_R{result.best_rank}_seed{result.best_seed}.npz")
        buf = io.BytesIO()
        np.savez(buf, A=A, B=B, C=C, table=np.asarray(table))
        _write_atomic(npz, buf.getvalue())
        paths["decomposition"] = npz
    row = {
        "group": info["group"], "order": info["order"], "num_classes": info["num_classes"],
        "irrep_degrees": ",".join(str(x) for x in info["irrep_degrees"]),
        "lower_bound": info["lower_bound"], "wedderburn_bound": info["wedderburn_bound"],
        "trivial_bound": info["trivial_bound"], "field": result.field, "tol": result.tol,
        "best_rank": result.best_rank, "best_seed": result.best_seed,
        "attempts": len(result.attempts), "restarts": settings["restarts"],
        "iters": settings["iters"], "time_limit_s": settings["time_limit"],
        "seconds": result.seconds, "stopped": result.stopped,
        "decomposition": os.path.basename(npz), "grokray_version": __version__,
    }
    f = info.get("faithful")
    row.update({
        "faithful_components": " + ".join(f["components"]) if f else None,
        "faithful_dim": f["dim"] if f else None, "faithful_rank": f["rank"] if f else None,
        "faithful_capacity": f["capacity"] if f else None,
    })
    rows = pd.DataFrame([row], columns=list(CPRANK_COLUMNS))
    rows["best_rank"] = rows["best_rank"].astype("Int64")
    for c in ("best_seed", "faithful_dim", "faithful_rank", "faithful_capacity"):
        rows[c] = rows[c].astype("Int64")
    main = os.path.join(d, "cprank.parquet")
    if os.path.exists(main):  # keep the other field's row
        old = pd.read_parquet(main)
        rows = pd.concat([old[old["field"] != result.field], rows], ignore_index=True)
    _write_atomic(main, rows.to_parquet(index=False))
    paths["table"] = main
    att = pd.DataFrame([asdict(a) for a in result.attempts])
    att.insert(0, "field", result.field)
    att.insert(0, "group", info["group"])
    apath = os.path.join(d, f"attempts_{result.field}.parquet")
    _write_atomic(apath, att.to_parquet(index=False))
    paths["attempts"] = apath
    return paths

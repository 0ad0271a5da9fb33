"""The client verbs' text: the queue as a table (`grokray queue`), one sweep (`grokray show`).
Plain functions of the API's JSON values."""

from __future__ import annotations

from typing import Any

__all__ = ["hours", "queue_table", "sweep_text", "COLUMNS"]

COLUMNS = ("ID", "POS", "USER", "PRI", "STATE", "PROGRESS", "REUSED", "EST CPU-H",
           "EST GPU-H", "USED CPU-H", "NAME")


def hours(seconds: float | None) -> str:
    """Seconds as hours, to 3 significant figures ('0' for none)."""
    if not seconds:
        return "0"
    return f"{seconds / 3600:.3g}"


def _row(s: dict[str, Any]) -> tuple[str, ...]:
    return (str(s["id"]), str(s["position"] or "-"), s["owner"], str(s["priority"]), s["state"],
            f"{s['seed_runs_done']}/{s['seed_runs_total']}", str(s["seed_runs_reused"]),
            hours(s["estimate_cpu_s"]), hours(s["estimate_gpu_s"]), hours(s["used_cpu_s"]),
            s["name"])


def queue_table(sweeps: list[dict[str, Any]]) -> str:
    """The queue as aligned columns (PROGRESS: seed-runs with a row / all; REUSED: of them,
    rows taken from earlier runs; POS: place among the waiting sweeps)."""
    if not sweeps:
        return "the queue is empty (`grokray queue --all` adds ended sweeps)"
    rows = [COLUMNS, *(_row(s) for s in sweeps)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(COLUMNS))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
                     for r in rows)


def sweep_text(s: dict[str, Any]) -> str:
    """One sweep and its events, one `key: value` per line."""
    lines = [
        f"sweep {s['id']}: {s['name']} ({s['owner']})",
        f"state: {s['state']}" + (f", position {s['position']}" if s["position"] else ""),
        f"priority: {s['priority']}",
        f"spec: {s['spec_source']}",
        f"rows: {s['sweep_dir']}",
        f"progress: {s['seed_runs_done']}/{s['seed_runs_total']} seed-runs "
        f"({s['trials_total']} trials), {s['seed_runs_reused']} reused",
        f"estimate: {hours(s['estimate_cpu_s'])} CPU-h, {hours(s['estimate_gpu_s'])} GPU-h, "
        f"{hours(s['estimate_wall_s'])} h wall",
        f"used: {hours(s['used_cpu_s'])} CPU-h, {hours(s['used_gpu_s'])} GPU-h "
        f"({s['attempts']} starts)",
        f"submitted: {s['submitted_at']}",
    ]
    if s.get("started_at"):
        lines.append(f"started: {s['started_at']}")
    if s.get("ended_at"):
        lines.append(f"ended: {s['ended_at']}")
    if s.get("message"):
        lines.append(f"message: {s['message']}")
    events = s.get("events") or []
    if events:
        lines.append("events:")
        for e in events:
            who = f" by {e['actor']}" if e.get("actor") else ""
            detail = f": {e['detail']}" if e.get("detail") else ""
            lines.append(f"  {e['at']}  {e['kind']}{who}{detail}")
    return "\n".join(lines)

"""Inside a Slurm job: when does the allocation end? SLURM_JOB_END_TIME (epoch seconds, Slurm
23.02 and later), else `squeue -h -j JOB -o %e` (the end time in local time), else `scontrol
show job` (EndTime=). None outside a job, or for a job without a time limit."""

from __future__ import annotations

import os
import re
import subprocess
from datetime import datetime


def job_id(env: dict[str, str] | None = None) -> str | None:
    """This process's Slurm job id (SLURM_JOB_ID), or None outside a job."""
    env = os.environ if env is None else env
    job = env.get("SLURM_JOB_ID", "").strip()
    return job or None


def restart_count(env: dict[str, str] | None = None) -> int:
    """How many times this job was requeued before this run (SLURM_RESTART_COUNT; 0 at first)."""
    env = os.environ if env is None else env
    try:
        return int(env.get("SLURM_RESTART_COUNT", "0") or 0)
    except ValueError:
        return 0


def parse_end(text: str) -> float | None:
    """Epoch seconds of a Slurm end time as squeue/scontrol print it (`2026-12-03T14:05:00`,
    local time), None for `N/A`, `Unknown`, `NONE` or anything else."""
    text = text.strip()
    if re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", text):
        return datetime.fromisoformat(text).timestamp()
    return None


def _ask(cmd: list[str]) -> str:
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return ""
    return p.stdout if p.returncode == 0 else ""


def end_time(job: str | None = None, env: dict[str, str] | None = None) -> float | None:
    """Epoch seconds at which the allocation of `job` (default: this process's) ends."""
    env = os.environ if env is None else env
    job = job or job_id(env)
    if job is None:
        return None
    given = env.get("SLURM_JOB_END_TIME", "").strip()
    if given.isdigit() and int(given) > 0:
        return float(given)
    end = parse_end(_ask(["squeue", "-h", "-j", job, "-o", "%e"]))
    if end is not None:
        return end
    m = re.search(r"\bEndTime=(\S+)", _ask(["scontrol", "show", "job", "-o", job]))
    return parse_end(m.group(1)) if m else None


def signal_lead(env: dict[str, str] | None = None) -> float:
    """Seconds before the time limit at which the script's signal comes (GROKRAY_SLURM_SIGNAL_S,
    which the script sets; 0 when unset)."""
    env = os.environ if env is None else env
    try:
        return max(0.0, float(env.get("GROKRAY_SLURM_SIGNAL_S", "0") or 0))
    except ValueError:
        return 0.0

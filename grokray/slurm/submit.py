"""Submitting the script: `sbatch --parsable SCRIPT`, its job id, and one-line errors."""

from __future__ import annotations

import shutil
import subprocess

from grokray.errors import GrokrayError


def sbatch_path() -> str:
    """The `sbatch` on PATH; GrokrayError when there is none (not a Slurm login node)."""
    path = shutil.which("sbatch")
    if path is None:
        raise GrokrayError("no 'sbatch' on PATH: run this on a Slurm login node (or load the "
                           "Slurm module), or use --dry-run to see the script")
    return path


def submit(script: str, sbatch: str | None = None, timeout_s: float = 60.0) -> str:
    """Submit `script`; its job id (`sbatch --parsable` prints `ID` or `ID;CLUSTER`)."""
    cmd = [sbatch or sbatch_path(), "--parsable", script]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    except (OSError, subprocess.SubprocessError) as exc:
        raise GrokrayError(f"sbatch did not run: {exc}") from None
    if p.returncode != 0:
        lines = [ln for ln in (p.stderr + p.stdout).splitlines() if ln.strip()]
        raise GrokrayError(f"sbatch refused the job: {lines[-1] if lines else p.returncode}")
    job = p.stdout.strip().split(";")[0]
    if not job.isdigit():
        raise GrokrayError(f"sbatch printed no job id: {p.stdout.strip()!r}")
    return job

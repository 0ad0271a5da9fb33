"""Slurm's time formats: `--time` as Slurm reads it, and seconds written back.

Slurm accepts "MM", "MM:SS", "HH:MM:SS", "D-HH", "D-HH:MM" and "D-HH:MM:SS" (sbatch(1)); a time
limit is in whole minutes (Slurm rounds seconds up)."""

from __future__ import annotations

import re

from grokray.errors import GrokrayError

VALID = 'MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS (e.g. "04:00:00", "1-12:00:00")'

_PARTS = re.compile(r"^(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?$")


def parse_time(text: str) -> int:
    """Seconds of a Slurm time (`--time`); GrokrayError naming the valid forms otherwise."""
    s = str(text).strip()
    m = _PARTS.match(s)
    if not m:
        raise GrokrayError(f"--time {text!r} is not a Slurm time; valid: {VALID}")
    days, a, b, c = m.groups()
    nums = [int(x) for x in (a, b, c) if x is not None]
    if days is None:  # MM | MM:SS | HH:MM:SS
        if len(nums) == 1:
            h, mi, sec = 0, nums[0], 0
        elif len(nums) == 2:
            h, mi, sec = 0, nums[0], nums[1]
        else:
            h, mi, sec = nums
    else:  # D-HH | D-HH:MM | D-HH:MM:SS
        h, mi, sec = (nums + [0, 0])[:3]
    limits = (mi < 60 or (days is None and len(nums) == 1), sec < 60,
              h < 24 or days is None)
    if not all(limits):
        raise GrokrayError(f"--time {text!r}: minutes and seconds run to 59 and hours after a "
                           f"day to 23; valid: {VALID}")
    total = (int(days or 0) * 24 + h) * 3600 + mi * 60 + sec
    if total <= 0:
        raise GrokrayError(f"--time {text!r} is no time at all; valid: {VALID}")
    return total


def slurm_seconds(seconds: int) -> int:
    """The limit Slurm grants for `seconds`: whole minutes, rounded up."""
    return -(-int(seconds) // 60) * 60


def format_time(seconds: float) -> str:
    """`HH:MM:SS`, or `D-HH:MM:SS` from a day on (what sbatch reads and squeue shows)."""
    s = max(0, int(round(seconds)))
    d, s = divmod(s, 86400)
    h, s = divmod(s, 3600)
    m, s = divmod(s, 60)
    return f"{d}-{h:02d}:{m:02d}:{s:02d}" if d else f"{h:02d}:{m:02d}:{s:02d}"

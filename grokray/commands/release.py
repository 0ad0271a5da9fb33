"""`grokray release ID`: put a held sweep back in the queue (like `scontrol release`). Only its
owner or an admin may."""

from __future__ import annotations

from grokray.service.client import action_command

add_parser, main = action_command(
    "release", help="release a held sweep back into the queue (its owner or an admin)",
    description="Release a held sweep back into the queue"
                " (its owner or an admin).")

"""`grokray hold ID`: hold a queued sweep on the service (like `scontrol hold`): it keeps its place
but is not started until `grokray release ID`. Only its owner or an admin may."""

from __future__ import annotations

from grokray.service.client import action_command

add_parser, main = action_command(
    "hold", help="hold a queued sweep (its owner or an admin): it waits until released",
    description="Hold a queued sweep"
                " (its owner or an admin): it waits until released.")

"""`grokray cancel ID`: cancel a sweep on the service (like `scancel`): a queued or held one leaves
the queue; a running one is stopped by the runner (its rows so far stay in its dir). Only its
owner or an admin may."""

from __future__ import annotations

from grokray.service.client import action_command

add_parser, main = action_command(
    "cancel", help="cancel a sweep on the service (its owner or an admin)",
    description="Cancel a sweep on the service"
                " (its owner or an admin): a queued one leaves the queue, a running one stops.")

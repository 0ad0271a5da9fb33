"""The first schema: users, sweeps (the queue), identities (the lab's row index), usage, events.

Revision ID: 0001
Revises:
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "users",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.String(64), nullable=False, unique=True),
        sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("admin", sa.Boolean, nullable=False),
        sa.Column("quota_cpu_hours", sa.Float, nullable=True),
        sa.Column("quota_gpu_hours", sa.Float, nullable=True),
        sa.Column("created_at", TS, nullable=False),
    )
    op.create_table(
        "sweeps",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("owner_id", sa.Integer, sa.ForeignKey("users.id"), nullable=False),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("spec_text", sa.Text, nullable=False),
        sa.Column("spec_source", sa.String(1024), nullable=False),
        sa.Column("sweep_dir", sa.String(2048), nullable=False),
        sa.Column("priority", sa.Integer, nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("seq", sa.BigInteger, nullable=False, unique=True),
        sa.Column("submitted_at", TS, nullable=False),
        sa.Column("started_at", TS, nullable=True),
        sa.Column("ended_at", TS, nullable=True),
        sa.Column("estimate_cpu_s", sa.Float, nullable=False),
        sa.Column("estimate_gpu_s", sa.Float, nullable=False),
        sa.Column("estimate_wall_s", sa.Float, nullable=False),
        sa.Column("used_cpu_s", sa.Float, nullable=False),
        sa.Column("used_gpu_s", sa.Float, nullable=False),
        sa.Column("trials_total", sa.Integer, nullable=False),
        sa.Column("seed_runs_total", sa.Integer, nullable=False),
        sa.Column("seed_runs_done", sa.Integer, nullable=False),
        sa.Column("seed_runs_reused", sa.Integer, nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("message", sa.Text, nullable=False),
        sa.Column("request_key", sa.String(128), nullable=True, unique=True),
        sa.Column("updated_at", TS, nullable=False),
        sa.CheckConstraint("state IN ('queued','held','running','preempted','done','failed',"
                           "'cancelled')", name="sweeps_state"),
    )
    op.create_index("sweeps_state_order", "sweeps", ["state", "priority", "seq"])
    op.create_index("sweeps_owner", "sweeps", ["owner_id"])
    op.create_table(
        "identities",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("config_hash", sa.String(64), nullable=False),
        sa.Column("seed", sa.BigInteger, nullable=False),
        sa.Column("semantics", sa.String(32), nullable=False),
        sa.Column("device_kind", sa.String(128), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("sweep_id", sa.Integer, sa.ForeignKey("sweeps.id"), nullable=True),
        sa.Column("sweep_dir", sa.String(2048), nullable=False),
        sa.Column("owner_id", sa.Integer, sa.ForeignKey("users.id"), nullable=True),
        sa.Column("source_dir", sa.String(2048), nullable=True),
        sa.Column("cpu_s", sa.Float, nullable=False),
        sa.Column("gpu_s", sa.Float, nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.UniqueConstraint("config_hash", "seed", "sweep_dir", name="identities_row"),
        sa.CheckConstraint("status IN ('training','ok','failed')", name="identities_status"),
    )
    op.create_index("identities_lookup", "identities",
                    ["config_hash", "seed", "semantics", "device_kind"])
    op.create_index("identities_sweep", "identities", ["sweep_id"])
    op.create_table(
        "usage",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("user_id", sa.Integer, sa.ForeignKey("users.id"), nullable=False),
        sa.Column("sweep_id", sa.Integer, sa.ForeignKey("sweeps.id"), nullable=False),
        sa.Column("at", TS, nullable=False),
        sa.Column("cpu_s", sa.Float, nullable=False),
        sa.Column("gpu_s", sa.Float, nullable=False),
    )
    op.create_index("usage_user_at", "usage", ["user_id", "at"])
    op.create_index("usage_sweep", "usage", ["sweep_id"])
    op.create_table(
        "events",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("sweep_id", sa.Integer, sa.ForeignKey("sweeps.id"), nullable=False),
        sa.Column("at", TS, nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("actor_id", sa.Integer, sa.ForeignKey("users.id"), nullable=True),
        sa.Column("detail", sa.Text, nullable=False),
    )
    op.create_index("events_sweep", "events", ["sweep_id", "id"])


def downgrade() -> None:
    for name in ("events", "usage", "identities", "sweeps", "users"):
        op.drop_table(name)

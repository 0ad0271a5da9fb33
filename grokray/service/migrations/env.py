"""Alembic's environment for the service's database: `grokray.service.db.migrate` hands it an
open connection (config.attributes["connection"]); migrations run inside that transaction."""

from __future__ import annotations

from alembic import context

from grokray.service.db import Base

connection = context.config.attributes.get("connection")
if connection is None:  # `alembic` run by hand: give it a URL (sqlalchemy.url)
    from grokray.service.db import engine_of

    connection = engine_of(context.config.get_main_option("sqlalchemy.url")).connect()
context.configure(connection=connection, target_metadata=Base.metadata,
                  render_as_batch=connection.dialect.name == "sqlite")
with context.begin_transaction():
    context.run_migrations()

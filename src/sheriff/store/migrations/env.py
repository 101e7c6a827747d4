"""Alembic environment: runs on the engine handed over by `sheriff.store.db`."""

from alembic import context

from sheriff.store.schema import metadata

engine = context.config.attributes["engine"]

with engine.connect() as connection:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()

"""The store: SQLAlchemy tables, migrations, bulk loaders and queries (SQLite or PostgreSQL)."""

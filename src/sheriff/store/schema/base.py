"""The shared MetaData and column types that behave the same on SQLite and PostgreSQL."""

from sqlalchemy import BigInteger, Integer, MetaData, String
from sqlalchemy.dialects import postgresql
from sqlalchemy.types import TypeEngine

metadata = MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "ck": "ck_%(table_name)s_%(constraint_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

# SQLite only auto-increments a column declared exactly INTEGER PRIMARY KEY.
BigId = BigInteger().with_variant(Integer, "sqlite")


def string_enum(name: str, values: tuple[str, ...]) -> TypeEngine[str]:
    """A closed set of strings: a native enum (4 bytes) on PostgreSQL, VARCHAR(16) on SQLite."""
    return String(16).with_variant(postgresql.ENUM(*values, name=name), "postgresql")

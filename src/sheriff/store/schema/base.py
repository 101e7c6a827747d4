"""The shared MetaData and column types that behave the same on SQLite and PostgreSQL."""

import re
import uuid
from datetime import UTC, datetime
from typing import Any

import slugid
from sqlalchemy import BigInteger, DateTime, Dialect, Integer, MetaData, String
from sqlalchemy.dialects import postgresql
from sqlalchemy.types import TypeDecorator, TypeEngine

from sheriff.errors import InputError
from sheriff.model.task_shapes import TASK_ID_PATTERN

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


# 21 characters of 6 bits, then one whose low 4 bits are zero: 128 bits exactly.
_SLUGID = re.compile(TASK_ID_PATTERN)


def is_slugid(text: str) -> bool:
    """Whether `text` is a Taskcluster slugid (every task id is one)."""
    return isinstance(text, str) and _SLUGID.fullmatch(text) is not None


def slugid_to_uuid(slug: str) -> uuid.UUID:
    """The uuid a Taskcluster slugid encodes; a string that is not one is refused (the
    slugid library would decode any 22 characters)."""
    if not is_slugid(slug):
        raise InputError(
            f"{slug!r} is not a Taskcluster task id (a slugid: 22 URL-safe base64 characters)"
        )
    return slugid.decode(slug)


def slugid_bytes(slug: str) -> bytes:
    """The 16 bytes a Taskcluster slugid encodes; a string that is not one is refused."""
    return slugid_to_uuid(slug).bytes


def uuid_to_slugid(value: uuid.UUID) -> str:
    return slugid.encode(value)


class SlugId(TypeDecorator[str]):
    """A Taskcluster task id: a 16-byte `uuid` on PostgreSQL, VARCHAR(22) on SQLite.

    Code always sees the slugid string; only PostgreSQL stores its 16 bytes (7 fewer than
    the string in the row, and a narrower unique index).
    """

    impl = String(22)
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "postgresql":
            return dialect.type_descriptor(postgresql.UUID(as_uuid=True))
        return dialect.type_descriptor(String(22))

    def process_bind_param(self, value: Any, dialect: Dialect) -> Any:
        if value is None or dialect.name != "postgresql":
            return value
        return slugid_to_uuid(value)

    def process_result_value(self, value: Any, dialect: Dialect) -> Any:
        if value is None or dialect.name != "postgresql":
            return value
        return uuid_to_slugid(value)


class HexDigest(TypeDecorator[str]):
    """A sha1 as 40 hex digits in code: its 20 bytes on PostgreSQL, the string on SQLite."""

    impl = String(40)
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "postgresql":
            return dialect.type_descriptor(postgresql.BYTEA())
        return dialect.type_descriptor(String(40))

    def process_bind_param(self, value: Any, dialect: Dialect) -> Any:
        if value is None or dialect.name != "postgresql":
            return value
        return bytes.fromhex(value)

    def process_result_value(self, value: Any, dialect: Dialect) -> Any:
        if value is None or dialect.name != "postgresql":
            return value
        return bytes(value).hex()


class UtcDateTime(TypeDecorator[datetime]):
    """A moment in time: `timestamptz` on PostgreSQL, UTC text on SQLite; code always gets
    an aware UTC datetime back and may give any aware one (a naive one is taken as UTC).

    SQLite keeps no zone: without this, its times come back naive and an aware value in a
    comparison is written with its own offset, so every caller had to remember both.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Dialect) -> Any:
        if not isinstance(value, datetime):
            return value
        moment = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
        return moment.replace(tzinfo=None) if dialect.name == "sqlite" else moment

    def process_result_value(self, value: Any, dialect: Dialect) -> Any:
        if not isinstance(value, datetime):
            return value
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)

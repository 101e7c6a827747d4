"""The action request log: every request to a Taskcluster action, written before it is sent.

A row moves requested → sending → sent (with the action task id) or failed (with the
reason); `dry-run` rows record what would have been sent. `sending` means "claimed, and
perhaps sent": after a crash it is reconciled against the push's task group before
anything is sent again (see sheriff.actions.log).
"""

from sqlalchemy import (
    JSON,
    Column,
    Index,
    SmallInteger,
    String,
    Table,
    Text,
)

from sheriff.store.schema.base import BigId, UtcDateTime, metadata

action_request = Table(
    "action_request",
    metadata,
    Column("id", BigId, primary_key=True),
    Column("idempotency_key", String(200), nullable=False, unique=True),
    Column("strategy", String(32), nullable=False),
    Column("action", String(64), nullable=False),  # the action's name in actions.json
    Column("repository", String(64), nullable=False),
    Column("revision", String(40), nullable=False),
    # The push's decision task, which is also its task group; found by dispatch if unknown.
    Column("decision_task_id", String(22)),
    Column("task_id", String(22)),  # the target task; null for push-level actions
    Column("labels", JSON, nullable=False),  # labels whose runs the request asks for
    Column("input", JSON, nullable=False),
    Column("state", String(16), nullable=False),
    Column("hook", String(255)),  # <hookGroupId>/<hookId> it was (or would be) sent to
    Column("payload", JSON),  # the rendered hookPayload
    Column("action_task_id", String(22)),
    Column("reason", Text),
    Column("attempts", SmallInteger, nullable=False, server_default="0"),
    Column("claimed_by", String(100)),
    Column("created_at", UtcDateTime, nullable=False),
    Column("updated_at", UtcDateTime, nullable=False),
    Index(None, "repository", "revision"),
    Index(None, "state"),
)

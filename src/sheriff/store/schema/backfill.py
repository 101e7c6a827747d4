"""Backfills: a report per regression (or manual request), a record per job to backfill.

As Treeherder's `backfill_report` / `backfill_record`: the report says what regressed and,
in the end, which push caused it; a record is one job sheriff backfills to find out, with
its identity, the context the search needs (manifest set, failure lines, the window of
pushes and what each showed), a status that only moves forward (preliminary → ready →
backfilled → successful | failed) and counters.
"""

from sqlalchemy import (
    JSON,
    Boolean,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    SmallInteger,
    String,
    Table,
    Text,
    UniqueConstraint,
)

from sheriff.store.schema.base import BigId, UtcDateTime, metadata

backfill_report = Table(
    "backfill_report",
    metadata,
    Column("id", BigId, primary_key=True),
    Column("repository_id", ForeignKey("repository.id"), nullable=False),
    # The push the regression was seen on and the failed run that showed it.
    Column("push_id", ForeignKey("push.id", ondelete="CASCADE"), nullable=False),
    Column("job_id", ForeignKey("job.id", ondelete="CASCADE"), nullable=False),
    # The triage case that opened it; null for a manual request.
    Column("case_id", ForeignKey("triage_case.id", ondelete="SET NULL"), unique=True),
    Column("source", String(16), nullable=False),  # regression, manual
    Column("label", String(255), nullable=False),
    Column("strategy", String(16), nullable=False),  # linear, bisect
    Column("same_manifests", Boolean, nullable=False),
    Column("tests", JSON, nullable=False),  # the failing test paths, to merge reports
    Column("failure_lines", JSON, nullable=False),  # normalised lines a reproduction shows
    Column("fail_rate", Float, nullable=False),  # observed on the regression's push
    Column("case_ids", JSON, nullable=False),  # every regression case merged into it
    Column("status", String(16), nullable=False),  # open, culprit, failed
    Column("culprit_push_id", ForeignKey("push.id", ondelete="SET NULL")),
    Column("culprit_revision", String(40)),
    Column("reason", Text),
    Column("opened_at", UtcDateTime, nullable=False),
    Column("mature_at", UtcDateTime, nullable=False),
    Column("closed_at", UtcDateTime),
    Column("updated_at", UtcDateTime, nullable=False),
    Index(None, "repository_id", "status"),
)

backfill_record = Table(
    "backfill_record",
    metadata,
    Column("id", BigId, primary_key=True),
    Column("report_id", ForeignKey("backfill_report.id", ondelete="CASCADE"), nullable=False),
    Column("job_id", ForeignKey("job.id", ondelete="CASCADE"), nullable=False),
    # Identity of what is backfilled: label, platform option, tier, manifests.
    Column("label", String(255), nullable=False),
    Column("platform", String(100), nullable=False),  # machine platform, the daily-limit key
    Column("option_collection", String(32), nullable=False),
    Column("tier", SmallInteger, nullable=False),
    Column("manifest_set_id", ForeignKey("manifest_set.id")),
    Column("context", JSON, nullable=False),
    Column("status", String(16), nullable=False),
    Column("actions_triggered", Integer, nullable=False, server_default="0"),
    Column("runs_in_progress", Integer, nullable=False, server_default="0"),
    Column("runs_successful", Integer, nullable=False, server_default="0"),
    Column("runs_failed", Integer, nullable=False, server_default="0"),
    Column("iterations", Integer, nullable=False, server_default="0"),
    Column("last_push_id", ForeignKey("push.id", ondelete="SET NULL")),
    Column("reason", Text),
    Column("created_at", UtcDateTime, nullable=False),
    Column("triggered_at", UtcDateTime),  # first backfill sent: counts to the limit
    Column("updated_at", UtcDateTime, nullable=False),
    UniqueConstraint("report_id", "job_id"),
    Index(None, "status"),
    Index(None, "platform", "triggered_at"),
)

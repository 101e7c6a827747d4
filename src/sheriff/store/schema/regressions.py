"""Regressions: the cases that are one breakage, with its culprit and its end.

A `regression` row holds what a sheriff reads (tests, normalised failure lines,
configurations, the first and last failing push, the culprit the backfill named, the push
where it stopped failing); `regression_case` says which cases are in it, at most one
regression per case (a unique key, so two passes never file one case twice).
"""

from sqlalchemy import JSON, Column, ForeignKey, Index, String, Table

from sheriff.store.schema.base import BigId, UtcDateTime, metadata

regression = Table(
    "regression",
    metadata,
    Column("id", BigId, primary_key=True),
    Column("repository_id", ForeignKey("repository.id"), nullable=False),
    Column("status", String(16), nullable=False),  # confirmed, culprit, stopped
    Column("tests", JSON, nullable=False),
    Column("failure_lines", JSON, nullable=False),
    Column("configurations", JSON, nullable=False),  # "<platform>/<option>"
    Column("labels", JSON, nullable=False),
    Column("first_push_id", ForeignKey("push.id", ondelete="CASCADE"), nullable=False),
    Column("last_push_id", ForeignKey("push.id", ondelete="CASCADE"), nullable=False),
    Column("culprit_push_id", ForeignKey("push.id", ondelete="SET NULL")),
    Column("culprit_revision", String(40)),
    Column("stopped_push_id", ForeignKey("push.id", ondelete="SET NULL")),
    # The one backfill search that serves it (SPEC §7: one search per regression).
    Column("backfill_report_id", ForeignKey("backfill_report.id", ondelete="SET NULL")),
    # Set when its cases moved to an older regression with the same culprit.
    Column("merged_into", ForeignKey("regression.id", ondelete="SET NULL")),
    Column("opened_at", UtcDateTime, nullable=False),
    Column("updated_at", UtcDateTime, nullable=False),
    Index(None, "repository_id", "status"),
)

regression_case = Table(
    "regression_case",
    metadata,
    Column("case_id", ForeignKey("triage_case.id", ondelete="CASCADE"), primary_key=True),
    Column("regression_id", ForeignKey("regression.id", ondelete="CASCADE"), nullable=False),
    Index(None, "regression_id"),
)

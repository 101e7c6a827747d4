"""Triage: one case per failed original test run, and what sheriff learnt about each run.

A case is opened once and moves forward only: new → (classified | wrong-tier | infra |
not-eligible) or planned → waiting → (regression | intermittent). Its verdict is stored
with the evidence that decided it and never recomputed from scratch (SPEC §3).
"""

from sqlalchemy import (
    JSON,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    SmallInteger,
    String,
    Table,
    Text,
)

from sheriff.store.schema.base import BigId, UtcDateTime, metadata

triage_case = Table(
    "triage_case",
    metadata,
    Column("id", BigId, primary_key=True),
    # The failed original run (job row) the case is about; at most one case per run.
    Column("job_id", ForeignKey("job.id", ondelete="CASCADE"), nullable=False, unique=True),
    Column("push_id", ForeignKey("push.id", ondelete="CASCADE"), nullable=False),
    Column("label", String(255), nullable=False),
    Column("state", String(16), nullable=False),  # new, planned, waiting, decided
    # regression, intermittent, infra, not-eligible, classified, wrong-tier; null = open
    Column("verdict", String(16)),
    Column("rule", Text),  # the rule that decided, in words
    Column("policy", String(32), nullable=False),
    Column("p_regression", Float),
    Column("runs_wanted", SmallInteger, nullable=False, server_default="0"),
    Column("retriggers_requested", SmallInteger, nullable=False, server_default="0"),
    Column("evidence", JSON),
    Column("opened_at", UtcDateTime, nullable=False),
    Column("decided_at", UtcDateTime),
    Column("updated_at", UtcDateTime, nullable=False),
    Index(None, "push_id", "label"),
    Index(None, "state"),
    Index(None, "verdict"),
)

# What Treeherder and the artifacts said about one run (job row); fetched until it can no
# longer change (log parsed, or parsing failed), then never again.
run_observation = Table(
    "run_observation",
    metadata,
    Column("job_id", ForeignKey("job.id", ondelete="CASCADE"), primary_key=True),
    Column("treeherder_job_id", Integer),
    Column("classification_id", SmallInteger),
    Column("parse_status", String(16)),  # pending, parsed, failed; null = not ingested yet
    Column("errorsummary", String(16)),  # present, incomplete, missing; null = not looked
    Column("failure_lines", JSON),  # normalised TEST-UNEXPECTED lines, from bug_suggestions
    Column("raw_failure_lines", JSON),  # as Treeherder showed them
    Column("structured_failures", JSON),  # (test, subtest, status) from the errorsummary
    Column("bug_suggestions", JSON),  # the trimmed suggestions (search, open bugs)
    Column("updated_at", UtcDateTime, nullable=False),
)

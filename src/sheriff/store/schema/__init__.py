"""All tables, one module per domain, on one shared `MetaData`.

Alembic migrations in `store/migrations/versions/` create them; a test checks that the
migrated database and this metadata agree, so a table edited here without a migration
fails CI.
"""

from sheriff.store.schema.actions import action_request
from sheriff.store.schema.backfill import backfill_record, backfill_report
from sheriff.store.schema.base import metadata
from sheriff.store.schema.core import (
    JOB_KINDS,
    JOB_RESULTS,
    JOB_STATES,
    job,
    job_group,
    job_type,
    manifest,
    manifest_set,
    manifest_set_member,
    manifest_test,
    platform,
    push,
    push_label_manifest_set,
    repository,
    task_queue,
    test_path,
)
from sheriff.store.schema.regressions import regression, regression_case
from sheriff.store.schema.triage import run_observation, triage_case

__all__ = [
    "JOB_KINDS",
    "JOB_RESULTS",
    "JOB_STATES",
    "action_request",
    "backfill_record",
    "backfill_report",
    "job",
    "job_group",
    "job_type",
    "manifest",
    "manifest_set",
    "manifest_set_member",
    "manifest_test",
    "metadata",
    "platform",
    "push",
    "push_label_manifest_set",
    "regression",
    "regression_case",
    "repository",
    "run_observation",
    "task_queue",
    "test_path",
    "triage_case",
]

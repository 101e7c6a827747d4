"""Backfills: reports per regression, records per job, and the search for the culprit push."""

from sheriff.backfill.engine import BackfillSummary, advance_backfills, advance_record
from sheriff.backfill.reports import open_report_for_case, request_backfill
from sheriff.backfill.settings import BackfillSettings, backfill_settings, from_settings
from sheriff.backfill.status import culprit_metrics, named_culprits, pushes_to_watch, reports
from sheriff.backfill.strategies import REGISTRY, BackfillStrategy, backfill_strategy

__all__ = [
    "REGISTRY",
    "BackfillSettings",
    "BackfillStrategy",
    "BackfillSummary",
    "advance_backfills",
    "advance_record",
    "backfill_settings",
    "backfill_strategy",
    "culprit_metrics",
    "from_settings",
    "named_culprits",
    "open_report_for_case",
    "pushes_to_watch",
    "reports",
    "request_backfill",
]

"""Eligibility (SPEC §3 steps 1-5) and case states."""

from __future__ import annotations

import dataclasses
from dataclasses import replace

import pytest

from sheriff.model.case import (
    CaseState,
    EligibilityStatus,
    ErrorSummaryState,
    OriginalRun,
    eligibility,
    errorsummary_artifact,
    state_after_eligibility,
)

RUN = OriginalRun(
    task_id="T1",
    label="test-linux1804-64-qr/opt-mochitest-browser-chrome-1",
    state="failed",
    job_kind="test",
    tier=1,
    task_queue_id="gecko-t/t-linux-large-gcp",
    classification_id=1,
    errorsummary=ErrorSummaryState.COMPLETE,
)


def test_a_failed_unclassified_linux_test_with_a_summary_is_eligible() -> None:
    result = eligibility(RUN)
    assert result.status is EligibilityStatus.ELIGIBLE
    assert result.is_case and not result.is_final
    assert (
        eligibility(replace(RUN, classification_id=6, tier=2)).status is EligibilityStatus.ELIGIBLE
    )
    assert eligibility(replace(RUN, tier=None)).status is EligibilityStatus.ELIGIBLE  # default 1


@pytest.mark.parametrize(
    ("change", "status", "step"),
    [
        ({"job_kind": "build"}, EligibilityStatus.NOT_A_CASE, None),
        ({"state": "completed"}, EligibilityStatus.NOT_A_CASE, None),
        ({"is_action_task": True}, EligibilityStatus.NOT_A_CASE, None),
        ({"classification_id": None}, EligibilityStatus.UNDETERMINED, None),
        ({"classification_id": 4}, EligibilityStatus.CLASSIFIED, 1),
        ({"classification_id": 2}, EligibilityStatus.CLASSIFIED, 1),
        # Treeherder's own 6, 7 (mozci) and 8 (intermittents.py) are nobody's decision.
        ({"classification_id": 7}, EligibilityStatus.ELIGIBLE, None),
        ({"classification_id": 8}, EligibilityStatus.ELIGIBLE, None),
        ({"retriggerable": False}, EligibilityStatus.NOT_ELIGIBLE, 5),
        ({"tier": 3}, EligibilityStatus.WRONG_TIER, 2),
        ({"state": "exception"}, EligibilityStatus.INFRA, 4),
        ({"errorsummary": ErrorSummaryState.UNKNOWN}, EligibilityStatus.UNDETERMINED, None),
        ({"errorsummary": ErrorSummaryState.MISSING}, EligibilityStatus.INFRA, 4),
        ({"errorsummary": ErrorSummaryState.INCOMPLETE}, EligibilityStatus.INFRA, 4),
        ({"task_queue_id": "gecko-t/win11-64-24h2"}, EligibilityStatus.NOT_ELIGIBLE, 5),
        ({"task_queue_id": "proj-x/t-linux-large"}, EligibilityStatus.NOT_ELIGIBLE, 5),
    ],
)
def test_each_step(change: dict[str, object], status: EligibilityStatus, step: int | None) -> None:
    result = eligibility(replace(RUN, **change))  # type: ignore[arg-type]
    assert (result.status, result.step) == (status, step)
    assert result.reason


def test_steps_apply_in_spec_order() -> None:
    everything_wrong = replace(
        RUN,
        classification_id=4,
        tier=3,
        errorsummary=ErrorSummaryState.MISSING,
        task_queue_id="gecko-t/win11-64-24h2",
    )
    assert eligibility(everything_wrong).status is EligibilityStatus.CLASSIFIED
    no_class = replace(everything_wrong, classification_id=1)
    assert eligibility(no_class).status is EligibilityStatus.WRONG_TIER
    tier_ok = replace(no_class, tier=1)
    assert eligibility(tier_ok).status is EligibilityStatus.INFRA  # step 4 before step 5
    # An action task is evidence even when everything else would make it a case.
    assert eligibility(replace(RUN, is_action_task=True)).status is EligibilityStatus.NOT_A_CASE


def test_queue_prefixes_are_configurable() -> None:
    windows = replace(RUN, task_queue_id="gecko-t/win11-64-24h2")
    prefixes = ("gecko-t/t-linux-", "gecko-t/win")
    assert eligibility(windows, prefixes).status is EligibilityStatus.ELIGIBLE
    assert eligibility(RUN, ()).status is EligibilityStatus.NOT_ELIGIBLE


def test_states_after_eligibility() -> None:
    assert state_after_eligibility(eligibility(RUN)) is CaseState.NEW
    infra = eligibility(replace(RUN, errorsummary=ErrorSummaryState.MISSING))
    assert state_after_eligibility(infra) is CaseState.INFRA and CaseState.INFRA.is_final
    with pytest.raises(ValueError, match="not a case"):
        state_after_eligibility(eligibility(replace(RUN, job_kind="build")))
    assert not CaseState.WAITING.is_final and CaseState.REGRESSION.is_final


def test_errorsummary_state_and_artifact(reference) -> None:
    logs = reference / "treeherder" / "logs"
    complete = (logs / "mochitest-browser-chrome_errorsummary.log").read_text()
    infra = (logs / "mochitest-browser-chrome_infra_errorsummary.log").read_text()
    assert ErrorSummaryState.of(complete) is ErrorSummaryState.COMPLETE
    assert ErrorSummaryState.of(infra) is ErrorSummaryState.INCOMPLETE
    assert ErrorSummaryState.of(None) is ErrorSummaryState.MISSING
    names = ["public/logs/live_backing.log", "public/test_info/xpcshell_errorsummary.log"]
    assert errorsummary_artifact(names) == "public/test_info/xpcshell_errorsummary.log"
    assert errorsummary_artifact(names[:1]) is None


def test_the_tiers_triaged_are_a_setting() -> None:
    # `tiers` of the settings (or of a [repository.<name>] table) reach SPEC §3 rule 2.
    tier2 = dataclasses.replace(RUN, tier=2)
    assert eligibility(tier2).status is EligibilityStatus.ELIGIBLE
    assert eligibility(tier2, tiers=[1]).status is EligibilityStatus.WRONG_TIER
    assert "tier 2 is not 1" in eligibility(tier2, tiers=[1]).reason

"""Every dashboard page, on the data a play of small.yaml left, in chromium at 1,280 px:
no horizontal overflow, and no serious or critical accessibility violation (axe-core,
run in the page). Screenshots go to $SHERIFF_TEST_ARTIFACTS/test_browser_checks."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from sheriff.store.schema import regression
from tests.web.conftest import WIDTH

pytestmark = pytest.mark.browser


def _pages(base: str, database: str) -> dict[str, str]:
    """One of each page: the landing page, regressions (one merged into another), and the
    rest reached from the culprit's backfill report."""
    report = httpx.get(f"{base}/api/backfills", params={"status": "culprit"}).json()["results"][0]
    job, revision = report["job_id"], report["revision"]
    regressions = httpx.get(f"{base}/api/regressions").json()["results"]
    merged = _a_merged_regression(database)
    return {
        "landing": "/autoland/",
        "landing-all-regressions": "/autoland/?show=all",
        "regression": f"/autoland/regressions/{regressions[0]['id']}/",
        "merged-regression": f"/autoland/regressions/{merged}/",
        "push": f"/autoland/push/{revision}/",
        "push-needs-a-person": f"/autoland/push/{revision}/?needs=person",
        "culprit-push": f"/autoland/push/{report['culprit_revision']}/",
        "job": f"/autoland/jobs/{job}/",
        "similar": f"/autoland/jobs/{job}/similar/",
        "backfills": "/autoland/backfills/",
        "backfill": f"/autoland/backfills/{report['id']}/",
    }


def _a_merged_regression(database: str) -> int:
    """The id of a regression merged into another (the API's list leaves those out)."""
    engine = sa.create_engine(database)
    with engine.connect() as conn:
        found = conn.execute(
            sa.select(regression.c.id).where(regression.c.merged_into.is_not(None))
        ).scalar()
    engine.dispose()
    assert found is not None, "small.yaml merges two regressions with the same culprit"
    return found


def test_pages_fit_1280_px_and_pass_axe(
    played: str, played_database: str, browser: Any, page_checks: Any
) -> None:
    page = browser.new_page(viewport={"width": WIDTH, "height": 900})
    for name, path in _pages(played, played_database).items():
        answer = page.goto(played + path)
        assert answer is not None and answer.status == 200, path
        page_checks(page, name)
    page.close()
    assert page_checks.problems == []

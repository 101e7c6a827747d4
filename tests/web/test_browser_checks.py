"""Every dashboard page, on the data a play of small.yaml left, in chromium at 1,280 px:
no horizontal overflow, and no serious or critical accessibility violation (axe-core,
run in the page). Screenshots go to $SHERIFF_TEST_ARTIFACTS/browser-checks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

pytestmark = pytest.mark.browser

WIDTH = 1280


def _pages(base: str) -> dict[str, str]:
    """One of each page, reached from the culprit's backfill report."""
    report = httpx.get(f"{base}/api/backfills", params={"status": "culprit"}).json()["results"][0]
    job, revision = report["job_id"], report["revision"]
    return {
        "pushes": "/autoland/",
        "push": f"/autoland/push/{revision}/",
        "push-needs-a-person": f"/autoland/push/{revision}/?needs=person",
        "culprit-push": f"/autoland/push/{report['culprit_revision']}/",
        "job": f"/autoland/jobs/{job}/",
        "similar": f"/autoland/jobs/{job}/similar/",
        "backfills": "/autoland/backfills/",
        "backfill": f"/autoland/backfills/{report['id']}/",
    }


def test_pages_fit_1280_px_and_pass_axe(played: str, browser: Any, artifacts: Path) -> None:
    from axe_playwright_python.sync_playwright import Axe

    axe = Axe()
    page = browser.new_page(viewport={"width": WIDTH, "height": 900})
    problems: list[str] = []
    for name, path in _pages(played).items():
        answer = page.goto(played + path)
        assert answer is not None and answer.status == 200, path
        page.screenshot(path=artifacts / f"{name}.png", full_page=True)
        width = page.evaluate("document.documentElement.scrollWidth")
        if width > WIDTH:
            problems.append(f"{name}: {width} px wide")
        found = axe.run(page).response["violations"]
        problems += [
            f"{name}: {v['id']} ({v['impact']}): {v['help']}, {len(v['nodes'])} nodes"
            for v in found
            if v["impact"] in ("serious", "critical")
        ]
    page.close()
    assert problems == []

"""After `sheriff sim run` of small.yaml, a sheriff follows a regression in the browser:
pushes → the push → its failed job → similar jobs → the backfill report → the culprit.

The scenario is played once per test session (`played_database`, the same `play` as
`sheriff sim run`) into a SQLite file; screenshots go to $SHERIFF_TEST_ARTIFACTS/browser-sim.
"""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest

pytestmark = pytest.mark.browser


def _report_with_culprit(base: str) -> dict[str, Any]:
    reports = httpx.get(f"{base}/api/backfills", params={"status": "culprit"}).json()["results"]
    assert reports, "small.yaml has regressions: sheriff must have named a culprit"
    return reports[0]


def test_follow_a_played_regression_to_its_culprit(browser, played, artifacts) -> None:
    from playwright.sync_api import expect

    report = _report_with_culprit(played)
    seen_on, culprit, job_id = report["revision"], report["culprit_revision"], report["job_id"]
    task_id = _task_of(played, job_id)

    def snap(page: Any, name: str) -> None:
        page.screenshot(path=artifacts / name, full_page=True)

    page = browser.new_page()
    page.goto(played + "/")
    rows = page.locator("table.pushes tbody tr")
    expect(rows).to_have_count(20)  # 30 pushes, 20 a page
    push_link = page.get_by_role("link", name=seen_on[:12])
    # Looked for among the pushes: the regressions above them link the same pushes.
    if rows.filter(has=push_link).count() == 0:
        page.get_by_role("link", name="Older pushes").click()
        expect(rows).to_have_count(10)
    regression_row = rows.filter(has=push_link)
    expect(regression_row).to_contain_text("regression")
    snap(page, "1-pushes.png")

    regression_row.get_by_role("link", name=seen_on[:12]).click()
    expect(page.get_by_role("heading", level=1)).to_contain_text(seen_on[:12])
    href = f'a[href="/autoland/jobs/{job_id}/"]'
    job_link = page.locator(f"section.platform {href}")
    job_row = page.locator("section.platform tr").filter(has=page.locator(href))
    expect(job_row).to_contain_text("regression")
    # The grid: the same job as a symbol in its configuration's row, marked a regression,
    # and still there when only what needs a person is shown.
    symbol = page.locator(f'table.grid a[href="/autoland/jobs/{job_id}/"]')
    expect(symbol).to_have_attribute("aria-label", re.compile("sheriff: regression"))
    expect(symbol.locator(".mark")).to_have_text("!")
    snap(page, "2-push.png")
    page.get_by_role("link", name=re.compile("Only what needs a person")).click()
    expect(symbol).to_have_count(1)
    expect(page.locator("table.grid a.sym:not(.needs)")).to_have_count(0)
    snap(page, "2-push-needs-a-person.png")

    job_link.click()
    expect(page.get_by_role("heading", level=1)).to_have_text(report["label"])
    expect(page.locator(".verdict-line")).to_contain_text("regression")
    expect(page.locator("table.matrix")).to_contain_text("reproduced in")
    # The verdict in words, the earlier pushes as a strip; the raw JSON only behind a link.
    expect(page.locator("ul.reasons")).to_contain_text("retrigger")
    expect(page.locator("pre")).to_have_count(0)
    # The link goes to the simulator the data came from, not to the server's setting.
    expect(page.get_by_role("link", name="in Treeherder", exact=True)).to_have_attribute(
        "href",
        re.compile(
            rf"^http://127\.0\.0\.1:\d+/jobs\?repo=autoland&revision={seen_on}"
            rf"&selectedTaskRun={task_id}\.0$"
        ),
    )
    snap(page, "3-job.png")

    page.get_by_role("link", name="Similar jobs: what a backfill schedules").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Similar jobs")
    expect(page.locator("tr.current")).to_contain_text("(this job)")
    expect(page.get_by_role("heading", name=f"Push {seen_on[:12]}")).to_be_visible()
    snap(page, "4-similar.png")

    page.go_back()
    page.get_by_role("link", name=f"Backfill report {report['id']}").click()
    strip = page.get_by_role("list", name="Suspect range, oldest push first").first
    marked = strip.locator("li.is-culprit")
    expect(marked).to_have_count(1)
    expect(marked).to_contain_text(culprit[:12])
    expect(marked).to_contain_text("failing")
    snap(page, "5-backfill.png")

    page.locator("dl.facts").get_by_role("link", name=f"push {culprit[:12]}").click()
    expect(page.get_by_role("heading", level=1)).to_contain_text(culprit[:12])
    snap(page, "6-culprit.png")
    page.close()


def _task_of(base: str, job_id: int) -> str:
    return httpx.get(f"{base}/api/project/autoland/jobs/{job_id}/").json()["job"]["task_id"]

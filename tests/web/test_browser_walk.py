"""The walk a sheriff takes every morning, in chromium at 1,280 px: the landing page's
regressions → a regression → its culprit push's job grid → a job of the regression there
→ its verdict explained in words. On the demo's data (small.yaml played) and on
autoland-day's first 24 pushes (played once per session: slow).

At every page: a screenshot kept in $SHERIFF_TEST_ARTIFACTS/test_browser_walk, no
horizontal overflow, no serious or critical axe-core violation (`PageChecks`).
"""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest

from tests.web.conftest import WIDTH, PageChecks

pytestmark = pytest.mark.browser


def _a_regression_with_its_culprit_case(base: str) -> tuple[dict[str, Any], dict[str, Any], str]:
    """An open regression (else any) with a case on its culprit push: the regression, that
    case, and which view of the landing page lists it."""
    for show, params in (("open", {"open": "true"}), ("all", {})):
        found = httpx.get(f"{base}/api/regressions", params={"repo": "autoland", **params})
        for r in found.json()["results"]:
            culprit = (r["culprit"] or {}).get("revision")
            on_culprit = [c for c in r["cases"] if c["revision"] == culprit]
            if on_culprit:
                return r, on_culprit[0], show
    raise AssertionError("the play left no regression whose culprit push showed it")


def walk(browser: Any, base: str, checks: PageChecks, prefix: str) -> None:
    from playwright.sync_api import expect

    r, case, show = _a_regression_with_its_culprit_case(base)
    culprit = r["culprit"]
    page = browser.new_page(viewport={"width": WIDTH, "height": 900})

    # 1. The landing page: regressions first, the pushes below.
    page.goto(base + "/")
    expect(page.get_by_role("heading", level=1)).to_have_text("autoland: regressions and pushes")
    if show != "open":
        page.get_by_role("navigation", name="Which regressions").get_by_role(
            "link", name="All"
        ).click()
    listed = page.locator("table.regressions tbody tr")
    row = listed.filter(has=page.get_by_role("link", name=f"Regression {r['id']}", exact=True))
    expect(row).to_have_count(1)
    expect(row).to_contain_text(f"by {culprit['author']}")
    expect(row).to_contain_text(", ".join(r["configurations"]))
    expect(page.get_by_role("heading", name="Pushes", exact=True)).to_be_visible()
    checks(page, f"{prefix}-1-landing")

    # 2. The regression: its culprit, its cases, its evidence, its backfill strip.
    row.get_by_role("link", name=f"Regression {r['id']}", exact=True).click()
    expect(page.get_by_role("heading", level=1)).to_have_text(f"Regression {r['id']} on autoland")
    facts = page.locator("dl.facts")
    expect(facts).to_contain_text(f"{culprit['revision'][:12]} by {culprit['author']}")
    if culprit["message"]:
        expect(facts).to_contain_text(culprit["message"].splitlines()[0][:40])
    expect(page.locator("table.cases tbody tr")).to_have_count(len(r["cases"]))
    evidence = page.get_by_role("region", name="Evidence")
    for line in r["failure_lines"][:3]:
        expect(evidence).to_contain_text(line)
    if r["backfill_report_id"]:
        strip = page.get_by_role("list", name="Suspect range, oldest push first").first
        expect(strip.locator("li.is-culprit")).to_contain_text(culprit["revision"][:12])
    checks(page, f"{prefix}-2-regression")

    # 3. The culprit push's grid, where the regression's job is marked.
    page.get_by_role("link", name="The culprit push's job grid").click()
    expect(page.get_by_role("heading", level=1)).to_contain_text(culprit["revision"][:12])
    symbol = page.locator(f'table.grid a[href="/autoland/jobs/{case["job_id"]}/"]')
    expect(symbol).to_have_attribute("aria-label", re.compile("sheriff: regression"))
    checks(page, f"{prefix}-3-culprit-grid")

    # 4. The job, 5. its verdict in words (the raw JSON only behind a link).
    symbol.click()
    expect(page.get_by_role("heading", level=1)).to_have_text(case["label"])
    verdict = page.get_by_role("region", name="Verdict")
    expect(verdict.locator(".verdict-line")).to_contain_text("regression")
    expect(verdict.locator("ul.reasons li").first).to_be_visible()
    expect(page.locator("pre")).to_have_count(0)
    checks(page, f"{prefix}-4-job")
    verdict.scroll_into_view_if_needed()
    verdict.screenshot(path=checks.artifacts / f"{prefix}-5-verdict.png")
    page.close()


def test_the_walk_on_the_demo_data(browser, played, page_checks) -> None:
    walk(browser, played, page_checks, "demo")
    assert len(page_checks.checked) == 4
    assert page_checks.problems == []


@pytest.mark.slow
@pytest.mark.timeout(3600)  # the first test to ask for `played_day` waits for the play
def test_the_walk_on_autoland_day(browser, played_day, page_checks) -> None:
    walk(browser, played_day, page_checks, "autoland-day")
    assert len(page_checks.checked) == 4
    assert page_checks.problems == []

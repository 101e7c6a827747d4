"""The dashboard in a real browser: Playwright driving Debian's chromium, headless.

A sheriff follows a regression through `build_world`'s data: pushes → the push → the
failed job → similar jobs → the backfill report with its culprit; keyboard focus and a
retrigger from the page. test_browser_sim.py does the same after a played scenario.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sheriff.web import create_app
from tests.web.conftest import LiveServer, World, build_world, offline_settings, revision

pytestmark = pytest.mark.browser

TOKEN = "browser-t0ken"


@pytest.fixture
def site(sqlite_engine) -> Iterator[tuple[str, World]]:
    world = build_world(sqlite_engine)
    app = create_app(sqlite_engine, offline_settings(api_token=TOKEN), protocol_factory=None)
    with LiveServer(app) as server:
        yield server.url, world


def test_follow_a_regression_from_push_to_culprit(browser, site, artifacts) -> None:
    from playwright.sync_api import expect

    url, world = site
    page = browser.new_page()
    page.goto(url + "/")
    expect(page.get_by_role("heading", level=1)).to_have_text("autoland: regressions and pushes")
    rows = page.locator("table.pushes tbody tr")
    expect(rows).to_have_count(4)
    expect(rows.first).to_contain_text("regression")
    page.screenshot(path=artifacts / "1-pushes.png", full_page=True)

    page.get_by_role("link", name=revision(3)[:12]).click()
    expect(page.get_by_role("heading", level=1)).to_contain_text(revision(3)[:12])
    linux = page.get_by_role("region", name="linux1804-64-qr opt")
    expect(linux).to_contain_text("regression")
    expect(linux).to_contain_text("P(regression) 0.97")
    expect(page.get_by_role("region", name="windows11-64-24h2 opt")).to_contain_text("not eligible")
    page.screenshot(path=artifacts / "2-push.png", full_page=True)

    original = linux.get_by_role("row").filter(has_text="original")
    original.get_by_role("link").click()
    expect(page.get_by_role("heading", level=1)).to_have_text(
        "test-linux1804-64-qr/opt-mochitest-browser-chrome-1"
    )
    matrix = page.locator("table.matrix")
    expect(matrix.locator("tbody tr")).to_have_count(1)
    expect(matrix).to_contain_text("reproduced in 2 retriggers")
    expect(matrix.locator("td.seen")).to_have_count(3)
    taskcluster = page.get_by_role("link", name=f"Task {world.task_ids['p3-bc']} in Taskcluster")
    expect(taskcluster).to_have_attribute(
        "href", f"http://127.0.0.1:9/tasks/{world.task_ids['p3-bc']}"
    )
    page.screenshot(path=artifacts / "3-job.png", full_page=True)

    page.get_by_role("link", name="Similar jobs: what a backfill schedules").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Similar jobs")
    expect(page.locator("main")).to_contain_text("6 jobs found")
    expect(page.get_by_role("heading", name=f"Push {revision(0)[:12]}")).to_be_visible()
    page.get_by_role("link", name="Only jobs that ran all of them").click()
    expect(page.locator("main")).to_contain_text("5 jobs found")  # p1 ran A and C only
    page.screenshot(path=artifacts / "4-similar.png", full_page=True)

    page.go_back()
    page.go_back()
    page.get_by_role("link", name=f"Backfill report {world.report_id}").click()
    strip = page.get_by_role("list", name="Suspect range, oldest push first")
    expect(strip.get_by_role("listitem")).to_have_count(4)
    culprit = strip.locator("li.is-culprit")
    expect(culprit).to_contain_text(revision(2)[:12])
    expect(culprit).to_contain_text("failing")
    expect(culprit).to_contain_text("culprit")
    expect(strip.get_by_role("listitem").first).to_contain_text("clean")
    expect(page.locator("dl.facts")).to_contain_text("Runs spent3")
    page.screenshot(path=artifacts / "5-backfill.png", full_page=True)
    page.get_by_role("link", name=f"push {revision(2)[:12]}").click()
    expect(page.get_by_role("heading", level=1)).to_contain_text(revision(2)[:12])
    page.close()


def test_keyboard_and_a_retrigger_from_the_page(browser, site, artifacts) -> None:
    from playwright.sync_api import expect

    url, world = site
    page = browser.new_page()
    page.goto(f"{url}/autoland/jobs/{world.jobs['p3-bc']}/")
    page.keyboard.press("Tab")
    expect(page.get_by_role("link", name="Skip to content")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("main")).to_be_focused()

    form = page.locator("form.action").first
    form.get_by_label("API token").fill(TOKEN)
    form.get_by_label("Times").fill("2")
    form.get_by_label("Times").press("Enter")
    expect(page.get_by_role("status")).to_contain_text("retrigger on 03aaaaaaaaaa: requested")
    page.screenshot(path=artifacts / "6-retrigger.png", full_page=True)

    form.get_by_label("API token").fill("wrong")
    form.get_by_role("button", name="Retrigger").click()
    expect(page.get_by_role("status")).to_contain_text("Refused (401)")
    page.close()

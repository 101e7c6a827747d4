"""The landing page's regressions and a regression's page, over HTTP (no browser)."""

from __future__ import annotations

import re

from tests.web.conftest import (
    CULPRIT_AUTHOR,
    FAILURE,
    LINUX,
    REPO,
    add_regressions,
    revision,
)


def _section(html: str, heading_id: str) -> str:
    """The HTML of the <section> labelled by heading `heading_id`."""
    start = html.index(f'aria-labelledby="{heading_id}"')
    return html[start : html.index("</section>", start)]


def test_the_landing_page_leads_with_the_open_regressions(world, engine, serve) -> None:
    ids = add_regressions(engine, world)
    web = serve()
    page = web.get(f"/{REPO}/").text
    assert page.index('id="regressions"') < page.index('id="pushes"')
    listed = _section(page, "regressions")
    rows = re.findall(r'<a href="/autoland/regressions/(\d+)/">', listed)
    assert rows == [str(ids["open"])]  # not the stopped one, not the one merged into it
    row = listed[listed.index(f"/regressions/{ids['open']}/") :]
    assert "<code>dom/base/test/browser_a1.js</code>" in row
    assert f"on {LINUX}/opt" in row
    first, culprit = re.findall(r'href="/autoland/push/(\w+)/"', row)[:2]
    assert (first, culprit) == (revision(3), revision(2))
    assert f"by {CULPRIT_AUTHOR}" in row
    assert "Bug 1234567 - Make browser_a1 count twice r=reviewer" in row
    assert "The body of the message" not in row  # the first line only
    report = world.report_id
    assert f'<a href="/autoland/backfills/{report}/">Backfill {report}</a>: culprit' in row
    assert "still failing" in row
    assert "confirmed: waiting to go out on log" in row
    assert "culprit, 1 case" in row
    # The pushes are still there, below.
    assert len(re.findall(r'<a class="rev" href="/autoland/push/', _section(page, "pushes"))) == 4


def test_the_toggle_shows_stopped_and_all(world, engine, serve) -> None:
    ids = add_regressions(engine, world)
    web = serve()

    def listed(show: str) -> list[int]:
        page = _section(web.get(f"/{REPO}/", params={"show": show}).text, "regressions")
        return [int(i) for i in re.findall(r'<a href="/autoland/regressions/(\d+)/">', page)]

    assert listed("stopped") == [ids["stopped"]]
    assert listed("all") == sorted([ids["open"], ids["stopped"]], reverse=True)
    stopped = _section(web.get(f"/{REPO}/?show=stopped").text, "regressions")
    assert f'href="/autoland/push/{revision(2)}/">{revision(2)[:12]}</a></td>' in stopped
    assert '<strong aria-current="page">Stopped</strong>' in stopped
    assert "none" in stopped  # no alert about it
    assert web.get(f"/{REPO}/?show=everything").status_code == 422


def test_a_regression_page_has_its_cases_strip_and_evidence(world, engine, serve) -> None:
    ids = add_regressions(engine, world)
    web = serve()
    answer = web.get(f"/{REPO}/regressions/{ids['open']}/")
    assert answer.status_code == 200
    page = answer.text
    assert f"<h1>Regression {ids['open']} on {REPO}</h1>" in page
    assert "was merged into" not in page
    cases = _section(page, "cases")
    assert re.findall(r'href="/autoland/jobs/(\d+)/"', cases) == [str(world.jobs["p3-bc"])]
    assert f"{LINUX}/opt" in cases and "verdict-regression" in cases
    facts = page[page.index('<dl class="facts">') : page.index("</dl>")]
    assert f'<a href="/{REPO}/push/{revision(2)}/#grid">The culprit push\'s job grid</a>' in facts
    assert f"by {CULPRIT_AUTHOR}" in facts and "count twice r=reviewer" in facts
    evidence = _section(page, "evidence")
    assert f"<code>{FAILURE}</code>" in evidence
    assert "<code>test-linux1804-64-qr/opt-mochitest-browser-chrome-1</code>" in evidence
    # The backfill report's strip, as on the report's own page.
    strip = re.findall(r'<li class="push outcome-(\w+)( is-culprit)?">', _section(page, "backfill"))
    assert strip == [("clean", ""), ("clean", ""), ("failing", " is-culprit"), ("failing", "")]
    # Without the trailing slash the page is found too (a redirect to it).
    bare = web.get(f"/{REPO}/regressions/{ids['open']}", follow_redirects=True)
    assert bare.status_code == 200 and str(bare.url).endswith(f"/regressions/{ids['open']}/")


def test_a_merged_regression_says_what_it_merged_into(world, engine, serve) -> None:
    ids = add_regressions(engine, world)
    page = serve().get(f"/{REPO}/regressions/{ids['merged']}/").text
    assert f"<h1>Regression {ids['merged']} on {REPO}</h1>" in page
    assert (
        f"Regression {ids['merged']} was merged into "
        f'<a href="/{REPO}/regressions/{ids["open"]}/">regression {ids["open"]}</a>'
    ) in page
    # What follows is the regression it went into: its case.
    assert f'href="/autoland/jobs/{world.jobs["p3-bc"]}/"' in _section(page, "cases")


def test_without_regressions_the_landing_page_still_lists_pushes(world, serve) -> None:
    page = serve().get(f"/{REPO}/").text
    assert "No open regressions." in page
    pushes = _section(page, "pushes")
    assert [revision(i)[:12] for i in (3, 2, 1, 0)] == re.findall(
        r'<a class="rev" href="/autoland/push/\w+/">(\w+)</a>', pushes
    )


def test_an_unknown_regression_is_one_clear_404_page(world, engine, serve) -> None:
    ids = add_regressions(engine, world)
    web = serve()
    for path, message in (
        (f"/{REPO}/regressions/999999/", f"No regression 999999 on {REPO}."),
        # A regression of another repository is not found on this one.
        (f"/mozilla-central/regressions/{ids['open']}/", f"No regression {ids['open']} on "),
    ):
        answer = web.get(path)
        assert answer.status_code == 404, path
        assert answer.headers["content-type"].startswith("text/html")
        assert message in answer.text
        assert answer.text.count("<h1>") == 1


def test_the_api_names_each_case_s_job(world, engine, serve) -> None:
    ids = add_regressions(engine, world)
    found = serve().get(f"/api/regressions/{ids['open']}").json()
    assert found["cases"] == [
        {
            "case_id": world.cases["p3-bc"],
            "job_id": world.jobs["p3-bc"],
            "task_id": world.task_ids["p3-bc"],
            "run_id": 0,
            "label": "test-linux1804-64-qr/opt-mochitest-browser-chrome-1",
            "configuration": f"{LINUX}/opt",
            "verdict": "regression",
            "revision": revision(3),
        }
    ]

"""The dashboard over HTTP (no browser): every page renders the data, and errors are pages."""

from __future__ import annotations

import re

from tests.web.conftest import REPO, revision


def test_every_page_renders_the_world(world, serve) -> None:
    web = serve()
    home = web.get("/", follow_redirects=False)
    assert home.status_code == 307 and home.headers["location"] == f"/{REPO}/"

    pushes = web.get(f"/{REPO}/").text
    assert pushes.index(revision(3)[:12]) < pushes.index(revision(0)[:12])
    assert '1&nbsp;<span class="badge verdict-regression">regression</span>' in pushes

    push = web.get(f"/{REPO}/push/{revision(3)}/").text
    assert "linux1804-64-qr opt" in push and "windows11-64-24h2 opt" in push
    assert ">not eligible</span>" in push and "P(regression) 0.97" in push

    job = web.get(f"/{REPO}/jobs/{world.jobs['p3-bc']}/").text
    assert "<strong>reproduced</strong> in 2 retriggers" in job
    assert f"http://127.0.0.1:9/tasks/{world.task_ids['p3-bc-r1']}" in job
    assert f"selectedTaskRun={world.task_ids['p3-bc']}.0" in job
    assert "at least 2 of 3 retriggers reproduced a line" in job
    assert 'type="password"' not in job  # no token configured: no actions

    similar = web.get(f"/{REPO}/jobs/{world.jobs['p3-bc']}/similar/").text
    assert f"/{REPO}/jobs/{world.jobs['p0-bc']}/" in similar
    assert f"/{REPO}/jobs/{world.jobs['p2-bc']}/" not in similar  # ran C only
    assert "test_paths=dom%2Fbase%2Ftest%2Fbrowser.toml" in similar
    only_all = web.get(f"/{REPO}/jobs/{world.jobs['p3-bc']}/similar/?match=all").text
    assert f"/{REPO}/jobs/{world.jobs['p1-bc']}/" not in only_all

    report = web.get(f"/{REPO}/backfills/{world.report_id}/").text
    strip = re.findall(r'<li class="push outcome-(\w+)( is-culprit)?">', report)
    assert strip == [("clean", ""), ("clean", ""), ("failing", " is-culprit"), ("failing", "")]
    assert "<dt>Runs spent</dt><dd>3</dd>" in report


def test_actions_appear_only_with_a_token(world, serve) -> None:
    web = serve(api_token="t0ken")
    job = web.get(f"/{REPO}/jobs/{world.jobs['p3-bc']}/").text
    assert f'data-url="/api/project/{REPO}/jobs/{world.jobs["p3-bc"]}/retrigger/"' in job
    assert "/static/actions.js" in job


def test_unknown_things_are_404_pages(world, serve) -> None:
    web = serve()
    for path in (
        "/nosuchrepo/",
        f"/{REPO}/push/{'f' * 40}/",
        f"/{REPO}/jobs/999999/",
        f"/{REPO}/jobs/999999/similar/",
        f"/{REPO}/backfills/999999/",
    ):
        answer = web.get(path)
        assert answer.status_code == 404, path
        assert answer.headers["content-type"].startswith("text/html"), path

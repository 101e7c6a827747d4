"""The dashboard: server-rendered pages over the same queries as the API.

A repository's open regressions, then its pushes → a regression's cases, backfill strip
and evidence → a push's job grid and failed jobs by platform → a job's runs and failure
lines side by side, its verdict in words → similar jobs (what a backfill schedules) → the
backfill report with its push strip.
"""

from __future__ import annotations

import pathlib
from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates

from sheriff.actions import log
from sheriff.model.failure_lines import normalise_failure_line
from sheriff.store import api_queries, queries
from sheriff.store import regressions as stored_regressions
from sheriff.web.api.deps import (
    MAX_INT32,
    Conn,
    JobId,
    RepoName,
    Revision,
    RowId,
    links_of,
    settings_of,
)
from sheriff.web.api.read import job_detail
from sheriff.web.explain import explain
from sheriff.web.grid import FAILED_RESULTS, job_grid, needs_a_person

HERE = pathlib.Path(__file__).parent
templates = Jinja2Templates(directory=HERE / "templates")

VERDICT_TEXT = {
    "regression": "regression",
    "intermittent": "intermittent",
    "infra": "infra",
    "not-eligible": "not eligible",
    "classified": "classified",
    "wrong-tier": "wrong tier",
    "pending": "pending",
}
# An alert's request log state, as a sheriff reads it beside the alert's channel.
ALERT_STATE_TEXT = {
    log.REQUESTED: "waiting to go out on",
    log.SENDING: "going out on",
    log.SENT: "sent on",
    log.FAILED: "failed on",
    log.DRY_RUN: "recorded (dry run) for",
    log.SKIPPED: "skipped on",
}
PAGE = 20
# The landing page's regressions: which statuses each choice of the toggle shows.
REGRESSION_VIEWS: dict[str, tuple[str, ...] | None] = {
    "open": stored_regressions.OPEN_STATUSES,
    "stopped": (stored_regressions.STOPPED,),
    "all": None,
}
REGRESSIONS_SHOWN = 50


def _when(moment: datetime | str | None) -> str:
    if isinstance(moment, str):  # as the regression records give it (ISO 8601)
        moment = datetime.fromisoformat(moment)
    return moment.strftime("%Y-%m-%d %H:%M UTC") if moment else "—"


templates.env.filters["when"] = _when
templates.env.filters["short"] = lambda revision: (revision or "")[:12]
templates.env.globals["verdict_text"] = lambda v: VERDICT_TEXT.get(v or "", v or "")
templates.env.globals["alert_text"] = lambda a: (
    f"{a['event']}: {ALERT_STATE_TEXT.get(a['state'], a['state'])} {a['channel']}"
)

router = APIRouter(include_in_schema=False, default_response_class=HTMLResponse)


def _page(request: Request, name: str, status: int = 200, **context: Any) -> Response:
    return templates.TemplateResponse(request, name, context, status_code=status)


def _not_found(request: Request, message: str) -> Response:
    return _page(request, "error.html", 404, title="Not found", message=message)


def _repo_id(conn: Any, repo: str) -> int | None:
    return api_queries.repository_id(conn, repo)


@router.get("/")
def home(request: Request, conn: Conn) -> Response:
    """The only repository's pushes, or the list of repositories."""
    names = api_queries.repositories(conn)
    if len(names) == 1:
        return RedirectResponse(f"/{names[0]}/", status_code=307)
    database = request.app.state.engine.url.render_as_string(hide_password=True)
    return _page(request, "home.html", title="sheriff", repositories=names, database=database)


@router.get("/{repo}/")
def landing(
    request: Request,
    conn: Conn,
    repo: RepoName,
    offset: Annotated[int, Query(ge=0, le=MAX_INT32)] = 0,
    show: Annotated[Literal["open", "stopped", "all"], Query()] = "open",
) -> Response:
    """The repository's regressions (open ones unless asked), then its pushes."""
    repo_id = _repo_id(conn, repo)
    if repo_id is None:
        return _not_found(request, f"sheriff knows no repository called {repo!r}.")
    found = api_queries.list_pushes(conn, repo_id, offset=offset, count=PAGE)
    regressions = stored_regressions.list_regressions(
        conn, statuses=REGRESSION_VIEWS[show], repository_name=repo, count=REGRESSIONS_SHOWN
    )
    _add_searches_and_alerts(conn, repo, regressions)
    return _page(
        request,
        "pushes.html",
        title=f"{repo}: regressions and pushes",
        repo=repo,
        regressions=regressions,
        show=show,
        shown_at_most=REGRESSIONS_SHOWN,
        pushes=found,
        offset=offset,
        newer=max(0, offset - PAGE) if offset else None,
        older=offset + PAGE if len(found) == PAGE else None,
    )


def _add_searches_and_alerts(conn: Any, repo: str, regressions: list[dict[str, Any]]) -> None:
    """Each regression's search (its backfill report's id and state) and the alerts the
    request log holds about it."""
    ids = [r["backfill_report_id"] for r in regressions if r["backfill_report_id"]]
    searches = {b["id"]: b for b in api_queries.backfills_of(conn, report_ids=ids)}
    alerts = stored_regressions.alerts_of(conn, repo, [r["id"] for r in regressions])
    for r in regressions:
        r["search"] = searches.get(r["backfill_report_id"])
        r["alerts"] = alerts[r["id"]]


@router.get("/{repo}/regressions/{regression_id}/")
def regression_page(
    request: Request,
    conn: Conn,
    repo: RepoName,
    regression_id: RowId,
) -> Response:
    # One merged into another answers as the one it went into (the cases moved there).
    found = stored_regressions.get_regression(conn, regression_id)
    if found is None or found["repository"] != repo:
        return _not_found(request, f"No regression {regression_id} on {repo}.")
    _add_searches_and_alerts(conn, repo, [found])
    report_id = found["backfill_report_id"]
    return _page(
        request,
        "regression.html",
        title=f"Regression {regression_id} on {repo}",
        repo=repo,
        asked=regression_id,
        r=found,
        merged=found["id"] != regression_id,
        report=api_queries.get_backfill(conn, report_id) if report_id else None,
    )


@router.get("/{repo}/push/{revision}/")
def push_page(
    request: Request,
    conn: Conn,
    repo: RepoName,
    revision: Revision,
    needs: Annotated[Literal["person"] | None, Query()] = None,
) -> Response:
    repo_id = _repo_id(conn, repo)
    found = api_queries.get_push(conn, repo_id, revision) if repo_id else None
    if found is None:
        return _not_found(request, f"No push {revision} on {repo}.")
    every = api_queries.jobs_of_push(conn, found["id"])
    only_people = needs == "person"
    failed = [
        j
        for j in every
        # Failed runs, and the originals of cases (an original may have passed on a rerun).
        if (j["result"] in FAILED_RESULTS or j["has_case"])
        and (not only_people or needs_a_person(j))
    ]
    groups: dict[str, list[dict[str, Any]]] = {}
    for j in failed:
        groups.setdefault(f"{j['platform']} {j['option_collection']}", []).append(j)
    settings = settings_of(request)
    return _page(
        request,
        "push.html",
        title=f"{repo} {revision[:12]}",
        repo=repo,
        push=found,
        grid=job_grid(every, only_needing_a_person=only_people),
        only_people=only_people,
        needing=sum(1 for j in every if needs_a_person(j)),
        total=len(every),
        groups=groups,
        backfills=api_queries.backfills_of(conn, push_id=found["id"]),
        treeherder_url=links_of(conn, settings, repo).jobs(
            {"repo": repo, "revision": found["revision"]}
        ),
    )


def _is_retrigger(run: dict[str, Any]) -> bool:
    # `retrigger` and `retrigger-multiple` both clone the task on its own push.
    return (run["action"] or "").startswith("retrigger")


def _line_matrix(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each failure line seen on any run, the original's first, with where it showed."""
    original = next((r for r in runs if not r["action"]), runs[0] if runs else None)
    ordered: dict[str, None] = {}
    for run in ([original] if original else []) + runs:
        for line in run["failure_lines"]:
            ordered.setdefault(line, None)
    # The raw line behind each normalised one, as a run's log showed it.
    raw: dict[str, str] = {}
    for run in runs:
        for text in run.get("raw_failure_lines") or []:
            raw.setdefault(normalise_failure_line(text), text)
    matrix = []
    for line in ordered:
        seen = [line in run["failure_lines"] for run in runs]
        again = sum(
            1
            for run, hit in zip(runs, seen, strict=True)
            if hit and run is not original and _is_retrigger(run)
        )
        matrix.append(
            {
                "line": line,
                "raw": raw.get(line),
                "seen": seen,
                "in_original": bool(original and line in original["failure_lines"]),
                "reproduced": again,
            }
        )
    return matrix


@router.get("/{repo}/jobs/{job_id}/")
def job_page(request: Request, conn: Conn, repo: RepoName, job_id: JobId) -> Response:
    repo_id = _repo_id(conn, repo)
    found = api_queries.get_job(conn, repo_id, job_id) if repo_id else None
    if found is None:
        return _not_found(request, f"No job {job_id} on {repo}.")
    settings = settings_of(request)
    detail = job_detail(conn, settings, repo, found)
    runs = detail["runs"]
    return _page(
        request,
        "job.html",
        title=f"{found['label']} on {found['revision'][:12]}",
        repo=repo,
        job=found,
        detail=detail,
        runs=runs,
        matrix=_line_matrix(runs),
        case=detail["case"],
        explained=explain(detail["case"]),
        backfills=api_queries.backfills_of(conn, job_ids=[r["id"] for r in runs]),
        actions_enabled=bool(settings.api_token),
    )


@router.get("/{repo}/jobs/{job_id}/similar/")
def similar_page(
    request: Request,
    conn: Conn,
    repo: RepoName,
    job_id: JobId,
    match: Literal["any", "all"] = "any",
    pushes: Annotated[int, Query(ge=1, le=100)] = 10,
) -> Response:
    repo_id = _repo_id(conn, repo)
    found = api_queries.get_job(conn, repo_id, job_id) if repo_id else None
    if found is None:
        return _not_found(request, f"No job {job_id} on {repo}.")
    ids = queries.similar_jobs(conn, job_id, match=match, pushes=pushes)
    similar = api_queries.jobs_by_id(conn, ids, include_manifests=True)
    mine = set(found["manifests"])
    by_push: dict[str, list[dict[str, Any]]] = {}
    for j in similar:
        j["shared"] = len(mine & set(j["manifests"]))
        by_push.setdefault(j["revision"], []).append(j)
    settings = settings_of(request)
    # Treeherder's own filter for the same thing: its test_paths plus the platform.
    query = [("repo", repo), ("revision", found["revision"])]
    query += [("test_paths", m) for m in found["manifests"]]
    query.append(("searchStr", f"{found['platform']} {found['option_collection']}"))
    return _page(
        request,
        "similar.html",
        title=f"Similar jobs: {found['label']}",
        repo=repo,
        job=found,
        by_push=by_push,
        count=len(similar),
        match=match,
        pushes=pushes,
        treeherder_url=links_of(conn, settings, repo).jobs(query),
    )


@router.get("/{repo}/backfills/")
def backfills_page(request: Request, conn: Conn, repo: RepoName) -> Response:
    repo_id = _repo_id(conn, repo)
    if repo_id is None:
        return _not_found(request, f"sheriff knows no repository called {repo!r}.")
    reports = api_queries.list_backfills(
        conn, api_queries.BackfillFilter(repository_id=repo_id), count=100
    )
    return _page(request, "backfills.html", title=f"{repo}: backfills", repo=repo, reports=reports)


@router.get("/{repo}/backfills/{report_id}/")
def backfill_page(
    request: Request,
    conn: Conn,
    repo: RepoName,
    report_id: RowId,
) -> Response:
    report = api_queries.get_backfill(conn, report_id)
    if report is None or report["repository"] != repo:
        return _not_found(request, f"No backfill report {report_id} on {repo}.")
    return _page(
        request,
        "backfill.html",
        title=f"Backfill {report_id}: {report['label']}",
        repo=repo,
        report=report,
    )

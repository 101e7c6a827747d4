"""Read endpoints: pushes, jobs (with manifests and test paths), similar jobs, verdicts."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, HTTPException, Query, Request
from fastapi.responses import Response
from pydantic import BeforeValidator

from sheriff.store import api_queries, queries
from sheriff.web.api.deps import (
    ERRORS,
    MAX_INT32,
    NO_NUL,
    Conn,
    JobId,
    Pagination,
    Paging,
    RepoId,
    RepoName,
    Revision,
    date_time_only,
    json_answer,
    links_of,
    pushes_of,
    rows_of,
    settings_of,
)
from sheriff.web.api.schemas import (
    JobDetailOut,
    JobOut,
    Page,
    PushOut,
    SimilarOut,
    TaskTestPathsOut,
    VerdictOut,
)

router = APIRouter(prefix="/api", responses=ERRORS)

Include = Literal["manifests", "test_paths"]
Text = Annotated[str | None, Query(max_length=2048, pattern=NO_NUL)]


def find_push(conn: Conn, repo_id: RepoId, revision: Revision) -> dict[str, Any]:
    found = api_queries.get_push(conn, repo_id, revision)
    if found is None:
        raise HTTPException(404, f"unknown push {revision!r}")
    return found


def find_job(conn: Conn, repo_id: RepoId, job_id: JobId) -> dict[str, Any]:
    found = api_queries.get_job(conn, repo_id, job_id)
    if found is None:
        raise HTTPException(404, f"unknown job {job_id}")
    return found


@router.get("/project/{repo}/push/", response_model=Page[PushOut], tags=["pushes"])
def list_pushes(
    conn: Conn,
    repo_id: RepoId,
    offset: Annotated[int, Query(ge=0, le=MAX_INT32, description="rows to skip")] = 0,
    count: Annotated[int, Query(ge=1, le=100, description="pushes per page")] = 10,
) -> dict[str, Any]:
    """Pushes, newest first, with their counts of failed jobs and of verdicts."""
    # Counting means reading every job of each push: pages are smaller than for jobs.
    paging = Pagination(offset=offset, count=count)
    return paging.page(api_queries.list_pushes(conn, repo_id, offset=offset, count=count))


@router.get("/project/{repo}/push/{revision}/", response_model=PushOut, tags=["pushes"])
def get_push(push: Annotated[dict[str, Any], Depends(find_push)]) -> dict[str, Any]:
    """One push, with its counts."""
    return push


@router.get(
    "/project/{repo}/push/{revision}/task-to-test-paths",
    response_model=TaskTestPathsOut,
    tags=["pushes"],
)
def task_to_test_paths(
    conn: Conn, push: Annotated[dict[str, Any], Depends(find_push)]
) -> dict[str, Any]:
    """Task label → the test paths its manifests hold, for every task of the push."""
    return {
        "revision": push["revision"],
        "tasks": queries.push_task_test_paths(conn, push["id"]),
    }


@router.get("/project/{repo}/jobs/", response_model=Page[JobOut], tags=["jobs"])
def list_jobs(
    conn: Conn,
    repo_id: RepoId,
    paging: Paging,
    push_id: Annotated[int | None, Query(ge=1, le=MAX_INT32)] = None,
    platform: Text = None,
    result: Text = None,
    label: Text = None,
    failed: Annotated[bool, Query(description="only testfailed, busted, exception")] = False,
    manifest: Annotated[
        list[Annotated[str, Query(max_length=1024, pattern=NO_NUL)]],
        Query(description="repeatable: jobs that ran every manifest named"),
    ] = [],  # noqa: B006 - FastAPI copies defaults
    test_path: Annotated[
        list[Annotated[str, Query(max_length=2048, pattern=NO_NUL)]],
        Query(description="repeatable: jobs whose manifests hold every test path named"),
    ] = [],  # noqa: B006
    include: Annotated[
        list[Include], Query(description="add `manifests` and/or `test_paths` to each job")
    ] = [],  # noqa: B006
) -> Response:
    """Jobs, newest first, narrowed by push, platform, result, label, manifest or test path."""
    filters = api_queries.JobFilter(
        push_id=push_id,
        platform=platform,
        result=result,
        label=label,
        manifests=manifest[:20],
        test_paths=test_path[:20],
        failed_only=failed,
    )
    jobs = api_queries.list_jobs(
        conn,
        repo_id,
        filters,
        offset=paging.offset,
        count=paging.count,
        include_manifests="manifests" in include,
        include_test_paths="test_paths" in include,
    )
    return json_answer(paging.page(rows_of(JobOut, jobs)))


@router.get("/project/{repo}/jobs/{job_id}/", response_model=JobDetailOut, tags=["jobs"])
def get_job(
    request: Request,
    conn: Conn,
    repo: RepoName,
    job: Annotated[dict[str, Any], Depends(find_job)],
) -> dict[str, Any]:
    """A job with all runs of its label on its push, their failure lines, and its verdict."""
    return job_detail(conn, settings_of(request), repo, job)


def job_detail(conn: Any, settings: Any, repo: str, job: dict[str, Any]) -> dict[str, Any]:
    """The job page's data; the dashboard renders the same."""
    links = links_of(conn, settings, repo)
    runs = api_queries.job_runs(conn, job)
    for run in runs:
        run["taskcluster_url"] = links.task(run["task_id"])
        run["treeherder_url"] = links.job(repo, run["revision"], run["task_id"], run["run_id"])
    return {
        "job": job,
        "taskcluster_url": links.task(job["task_id"]),
        "treeherder_url": links.job(repo, job["revision"], job["task_id"], job["run_id"]),
        "runs": runs,
        "case": api_queries.case_of_job(conn, job),
    }


@router.get("/project/{repo}/jobs/{job_id}/similar/", response_model=SimilarOut, tags=["jobs"])
def similar_jobs(
    conn: Conn,
    job: Annotated[dict[str, Any], Depends(find_job)],
    match: Literal["any", "all"] = "any",
    pushes: Annotated[int, Query(ge=1, le=100, description="pushes up to the job's")] = 10,
    include: Annotated[list[Include], Query()] = [],  # noqa: B006
) -> Response:
    """Jobs on the same platform configuration that ran any / all of this job's manifests
    over the last `pushes` pushes: the tasks a backfill would schedule."""
    ids = queries.similar_jobs(conn, job["id"], match=match, pushes=pushes)
    found = api_queries.jobs_by_id(
        conn,
        ids,
        include_manifests="manifests" in include,
        include_test_paths="test_paths" in include,
    )
    return json_answer(
        {
            "job_id": job["id"],
            "match": match,
            "pushes": pushes,
            "manifests": list(job["manifests"]),
            "results": rows_of(JobOut, found),
        }
    )


@router.get("/verdicts", response_model=Page[VerdictOut], tags=["verdicts"])
def list_verdicts(
    conn: Conn,
    paging: Paging,
    repo: Annotated[str | None, Query(pattern=r"^[A-Za-z0-9._-]{1,64}$")] = None,
    revision: Annotated[str | None, Query(pattern=r"^[A-Za-z0-9]{1,40}$")] = None,
    verdict: Annotated[
        Literal[
            "regression",
            "intermittent",
            "infra",
            "not-eligible",
            "classified",
            "wrong-tier",
            "pending",
        ]
        | None,
        Query(description="`pending`: no verdict yet"),
    ] = None,
    policy: Annotated[str | None, Query(max_length=32, pattern=NO_NUL)] = None,
    state: Annotated[str | None, Query(max_length=16, pattern=NO_NUL)] = None,
    label: Text = None,
    since: Annotated[
        datetime | None,
        BeforeValidator(date_time_only),
        Query(description="opened at or after (RFC 3339 date-time)"),
    ] = None,
) -> dict[str, Any]:
    """Triage cases with their verdicts and evidence, most recently opened first."""
    filters = api_queries.VerdictFilter(
        verdict=verdict, policy=policy, state=state, label=label, since=since
    )
    if repo is not None:
        filters.repository_id = api_queries.repository_id(conn, repo)
        if filters.repository_id is None:
            raise HTTPException(404, f"unknown repository {repo!r}")
    if revision is not None:
        filters.push_ids = pushes_of(conn, revision, filters.repository_id)
    return paging.page(
        api_queries.list_verdicts(conn, filters, offset=paging.offset, count=paging.count)
    )

"""Treeherder's REST paths, in the shapes of its own viewsets."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import JSONResponse

from sheriff.sim import treeherder as th
from sheriff.sim.taskcluster_api import root_url
from sheriff.sim.world import World

# Treeherder's write endpoints need a logged-in user; the simulator knows one token.
SIM_TREEHERDER_TOKEN = "sheriff-dev-treeherder-token"
SIM_TREEHERDER_USER = "sheriff-bot@sheriff.invalid"
TREEHERDER_USERS = {SIM_TREEHERDER_TOKEN: SIM_TREEHERDER_USER}


def treeherder_router(world: World) -> APIRouter:
    """Pushes, jobs, log URLs, bug suggestions and classifications over `world`."""
    router = APIRouter()

    # -- Treeherder -----------------------------------------------------------------------

    def check_repo(repo: str) -> None:
        if repo != world.scenario.repository:
            raise_th(404, f"No project with name {repo}")

    @router.get("/api/failureclassification/")
    async def failure_classifications() -> list[dict[str, Any]]:
        return th.FAILURE_CLASSIFICATIONS

    @router.get("/api/project/{repo}/push/")
    async def pushes(repo: str, request: Request) -> dict[str, Any]:
        check_repo(repo)
        q = request.query_params
        with world.lock:
            found = list(reversed(world.pushes))
            if "revision" in q:
                found = [p for p in found if p.revision.startswith(q["revision"])]
            for key, test in (
                ("id__lt", lambda p, v: p.push_id < v),
                ("id__lte", lambda p, v: p.push_id <= v),
                ("id__gt", lambda p, v: p.push_id > v),
                ("id__gte", lambda p, v: p.push_id >= v),
                ("push_timestamp__gte", lambda p, v: th.push_dict(world, p)["push_timestamp"] >= v),
                ("push_timestamp__lte", lambda p, v: th.push_dict(world, p)["push_timestamp"] <= v),
            ):
                if key in q:
                    value = _int_param(q[key], key)
                    found = [p for p in found if test(p, value)]
            if "fromchange" in q or "tochange" in q:
                found = _change_range(world, found, q.get("fromchange"), q.get("tochange"))
            count = _int_param(q.get("count", "10"), "count")
            results = [th.push_dict(world, p) for p in found[:count]]
        return {
            "meta": {"count": len(results), "repository": repo, "filter_params": dict(q)},
            "results": results,
        }

    @router.get("/api/jobs/")
    async def jobs_list(request: Request) -> dict[str, Any]:
        q = request.query_params
        page_size = min(_int_param(q.get("count", "2000"), "count"), 2000)
        page = _int_param(q.get("page", "1"), "page")
        with world.lock:
            if "task_id" in q:
                jobs = list(world.jobs_by_task.get(q["task_id"], []))
            elif "push_id" in q:
                push_id = _int_param(q["push_id"], "push_id")
                jobs = next((p.jobs for p in world.pushes if p.push_id == push_id), [])
            elif "push_id__in" in q:
                wanted = {_int_param(v, "push_id__in") for v in q["push_id__in"].split(",")}
                jobs = [j for p in world.pushes if p.push_id in wanted for j in p.jobs]
            else:
                jobs = sorted(world.jobs.values(), key=lambda j: j.job_id)
            if "retry_id" in q:
                jobs = [j for j in jobs if j.run_id == _int_param(q["retry_id"], "retry_id")]
            jobs = sorted(jobs, key=lambda j: j.job_id)
            chunk = jobs[(page - 1) * page_size : page * page_size]
            rows = [th.job_row(world, j) for j in chunk]
        base = f"{root_url(request)}/api/jobs/"
        more = page * page_size < len(jobs)
        return {
            "count": len(jobs),
            "next": _page_url(base, q, page + 1) if more else None,
            "previous": _page_url(base, q, page - 1) if page > 1 else None,
            "results": rows,
            "job_property_names": th.JOB_PROPERTY_NAMES,
        }

    @router.get("/api/project/{repo}/jobs/")
    async def project_jobs(repo: str, request: Request) -> Any:
        check_repo(repo)
        q = request.query_params
        offset = _int_param(q.get("offset", "0"), "offset")
        count = _int_param(q.get("count", "10"), "count")
        if count > 2000:
            detail = "Specified count exceeds API MAX_JOBS_COUNT value: 2000"
            return JSONResponse({"detail": detail}, status_code=400)
        filters = {k: v for k, v in q.items() if k not in ("offset", "count", "return_type")}
        with world.lock:
            jobs: list[Any] = sorted(world.jobs.values(), key=lambda j: j.job_id)
            push_id = filters.pop("push_id", None) or filters.pop("result_set_id", None)
            if push_id is not None:
                wanted = _int_param(push_id, "push_id")
                found = next((p.jobs for p in world.pushes if p.push_id == wanted), [])
                jobs = sorted(found, key=lambda j: j.job_id)
            dicts = [th.job_dict(world, j) for j in jobs]
            for key, value in filters.items():
                dicts = [d for d in dicts if key in d and str(d[key]) == value]
            results = dicts[offset : offset + count]
        return {"results": results, "meta": {"repository": repo, "offset": offset, "count": count}}

    def get_job(job_id: int) -> Any:
        job = world.jobs.get(job_id)
        if job is None:
            raise_th(404, f"No job with id: {job_id}")
        return job

    @router.get("/api/project/{repo}/jobs/{job_id}/")
    async def job_detail(repo: str, job_id: int, request: Request) -> dict[str, Any]:
        check_repo(repo)
        with world.lock:
            job = get_job(job_id)
            out = th.job_dict(world, job)
            out["resource_uri"] = f"/api/project/{repo}/jobs/{job_id}/"
            out["taskcluster_metadata"] = {"task_id": out["task_id"], "retry_id": out["retry_id"]}
            out["logs"] = [
                {"name": log["name"], "url": log["url"]}
                for log in th.log_urls(world, root_url(request), job)
            ]
            return out

    @router.get("/api/project/{repo}/job-log-url/")
    async def job_log_url(repo: str, request: Request) -> list[dict[str, Any]]:
        check_repo(repo)
        ids = request.query_params.getlist("job_id")
        if not ids:
            raise_th(400, "job_id is required")
        with world.lock:
            out: list[dict[str, Any]] = []
            for value in ids:
                job = world.jobs.get(_int_param(value, "job_id"))
                if job is not None:
                    out.extend(th.log_urls(world, root_url(request), job))
            return out

    @router.get("/api/project/{repo}/jobs/{job_id}/bug_suggestions/")
    async def bug_suggestions(repo: str, job_id: int) -> list[dict[str, Any]]:
        check_repo(repo)
        with world.lock:
            return th.bug_suggestions(world, get_job(job_id))

    @router.get("/api/project/{repo}/note/")
    async def notes(repo: str, job_id: int) -> list[dict[str, Any]]:
        check_repo(repo)
        with world.lock:
            job = get_job(job_id)
            # 6 and 8 are set on the job alone, without a note.
            found = [(who, text, when, fc) for who, text, when, fc in job.api_notes]
            if job.note is not None:
                who, text, when = job.note
                found.append((who, text, when, job.classification))
            return [
                {
                    "id": job.job_id * 100 + i,
                    "job_id": job.job_id,
                    "failure_classification_id": fc,
                    "created": world.time_of(when).strftime("%Y-%m-%dT%H:%M:%S.%f"),
                    "who": who,
                    "text": text,
                }
                for i, (who, text, when, fc) in enumerate(sorted(found, key=lambda n: n[2]))
            ]

    def writer(request: Request) -> str:
        """The user of the request's bearer token (NoteViewSet needs a logged-in user)."""
        header = request.headers.get("authorization", "")
        user = TREEHERDER_USERS.get(header.removeprefix("Bearer ").strip())
        if user is None:
            raise_th(403, "Authentication credentials were not provided.")
        return user  # type: ignore[return-value]

    async def body_of(request: Request, *fields: str) -> dict[str, int]:
        try:
            data = await request.json()
            return {name: int(data[name]) for name in fields}
        except (ValueError, KeyError, TypeError):
            raise_th(400, f"{', '.join(fields)} are required integers")
            raise

    @router.post("/api/project/{repo}/note/")
    async def add_note(repo: str, request: Request) -> dict[str, Any]:
        check_repo(repo)
        who = writer(request)
        data = await body_of(request, "job_id", "failure_classification_id")
        text = str((await request.json()).get("text", ""))[:4000]
        if data["failure_classification_id"] not in {c["id"] for c in th.FAILURE_CLASSIFICATIONS}:
            raise_th(400, "unknown failure_classification_id")
        with world.lock:
            job = get_job(data["job_id"])
            job.api_notes.append((who, text, world.minutes, data["failure_classification_id"]))
            job.classification = data["failure_classification_id"]
            job.classified_by = "api"
            job.last_modified = world.minutes
        return {"message": f"note stored for job {data['job_id']}"}

    @router.get("/api/project/{repo}/bug-job-map/")
    async def bug_job_maps(repo: str, request: Request) -> list[dict[str, Any]]:
        check_repo(repo)
        ids = [_int_param(v, "job_id") for v in request.query_params.getlist("job_id")]
        with world.lock:
            return [
                {"job_id": j, "bug_id": bug, "type": "annotation"}
                for j in ids
                if j in world.jobs
                for bug in world.jobs[j].bugs
            ]

    @router.post("/api/project/{repo}/bug-job-map/")
    async def add_bug_job_map(repo: str, request: Request) -> dict[str, Any]:
        check_repo(repo)
        writer(request)
        data = await body_of(request, "job_id", "bug_id")
        with world.lock:
            job = get_job(data["job_id"])
            if data["bug_id"] in job.bugs:
                return {"message": "Bug job map skipped: mapping already exists"}
            job.bugs.append(data["bug_id"])
        return {"message": "Bug job map saved"}

    return router


def raise_th(status: int, detail: str) -> Any:
    """Fail a Treeherder request the way Django REST framework answers."""
    raise HTTPException(status_code=status, detail=detail)


def _page_url(base: str, query: Any, page: int) -> str:
    from urllib.parse import urlencode

    params = {k: v for k, v in query.items() if k != "page"}
    params["page"] = str(page)
    return f"{base}?{urlencode(params)}"


def _int_param(value: str, name: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise_th(400, f"{name} must be an integer")
        raise


def _change_range(
    world: World, found: list[Any], fromchange: str | None, tochange: str | None
) -> list[Any]:
    ordered = sorted(found, key=lambda p: p.index)
    low = next((p.index for p in ordered if fromchange and p.revision.startswith(fromchange)), 0)
    high = next(
        (p.index for p in ordered if tochange and p.revision.startswith(tochange)),
        len(world.pushes),
    )
    return [p for p in found if low <= p.index <= high]

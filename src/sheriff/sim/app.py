"""The HTTP face of the simulator: Taskcluster and Treeherder paths under one root URL."""

from __future__ import annotations

import base64
import binascii
import json
from collections import Counter
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from sheriff.sim import tasks as taskdefs
from sheriff.sim import treeherder as th
from sheriff.sim.actions import HookNotFound, HookPayloadError, trigger_hook
from sheriff.sim.artifacts import artifacts, render
from sheriff.sim.auth import AuthConfig, AuthFailed, satisfies, verify
from sheriff.sim.entities import Task
from sheriff.sim.world import World

MAX_LIST_LIMIT = 1000
JSON = "application/json; charset=utf-8"


def _service(path: str) -> str:
    for prefix, name in (
        ("/api/queue/", "queue"),
        ("/api/index/", "index"),
        ("/api/hooks/", "hooks"),
        ("/api/auth/", "auth"),
        ("/__sim__/artifacts/", "artifacts"),
        ("/__sim__/", "admin"),
        ("/api/", "treeherder"),
    ):
        if path.startswith(prefix):
            return name
    return "other"


TASKCLUSTER_SERVICES = ("queue", "index", "hooks", "auth", "artifacts")


class TaskclusterError(Exception):
    """An error answered in Taskcluster's body shape (code, message, requestInfo)."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def create_app(world: World, auth: AuthConfig | None = None) -> FastAPI:
    """The simulator's ASGI app over `world`."""
    auth = auth or AuthConfig.default([world.scenario.repository])
    app = FastAPI(title="sheriff CI simulator", docs_url=None, redoc_url=None, openapi_url=None)
    counters: Counter[str] = Counter()
    app.state.world = world
    app.state.auth = auth
    app.state.counters = counters

    @app.middleware("http")
    async def count_requests(request: Request, call_next: Any) -> Any:
        counters[_service(request.url.path)] += 1
        return await call_next(request)

    @app.exception_handler(TaskclusterError)
    async def taskcluster_error(request: Request, exc: TaskclusterError) -> JSONResponse:
        body = {
            "code": exc.code,
            "message": exc.message,
            "requestInfo": {
                "method": request.method,
                "params": dict(request.path_params),
                "payload": {},
                "time": world.iso(world.minutes),
            },
        }
        return JSONResponse(body, status_code=exc.status)

    def raw(body: str | bytes, status: int = 200) -> Response:
        return Response(body, status_code=status, media_type=JSON)

    def root_url(request: Request) -> str:
        return str(request.base_url).rstrip("/")

    async def caller_scopes(request: Request) -> tuple[str | None, list[str]]:
        content = await request.body()
        url = f"{request.url.scheme}://{request.headers.get('host', '')}"
        url += request.scope.get("raw_path", b"").decode() or request.url.path
        if request.url.query:
            url += "?" + request.url.query
        try:
            return verify(
                auth,
                request.headers.get("authorization"),
                url,
                request.method,
                content,
                request.headers.get("content-type", ""),
            )
        except AuthFailed as exc:
            raise TaskclusterError(401, "AuthenticationFailed", str(exc)) from None

    async def require(request: Request, scope: str) -> None:
        client_id, scopes = await caller_scopes(request)
        if not satisfies(scopes, scope):
            who = f"Client ID {client_id}" if client_id else "An unauthenticated request"
            message = f"{who} does not have sufficient scopes. You are missing the scope {scope}"
            raise TaskclusterError(403, "InsufficientScopes", message)

    def get_task(task_id: str) -> Task:
        task = world.tasks.get(task_id)
        if task is None:
            raise TaskclusterError(
                404, "ResourceNotFound", f"`{task_id}` does not correspond to a task that exists."
            )
        return task

    # -- Queue ----------------------------------------------------------------------------

    @app.get("/api/queue/v1/ping")
    async def ping() -> dict[str, Any]:
        return {"alive": True, "uptime": world.minutes * 60}

    @app.get("/api/queue/v1/task/{task_id}")
    async def queue_task(task_id: str, request: Request) -> Response:
        await caller_scopes(request)
        with world.lock:
            return raw(taskdefs.definition_json(world, get_task(task_id)))

    @app.get("/api/queue/v1/task/{task_id}/status")
    async def queue_status(task_id: str, request: Request) -> Response:
        await caller_scopes(request)
        with world.lock:
            return raw('{"status":' + taskdefs.status_json(world, get_task(task_id)) + "}")

    page_cache: dict[tuple[str, int, int], tuple[int, bytes]] = {}

    @app.get("/api/queue/v1/task-group/{group_id}/list")
    async def list_task_group(
        group_id: str, request: Request, continuationToken: str | None = None, limit: int = 1000
    ) -> Response:
        await caller_scopes(request)
        limit = max(1, min(limit, MAX_LIST_LIMIT))
        offset = _decode_token(continuationToken) if continuationToken else 0
        with world.lock:
            members = world.groups.get(group_id)
            if members is None:
                message = f"No task-group with taskGroupId: `{group_id}`"
                raise TaskclusterError(404, "ResourceNotFound", message)
            version = world.group_versions.get(group_id, 0)
            key = (group_id, offset, limit)
            cached = page_cache.get(key)
            if cached is None or cached[0] != version:
                # Pages of resolved groups are asked for again and again: keep them until
                # a task of the group changes. (Uncompressed: on loopback that is faster.)
                body = _task_group_page(world, group_id, members, offset, limit).encode()
                cached = page_cache[key] = (version, body)
        return raw(cached[1])

    def _artifact_list(task: Task, run_id: int | None) -> dict[str, Any]:
        if not task.runs:
            raise TaskclusterError(404, "ResourceNotFound", f"Task {task.task_id} has no runs")
        run = task.runs[-1 if run_id is None else run_id]
        expires = taskdefs.status(world, task)["expires"]
        items = [
            {"storageType": "s3", "name": a.name, "expires": expires, "contentType": a.content_type}
            for a in artifacts(world, task, run)
        ]
        return {"artifacts": items}

    @app.get("/api/queue/v1/task/{task_id}/artifacts")
    async def list_latest_artifacts(task_id: str, request: Request) -> dict[str, Any]:
        await caller_scopes(request)
        with world.lock:
            return _artifact_list(get_task(task_id), None)

    @app.get("/api/queue/v1/task/{task_id}/runs/{run_id}/artifacts")
    async def list_artifacts(task_id: str, run_id: int, request: Request) -> dict[str, Any]:
        await caller_scopes(request)
        with world.lock:
            task = get_task(task_id)
            if not 0 <= run_id < len(task.runs):
                raise TaskclusterError(
                    404, "ResourceNotFound", f"Task {task_id} has no run {run_id}"
                )
            return _artifact_list(task, run_id)

    def _artifact_redirect(request: Request, task: Task, run_id: int, name: str) -> Response:
        run = task.runs[run_id]
        if name not in {a.name for a in artifacts(world, task, run)}:
            raise TaskclusterError(404, "ResourceNotFound", f"Artifact not found: {name}")
        location = f"{root_url(request)}/__sim__/artifacts/{task.task_id}/{run_id}/{name}"
        # Like the real Queue: a 303 whose JSON body names the same URL, for API clients.
        body = json.dumps({"storageType": "s3", "url": location})
        headers = {"location": location, "x-taskcluster-artifact-storage-type": "s3"}
        return Response(body, status_code=303, media_type=JSON, headers=headers)

    @app.get("/api/queue/v1/task/{task_id}/artifacts/{name:path}")
    async def get_latest_artifact(task_id: str, name: str, request: Request) -> Response:
        await caller_scopes(request)
        with world.lock:
            task = get_task(task_id)
            if not task.runs:
                raise TaskclusterError(404, "ResourceNotFound", f"Task {task_id} has no runs")
            return _artifact_redirect(request, task, len(task.runs) - 1, name)

    @app.get("/api/queue/v1/task/{task_id}/runs/{run_id}/artifacts/{name:path}")
    async def get_artifact(task_id: str, run_id: int, name: str, request: Request) -> Response:
        await caller_scopes(request)
        with world.lock:
            task = get_task(task_id)
            if not 0 <= run_id < len(task.runs):
                raise TaskclusterError(
                    404, "ResourceNotFound", f"Task {task_id} has no run {run_id}"
                )
            return _artifact_redirect(request, task, run_id, name)

    @app.get("/__sim__/artifacts/{task_id}/{run_id}/{name:path}")
    async def artifact_blob(task_id: str, run_id: int, name: str) -> Response:
        with world.lock:
            task = world.tasks.get(task_id)
            body = None
            if task is not None and 0 <= run_id < len(task.runs):
                body = render(world, task, task.runs[run_id], name)
        if body is None:
            return Response("NoSuchKey", status_code=404, media_type="text/plain")
        if name.endswith(".gz"):
            media = "application/gzip"
        elif name.endswith(".json"):
            media = "application/json"
        else:
            media = "text/plain; charset=utf-8"
        return Response(body, media_type=media)

    @app.post("/api/queue/v1/task/{task_id}/cancel")
    async def cancel_task(task_id: str, request: Request) -> Response:
        with world.lock:
            task = get_task(task_id)
            group = task.push.decision_task_id
        await require(request, f"queue:cancel-task:{taskdefs.SCHEDULER_ID}/{group}/{task_id}")
        with world.lock:
            world.cancel(task_id)
            return raw('{"status":' + taskdefs.status_json(world, task) + "}")

    # -- Index ----------------------------------------------------------------------------

    @app.get("/api/index/v1/task/{namespace}")
    async def find_task(namespace: str, request: Request) -> dict[str, Any]:
        await caller_scopes(request)
        with world.lock:
            task_id = world.index.get(namespace)
            if task_id is None:
                raise TaskclusterError(
                    404, "ResourceNotFound", f"Indexed task not found: {namespace}"
                )
            task = world.tasks[task_id]
            return {
                "namespace": namespace,
                "taskId": task_id,
                "rank": int(world.time_of(task.created).timestamp()),
                "data": {},
                "expires": taskdefs.status(world, task)["expires"],
            }

    # -- Hooks and Auth -------------------------------------------------------------------

    @app.post("/api/hooks/v1/hooks/{hook_group}/{hook_id:path}/trigger")
    async def hooks_trigger(hook_group: str, hook_id: str, request: Request) -> Response:
        await require(request, f"hooks:trigger-hook:{hook_group}/{hook_id}")
        try:
            payload = json.loads(await request.body() or b"{}")
        except ValueError:
            raise TaskclusterError(400, "MalformedPayload", "payload is not JSON") from None
        try:
            task = trigger_hook(world, hook_group, hook_id, payload)
        except HookNotFound as exc:
            raise TaskclusterError(404, "ResourceNotFound", str(exc)) from None
        except HookPayloadError as exc:
            raise TaskclusterError(400, "InputError", str(exc)) from None
        # Since Taskcluster issue 4437 the hooks service answers with the task id only.
        return raw(json.dumps({"taskId": task.task_id, "status": {"taskId": task.task_id}}))

    @app.get("/api/auth/v1/scopes/current")
    async def current_scopes(request: Request) -> dict[str, Any]:
        _, scopes = await caller_scopes(request)
        return {"scopes": scopes}

    @app.post("/api/auth/v1/scopes/expand")
    async def expand_scopes(request: Request) -> dict[str, Any]:
        await caller_scopes(request)
        try:
            body = json.loads(await request.body() or b"{}")
            scopes = body["scopes"]
            if not isinstance(scopes, list) or not all(isinstance(s, str) for s in scopes):
                raise TypeError
        except (ValueError, KeyError, TypeError):
            raise TaskclusterError(
                400, "InputValidationError", "body must be {scopes: [string]}"
            ) from None
        return {"scopes": auth.expand(scopes)}

    # -- Treeherder -----------------------------------------------------------------------

    def check_repo(repo: str) -> None:
        if repo != world.scenario.repository:
            raise_th(404, f"No project with name {repo}")

    @app.get("/api/failureclassification/")
    async def failure_classifications() -> list[dict[str, Any]]:
        return th.FAILURE_CLASSIFICATIONS

    @app.get("/api/project/{repo}/push/")
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

    @app.get("/api/jobs/")
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

    @app.get("/api/project/{repo}/jobs/")
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

    @app.get("/api/project/{repo}/jobs/{job_id}/")
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

    @app.get("/api/project/{repo}/job-log-url/")
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

    @app.get("/api/project/{repo}/jobs/{job_id}/bug_suggestions/")
    async def bug_suggestions(repo: str, job_id: int) -> list[dict[str, Any]]:
        check_repo(repo)
        with world.lock:
            return th.bug_suggestions(world, get_job(job_id))

    @app.get("/api/project/{repo}/note/")
    async def notes(repo: str, job_id: int) -> list[dict[str, Any]]:
        check_repo(repo)
        with world.lock:
            job = get_job(job_id)
            if job.classification == 1:
                return []
            return [
                {
                    "id": job.job_id,
                    "job_id": job.job_id,
                    "failure_classification_id": job.classification,
                    "created": world.time_of(job.ingested).strftime("%Y-%m-%dT%H:%M:%S.%f"),
                    "who": "sheriff@mozilla.com",
                    "text": "",
                }
            ]

    # -- admin ----------------------------------------------------------------------------

    @app.post("/__sim__/advance")
    async def advance(minutes: float) -> dict[str, Any]:
        if minutes < 0:
            return JSONResponse({"detail": "minutes must be >= 0"}, status_code=400)  # type: ignore[return-value]
        world.advance(minutes)
        return {"now": world.iso(world.minutes), "finished": world.finished}

    @app.get("/__sim__/clock")
    async def clock() -> dict[str, Any]:
        return {
            "now": world.iso(world.minutes),
            "minutes": world.minutes,
            "finished": world.finished,
        }

    @app.get("/__sim__/truth")
    async def truth() -> dict[str, Any]:
        out = world.truth()
        out["action_tasks"] = world.action_counts()
        return out

    @app.get("/__sim__/stats")
    async def stats() -> dict[str, Any]:
        return stats_of(counters)

    return app


def _task_group_page(
    world: World, group_id: str, members: list[Task], offset: int, limit: int
) -> str:
    page = members[offset : offset + limit]
    parts = [
        '{"status":'
        + taskdefs.status_json(world, t)
        + ',"task":'
        + taskdefs.definition_json(world, t)
        + "}"
        for t in page
    ]
    body = '{"taskGroupId":' + json.dumps(group_id) + ',"tasks":[' + ",".join(parts) + "]"
    if offset + limit < len(members):
        body += ',"continuationToken":' + json.dumps(_encode_token(offset + limit))
    return body + "}"


def stats_of(counters: Counter[str]) -> dict[str, Any]:
    """Requests served per service, with Taskcluster's services summed."""
    services = dict(sorted(counters.items()))
    return {
        "requests": services,
        "taskcluster": sum(counters[s] for s in TASKCLUSTER_SERVICES),
        "treeherder": counters["treeherder"],
    }


def raise_th(status: int, detail: str) -> Any:
    """Fail a Treeherder request the way Django REST framework answers."""
    from fastapi import HTTPException

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


def _encode_token(offset: int) -> str:
    return base64.urlsafe_b64encode(f"offset:{offset}".encode()).decode().rstrip("=")


def _decode_token(token: str) -> int:
    try:
        text = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
        if not text.startswith("offset:"):
            raise ValueError
        return int(text[len("offset:") :])
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise TaskclusterError(
            400, "InvalidRequestArguments", "invalid continuationToken"
        ) from None

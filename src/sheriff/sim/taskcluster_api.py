"""Taskcluster's Queue, Index, Hooks and Auth paths, as the official client calls them."""

from __future__ import annotations

import base64
import binascii
import json
from collections import OrderedDict
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from sheriff.sim import tasks as taskdefs
from sheriff.sim.actions import HookNotFound, HookPayloadError, trigger_hook
from sheriff.sim.artifacts import artifacts, render
from sheriff.sim.auth import AuthConfig, AuthFailed, satisfies, verify
from sheriff.sim.entities import Task
from sheriff.sim.world import World

MAX_LIST_LIMIT = 1000
PAGE_CACHE_SIZE = 64
JSON = "application/json; charset=utf-8"


class TaskclusterError(Exception):
    """An error answered in Taskcluster's body shape (code, message, requestInfo)."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def error_response(world: World, request: Request, exc: TaskclusterError) -> JSONResponse:
    """Taskcluster's error body for `exc`."""
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
    """A response whose JSON body is already rendered."""
    return Response(body, status_code=status, media_type=JSON)


def root_url(request: Request) -> str:
    return str(request.base_url).rstrip("/")


def taskcluster_router(world: World, auth: AuthConfig) -> APIRouter:
    """Queue, Index, Hooks and Auth over `world`, with Hawk authentication."""
    router = APIRouter()

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

    async def require(request: Request, scope: str) -> str | None:
        """The caller's client id, once it holds `scope` (403 otherwise)."""
        client_id, scopes = await caller_scopes(request)
        if not satisfies(scopes, scope):
            who = f"Client ID {client_id}" if client_id else "An unauthenticated request"
            message = f"{who} does not have sufficient scopes. You are missing the scope {scope}"
            raise TaskclusterError(403, "InsufficientScopes", message)
        return client_id

    def get_task(task_id: str) -> Task:
        task = world.tasks.get(task_id)
        if task is None:
            raise TaskclusterError(
                404, "ResourceNotFound", f"`{task_id}` does not correspond to a task that exists."
            )
        return task

    # -- Queue ----------------------------------------------------------------------------

    @router.get("/api/queue/v1/ping")
    async def ping() -> dict[str, Any]:
        return {"alive": True, "uptime": world.minutes * 60}

    @router.get("/api/queue/v1/task/{task_id}")
    async def queue_task(task_id: str, request: Request) -> Response:
        await caller_scopes(request)
        with world.lock:
            return raw(taskdefs.definition_json(world, get_task(task_id)))

    @router.get("/api/queue/v1/task/{task_id}/status")
    async def queue_status(task_id: str, request: Request) -> Response:
        await caller_scopes(request)
        with world.lock:
            return raw('{"status":' + taskdefs.status_json(world, get_task(task_id)) + "}")

    # Pages of resolved groups are asked for again and again: keep the latest few until a
    # task of their group changes. (Uncompressed: on loopback that is faster than gzip.)
    page_cache: OrderedDict[tuple[str, int, int], tuple[int, bytes]] = OrderedDict()

    @router.get("/api/queue/v1/task-group/{group_id}/list")
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
                body = _task_group_page(world, group_id, members, offset, limit).encode()
                cached = page_cache[key] = (version, body)
                if len(page_cache) > PAGE_CACHE_SIZE:
                    page_cache.popitem(last=False)
            page_cache.move_to_end(key)
        return raw(cached[1])

    def _artifact_list(
        task: Task, run_id: int | None, continuation: str | None, limit: int
    ) -> dict[str, Any]:
        if not task.runs:
            raise TaskclusterError(404, "ResourceNotFound", f"Task {task.task_id} has no runs")
        run = task.runs[-1 if run_id is None else run_id]
        expires = taskdefs.status(world, task)["expires"]
        found = artifacts(world, task, run)
        # Pages of up to 1,000 (`limit` fewer), as the Queue's paginateResults.
        offset = _decode_token(continuation) if continuation else 0
        limit = max(1, min(limit, MAX_LIST_LIMIT))
        items = [
            {
                "storageType": a.storage_type,
                "name": a.name,
                "expires": expires,
                "contentType": a.content_type,
            }
            for a in found[offset : offset + limit]
        ]
        out: dict[str, Any] = {"artifacts": items}
        if offset + limit < len(found):
            out["continuationToken"] = _encode_token(offset + limit)
        return out

    @router.get("/api/queue/v1/task/{task_id}/artifacts")
    async def list_latest_artifacts(
        task_id: str, request: Request, continuationToken: str | None = None, limit: int = 1000
    ) -> dict[str, Any]:
        await caller_scopes(request)
        with world.lock:
            return _artifact_list(get_task(task_id), None, continuationToken, limit)

    @router.get("/api/queue/v1/task/{task_id}/runs/{run_id}/artifacts")
    async def list_artifacts(
        task_id: str,
        run_id: int,
        request: Request,
        continuationToken: str | None = None,
        limit: int = 1000,
    ) -> dict[str, Any]:
        await caller_scopes(request)
        with world.lock:
            task = get_task(task_id)
            if not 0 <= run_id < len(task.runs):
                raise TaskclusterError(
                    404, "ResourceNotFound", f"Task {task_id} has no run {run_id}"
                )
            return _artifact_list(task, run_id, continuationToken, limit)

    def _artifact_redirect(request: Request, task: Task, run_id: int, name: str) -> Response:
        run = task.runs[run_id]
        found = next((a for a in artifacts(world, task, run) if a.name == name), None)
        if found is None:
            raise TaskclusterError(404, "ResourceNotFound", f"Artifact not found: {name}")
        if found.storage_type == "error":
            # services/queue/src/artifacts.js: an error artifact answers 424 with its reason.
            body = json.dumps({"reason": found.reason, "message": found.message})
            headers = {"x-taskcluster-artifact-storage-type": "error"}
            return Response(body, status_code=424, media_type=JSON, headers=headers)
        location = f"{root_url(request)}/__sim__/artifacts/{task.task_id}/{run_id}/{name}"
        # Like the real Queue: a 303 whose JSON body names the same URL, for API clients.
        body = json.dumps({"storageType": "s3", "url": location})
        headers = {"location": location, "x-taskcluster-artifact-storage-type": "s3"}
        return Response(body, status_code=303, media_type=JSON, headers=headers)

    @router.get("/api/queue/v1/task/{task_id}/artifacts/{name:path}")
    async def get_latest_artifact(task_id: str, name: str, request: Request) -> Response:
        await caller_scopes(request)
        with world.lock:
            task = get_task(task_id)
            if not task.runs:
                raise TaskclusterError(404, "ResourceNotFound", f"Task {task_id} has no runs")
            return _artifact_redirect(request, task, len(task.runs) - 1, name)

    @router.get("/api/queue/v1/task/{task_id}/runs/{run_id}/artifacts/{name:path}")
    async def get_artifact(task_id: str, run_id: int, name: str, request: Request) -> Response:
        await caller_scopes(request)
        with world.lock:
            task = get_task(task_id)
            if not 0 <= run_id < len(task.runs):
                raise TaskclusterError(
                    404, "ResourceNotFound", f"Task {task_id} has no run {run_id}"
                )
            return _artifact_redirect(request, task, run_id, name)

    @router.get("/__sim__/artifacts/{task_id}/{run_id}/{name:path}")
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

    @router.post("/api/queue/v1/task/{task_id}/cancel")
    async def cancel_task(task_id: str, request: Request) -> Response:
        with world.lock:
            task = get_task(task_id)
            group = task.push.decision_task_id
        await require(request, f"queue:cancel-task:{taskdefs.SCHEDULER_ID}/{group}/{task_id}")
        with world.lock:
            world.cancel(task_id)
            return raw('{"status":' + taskdefs.status_json(world, task) + "}")

    # -- Index ----------------------------------------------------------------------------

    @router.get("/api/index/v1/task/{namespace}")
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

    @router.post("/api/hooks/v1/hooks/{hook_group}/{hook_id:path}/trigger")
    async def hooks_trigger(hook_group: str, hook_id: str, request: Request) -> Response:
        client_id = await require(request, f"hooks:trigger-hook:{hook_group}/{hook_id}")
        try:
            payload = json.loads(await request.body() or b"{}")
        except ValueError:
            raise TaskclusterError(400, "MalformedPayload", "payload is not JSON") from None
        try:
            task = trigger_hook(world, hook_group, hook_id, payload, client_id)
        except HookNotFound as exc:
            raise TaskclusterError(404, "ResourceNotFound", str(exc)) from None
        except HookPayloadError as exc:
            raise TaskclusterError(400, "InputError", str(exc)) from None
        # Since Taskcluster issue 4437 the hooks service answers with the task id only.
        return raw(json.dumps({"taskId": task.task_id, "status": {"taskId": task.task_id}}))

    @router.get("/api/auth/v1/scopes/current")
    async def current_scopes(request: Request) -> dict[str, Any]:
        _, scopes = await caller_scopes(request)
        return {"scopes": scopes}

    @router.post("/api/auth/v1/scopes/expand")
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

    return router


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
    # The group's own fields (queue api.js listTaskGroup): its scheduler, the latest expiry
    # of its tasks; `sealed` only once sealed, which Gecko's groups never are.
    # (Test tasks expire after 28 days, long before the decision and action tasks.)
    expires = max(taskdefs.status_expires(world, t) for t in members if t.kind != "test")
    head = {"taskGroupId": group_id, "schedulerId": taskdefs.SCHEDULER_ID, "expires": expires}
    body = json.dumps(head, separators=(",", ":"))[:-1] + ',"tasks":[' + ",".join(parts) + "]"
    if offset + limit < len(members):
        body += ',"continuationToken":' + json.dumps(_encode_token(offset + limit))
    return body + "}"


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

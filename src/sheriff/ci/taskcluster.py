"""Taskcluster clients: the official `taskcluster` API classes on a transport with limits.

The official synchronous client sends requests without a timeout, retries only 5xx
answers and ignores Retry-After. Sheriff keeps the client's API surface (method names,
routes, argument and pagination handling, Hawk signing) and replaces the one method that
does the HTTP: every request has a timeout; a read is retried on connection errors, 5xx
and 429 as `sheriff.ci.retry` says (full jitter, Retry-After, a budget per call); a write
is sent once; a failure becomes a `TaskclusterError` whose message is one line naming the
call.

    clients = taskcluster_clients(root_url, client_id=..., access_token=...)
    task = call(clients.queue.task, task_id)
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

import mohawk
import orjson
import requests
import taskcluster
from taskcluster import utils as tc_utils

from sheriff.ci.retry import (
    RETRYABLE_STATUS,
    RetryableAnswer,
    RetryPolicy,
    policy_from_settings,
    retry_after_of,
)
from sheriff.errors import ServiceError

log = logging.getLogger(__name__)

T = TypeVar("T")


class TaskclusterError(ServiceError):
    """A Taskcluster call failed; `status` is the HTTP status (None: no answer)."""

    def __init__(self, message: str, *, status: int | None = None, url: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.url = url


class TaskclusterNotFound(TaskclusterError):
    """404: the task, artifact, index path or hook does not exist."""


class TaskclusterAuthError(TaskclusterError):
    """401/403: missing or insufficient credentials or scopes."""


class TaskclusterUnavailable(TaskclusterError):
    """No usable answer after every retry: connection errors, timeouts, 5xx, 429."""


class ArtifactNotUploaded(TaskclusterError):
    """424: an `error` artifact, which the worker could not upload (its reason is in the
    message: file-missing-on-worker, invalid-resource-on-worker, too-large-file-on-worker)."""


class _LimitedTransport:
    """Mixin replacing the official client's HTTP method; see the module docstring."""

    options: dict[str, Any]
    transport: RetryPolicy
    session: requests.Session
    # POST routes that only read (Auth `expandScopes`): safe to retry like a GET.
    READING_POSTS: frozenset[str] = frozenset({"scopes/expand"})

    def _makeHttpRequest(self, method: str, route: str, payload: Any) -> Any:
        url = self._constructUrl(route)  # type: ignore[attr-defined]
        body = tc_utils.dumpJson(payload) if payload is not None else None
        reads = method.upper() in ("GET", "HEAD") or route.strip("/") in self.READING_POSTS
        policy = self.transport if reads else self.transport.once()
        return _send(self, policy, method, url, body)


def _auth_headers(client: Any, method: str, url: str, body: str | None) -> dict[str, str]:
    headers: dict[str, str] = {}
    credentials = client.options.get("credentials") or {}
    if credentials.get("clientId") and credentials.get("accessToken"):
        ext = client.makeHawkExt()
        sender = mohawk.Sender(
            credentials={
                "id": credentials["clientId"],
                "key": credentials["accessToken"],
                "algorithm": "sha256",
            },
            ext=ext or {},
            url=url,
            content=body or "",
            content_type="application/json" if body else "",
            method=method.upper(),
        )
        headers["Authorization"] = sender.request_header
    if body:
        headers["Content-Type"] = "application/json"
    return headers


def _checked(what: str, url: str, response: requests.Response) -> requests.Response:
    """The answer, or the error it is: retryable (5xx, 429) or final (other 4xx)."""
    status = response.status_code
    if status in RETRYABLE_STATUS:
        error = _http_error(what, url, response)
        raise RetryableAnswer(error, retry_after=retry_after_of(status, response.headers))
    if status >= 400:
        raise _http_error(what, url, response)
    return response


def _unreachable(what: str, url: str, exc: Exception) -> RetryableAnswer:
    error = TaskclusterUnavailable(
        f"Taskcluster unreachable: {what}: {exc.__class__.__name__}", url=url
    )
    return RetryableAnswer(error)


def _send(client: Any, policy: RetryPolicy, method: str, url: str, body: str | None) -> Any:
    what = f"{method.upper()} {url}"

    def attempt(timeout: float) -> requests.Response:
        try:
            # Hawk headers carry a timestamp and nonce: sign every attempt afresh.
            response = client.session.request(
                method.upper(),
                url,
                data=body,
                headers=_auth_headers(client, method, url, body),
                timeout=timeout,
                allow_redirects=False,
            )
        except requests.RequestException as exc:
            raise _unreachable(what, url, exc) from exc
        return _checked(what, url, response)

    response = policy.call(attempt, what=what)
    status = response.status_code
    if status == 204 or not response.content:
        return None
    if 300 <= status < 400:
        return {"url": response.headers.get("Location")}
    try:
        # orjson: task-group pages are large, and decoding them dominated a triage pass.
        return orjson.loads(response.content)
    except orjson.JSONDecodeError as exc:
        raise TaskclusterError(f"{what}: answer is not JSON", status=status, url=url) from exc


def _http_error(what: str, url: str, response: requests.Response) -> TaskclusterError:
    status = response.status_code
    message = ""
    try:
        data = response.json()
        if isinstance(data, dict):
            message = str(data.get("message") or data.get("code") or data.get("reason") or "")
    except ValueError:
        message = response.text[:200]
    # Taskcluster's messages are multi-line markdown; the first line says what went wrong.
    first = next((line.strip() for line in message.splitlines() if line.strip()), "")
    text = f"{what}: HTTP {status}" + (f": {first}" if first else "")
    if status == 404:
        return TaskclusterNotFound(text, status=status, url=url)
    if status == 424:
        return ArtifactNotUploaded(text, status=status, url=url)
    if status in (401, 403):
        return TaskclusterAuthError(text, status=status, url=url)
    if status in RETRYABLE_STATUS:
        return TaskclusterUnavailable(text, status=status, url=url)
    return TaskclusterError(text, status=status, url=url)


def _limited(cls: type[T]) -> type[T]:
    return type(f"Limited{cls.__name__}", (_LimitedTransport, cls), {})  # type: ignore[return-value]


_QUEUE, _INDEX, _HOOKS, _AUTH = (
    _limited(cls)
    for cls in (taskcluster.Queue, taskcluster.Index, taskcluster.Hooks, taskcluster.Auth)
)


@dataclass
class TaskclusterClients:
    """The four services sheriff talks to, sharing one HTTP session and one set of limits."""

    root_url: str
    queue: Any
    index: Any
    hooks: Any
    auth: Any
    has_credentials: bool
    transport: RetryPolicy = field(default_factory=RetryPolicy)
    # Hooks without retries: triggering a hook twice may create two action tasks.
    hooks_once: Any = None
    session: requests.Session = field(repr=False, default_factory=requests.Session)

    def artifact_url(self, task_id: str, name: str, run_id: int | None = None) -> str:
        """The URL of artifact `name` of a task's run `run_id` (None: its latest run);
        public artifacts need no signature."""
        if run_id is None:
            return self.queue.buildUrl("getLatestArtifact", task_id, name)
        return self.queue.buildUrl("getArtifact", task_id, str(run_id), name)

    def latest_artifact(self, task_id: str, name: str) -> bytes:
        """The bytes of a task's latest artifact, following the queue's redirect."""
        return self.artifact(task_id, None, name)

    def artifact(self, task_id: str, run_id: int | None, name: str) -> bytes:
        """The bytes of artifact `name` of run `run_id` (None: the latest run), following
        the queue's redirect. An `error` artifact raises ArtifactNotUploaded (424)."""
        url = self.artifact_url(task_id, name, run_id)
        run = "" if run_id is None else f" run {run_id}"
        what = f"artifact {name} of task {task_id}{run}"

        def attempt(timeout: float) -> bytes:
            try:
                response = self.session.get(url, timeout=timeout)
            except requests.RequestException as exc:
                raise _unreachable(f"fetching {what}", url, exc) from exc
            return _checked(what, url, response).content

        return self.transport.call(attempt, what=what)

    def close(self) -> None:
        self.session.close()


def taskcluster_clients(
    root_url: str,
    *,
    client_id: str | None = None,
    access_token: str | None = None,
    transport: RetryPolicy | None = None,
) -> TaskclusterClients:
    """Queue, Index, Hooks and Auth clients for `root_url`, signed when credentials are given."""
    if not root_url:
        raise TaskclusterError("no Taskcluster root URL: set TASKCLUSTER_ROOT_URL")
    transport = transport or RetryPolicy()
    options: dict[str, Any] = {"rootUrl": root_url.rstrip("/"), "maxRetries": 0}
    if client_id and access_token:
        options["credentials"] = {"clientId": client_id, "accessToken": access_token}
    session = requests.Session()
    made = []
    for cls in (_QUEUE, _INDEX, _HOOKS, _AUTH):
        client = cls(dict(options))
        client.transport = transport
        client.session = session
        made.append(client)
    queue, index, hooks, auth = made
    return TaskclusterClients(
        root_url=options["rootUrl"],
        queue=queue,
        index=index,
        hooks=hooks,
        auth=auth,
        has_credentials=bool(client_id and access_token),
        transport=transport,
        hooks_once=single_attempt(hooks),
        session=session,
    )


def clients_from_settings(settings: Any) -> TaskclusterClients:
    """Clients from `sheriff.config.Settings` (root URL, optional credentials, limits)."""
    return taskcluster_clients(
        settings.taskcluster_root_url,
        client_id=settings.taskcluster_client_id,
        access_token=settings.taskcluster_access_token,
        transport=policy_from_settings(settings),
    )


def paginate(method: Callable[..., dict[str, Any]], *args: Any, key: str) -> Iterator[Any]:
    """Every item of a paginated listing (`listTaskGroup`, `listLatestArtifacts`, …)."""
    query: dict[str, str] = {}
    while True:
        page = method(*args, query=query) if query else method(*args)
        yield from page.get(key, [])
        token = page.get("continuationToken")
        if not token:
            return
        query = {"continuationToken": token}


def single_attempt(client: Any) -> Any:
    """A copy of `client` that never retries: for calls that are unsafe to repeat blindly."""
    copy = type(client)(dict(client.options))
    copy.transport = client.transport.once()
    copy.session = client.session
    return copy

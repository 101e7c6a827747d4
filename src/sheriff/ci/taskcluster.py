"""Taskcluster clients: the official `taskcluster` API classes on a transport with limits.

The official synchronous client sends requests without a timeout and retries only 5xx
answers. Sheriff keeps the client's API surface (method names, routes, argument and
pagination handling, Hawk signing) and replaces the one method that does the HTTP: every
request has a timeout, is retried with backoff on connection errors, 5xx and 429, and a
failure becomes a `TaskclusterError` whose message is one line naming the call.

    clients = taskcluster_clients(root_url, client_id=..., access_token=...)
    task = call(clients.queue.task, task_id)
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

import mohawk
import orjson
import requests
import taskcluster
from taskcluster import utils as tc_utils

from sheriff.errors import ServiceError

log = logging.getLogger(__name__)

T = TypeVar("T")

RETRYABLE_STATUS = frozenset({429, 500, 502, 503, 504})


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


@dataclass(frozen=True)
class TransportOptions:
    """How patient to be with Taskcluster."""

    timeout_seconds: float = 30.0
    retries: int = 5
    backoff_seconds: float = 0.1  # first delay; doubles per attempt, capped at 30s


class _LimitedTransport:
    """Mixin replacing the official client's HTTP method; see the module docstring."""

    options: dict[str, Any]
    transport: TransportOptions
    session: requests.Session

    def _makeHttpRequest(self, method: str, route: str, payload: Any) -> Any:
        url = self._constructUrl(route)  # type: ignore[attr-defined]
        body = tc_utils.dumpJson(payload) if payload is not None else None
        return _send(self, method, url, body)


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


def _send(client: Any, method: str, url: str, body: str | None) -> Any:
    transport: TransportOptions = client.transport
    what = f"{method.upper()} {url}"
    for attempt in range(transport.retries + 1):
        if attempt:
            time.sleep(min(transport.backoff_seconds * 2 ** (attempt - 1), 30.0))
        try:
            # Hawk headers carry a timestamp and nonce: sign every attempt afresh.
            response = client.session.request(
                method.upper(),
                url,
                data=body,
                headers=_auth_headers(client, method, url, body),
                timeout=transport.timeout_seconds,
                allow_redirects=False,
            )
        except requests.RequestException as exc:
            if attempt < transport.retries:
                log.warning("retrying %s after %s", what, exc.__class__.__name__)
                continue
            raise TaskclusterUnavailable(
                f"Taskcluster unreachable: {what}: {exc.__class__.__name__}", url=url
            ) from exc
        status = response.status_code
        if status in RETRYABLE_STATUS and attempt < transport.retries:
            log.warning("retrying %s after HTTP %s", what, status)
            continue
        if status >= 400:
            raise _http_error(what, url, response)
        if status == 204 or not response.content:
            return None
        if 300 <= status < 400:
            return {"url": response.headers.get("Location")}
        try:
            # orjson: task-group pages are large, and decoding them dominated a triage pass.
            return orjson.loads(response.content)
        except orjson.JSONDecodeError as exc:
            raise TaskclusterError(f"{what}: answer is not JSON", status=status, url=url) from exc
    raise AssertionError("unreachable: the last attempt returns or raises")


def _http_error(what: str, url: str, response: requests.Response) -> TaskclusterError:
    status = response.status_code
    message = ""
    try:
        data = response.json()
        if isinstance(data, dict):
            message = str(data.get("message") or data.get("code") or "")
    except ValueError:
        message = response.text[:200]
    # Taskcluster's messages are multi-line markdown; the first line says what went wrong.
    first = next((line.strip() for line in message.splitlines() if line.strip()), "")
    text = f"{what}: HTTP {status}" + (f": {first}" if first else "")
    if status == 404:
        return TaskclusterNotFound(text, status=status, url=url)
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
    transport: TransportOptions = field(default_factory=TransportOptions)
    # Hooks without retries: triggering a hook twice may create two action tasks.
    hooks_once: Any = None
    session: requests.Session = field(repr=False, default_factory=requests.Session)

    def artifact_url(self, task_id: str, name: str) -> str:
        """The URL of a task's latest artifact `name` (public artifacts need no signature)."""
        return self.queue.buildUrl("getLatestArtifact", task_id, name)

    def latest_artifact(self, task_id: str, name: str) -> bytes:
        """The bytes of a task's latest artifact, following the queue's redirect."""
        url = self.artifact_url(task_id, name)
        transport = self.transport
        what = f"artifact {name} of task {task_id}"
        for attempt in range(transport.retries + 1):
            if attempt:
                time.sleep(min(transport.backoff_seconds * 2 ** (attempt - 1), 30.0))
            try:
                response = self.session.get(url, timeout=transport.timeout_seconds)
            except requests.RequestException as exc:
                if attempt < transport.retries:
                    continue
                raise TaskclusterUnavailable(
                    f"Taskcluster unreachable fetching {what}: {exc.__class__.__name__}", url=url
                ) from exc
            if response.status_code in RETRYABLE_STATUS and attempt < transport.retries:
                continue
            if response.status_code >= 400:
                raise _http_error(what, url, response)
            return response.content
        raise AssertionError("unreachable: the last attempt returns or raises")

    def close(self) -> None:
        self.session.close()


def taskcluster_clients(
    root_url: str,
    *,
    client_id: str | None = None,
    access_token: str | None = None,
    transport: TransportOptions | None = None,
) -> TaskclusterClients:
    """Queue, Index, Hooks and Auth clients for `root_url`, signed when credentials are given."""
    if not root_url:
        raise TaskclusterError("no Taskcluster root URL: set TASKCLUSTER_ROOT_URL")
    transport = transport or TransportOptions()
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
        transport=TransportOptions(
            timeout_seconds=settings.http_timeout_seconds, retries=settings.http_retries
        ),
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
    copy.transport = TransportOptions(
        timeout_seconds=client.transport.timeout_seconds,
        retries=0,
        backoff_seconds=client.transport.backoff_seconds,
    )
    copy.session = client.session
    return copy

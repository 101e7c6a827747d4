"""Treeherder's REST API, as sheriff reads it: pushes, jobs, log parse status, bug suggestions.

Every request has a timeout and is retried on connection errors, 5xx and 429 as
`sheriff.ci.retry` says (full jitter, Retry-After, a budget per call); anything else
becomes a one-line `TreeherderError` naming the call.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import httpx
import orjson

from sheriff.ci.retry import RETRYABLE_STATUS, RetryableAnswer, RetryPolicy, retry_after_of
from sheriff.errors import ServiceError

# Pushes named in one `/api/jobs/?push_id__in=` call: a short URL, and pages that stay few.
PUSHES_PER_CALL = 50


class TreeherderError(ServiceError):
    """A Treeherder call failed; `status` is the HTTP status (None: no answer)."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class TreeherderUnavailable(TreeherderError):
    """No usable answer after every retry."""


class Treeherder:
    """A small synchronous client; counts the requests it makes."""

    def __init__(
        self,
        base_url: str,
        *,
        policy: RetryPolicy | None = None,
        transport: httpx.BaseTransport | None = None,
        token: str | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.token = token  # writes only: Treeherder's bearer token for sheriff's user
        self.policy = policy or RetryPolicy()
        self.requests = 0
        self._http = httpx.Client(
            base_url=self.base_url,
            timeout=self.policy.timeout_seconds,
            headers={"User-Agent": "sheriff (automated CI sheriff)"},
            transport=transport,
            follow_redirects=True,
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Treeherder:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def get(self, path: str, **params: Any) -> Any:
        """GET `path` (relative to the base URL) and return its JSON."""
        what = f"Treeherder {path}"

        def attempt(timeout: float) -> httpx.Response:
            self.requests += 1
            try:
                response = self._http.get(path, params=params or None, timeout=timeout)
            except httpx.HTTPError as exc:
                error = TreeherderUnavailable(
                    f"{what}: no answer from {self.base_url} ({exc.__class__.__name__})"
                )
                raise RetryableAnswer(error) from exc
            status = response.status_code
            if status in RETRYABLE_STATUS:
                error = TreeherderUnavailable(f"{what}: HTTP {status}", status=status)
                raise RetryableAnswer(error, retry_after=retry_after_of(status, response.headers))
            if status >= 400:
                raise TreeherderError(
                    f"{what}: HTTP {status}: {response.text[:200]!r}", status=status
                )
            return response

        response = self.policy.call(attempt, what=what)
        try:
            return orjson.loads(response.content)
        except orjson.JSONDecodeError as exc:
            raise TreeherderError(f"{what}: the answer is not JSON") from exc

    def pushes(self, repo: str, *, since: int, until: int) -> Iterator[dict[str, Any]]:
        """Pushes whose `push_timestamp` (epoch seconds) is within [since, until], newest first."""
        params: dict[str, Any] = {
            "push_timestamp__gte": since,
            "push_timestamp__lte": until,
            "count": 100,
        }
        while True:
            page = self.get(f"/api/project/{repo}/push/", **params).get("results", [])
            yield from page
            if len(page) < params["count"]:
                return
            params["id__lt"] = min(p["id"] for p in page)

    def jobs_of_task(self, task_id: str) -> list[dict[str, Any]]:
        """The jobs (one per ingested run) of a task, as flat dicts."""
        answer = self.get("/api/jobs/", task_id=task_id)
        names = answer.get("job_property_names", [])
        return [dict(zip(names, row, strict=False)) for row in answer.get("results", [])]

    def jobs_of_push(self, push_id: int) -> list[dict[str, Any]]:
        """Every ingested job of a push (Treeherder's push id), as flat dicts."""
        return self._job_pages(push_id=push_id)

    def jobs_of_pushes(self, push_ids: Iterable[int]) -> dict[int, list[dict[str, Any]]]:
        """Every ingested job of these pushes, by push id (each one asked for is a key):
        `push_id__in`, as Treeherder's own job view follows many pushes, pages of 2,000
        jobs, `PUSHES_PER_CALL` pushes a call."""
        ids = sorted(set(push_ids))
        found: dict[int, list[dict[str, Any]]] = {p: [] for p in ids}
        for start in range(0, len(ids), PUSHES_PER_CALL):
            chunk = ids[start : start + PUSHES_PER_CALL]
            for th_job in self._job_pages(push_id__in=",".join(map(str, chunk))):
                found.setdefault(int(th_job["push_id"]), []).append(th_job)
        return found

    def _job_pages(self, **params: Any) -> list[dict[str, Any]]:
        jobs: list[dict[str, Any]] = []
        page = 1
        while True:
            answer = self.get("/api/jobs/", **params, count=2000, page=page)
            names = answer.get("job_property_names", [])
            jobs.extend(dict(zip(names, row, strict=False)) for row in answer.get("results", []))
            if not answer.get("next"):
                return jobs
            page += 1

    def log_urls(self, repo: str, job_id: int | Sequence[int]) -> list[dict[str, Any]]:
        """Log references (with `parse_status`) of one job or many (`job_id` repeated)."""
        ids = [job_id] if isinstance(job_id, int) else list(job_id)
        return list(self.get(f"/api/project/{repo}/job-log-url/", job_id=ids))

    def bug_suggestions(self, repo: str, job_id: int) -> list[dict[str, Any]]:
        return list(self.get(f"/api/project/{repo}/jobs/{job_id}/bug_suggestions/"))

    # -- writes (once each: the request log decides whether to send again) ---------------

    def job(self, repo: str, job_id: int) -> dict[str, Any]:
        """One job as `/api/project/<repo>/jobs/<id>/` answers it (its classification)."""
        return dict(self.get(f"/api/project/{repo}/jobs/{job_id}/"))

    def notes(self, repo: str, job_id: int) -> list[dict[str, Any]]:
        """The job's notes (`who`, `text`, `failure_classification_id`), oldest first."""
        return list(self.get(f"/api/project/{repo}/note/", job_id=job_id))

    def bug_job_maps(self, repo: str, job_id: int) -> list[dict[str, Any]]:
        return list(self.get(f"/api/project/{repo}/bug-job-map/", job_id=job_id))

    def add_note(self, repo: str, job_id: int, classification: int, text: str) -> Any:
        """Classify a job: Treeherder's NoteViewSet.create (job_id, failure_classification_id,
        text); the note's `who` is the token's user."""
        body = {"job_id": job_id, "failure_classification_id": classification, "text": text}
        return self.post(f"/api/project/{repo}/note/", body)

    def add_bug_job_map(self, repo: str, job_id: int, bug_id: int) -> Any:
        """Link a bug to a job: BugJobMapViewSet.create (job_id, bug_id, type)."""
        body = {"job_id": job_id, "bug_id": bug_id, "type": "annotation"}
        return self.post(f"/api/project/{repo}/bug-job-map/", body)

    def post(self, path: str, body: dict[str, Any]) -> Any:
        """POST once; no retry here (a 5xx may come after the write landed)."""
        what = f"Treeherder POST {path}"
        if not self.token:
            raise TreeherderError(f"{what}: no Treeherder token (SHERIFF_TREEHERDER_TOKEN)")
        self.requests += 1
        try:
            response = self._http.post(
                path, json=body, headers={"Authorization": f"Bearer {self.token}"}
            )
        except httpx.HTTPError as exc:
            raise TreeherderUnavailable(f"{what}: no answer ({exc.__class__.__name__})") from exc
        if response.status_code in RETRYABLE_STATUS:
            raise TreeherderUnavailable(f"{what}: HTTP {response.status_code}")
        if response.status_code >= 400:
            raise TreeherderError(
                f"{what}: HTTP {response.status_code}: {response.text[:200]!r}",
                status=response.status_code,
            )
        return orjson.loads(response.content) if response.content else None


def parse_status(log_urls: list[dict[str, Any]]) -> str | None:
    """The parse status of a job's main log (None: Treeherder lists no log yet)."""
    statuses = {entry.get("name"): entry.get("parse_status") for entry in log_urls}
    for name in ("live_backing_log", "builds-4h"):
        if name in statuses:
            return statuses[name]
    return next(iter(statuses.values()), None)

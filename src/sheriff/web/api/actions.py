"""Write endpoints: a person's retrigger or backfill, through the same request log and
strategies as the CLI and triage. They need the bearer token from settings (`api_token`);
with none configured they answer 403 and do nothing."""

from __future__ import annotations

import contextlib
import secrets
import uuid
from collections.abc import Callable
from typing import Annotated, Any

import sqlalchemy as sa
from fastapi import APIRouter, Depends, Header, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from sheriff.store import queries
from sheriff.store.schema import push
from sheriff.web.api.deps import ERRORS, Conn, settings_of
from sheriff.web.api.read import find_job
from sheriff.web.api.schemas import ActionsOut, BackfillIn, RetriggerIn

_bearer = HTTPBearer(auto_error=False, description="the `api_token` setting")

WRITE_ERRORS: dict[int | str, dict[str, Any]] = {
    **ERRORS,
    400: {"description": "the body is not JSON (FastAPI cannot parse it)"},
    401: {"description": "missing or wrong bearer token"},
    403: {"description": "writes are disabled: no api_token is configured"},
    503: {"description": "Taskcluster could not be read (a backfill needs the task definition)"},
}

router = APIRouter(prefix="/api", responses=WRITE_ERRORS, tags=["actions"])


def require_token(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> None:
    """Let the request through only with the configured bearer token."""
    token = settings_of(request).api_token
    if not token:
        raise HTTPException(403, "writes are disabled: no api_token is configured")
    given = credentials.credentials if credentials else ""
    if not secrets.compare_digest(given.encode(), token.encode()):
        raise HTTPException(
            401, "missing or wrong bearer token", headers={"WWW-Authenticate": "Bearer"}
        )


Authorised = Annotated[None, Depends(require_token)]
IdempotencyKey = Annotated[
    str | None,
    Header(
        max_length=150,
        pattern=r"^[A-Za-z0-9._:-]+$",
        description="the same key again returns the same request instead of a new one",
    ),
]


def _key(given: str | None, what: str) -> str:
    return f"web:{what}:{given or uuid.uuid4().hex}"


def _submit(request: Request, requests: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Enqueue all requests (key → arguments) in one transaction, then dispatch them (dry
    unless Taskcluster credentials are configured)."""
    from sheriff.actions import log
    from sheriff.errors import SheriffError

    engine = request.app.state.engine
    try:
        with engine.begin() as conn:
            for key, arguments in requests.items():
                log.enqueue(conn, key, **arguments)
    except SheriffError as exc:
        raise HTTPException(422, str(exc)) from exc
    keys = list(requests)
    protocol_factory: Callable[[], Any] | None = request.app.state.protocol_factory
    if protocol_factory is not None:
        settings = settings_of(request)
        # On failure a request stays `requested` with its reason; the next pass sends it.
        with contextlib.suppress(SheriffError):
            log.dispatch(
                engine,
                protocol_factory(),
                dry_run=not settings.has_taskcluster_credentials,
                keys=keys,
                lease=log.lease_of(settings),
            )
    with engine.connect() as conn:
        rows = log.requests(conn, keys=keys)
    return {"requests": [row.__dict__ for row in rows]}


@router.post("/project/{repo}/jobs/{job_id}/retrigger/", response_model=ActionsOut, status_code=202)
def retrigger(
    request: Request,
    _: Authorised,
    job: Annotated[dict[str, Any], Depends(find_job)],
    body: RetriggerIn,
    idempotency_key: IdempotencyKey = None,
) -> dict[str, Any]:
    """Retrigger the job's task `times` times (the `retrigger` action)."""
    from sheriff.actions.strategies import strategy

    key = _key(idempotency_key, f"retrigger:{job['task_id']}")
    return _submit(
        request,
        {
            key: {
                "strategy_name": "retrigger",
                "repository": request.path_params["repo"],
                "revision": job["revision"],
                "task_id": job["task_id"],
                "input": strategy("retrigger").build_input(times=body.times),
                "labels": [job["label"]],
            }
        },
    )


@router.post("/project/{repo}/jobs/{job_id}/backfill/", response_model=ActionsOut, status_code=202)
def backfill(
    request: Request,
    conn: Conn,
    _: Authorised,
    job: Annotated[dict[str, Any], Depends(find_job)],
    body: BackfillIn,
    idempotency_key: IdempotencyKey = None,
) -> dict[str, Any]:
    """Run the job's label with its exact manifests on each of the `depth` earlier pushes
    (one `backfill-task` per push), so that similar-jobs finds them again."""
    from sheriff.actions.strategies import strategy
    from sheriff.errors import SheriffError
    from sheriff.model.job import TaskShapeError, mozharness_test_paths

    earlier = queries.recent_push_ids(conn, job["push_id"], body.depth + 1)[1:]
    if not earlier:
        raise HTTPException(422, "no earlier push to backfill on")
    # The original's MOZHARNESS_TEST_PATHS, as Gecko's own backfill passes it on.
    try:
        test_paths = mozharness_test_paths(request.app.state.task_definition(job["task_id"]))
    except TaskShapeError:
        test_paths = None
    except SheriffError as exc:
        raise HTTPException(503, f"cannot read task {job['task_id']}: {exc}") from exc
    revisions = dict(
        conn.execute(sa.select(push.c.id, push.c.revision).where(push.c.id.in_(earlier))).all()
    )
    base = _key(idempotency_key, f"backfill:{job['task_id']}")
    requests = {}
    for push_id in earlier:
        # backfill-task is a push-level action of the earlier push: its tasks land there.
        requests[f"{base}:{revisions[push_id][:12]}"] = {
            "strategy_name": "backfill-task",
            "repository": request.path_params["repo"],
            "revision": revisions[push_id],
            "task_id": None,
            "input": strategy("backfill-task").build_input(
                label=job["label"],
                revision=job["revision"],  # the original's push, as Gecko's backfill sends
                test_manifests=test_paths,
                times=body.times,
            ),
            "labels": [job["label"]],
        }
    return _submit(request, requests)

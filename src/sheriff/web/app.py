"""The FastAPI application: the REST API under /api and the dashboard at /."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import sqlalchemy.exc
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from sqlalchemy.engine import Engine

from sheriff.config import Settings
from sheriff.web.answer_cache import AnswerCache, database_version

# Requests in flight at once per process: FastAPI runs routes in anyio's pool of 40
# threads, and each request holds a database connection from start to end, so the engine
# of a served app may open as many (beyond that a request waits, then gets a 503).
API_CONNECTIONS = 40


class ServerTiming:
    """`Server-Timing: app;dur=<ms>` on every answer: the time until its headers went out.

    Plain ASGI, not Starlette's BaseHTTPMiddleware, which copies every body through a
    stream of its own (megabytes for a page of jobs with their test paths)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()

        async def timed(message: Any) -> None:
            if message["type"] == "http.response.start":
                elapsed = (time.perf_counter() - started) * 1000
                header = (b"server-timing", f"app;dur={elapsed:.1f}".encode())
                message = {**message, "headers": [*message.get("headers", []), header]}
            await send(message)

        await self.app(scope, receive, timed)


def app_from_settings() -> FastAPI:
    """The app on the configured database: what each `sheriff serve` worker runs."""
    from sheriff.config import settings
    from sheriff.store.db import open_database

    config = settings()
    engine = open_database(config.database_url, connections=API_CONNECTIONS)
    return create_app(engine, config)


def default_protocol_factory(settings: Settings) -> Callable[[], Any]:
    """The actions protocol against the configured Taskcluster deployment."""

    def make() -> Any:
        from sheriff.actions.protocol import ActionsProtocol
        from sheriff.ci.taskcluster import clients_from_settings

        return ActionsProtocol(clients_from_settings(settings))

    return make


def default_task_definition(settings: Settings) -> Callable[[str], Any]:
    """A task's definition from the configured Taskcluster (`queue.task`)."""

    def read(task_id: str) -> Any:
        from sheriff.ci.taskcluster import clients_from_settings

        clients = clients_from_settings(settings)
        try:
            return clients.queue.task(task_id)
        finally:
            clients.close()

    return read


def create_app(
    engine: Engine,
    settings: Settings,
    *,
    protocol_factory: Callable[[], Any] | bool | None = True,
    task_definition: Callable[[str], Any] | None = None,
) -> FastAPI:
    """The app serving `engine`'s data; writes dispatch through `protocol_factory`
    (True: the configured Taskcluster; None: only record requests for the next pass).
    A backfill reads the original's definition through `task_definition` (default: the
    configured Taskcluster) for the manifests `backfill-task` passes on."""
    from fastapi.staticfiles import StaticFiles
    from fastapi_offline import FastAPIOffline

    from sheriff.web import dashboard
    from sheriff.web.api import actions, backfills, read, regressions

    # /docs and /redoc with their scripts served from here (fastapi-offline's copies), not
    # from a CDN: they work on a machine without internet.
    app = FastAPIOffline(
        title="sheriff",
        summary="Pushes, jobs with their manifests and test paths, verdicts and backfills.",
        version="1",
        static_url="/static-docs",
    )
    app.state.engine = engine
    app.state.settings = settings
    app.state.protocol_factory = (
        default_protocol_factory(settings) if protocol_factory is True else protocol_factory
    )
    app.state.task_definition = task_definition or default_task_definition(settings)
    app.include_router(read.router)
    app.include_router(actions.router)
    app.include_router(backfills.router)
    app.include_router(regressions.router)
    app.mount("/static", StaticFiles(directory=dashboard.HERE / "static"), name="static")
    app.include_router(dashboard.router)

    version = database_version(engine) if settings.api_cache_mb else None
    if version is not None:
        app.add_middleware(AnswerCache, version=version, max_bytes=settings.api_cache_mb << 20)
    app.add_middleware(ServerTiming)  # outermost: it times answers from the cache too

    @app.exception_handler(sqlalchemy.exc.TimeoutError)
    def _busy(_: Request, exc: sqlalchemy.exc.TimeoutError) -> JSONResponse:
        # Every connection of the pool was in use for its whole timeout: overloaded.
        return JSONResponse(
            {"detail": "busy: every database connection is in use; retry shortly"},
            status_code=503,
            headers={"Retry-After": "1"},
        )

    @app.exception_handler(sqlalchemy.exc.DataError)
    def _data_error(_: Request, exc: sqlalchemy.exc.DataError) -> JSONResponse:
        # A value the database cannot hold is bad input, not a server fault.
        return JSONResponse({"detail": f"invalid value: {exc.orig}"}, status_code=422)

    return app

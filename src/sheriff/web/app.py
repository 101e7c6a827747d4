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


def default_protocol_factory(settings: Settings) -> Callable[[], Any]:
    """The actions protocol against the configured Taskcluster deployment."""

    def make() -> Any:
        from sheriff.actions.protocol import ActionsProtocol
        from sheriff.ci.taskcluster import clients_from_settings

        return ActionsProtocol(clients_from_settings(settings))

    return make


def create_app(
    engine: Engine,
    settings: Settings,
    *,
    protocol_factory: Callable[[], Any] | bool | None = True,
) -> FastAPI:
    """The app serving `engine`'s data; writes dispatch through `protocol_factory`
    (True: the configured Taskcluster; None: only record requests for the next pass)."""
    from fastapi.staticfiles import StaticFiles
    from fastapi_offline import FastAPIOffline

    from sheriff.web import dashboard
    from sheriff.web.api import actions, backfills, read

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
    app.include_router(read.router)
    app.include_router(actions.router)
    app.include_router(backfills.router)
    app.mount("/static", StaticFiles(directory=dashboard.HERE / "static"), name="static")
    app.include_router(dashboard.router)

    @app.middleware("http")
    async def _server_timing(request: Request, call_next: Any) -> Any:
        # Server time per answer, for browsers' dev tools and benchmarks/api.py.
        started = time.perf_counter()
        response = await call_next(request)
        elapsed = (time.perf_counter() - started) * 1000
        response.headers["Server-Timing"] = f"app;dur={elapsed:.1f}"
        return response

    @app.exception_handler(sqlalchemy.exc.DataError)
    def _data_error(_: Request, exc: sqlalchemy.exc.DataError) -> JSONResponse:
        # A value the database cannot hold is bad input, not a server fault.
        return JSONResponse({"detail": f"invalid value: {exc.orig}"}, status_code=422)

    return app

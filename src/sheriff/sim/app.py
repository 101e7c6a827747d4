"""The HTTP face of the simulator: Taskcluster and Treeherder under one root URL, plus admin."""

from __future__ import annotations

from collections import Counter
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from sheriff.sim.auth import AuthConfig
from sheriff.sim.faults import FaultInjector
from sheriff.sim.taskcluster_api import TaskclusterError, error_response, taskcluster_router
from sheriff.sim.treeherder_api import treeherder_router
from sheriff.sim.world import World

TASKCLUSTER_SERVICES = ("queue", "index", "hooks", "auth", "artifacts")


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


def create_app(world: World, auth: AuthConfig | None = None) -> FastAPI:
    """The simulator's ASGI app over `world`."""
    auth = auth or AuthConfig.default([world.scenario.repository])
    app = FastAPI(title="sheriff CI simulator", docs_url=None, redoc_url=None, openapi_url=None)
    counters: Counter[str] = Counter()
    app.state.world = world
    app.state.auth = auth
    app.state.counters = counters
    app.state.fault_counts = Counter()
    if world.scenario.faults.active:
        # Inside the request counter: a request that met a fault was still made.
        app.add_middleware(
            FaultInjector, world=world, service_of=_service, counts=app.state.fault_counts
        )

    @app.middleware("http")
    async def count_requests(request: Request, call_next: Any) -> Any:
        counters[_service(request.url.path)] += 1
        return await call_next(request)

    @app.exception_handler(TaskclusterError)
    async def taskcluster_error(request: Request, exc: TaskclusterError) -> JSONResponse:
        return error_response(world, request, exc)

    app.include_router(taskcluster_router(world, auth))
    app.include_router(treeherder_router(world))

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
        return world.played_truth()

    @app.get("/__sim__/stats")
    async def stats() -> dict[str, Any]:
        return stats_of(counters, app.state.fault_counts)

    return app


def stats_of(counters: Counter[str], faults: Counter[str] | None = None) -> dict[str, Any]:
    """Requests served per service, with Taskcluster's services summed; faults played."""
    services = dict(sorted(counters.items()))
    return {
        "requests": services,
        "taskcluster": sum(counters[s] for s in TASKCLUSTER_SERVICES),
        "treeherder": counters["treeherder"],
        "faults": dict(sorted((faults or Counter()).items())),
    }

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
CI_SERVICES = (*TASKCLUSTER_SERVICES, "treeherder")  # what sheriff's request counts cover
SIM_MATRIX_TOKEN = "sheriff-dev-matrix-token"
SIM_MATRIX_ROOM = "!alerts:sim.invalid"


def _service(path: str) -> str:
    for prefix, name in (
        ("/api/queue/", "queue"),
        ("/api/index/", "index"),
        ("/api/hooks/", "hooks"),
        ("/api/auth/", "auth"),
        ("/__sim__/artifacts/", "artifacts"),
        ("/__sim__/", "admin"),
        ("/api/", "treeherder"),
        ("/_matrix/", "matrix"),
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
    # Requests per route template (`GET /api/queue/v1/task/{task_id}`): where they go.
    app.state.endpoints = Counter()
    app.state.fault_counts = Counter()
    if world.scenario.faults.active:
        # Inside the request counter: a request that met a fault was still made.
        app.add_middleware(
            FaultInjector, world=world, service_of=_service, counts=app.state.fault_counts
        )

    @app.middleware("http")
    async def count_requests(request: Request, call_next: Any) -> Any:
        service = _service(request.url.path)
        counters[service] += 1
        response = await call_next(request)
        if service in CI_SERVICES:
            route = request.scope.get("route")
            template = getattr(route, "path", None) or "(no route)"
            app.state.endpoints[f"{request.method} {template}"] += 1
        return response

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

    # -- a Matrix room for alerts (client-server API: the calls sheriff makes) ----------

    room: dict[str, dict[str, Any]] = {}  # txn id → event, in arrival order
    app.state.matrix_room = room

    @app.put("/_matrix/client/v3/rooms/{room_id}/send/m.room.message/{txn_id}")
    async def matrix_send(room_id: str, txn_id: str, request: Request) -> Any:
        if request.headers.get("authorization", "") != f"Bearer {SIM_MATRIX_TOKEN}":
            return JSONResponse(
                {"errcode": "M_UNKNOWN_TOKEN", "error": "Invalid access token"}, status_code=401
            )
        content = await request.json()
        with world.lock:
            # A transaction id seen before answers the same event: sends are idempotent.
            event = room.setdefault(
                txn_id,
                {
                    "event_id": f"$sim{len(room) + 1}",
                    "room_id": room_id,
                    "type": "m.room.message",
                    "content": content,
                    "origin_server_ts": int(world.time_of(world.minutes).timestamp() * 1000),
                },
            )
        return {"event_id": event["event_id"]}

    @app.get("/_matrix/client/v3/rooms/{room_id}/messages")
    async def matrix_messages(room_id: str) -> dict[str, Any]:
        with world.lock:
            chunk = [e for e in room.values() if e["room_id"] == room_id]
        return {"chunk": list(reversed(chunk)), "start": "s0", "end": "s1"}

    @app.get("/__sim__/load")
    async def load(queue_prefixes: str = "") -> dict[str, Any]:
        from sheriff.sim.load import load_left

        prefixes = tuple(p for p in queue_prefixes.split(",") if p)
        return load_left(world, list(room.values()), prefixes)

    @app.get("/__sim__/stats")
    async def stats() -> dict[str, Any]:
        return stats_of(counters, app.state.fault_counts, app.state.endpoints)

    return app


def stats_of(
    counters: Counter[str],
    faults: Counter[str] | None = None,
    endpoints: Counter[str] | None = None,
) -> dict[str, Any]:
    """Requests served per service, with Taskcluster's services summed; faults played;
    Taskcluster and Treeherder requests per endpoint (method and route template)."""
    services = dict(sorted(counters.items()))
    return {
        "requests": services,
        "taskcluster": sum(counters[s] for s in TASKCLUSTER_SERVICES),
        "treeherder": counters["treeherder"],
        "faults": dict(sorted((faults or Counter()).items())),
        "endpoints": dict((endpoints or Counter()).most_common()),
    }

"""The simulator failing on purpose (scenario `faults:`), as real services do on a bad day.

An ASGI middleware in front of every simulated service draws, per request, whether it
answers at all and how: a 500/502/503 with the service's own error body, a 429 with
`Retry-After`, a connection dropped in the middle of the answer, a slow answer, or — for
a write — the write done and its answer lost. Artifact downloads may come back corrupt or
cut short; Treeherder has outage windows on the virtual clock. (Two faults live where
the behaviour does: `log_parse_failures` in the world's Treeherder ingestion, and Pulse's
drops and duplicates in sim/pulse.py.) Faults never change what the world does: outcomes
are drawn per entity, so a faulty play and a clean one of the same scenario have the same
ground truth, and only a lost write changes state (it is the write that happened). Counts
of what was played are in `counts` (`/__sim__/stats`, `faults`).
"""

from __future__ import annotations

import asyncio
import json
import random
from collections import Counter
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from sheriff.sim.scenario import FAULTY_SERVICES
from sheriff.sim.world import World

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

# Writes whose effect stays when their answer is lost; expandScopes is a POST that reads.
WRITES = ("hooks", "queue")


class FaultInjector:
    """Wraps the simulator's ASGI app; `service_of(path)` names the service of a request."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        world: World,
        service_of: Callable[[str], str],
        counts: Counter[str],
    ) -> None:
        self.app, self.world, self.service_of, self.counts = app, world, service_of, counts
        self.faults = world.scenario.faults
        seed = self.faults.seed if self.faults.seed is not None else world.scenario.seed
        self.rng = random.Random(f"faults:{seed}")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        service = self.service_of(scope["path"])
        if service not in FAULTY_SERVICES:
            await self.app(scope, receive, send)  # admin and truth never fail
            return
        if service == "treeherder" and self._in_outage():
            self.counts["outage"] += 1
            await _error(send, service, 503)
            return
        fault = self._draw(service, write=scope["method"] == "POST" and service in WRITES)
        if fault:
            self.counts[fault] += 1
        if fault == "error":
            await _error(send, service, self.rng.choice((500, 502, 503)))
        elif fault == "throttle":
            low, high = self.faults.retry_after_seconds
            await _error(send, service, 429, retry_after=round(self.rng.uniform(low, high)))
        elif fault == "reset":
            await _dropped(send)
        elif fault == "lost_write":
            await self.app(scope, receive, _discard)  # the write happens …
            await (_dropped(send) if self.rng.random() < 0.5 else _error(send, service, 500))
        else:
            if fault == "slow":
                await asyncio.sleep(self.rng.uniform(*self.faults.slow_seconds))
            await self.app(scope, receive, self._damaging(send) if service == "artifacts" else send)

    def _draw(self, service: str, *, write: bool) -> str | None:
        rates = self.faults.for_service(service)
        u = self.rng.random()
        for name in ("error", "throttle", "reset", "slow", "lost_write"):
            share = getattr(rates, name)
            if name == "lost_write" and not write:
                continue
            if u < share:
                return name
            u -= share
        return None

    def _in_outage(self) -> bool:
        now = self.world.minutes
        return any(
            o.start_minutes <= now < o.start_minutes + o.minutes
            for o in self.faults.treeherder_outages
        )

    def _damaging(self, send: Send) -> Send:
        """`send` for an artifact's bytes, corrupting or cutting them as drawn."""
        u = self.rng.random()
        if u < self.faults.corrupt_artifacts:
            kind = "corrupt_artifact"
        elif u < self.faults.corrupt_artifacts + self.faults.truncated_artifacts:
            kind = "truncated_artifact"
        else:
            return send
        self.counts[kind] += 1
        return _Damaged(send, self.rng, corrupt=kind == "corrupt_artifact")


class _Damaged:
    """Collects a successful answer's body, then sends garbage of its length (with that
    Content-Length: the download "succeeds" and only the bytes tell), or only its first
    half under the whole file's Content-Length before the connection drops (a transfer cut
    short, as clients see one: fewer bytes than announced)."""

    def __init__(self, send: Send, rng: random.Random, *, corrupt: bool) -> None:
        self.send, self.rng, self.corrupt = send, rng, corrupt
        self.start: Message | None = None
        self.body = bytearray()

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.start = message
            return
        self.body.extend(message.get("body", b""))
        if message.get("more_body"):
            return
        assert self.start is not None
        data = announced = bytes(self.body)
        if self.start["status"] == 200 and data:
            if self.corrupt:
                data = announced = self.rng.randbytes(len(data))
            else:
                data = data[: len(data) // 2]
        headers = [(k, v) for k, v in self.start["headers"] if k.lower() != b"content-length"]
        headers.append((b"content-length", str(len(announced)).encode()))
        await self.send({**self.start, "headers": headers})
        # A short body ends the answer early: the server closes the connection.
        await self.send({"type": "http.response.body", "body": data})


async def _discard(_message: Message) -> None:
    return None


async def _error(send: Send, service: str, status: int, retry_after: int | None = None) -> None:
    if service == "treeherder":
        body: dict[str, Any] = {"detail": f"simulated fault: HTTP {status}"}
    else:  # Taskcluster's error shape
        code = "ThrottledRequest" if status == 429 else "InternalServerError"
        body = {"code": code, "message": f"simulated fault: HTTP {status}", "requestInfo": {}}
    data = json.dumps(body).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    if retry_after is not None:
        headers.append((b"retry-after", str(retry_after).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})


async def _dropped(send: Send) -> None:
    """Promise a body, send part of it and stop: the client sees the connection drop."""
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"application/json"), (b"content-length", b"4096")],
        }
    )
    await send({"type": "http.response.body", "body": b'{"partial": '})

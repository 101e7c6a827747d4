"""Run the simulator over real HTTP on loopback, in a background thread."""

from __future__ import annotations

import socket
import threading
import time
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any

import uvicorn

from sheriff.errors import ServiceError
from sheriff.sim.app import create_app, stats_of
from sheriff.sim.auth import AuthConfig
from sheriff.sim.scenario import Scenario, load_scenario, resolve_scenario
from sheriff.sim.world import World


class SimServer:
    """A running simulator: `with SimServer(scenario, port=0) as sim: sim.root_url`."""

    def __init__(
        self,
        scenario: Scenario | str | Path,
        *,
        port: int = 0,
        host: str = "127.0.0.1",
        pulse_url: str | None = None,
        clients: dict[str, tuple[str, list[str]]] | None = None,
    ) -> None:
        from sheriff.sim.multi import MultiApp, is_multi, load_multi, worlds_of

        name, scenarios = None, []
        if isinstance(scenario, Scenario):
            scenarios = [scenario]
        elif is_multi(resolve_scenario(scenario)):
            name, scenarios = load_multi(resolve_scenario(scenario))
        else:
            scenarios = [load_scenario(scenario)]
        first = scenarios[0]
        self._pulse = None
        if pulse_url:
            from sheriff.sim.pulse import PulsePublisher

            faults = first.faults
            seed = faults.seed if faults.seed is not None else first.seed
            self._pulse = PulsePublisher(pulse_url, faults.pulse, seed)
        listeners = [self._pulse.publish] if self._pulse else None
        self.auth = AuthConfig.default([s.repository for s in scenarios])
        for client_id, (token, scopes) in (clients or {}).items():
            self.auth.add_client(client_id, token, scopes)
        if name is None:
            self.worlds = [World(first, listeners=listeners)]
            self.app = create_app(self.worlds[0], self.auth)
        else:
            # Several repositories: one world each behind one root URL (sim/multi.py).
            self.worlds = worlds_of(scenarios, listeners)
            self._multi = MultiApp(
                name, self.worlds, [create_app(w, self.auth) for w in self.worlds]
            )
            self.app = self._multi
        self.world = self.worlds[0]
        self._host, self._port = host, port
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._socket: socket.socket | None = None
        self._root_url: str | None = None

    @property
    def root_url(self) -> str:
        """The one root URL of every simulated service."""
        if self._root_url is None:
            raise ServiceError("the simulator is not running")
        return self._root_url

    @property
    def now(self) -> datetime:
        return self.world.now

    def advance(self, minutes: float) -> None:
        """Move the virtual clock (and publish the Pulse messages on the way)."""
        for world in self.worlds:
            world.advance(minutes)

    def truth(self) -> dict[str, Any]:
        if len(self.worlds) > 1:
            return self._multi.truth()
        return self.world.played_truth()

    def stats(self) -> dict[str, Any]:
        if len(self.worlds) > 1:
            return self._multi.stats()
        state = self.app.state
        return stats_of(state.counters, state.fault_counts, state.endpoints)

    def start(self) -> SimServer:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # Accepted sockets inherit this: without it a response written in two parts waits
        # for the client's delayed ACK (~40 ms per request on a kept-alive connection).
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            sock.bind((self._host, self._port))
        except OSError as exc:
            sock.close()
            raise ServiceError(
                f"cannot listen on {self._host}:{self._port}: {exc.strerror}"
            ) from None
        self._socket = sock
        host, port = sock.getsockname()[:2]
        self._root_url = f"http://{host}:{port}"
        config = uvicorn.Config(self.app, log_level="warning", lifespan="off", access_log=False)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, name="sheriff-sim", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise ServiceError("the simulator's HTTP server did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self._socket is not None:
            self._socket.close()
        if self._pulse is not None:
            self._pulse.close()
        self._server = self._thread = None

    def serve_forever(self) -> None:
        """Serve in the foreground until interrupted."""
        self.start()
        try:
            while self._thread is not None and self._thread.is_alive():
                self._thread.join(0.5)
        finally:
            self.stop()

    def __enter__(self) -> SimServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

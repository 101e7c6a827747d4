"""A TCP proxy on loopback that can be cut and restored: a broker outage for the harness.

The service's processes reach RabbitMQ through it; `cut()` drops every connection and
refuses new ones (accepted, then closed at once, as a broker that is down answers), and
`restore()` lets them through again. The shared broker itself is never touched.
"""

from __future__ import annotations

import contextlib
import socket
import threading


class CuttableProxy:
    """Forwards 127.0.0.1:<port> to `upstream` (host, port) until cut."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._cut = False
        self._closed = False
        self.cuts = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def url_for(self, amqp_url: str) -> str:
        """`amqp_url` with its host and port replaced by the proxy's."""
        import kombu

        moved = kombu.Connection(amqp_url).clone(hostname="127.0.0.1", port=self.port)
        return moved.as_uri(include_password=True)

    def cut(self) -> None:
        with self._lock:
            self._cut = True
            self.cuts += 1
            doomed, self._open = self._open, set()
        for s in doomed:
            _close(s)

    def restore(self) -> None:
        with self._lock:
            self._cut = False

    def close(self) -> None:
        self._closed = True
        self.cut()
        _close(self._server)

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._server.accept()
            except OSError:
                return  # closed
            with self._lock:
                refused = self._cut
            if refused:
                _close(client)
                continue
            try:
                upstream = socket.create_connection(self.upstream, timeout=5)
                upstream.settimeout(None)
            except OSError:
                _close(client)
                continue
            with self._lock:
                self._open.update((client, upstream))
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=_pipe, args=(a, b), daemon=True).start()


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    try:
        while chunk := source.recv(65536):
            sink.sendall(chunk)
    except OSError:
        pass  # cut, or the other side closed
    finally:
        _close(source)
        _close(sink)


def _close(s: socket.socket) -> None:
    with contextlib.suppress(OSError):
        s.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        s.close()

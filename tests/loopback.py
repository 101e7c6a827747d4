"""A scripted HTTP server on loopback: each request gets the next scripted answer.

For the clients' tests (retries, Retry-After, budgets, timeouts) over real HTTP.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# A scripted status that is no answer in time: the client must time out.
TOO_SLOW = -1


class ScriptedServer:
    """Answers each request with the next scripted (status, body[, headers]); records
    (method, path, Authorization) of each request and when it came (monotonic seconds)."""

    def __init__(self) -> None:
        self.script: list[tuple] = []
        self.seen: list[tuple[str, str, str | None]] = []
        self.times: list[float] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                server.seen.append((self.command, self.path, self.headers.get("Authorization")))
                server.times.append(time.monotonic())
                entry = server.script.pop(0) if server.script else (200, {})
                status, body, headers = (*entry, {})[:3]
                if status == TOO_SLOW:
                    threading.Event().wait(1.0)
                    status, body = 200, {}
                data = json.dumps(body).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client timed out and left, as it should

            do_GET = do_POST = do_PUT = _answer

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"


@contextmanager
def scripted_server() -> Iterator[ScriptedServer]:
    fake = ScriptedServer()
    thread = threading.Thread(target=fake.httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        fake.httpd.shutdown()
        fake.httpd.server_close()

"""`sheriff serve` as a user starts it: the API and the pages answer; bad flags are one line."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

from sheriff.store.db import open_database
from tests.web.conftest import REPO, build_world, free_port, revision


def test_serve_answers_the_api_and_the_pages(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'sheriff.db'}"
    engine = open_database(url)
    build_world(engine)
    engine.dispose()
    port = free_port()
    env = {**os.environ, "SHERIFF_DATABASE_URL": url, "TASKCLUSTER_ROOT_URL": "http://127.0.0.1:9"}
    server = subprocess.Popen(
        [sys.executable, "-m", "sheriff", "serve", "--port", str(port)],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                answer = httpx.get(f"{base}/api/project/{REPO}/push/", timeout=2)
                break
            except httpx.TransportError:
                assert server.poll() is None, server.stderr.read() if server.stderr else ""
                assert time.monotonic() < deadline, "sheriff serve did not start"
                time.sleep(0.2)
        assert answer.status_code == 200
        assert answer.json()["results"][0]["revision"] == revision(3)
        assert "Server-Timing" in answer.headers
        page = httpx.get(f"{base}/{REPO}/push/{revision(3)}/", timeout=5)
        assert page.status_code == 200 and "regression" in page.text
        assert httpx.get(f"{base}/openapi.json", timeout=5).json()["info"]["title"] == "sheriff"
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_a_bad_port_is_one_line(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "sheriff", "serve", "--port", "70000"],
        cwd=tmp_path,
        env={**os.environ, "SHERIFF_DATABASE_URL": f"sqlite:///{tmp_path / 'x.db'}"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 2
    assert run.stderr.startswith("sheriff: error: ") and run.stderr.count("\n") == 1

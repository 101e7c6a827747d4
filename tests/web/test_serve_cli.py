"""`sheriff serve` as a user starts it: the API and the pages answer; bad flags are one line."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from sheriff.store.db import open_database
from tests.web.conftest import REPO, build_world, free_port, revision


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SHERIFF_", "TASKCLUSTER_"))}
    return {**env, "TASKCLUSTER_ROOT_URL": "http://127.0.0.1:9", **extra}


@contextmanager
def _serving(cwd: Path, env: dict[str, str]) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """`sheriff serve` on a free port in `cwd`, once it answers."""
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "sheriff", "serve", "--port", str(port)],
        env=env,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(f"{base}/openapi.json", timeout=2)
                break
            except httpx.TransportError:
                assert server.poll() is None, server.stderr.read() if server.stderr else ""
                assert time.monotonic() < deadline, "sheriff serve did not start"
                time.sleep(0.2)
        yield base, server
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_serve_answers_the_api_and_the_pages(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'sheriff.db'}"
    engine = open_database(url)
    build_world(engine)
    engine.dispose()
    with _serving(tmp_path, _clean_env(SHERIFF_DATABASE_URL=url)) as (base, _):
        answer = httpx.get(f"{base}/api/project/{REPO}/push/", timeout=5)
        assert answer.status_code == 200
        assert answer.json()["results"][0]["revision"] == revision(3)
        assert "Server-Timing" in answer.headers
        page = httpx.get(f"{base}/{REPO}/push/{revision(3)}/", timeout=5)
        assert page.status_code == 200 and "regression" in page.text
        assert httpx.get(f"{base}/openapi.json", timeout=5).json()["info"]["title"] == "sheriff"


def test_after_the_demo_serve_shows_the_demo_data(tmp_path: Path) -> None:
    engine = open_database(f"sqlite:///{tmp_path / 'sheriff-demo.db'}")
    build_world(engine)
    engine.dispose()
    with _serving(tmp_path, _clean_env()) as (base, server):
        pushes = httpx.get(f"{base}/api/project/{REPO}/push/", timeout=5).json()["results"]
        assert pushes[0]["revision"] == revision(3)
        server.terminate()
        out, _ = server.communicate(timeout=10)
    assert "the demo's data, sheriff-demo.db" in out
    assert not (tmp_path / "sheriff.db").exists()


def test_an_empty_database_says_the_exact_command(tmp_path: Path) -> None:
    with _serving(tmp_path, _clean_env()) as (base, _):
        page = httpx.get(f"{base}/", timeout=5).text
    assert "sheriff.db" in page and "<code>sheriff demo</code>, then" in page
    assert "<code>sheriff serve</code> again in the same folder" in page


def test_the_api_docs_need_no_internet(tmp_path: Path) -> None:
    with _serving(tmp_path, _clean_env()) as (base, _):
        for docs in ("/docs", "/redoc"):
            html = httpx.get(f"{base}{docs}", timeout=5).text
            assets = re.findall(r'(?:src|href)="([^"]+)"', html)
            assert assets and all(a.startswith("/") for a in assets), assets
            for asset in assets:
                assert httpx.get(f"{base}{asset}", timeout=5).status_code == 200, asset


def test_a_port_in_use_is_one_line_and_creates_nothing(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        run = subprocess.run(
            [sys.executable, "-m", "sheriff", "serve", "--port", str(port)],
            cwd=tmp_path,
            env=_clean_env(),
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert run.returncode == 1 and run.stdout == ""
    assert (
        run.stderr == f"sheriff: error: cannot listen on 127.0.0.1:{port}: Address already in use\n"
    )
    assert list(tmp_path.iterdir()) == []


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

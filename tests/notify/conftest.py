"""Real local servers for the alert channels: aiosmtpd (SMTP) and Synapse (Matrix)."""

from __future__ import annotations

import hashlib
import hmac
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Mailbox:
    host: str
    port: int
    messages: list[Any] = field(default_factory=list)


@pytest.fixture
def smtp_server() -> Iterator[Mailbox]:
    """An aiosmtpd server on a free loopback port that keeps what it receives."""
    from aiosmtpd.controller import Controller
    from aiosmtpd.handlers import Message

    box = Mailbox("127.0.0.1", _free_port())

    class Keep(Message):
        def handle_message(self, message: Any) -> None:
            box.messages.append(message)

    controller = Controller(Keep(), hostname=box.host, port=box.port)
    controller.start()
    try:
        yield box
    finally:
        controller.stop()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _synapse_python() -> str | None:
    for candidate in (os.environ.get("SHERIFF_SYNAPSE_PYTHON"), ROOT / ".venv-synapse/bin/python"):
        if candidate and Path(candidate).exists():
            return str(candidate)
    try:
        import synapse  # noqa: F401
    except ImportError:
        return None
    return sys.executable


@dataclass
class Homeserver:
    url: str
    access_token: str
    room_id: str

    def messages(self) -> list[dict[str, Any]]:
        answer = httpx.get(
            f"{self.url}/_matrix/client/v3/rooms/{self.room_id}/messages",
            params={"dir": "b", "limit": 100},
            headers={"Authorization": f"Bearer {self.access_token}"},
        )
        answer.raise_for_status()
        return [e for e in answer.json()["chunk"] if e["type"] == "m.room.message"]


@pytest.fixture(scope="session")
def synapse(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Homeserver]:
    """A real Synapse homeserver (PyPI's matrix-synapse, in .venv-synapse or the env
    SHERIFF_SYNAPSE_PYTHON names) with a user and a room for the alerts."""
    python = _synapse_python()
    if python is None:
        if os.environ.get("CI") == "true":
            pytest.fail("no Synapse: .ci/run installs it in .venv-synapse")
        pytest.skip("no Synapse homeserver installed (.venv-synapse or SHERIFF_SYNAPSE_PYTHON)")
    home = tmp_path_factory.mktemp("synapse")
    config = home / "homeserver.yaml"
    subprocess.run(
        [python, "-m", "synapse.app.homeserver", "--server-name", "localhost",
         "--config-path", str(config), "--generate-config", "--report-stats=no"],
        cwd=home, check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    port = _free_port()
    text = config.read_text().replace("port: 8008", f"port: {port}").replace("    - ::1\n", "")
    # Alerts come in bursts; Synapse's default message rate limit is for people.
    text += "\nrc_message:\n  per_second: 1000\n  burst_count: 1000\n"
    config.write_text(text)
    process = subprocess.Popen(
        [python, "-m", "synapse.app.homeserver", "--config-path", str(config)],
        cwd=home, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(120):
            try:
                if httpx.get(f"{url}/_matrix/client/versions", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        else:
            pytest.fail("Synapse did not start in a minute")
        secret = next(
            line.split(":", 1)[1].strip().strip('"')
            for line in config.read_text().splitlines()
            if line.startswith("registration_shared_secret:")
        )
        token = _register(url, secret, "sheriff", "sheriff-test-password")
        room = httpx.post(
            f"{url}/_matrix/client/v3/createRoom",
            json={"name": "sheriff alerts"},
            headers={"Authorization": f"Bearer {token}"},
        )
        room.raise_for_status()
        yield Homeserver(url, token, room.json()["room_id"])
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
        shutil.rmtree(home, ignore_errors=True)


def _register(url: str, secret: str, user: str, password: str) -> str:
    """Synapse's shared-secret registration (its admin API): the new user's token."""
    nonce = httpx.get(f"{url}/_synapse/admin/v1/register").json()["nonce"]
    mac = hmac.new(secret.encode(), digestmod=hashlib.sha1)
    mac.update(b"\x00".join([nonce.encode(), user.encode(), password.encode(), b"notadmin"]))
    answer = httpx.post(
        f"{url}/_synapse/admin/v1/register",
        json={
            "nonce": nonce,
            "username": user,
            "password": password,
            "admin": False,
            "mac": mac.hexdigest(),
        },
    )
    answer.raise_for_status()
    return str(answer.json()["access_token"])

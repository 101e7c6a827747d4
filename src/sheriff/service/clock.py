"""CI's clock: the wall clock, or a URL that tells the time (a simulator's virtual clock)."""

from __future__ import annotations

import os
from datetime import UTC, datetime

import httpx

from sheriff.errors import ServiceError

# One client per process, kept: making an httpx client builds its TLS context, which cost
# more than the request itself (a service task asks the time once or twice). Keyed by the
# process id, so that a worker process forked after the first use makes its own.
_CLIENTS: dict[int, httpx.Client] = {}


def _client() -> httpx.Client:
    pid = os.getpid()
    if pid not in _CLIENTS:
        _CLIENTS.clear()  # a parent's client is not this process's to use
        _CLIENTS[pid] = httpx.Client(timeout=10)
    return _CLIENTS[pid]


def ci_now(clock_url: str | None) -> datetime:
    """Now, as CI has it: `clock_url` answers {"now": ISO 8601}; None is the wall clock."""
    if clock_url is None:
        return datetime.now(UTC)
    try:
        answer = _client().get(clock_url)
        answer.raise_for_status()
        return datetime.fromisoformat(answer.json()["now"].replace("Z", "+00:00"))
    except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
        raise ServiceError(f"CI clock at {clock_url}: {exc}") from None

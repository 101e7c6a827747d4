"""CI's clock: the wall clock, or a URL that tells the time (a simulator's virtual clock)."""

from __future__ import annotations

from datetime import UTC, datetime

import httpx

from sheriff.errors import ServiceError


def ci_now(clock_url: str | None) -> datetime:
    """Now, as CI has it: `clock_url` answers {"now": ISO 8601}; None is the wall clock."""
    if clock_url is None:
        return datetime.now(UTC)
    try:
        answer = httpx.get(clock_url, timeout=10)
        answer.raise_for_status()
        return datetime.fromisoformat(answer.json()["now"].replace("Z", "+00:00"))
    except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
        raise ServiceError(f"CI clock at {clock_url}: {exc}") from None

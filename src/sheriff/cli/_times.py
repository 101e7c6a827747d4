"""Durations and times as the CLI takes them."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from sheriff.errors import InputError

_DURATION = re.compile(r"^(\d+(?:\.\d+)?)([smhd])$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}


def parse_duration(text: str) -> timedelta:
    """'90s', '10m', '6h', '2d' as a timedelta."""
    match = _DURATION.match(text.strip())
    if not match:
        raise InputError(f"not a duration: {text!r} (use e.g. 30m, 6h, 2d)")
    return timedelta(**{_UNITS[match.group(2)]: float(match.group(1))})


def parse_time(text: str) -> datetime:
    """An ISO 8601 time; without a zone it is UTC."""
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        raise InputError(f"not an ISO 8601 time: {text!r}") from exc
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)

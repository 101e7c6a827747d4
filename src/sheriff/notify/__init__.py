"""Alert channels behind one small interface: SMTP (email) and Matrix (a room).

A channel takes one alert (a subject, a plain-text body, and its reference) and delivers
it; the request log (kind `alert`, one row per regression, event and channel) decides it
is sent once. Channels register themselves by name in `REGISTRY` with `@channel`.
"""

from __future__ import annotations

from typing import Any

from sheriff.actions.effects import EffectRefused, reference
from sheriff.actions.log import RequestRow
from sheriff.notify import matrix as _matrix  # noqa: F401  (registers)
from sheriff.notify import smtp as _smtp  # noqa: F401  (registers)
from sheriff.notify.base import REGISTRY, Alert, Channel, channel
from sheriff.store.regressions import ALERT_STRATEGY as ALERT

__all__ = [
    "ALERT",
    "REGISTRY",
    "Alert",
    "AlertSender",
    "Channel",
    "channel",
    "channels_from_settings",
]


def channels_from_settings(settings: Any) -> dict[str, Channel]:
    """The channels whose settings are given, by name."""
    found: dict[str, Channel] = {}
    for name, cls in REGISTRY.items():
        made = cls.from_settings(settings)
        if made is not None:
            found[name] = made
    return found


class AlertSender:
    """Applies `alert` rows: each row names its channel."""

    def __init__(self, channels: dict[str, Channel]) -> None:
        self.channels = channels

    def send(self, row: RequestRow) -> Any:
        wanted = row.input
        chosen = self.channels.get(wanted["channel"])
        if chosen is None:
            raise EffectRefused(f"alert channel {wanted['channel']!r} is not configured")
        alert = Alert(
            reference=reference(row),
            subject=wanted["subject"],
            body=wanted["body"],
            regression_id=int(wanted["regression_id"]),
            event=wanted["event"],
        )
        return chosen.deliver(alert)

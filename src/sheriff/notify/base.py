"""The channel interface and its registry."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

REGISTRY: dict[str, type[Channel]] = {}


@dataclass(frozen=True)
class Alert:
    """One message about one regression event (confirmed, culprit, stopped)."""

    reference: str  # stable per request: a Message-ID, a Matrix transaction id
    subject: str
    body: str
    regression_id: int
    event: str


class Channel(Protocol):
    name: ClassVar[str]

    @classmethod
    def from_settings(cls, settings: Any) -> Channel | None:
        """The channel as the settings configure it; None when they do not."""

    def deliver(self, alert: Alert) -> Any:
        """Deliver once; the same `alert.reference` again must not make a second message
        where the other side can tell (Matrix transaction ids)."""


def channel(cls: type[Any]) -> type[Any]:
    """Register a channel class under its `name`."""
    REGISTRY[cls.name] = cls
    return cls

"""Pulse, the consumer side: a durable queue bound to Taskcluster's task-* exchanges for the
repositories a deployment watches, read in batches through kombu.

Bindings use the tasks' Treeherder routes (`route.tc-treeherder.v2.<repo>.#`), which the
queue publishes as CC routing keys of each message: only the watched repositories' runs
reach the queue. Messages are acknowledged by the caller, after what they imply is safe
(`PulseBatch.ack`); those not acknowledged when the connection drops are delivered again,
and the queue, durable, keeps what arrives while nobody listens.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import kombu

from sheriff.errors import ServiceError

log = logging.getLogger(__name__)

EXCHANGE_PREFIX = "exchange/taskcluster-queue/v1/"
RESOLVED = ("task-completed", "task-failed", "task-exception")


def binding_keys(repositories: Sequence[str]) -> list[str]:
    """The routing keys that select the runs of these repositories' pushes."""
    return [f"route.tc-treeherder.v2.{repo}.#" for repo in repositories]


@dataclass
class Delivery:
    """One message as delivered: exchange, decoded body (None: not JSON), CC routes."""

    exchange: str
    body: Any
    routes: list[str]
    message: Any  # the kombu message, to acknowledge


@dataclass
class PulseBatch:
    deliveries: list[Delivery] = field(default_factory=list)

    def ack(self) -> None:
        """Acknowledge every delivery. When the connection is gone already they come again,
        which changes nothing (what they imply is idempotent)."""
        for d in self.deliveries:
            try:
                d.message.ack()
            except Exception as exc:  # kombu raises its transport's own errors
                log.warning("could not acknowledge a Pulse message (it comes again): %s", exc)
                return


class PulseConsumer:
    """Reads the queue `queue_name` in batches; `with PulseConsumer(...) as c: c.batches()`."""

    def __init__(
        self,
        url: str,
        queue_name: str,
        repositories: Sequence[str],
        *,
        exchanges: Sequence[str] = RESOLVED,
        prefetch: int = 500,
    ) -> None:
        if not repositories:
            raise ServiceError("no repository to listen for: every one is disabled")
        self.url = url
        self._connection = kombu.Connection(url, connect_timeout=5, heartbeat=30)
        self._prefetch = prefetch
        self._queue = kombu.Queue(
            queue_name,
            bindings=[
                kombu.binding(
                    kombu.Exchange(EXCHANGE_PREFIX + name, type="topic", durable=True),
                    routing_key=key,
                )
                for name in exchanges
                for key in binding_keys(repositories)
            ],
            durable=True,
            auto_delete=False,
        )
        self._exchanges = [
            kombu.Exchange(EXCHANGE_PREFIX + name, type="topic", durable=True) for name in exchanges
        ]
        self._pending: list[Delivery] = []
        self._consumer: kombu.Consumer | None = None

    def __enter__(self) -> PulseConsumer:
        self._connect()
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        try:
            self._connection.release()
        except Exception:  # closing a dead connection: nothing left to release
            log.debug("closing the Pulse connection failed", exc_info=True)

    def _connect(self) -> None:
        def said(exc: Exception, interval: float) -> None:
            log.warning("Pulse broker %s: %s; again in %.0f s", self.url, exc, interval)

        # An outage is waited out: messages wait in the durable queue meanwhile.
        self._connection.ensure_connection(
            errback=said, max_retries=None, interval_start=1, interval_step=2, interval_max=30
        )
        channel = self._connection.channel()
        # Declared here too: the listener may start before anything publishes (real Pulse
        # declares them; declaring an existing exchange the same way is a no-op).
        for exchange in self._exchanges:
            exchange(channel).declare()
        self._queue(channel).declare()
        self._consumer = kombu.Consumer(
            channel, queues=[self._queue], callbacks=[self._received], accept=None
        )
        self._consumer.qos(prefetch_count=self._prefetch)
        self._consumer.consume()

    def _received(self, body: Any, message: Any) -> None:
        headers = message.headers or {}
        routes = headers.get("CC") or []
        raw = message.body
        try:
            decoded = json.loads(raw) if isinstance(raw, bytes | str) else body
        except ValueError:
            decoded = None
        self._pending.append(
            Delivery(
                exchange=message.delivery_info.get("exchange", ""),
                body=decoded,
                routes=[r for r in routes if isinstance(r, str)],
                message=message,
            )
        )

    def batches(self, *, seconds: float, max_size: int = 500) -> Iterator[PulseBatch]:
        """Batches of what arrived within `seconds` of the first message (at most
        `max_size`); an empty batch when nothing came for `seconds`. Reconnects after a
        broker outage; the deliveries of a batch not acknowledged then come again."""
        while True:
            try:
                deadline = time.monotonic() + seconds
                while len(self._pending) < max_size:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    try:
                        self._connection.drain_events(timeout=left)
                    except TimeoutError:
                        break
                batch, self._pending = (
                    PulseBatch(self._pending[:max_size]),
                    self._pending[max_size:],
                )
                yield batch
            except self._connection.recoverable_connection_errors as exc:
                # Unacknowledged deliveries return to the queue: forget them here.
                log.warning("Pulse connection lost: %s; reconnecting", exc)
                self._pending = []
                self._connection = self._connection.clone()
                self._connect()

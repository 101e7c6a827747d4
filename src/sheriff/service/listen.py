"""`sheriff listen`: Pulse batches handed to Celery, then acknowledged.

A batch becomes one `sheriff.events` task per repository, published with the broker's
confirmation; only then are its Pulse messages acknowledged. A crash in between delivers
them again (a duplicate changes nothing); a broker outage is waited out by both sides.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sheriff.ci.pulse import PulseBatch, PulseConsumer
from sheriff.config import Settings
from sheriff.ingest.pulse import event_of, push_of
from sheriff.model.job import TaskShapeError

log = logging.getLogger(__name__)


@dataclass
class ListenStats:
    messages: int = 0
    handed: int = 0  # Celery tasks published
    refused: int = 0  # not a resolved-run message of a watched push: acknowledged, dropped


def split(batch: PulseBatch, repositories: set[str], stats: ListenStats) -> dict[str, list]:
    """The batch's messages by repository, as `sheriff.events` takes them."""
    by_repo: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for d in batch.deliveries:
        stats.messages += 1
        try:
            event_of(d.exchange, d.body, d.routes)  # checked here: garbage never reaches Celery
        except TaskShapeError as exc:
            stats.refused += 1
            log.warning("Pulse message on %s refused: %s", d.exchange, exc)
            continue
        pushed = push_of(d.routes)
        assert pushed is not None  # event_of checked it
        if pushed[0] not in repositories:
            stats.refused += 1
            continue
        by_repo[pushed[0]].append({"exchange": d.exchange, "payload": d.body, "routes": d.routes})
    return by_repo


def listen(
    settings: Settings,
    *,
    batch_seconds: float = 0.5,
    stop: Callable[[ListenStats], bool] | None = None,
) -> ListenStats:
    """Consume until `stop` says so (never, by default)."""
    from sheriff.service.tasks import app

    repositories = settings.watched_repositories
    stats = ListenStats()
    url = settings.pulse_url or settings.celery_broker_url
    with (
        PulseConsumer(url, settings.pulse_queue, repositories) as consumer,
        app.connection_for_write() as connection,
    ):
        producer = app.amqp.Producer(connection)
        for batch in consumer.batches(seconds=batch_seconds):
            for repo, messages in split(batch, set(repositories), stats).items():
                # Blocks until the broker confirms (confirm_publish): then it is durable.
                app.send_task(
                    "sheriff.events",
                    args=[repo, messages],
                    queue=settings.celery_queue,
                    producer=producer,
                    retry=True,
                    retry_policy={"max_retries": None, "interval_max": 30},
                )
                stats.handed += 1
            batch.ack()
            if stop is not None and stop(stats):
                return stats

"""The Pulse consumer on real RabbitMQ: bindings per repository, a durable queue, nothing
acknowledged is lost by a restart, and `split` keeps garbage away from the workers."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import kombu
import pytest

from sheriff.ci.pulse import PulseBatch, PulseConsumer
from sheriff.service.listen import ListenStats, split
from sheriff.sim.pulse import PulsePublisher
from sheriff.sim.scenario import load_scenario
from sheriff.sim.world import World

TINY = Path(__file__).parent.parent / "triage" / "tiny.yaml"


def _drain(consumer: PulseConsumer) -> PulseBatch:
    """Batches until one comes back empty: everything delivered so far."""
    total = PulseBatch()
    for batch in consumer.batches(seconds=1.0):
        if not batch.deliveries:
            return total
        total.deliveries.extend(batch.deliveries)
    raise AssertionError("unreachable")


def _ids(batch: PulseBatch) -> list[tuple[str, str]]:
    return sorted((d.body["status"]["taskId"], d.exchange) for d in batch.deliveries)


@pytest.mark.rabbitmq
def test_unacknowledged_messages_survive_a_restart_and_only_watched_repos_arrive(amqp_url):
    queue = f"queue/sheriff/test-{uuid.uuid4().hex[:8]}"
    try:
        with PulseConsumer(amqp_url, queue, ["autoland"]) as consumer:
            _drain(consumer)  # declared and bound; nothing yet
        # Published while nobody listens: the durable queue keeps them.
        publisher = PulsePublisher(amqp_url)
        world = World(load_scenario(TINY), listeners=[publisher.publish])
        world.advance(90)
        publisher.close()
        with PulseConsumer(amqp_url, queue, ["autoland"]) as consumer:
            first = _drain(consumer)  # read, never acknowledged: "crash"
        mine = [d for d in first.deliveries if d.body["status"]["taskId"] in world.tasks]
        assert mine
        assert {d.exchange.rsplit("/", 1)[-1] for d in mine} <= {
            "task-completed",
            "task-failed",
            "task-exception",
        }
        with PulseConsumer(amqp_url, queue, ["autoland"]) as consumer:
            again = _drain(consumer)
            assert _ids(again) == _ids(first)
            stats = ListenStats()
            by_repo = split(again, {"autoland"}, stats)
            assert sum(len(v) for v in by_repo.values()) == len(again.deliveries)
            again.ack()
        with PulseConsumer(amqp_url, queue, ["autoland"]) as consumer:
            assert _drain(consumer).deliveries == []
        # Another repository's queue gets none of autoland's runs.
        other = f"queue/sheriff/test-{uuid.uuid4().hex[:8]}"
        with PulseConsumer(amqp_url, other, ["mozilla-central"]) as consumer:
            _drain(consumer)
            publisher = PulsePublisher(amqp_url)
            World(load_scenario(TINY), listeners=[publisher.publish]).advance(60)
            publisher.close()
            assert _drain(consumer).deliveries == []
    finally:
        with kombu.Connection(amqp_url) as connection:
            channel = connection.channel()
            for name in (queue, locals().get("other")):
                if name:
                    kombu.Queue(name, channel=channel).delete()


def test_split_refuses_what_is_not_a_resolved_run_of_a_watched_push() -> None:
    class Message:
        def ack(self) -> None: ...

    from sheriff.ci.pulse import Delivery

    good_routes = ["route.tc-treeherder.v2.autoland.abc.1"]
    batch = PulseBatch(
        [
            Delivery("exchange/taskcluster-queue/v1/task-failed", None, good_routes, Message()),
            Delivery("exchange/taskcluster-queue/v1/task-failed", {"x": 1}, good_routes, Message()),
            Delivery("exchange/elsewhere", json.loads("{}"), good_routes, Message()),
        ]
    )
    stats = ListenStats()
    assert split(batch, {"autoland"}, stats) == {}
    assert stats.refused == 3 and stats.messages == 3

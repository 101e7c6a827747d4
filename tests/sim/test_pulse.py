"""Pulse messages in RabbitMQ, on the Queue's real exchanges and in its message format."""

from __future__ import annotations

import json
import os
import socket
import uuid

import pytest

from sheriff.sim.pulse import EXCHANGE_PREFIX, EXCHANGES
from sheriff.sim.scenario import Scenario
from sheriff.sim.server import SimServer

AMQP_URL = os.environ.get("SHERIFF_TEST_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672//")


def _rabbitmq_reachable() -> bool:
    try:
        socket.create_connection(("127.0.0.1", 5672), timeout=2).close()
    except OSError:
        return False
    return True


@pytest.mark.rabbitmq
@pytest.mark.skipif(not _rabbitmq_reachable(), reason="RabbitMQ not reachable on 127.0.0.1:5672")
def test_task_messages_arrive_in_rabbitmq(tiny: Scenario) -> None:
    import kombu

    with kombu.Connection(AMQP_URL) as connection:
        channel = connection.channel()
        for name in EXCHANGES:  # the simulator declares them too; a listener may come first
            kombu.Exchange(EXCHANGE_PREFIX + name, type="topic", durable=True)(channel).declare()
        queue = kombu.Queue(
            f"sheriff-sim-test-{uuid.uuid4().hex[:8]}",
            bindings=[
                kombu.binding(kombu.Exchange(EXCHANGE_PREFIX + n, type="topic"), routing_key="#")
                for n in EXCHANGES
            ],
            auto_delete=True,
            exclusive=True,
        )(channel)
        queue.declare()
        with SimServer(tiny, pulse_url=AMQP_URL) as sim:
            sim.advance(60)
            world = sim.world
        messages = []
        while (message := queue.get(no_ack=True)) is not None:
            messages.append(message)
    # Only this world's messages: other simulators may publish on the same broker at once.
    messages = [m for m in messages if json.loads(m.body)["status"]["taskId"] in world.tasks]
    by_exchange: dict[str, list[dict]] = {}
    for message in messages:
        exchange = message.delivery_info["exchange"]
        by_exchange.setdefault(exchange, []).append(json.loads(message.body))
    assert {
        EXCHANGE_PREFIX + "task-pending",
        EXCHANGE_PREFIX + "task-running",
        EXCHANGE_PREFIX + "task-completed",
    } <= set(by_exchange)
    pending = by_exchange[EXCHANGE_PREFIX + "task-pending"]
    assert len(pending) == sum(len(t.runs) for t in world.tasks.values())
    sample = pending[0]
    assert set(sample) >= {"status", "runId", "version", "task"}
    assert sample["status"]["runs"][0]["state"] == "pending"
    assert sample["task"]["tags"]["kind"] == "decision-task"
    done = by_exchange[EXCHANGE_PREFIX + "task-completed"][0]
    assert done["status"]["state"] == "completed" and done["workerId"]
    first = messages[0]
    assert first.delivery_info["routing_key"].startswith(
        f"primary.{sample['status']['taskId']}.0._._."
    )
    assert any(cc.startswith("route.tc-treeherder.v2.autoland.") for cc in first.headers["CC"])
    failed = by_exchange.get(EXCHANGE_PREFIX + "task-failed", [])
    states = {t.task_id for t in world.tasks.values() if any(r.state == "failed" for r in t.runs)}
    assert {m["status"]["taskId"] for m in failed} == states

"""Pulse: the Queue's task-* messages, published to an AMQP broker in Taskcluster's format."""

from __future__ import annotations

import json
import random
from typing import Any

from sheriff.errors import ServiceError
from sheriff.sim import tasks as taskdefs
from sheriff.sim.entities import Run, Task
from sheriff.sim.scenario import PulseFaults
from sheriff.sim.world import World

EXCHANGE_PREFIX = "exchange/taskcluster-queue/v1/"
EXCHANGES = ("task-pending", "task-running", "task-completed", "task-failed", "task-exception")


def message(world: World, exchange: str, task: Task, run: Run) -> tuple[dict[str, Any], list[str]]:
    """The payload and routing keys (primary, then `route.<r>` for each task route)."""
    status = taskdefs.status(world, task)
    payload: dict[str, Any] = {"status": status, "runId": run.run_id, "version": 1}
    if exchange != "task-pending":
        payload["workerGroup"] = run.worker_group
        payload["workerId"] = run.worker_id
    if exchange == "task-running":
        payload["takenUntil"] = taskdefs.run_dict(world, run)["takenUntil"]
    definition = taskdefs.definition(world, task)
    payload["task"] = {"tags": definition.get("tags", {})}
    worker_group = run.worker_group if exchange != "task-pending" else None
    worker_id = run.worker_id if exchange != "task-pending" else None
    primary = ".".join(
        part or "_"
        for part in (
            "primary",
            task.task_id,
            str(run.run_id),
            worker_group,
            worker_id,
            status["provisionerId"],
            status["workerType"],
            status["schedulerId"],
            status["taskGroupId"],
            "_",
        )
    )
    return payload, [primary] + [f"route.{r}" for r in definition.get("routes", [])]


class PulsePublisher:
    """Publishes every task transition of a world to the Queue's topic exchanges."""

    def __init__(self, url: str, faults: PulseFaults | None = None, seed: int = 0) -> None:
        import kombu

        self._faults = faults or PulseFaults()
        self._rng = random.Random(f"pulse-faults:{seed}")
        self.dropped = self.duplicated = 0
        self._kombu = kombu
        try:
            self._connection = kombu.Connection(url, connect_timeout=5)
            self._connection.ensure_connection(max_retries=1, interval_start=0.5)
        except Exception as exc:  # kombu raises transport-specific errors
            raise ServiceError(f"cannot connect to Pulse broker {url}: {exc}") from None
        self._exchanges = {
            name: kombu.Exchange(EXCHANGE_PREFIX + name, type="topic", durable=True)
            for name in EXCHANGES
        }
        channel = self._connection.default_channel
        for exchange in self._exchanges.values():
            exchange(channel).declare()
        self._producer = self._connection.Producer(serializer="json")
        self.published = 0

    def publish(self, world: World, exchange: str, task: Task, run: Run) -> None:
        payload, routes = message(world, exchange, task, run)
        body = json.dumps(payload)
        # A scenario's `faults.pulse`: Pulse loses a message now and then, or delivers twice.
        u = self._rng.random()
        if u < self._faults.drop:
            self.dropped += 1
            return
        copies = 2 if u < self._faults.drop + self._faults.duplicate else 1
        self.duplicated += copies - 1
        for _ in range(copies):
            self._producer.publish(
                body,
                exchange=self._exchanges[exchange],
                routing_key=routes[0],
                headers={"CC": routes[1:]},
                content_type="application/json",
                content_encoding="utf-8",
                retry=True,
            )
            self.published += 1

    def close(self) -> None:
        self._connection.release()

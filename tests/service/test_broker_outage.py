"""A broker outage under the service: `sheriff listen` and the workers reach RabbitMQ through
a loopback proxy that is cut for a while midway (every connection dropped, new ones
refused) and then restored. The shared broker stays up; the simulator keeps publishing to
it. Afterwards every case ends with the verdict of `sheriff sim run`, and no action was
sent twice."""

from __future__ import annotations

import socket
from pathlib import Path

import kombu
import pytest

from sheriff.service.outage import CuttableProxy
from sheriff.service.simplay import ServicePlay
from sheriff.triage.simrun import play_with_outcomes, scenarios_of
from tests.service.conftest import assert_verdicts_of_polling

pytestmark = [pytest.mark.rabbitmq, pytest.mark.postgres, pytest.mark.timeout(300)]

TINY = Path(__file__).parent.parent / "triage" / "tiny.yaml"


def test_the_proxy_cuts_every_connection_and_refuses_new_ones_until_restored(
    amqp_url: str,
) -> None:
    proxy = CuttableProxy(("127.0.0.1", 5672))
    try:
        through = proxy.url_for(amqp_url)
        assert f":{proxy.port}/" in through
        with kombu.Connection(through, connect_timeout=3) as before:
            before.connect()
            channel = before.channel()
            proxy.cut()
            with pytest.raises((OSError, *before.recoverable_connection_errors)):
                for _ in range(50):  # the dropped socket shows on the next exchange
                    channel.queue_declare("", exclusive=True, auto_delete=True)
        with pytest.raises((OSError, socket.error)):
            kombu.Connection(through, connect_timeout=3).connect()
        proxy.restore()
        with kombu.Connection(through, connect_timeout=3) as after:
            after.connect()
            assert after.connected
    finally:
        proxy.close()


def test_a_broker_outage_midway_loses_no_case_and_sends_nothing_twice(
    amqp_url: str, empty_postgres: str, tmp_path: Path
) -> None:
    # The exact rule: its verdicts do not depend on which earlier runs are in when a case
    # is decided, so the service's may be compared with polling's one for one.
    _, expected = play_with_outcomes(TINY, scenarios_of(TINY), policy="seed")
    played = ServicePlay(
        TINY,
        empty_postgres,
        amqp_url=amqp_url,
        workers=2,
        policy="seed",
        broker_outage_at=0.4,
        broker_outage_seconds=20,
        # No catch-up pass within the play: what the outage held up must come by Pulse.
        catch_up_every_seconds=3600,
        log_dir=tmp_path / "logs",
    ).run()
    service = played["service"]
    assert service["broker_outages"] == 1
    assert_verdicts_of_polling(expected, played)
    assert service["cases_lost"] == 0 and service["cases_left_open"] == 0

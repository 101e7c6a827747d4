"""Matrix: an `m.room.message` in one room, over the client-server API (plain httpx).

`PUT /_matrix/client/v3/rooms/{roomId}/send/m.room.message/{txnId}` is idempotent per
access token and transaction id: the alert's reference is the transaction id, so a send
repeated after a crash answers the first event instead of posting a second message.
"""

from __future__ import annotations

from typing import Any, ClassVar
from urllib.parse import quote

import httpx

from sheriff.actions.effects import EffectRefused
from sheriff.errors import ServiceError
from sheriff.notify.base import Alert, channel


@channel
class MatrixChannel:
    name: ClassVar[str] = "matrix"

    def __init__(self, homeserver: str, access_token: str, room_id: str) -> None:
        self.homeserver = homeserver.rstrip("/")
        self.access_token = access_token
        self.room_id = room_id

    @classmethod
    def from_settings(cls, settings: Any) -> MatrixChannel | None:
        if not (
            settings.matrix_homeserver and settings.matrix_access_token and settings.matrix_room_id
        ):
            return None
        return cls(
            settings.matrix_homeserver, settings.matrix_access_token, settings.matrix_room_id
        )

    def deliver(self, alert: Alert) -> Any:
        url = (
            f"{self.homeserver}/_matrix/client/v3/rooms/{quote(self.room_id, safe='')}"
            f"/send/m.room.message/{alert.reference}"
        )
        content = {
            "msgtype": "m.text",
            "body": f"{alert.subject}\n\n{alert.body}",
            "sheriff_regression": alert.regression_id,
            "sheriff_event": alert.event,
        }
        try:
            answer = httpx.put(
                url,
                json=content,
                headers={"Authorization": f"Bearer {self.access_token}"},
                timeout=30,
            )
        except httpx.HTTPError as exc:
            raise ServiceError(f"Matrix {self.homeserver}: {exc.__class__.__name__}") from exc
        if answer.status_code >= 500 or answer.status_code == 429:
            raise ServiceError(f"Matrix {self.homeserver}: HTTP {answer.status_code}")
        if answer.status_code >= 400:
            raise EffectRefused(f"Matrix: HTTP {answer.status_code}: {answer.text[:200]}")
        return {"event_id": answer.json().get("event_id")}

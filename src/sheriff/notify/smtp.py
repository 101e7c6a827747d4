"""Email over SMTP (the standard library's smtplib and email)."""

from __future__ import annotations

import smtplib
from email.message import EmailMessage
from email.utils import formatdate
from typing import Any, ClassVar

from sheriff.errors import ServiceError
from sheriff.notify.base import Alert, channel


@channel
class SmtpChannel:
    """One message per alert to the configured recipients. Its Message-ID is the alert's
    reference: should a crash make sheriff send it again, the copy is recognisable."""

    name: ClassVar[str] = "smtp"

    def __init__(self, host: str, port: int, sender: str, recipients: list[str]) -> None:
        self.host, self.port, self.sender, self.recipients = host, port, sender, recipients

    @classmethod
    def from_settings(cls, settings: Any) -> SmtpChannel | None:
        if not settings.smtp_host or not settings.smtp_to:
            return None
        return cls(settings.smtp_host, settings.smtp_port, settings.smtp_from, settings.smtp_to)

    def message(self, alert: Alert) -> EmailMessage:
        message = EmailMessage()
        message["From"] = self.sender
        message["To"] = ", ".join(self.recipients)
        message["Subject"] = alert.subject
        message["Date"] = formatdate(usegmt=True)
        message["Message-ID"] = f"<{alert.reference}@sheriff>"
        message["X-Sheriff-Regression"] = str(alert.regression_id)
        message["X-Sheriff-Event"] = alert.event
        message.set_content(alert.body)
        return message

    def deliver(self, alert: Alert) -> Any:
        try:
            with smtplib.SMTP(self.host, self.port, timeout=30) as server:
                refused = server.send_message(self.message(alert))
        except (OSError, smtplib.SMTPException) as exc:
            raise ServiceError(f"SMTP {self.host}:{self.port}: {exc}") from exc
        return {"message_id": f"<{alert.reference}@sheriff>", "refused": sorted(refused)}

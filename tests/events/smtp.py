"""A real SMTP server for the tests: aiosmtpd's SMTP protocol served on 127.0.0.1 (a free port) in the test's own
event loop, keeping every message it accepted. Addresses in `refuse` get a permanent 550 at RCPT."""

from __future__ import annotations

import asyncio
import email
import email.policy
from dataclasses import dataclass, field
from email.message import EmailMessage

from aiosmtpd.smtp import SMTP, AuthResult, Envelope, LoginPassword, Session


@dataclass
class Sink:
    messages: list[EmailMessage] = field(default_factory=list)
    refuse: set[str] = field(default_factory=set)
    login: tuple[str, str] | None = None  # (user, password) the server requires, over plain text (loopback only)

    async def handle_RCPT(self, server: SMTP, session: Session, envelope: Envelope, address: str,
                          options: list[str]) -> str:
        if address in self.refuse:
            return "550 5.1.1 no such mailbox"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        raw = envelope.original_content or envelope.content
        assert raw is not None
        message = email.message_from_bytes(raw if isinstance(raw, bytes) else raw.encode(),
                                           policy=email.policy.default)
        assert isinstance(message, EmailMessage)
        self.messages.append(message)
        return "250 OK accepted"

    def to(self, address: str) -> list[EmailMessage]:
        return [m for m in self.messages if m["To"] == address]


class SmtpServer:
    def __init__(self, sink: Sink | None = None) -> None:
        self.sink = sink or Sink()
        self.server: asyncio.Server | None = None
        self.port = 0

    async def start(self, port: int = 0) -> SmtpServer:
        loop = asyncio.get_running_loop()
        def authenticate(server, session, envelope, mechanism, auth_data) -> AuthResult:
            ok = isinstance(auth_data, LoginPassword) and self.sink.login is not None and \
                (auth_data.login.decode(), auth_data.password.decode()) == self.sink.login
            return AuthResult(success=ok)

        def protocol() -> SMTP:
            if self.sink.login is None:
                return SMTP(self.sink, hostname="mail.test")
            return SMTP(self.sink, hostname="mail.test", authenticator=authenticate, auth_required=True,
                        auth_require_tls=False)

        self.server = await loop.create_server(protocol, "127.0.0.1", port)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def stop(self) -> None:
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()
            self.server = None

    @property
    def url(self) -> str:
        return f"smtp://127.0.0.1:{self.port}"

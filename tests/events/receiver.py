"""A real HTTP receiver for webhook tests: a threaded http.server on 127.0.0.1 (a free port) that records every
request (headers, body) and answers with the next status of `script` (then `default`). With `hold` set, the
first request is recorded and then left unanswered until the event is released (a worker killed mid-request)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from standardwebhooks import Webhook


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes

    @property
    def id(self) -> str:
        return self.headers["webhook-id"]

    def verify(self, secret: str) -> Any:
        """standardwebhooks' own verification (raises WebhookVerificationError)."""
        return Webhook(secret).verify(self.body, self.headers)


@dataclass
class Receiver:
    script: list[int] = field(default_factory=list)
    default: int = 200
    hold: threading.Event | None = None
    received: list[Received] = field(default_factory=list)
    arrived: threading.Event = field(default_factory=threading.Event)

    def start(self) -> Receiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                receiver.received.append(Received({k.lower(): v for k, v in self.headers.items()}, body))
                receiver.arrived.set()
                if receiver.hold is not None and len(receiver.received) == 1:
                    receiver.hold.wait(60)
                    return
                status = receiver.script.pop(0) if receiver.script else receiver.default
                self.send_response(status)
                self.send_header("content-length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hooks"

    def stop(self) -> None:
        if self.hold is not None:
            self.hold.set()
        self.server.shutdown()
        self.server.server_close()

    def types(self) -> list[str]:
        import json

        return [json.loads(r.body)["type"] for r in self.received]

"""Log formats: `--log-format text` (default, for people) or `json` (one JSON object per line, for machines).

Every API call (REST or MCP) leaves one access line on the `socialpub.access` logger with request_id,
endpoint, status, duration_ms, transport and key_id (the API key's public ID, never the key). Secrets never
reach a log line: records carry IDs only, and the JSON formatter drops the exception's arguments and redacts
anything shaped like an API key or a bearer credential that a message might still hold.
"""

from __future__ import annotations

import contextvars
import json
import logging
import re
import sys
import time
from datetime import UTC, datetime

access = logging.getLogger("socialpub.access")

# The API key ID of the call being served (set by the dispatcher once the key is authenticated).
KEY_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar("socialpub_key_id", default=None)

# What a credential looks like in free text: our API keys, bearer headers, URL signatures.
_SECRET_RE = re.compile(r"(socialpub_[a-z]+_[A-Za-z0-9_-]+|(?i:bearer)\s+[A-Za-z0-9._~+/=-]+|"
                        r"(?i:signature|token|secret|password)=[^&\s\"']+)")
ACCESS_FIELDS = ("request_id", "endpoint", "status", "duration_ms", "transport", "key_id", "client")


def redact(text: str) -> str:
    # Every branch of the pattern needs one of these (`bearer` in any case: ASCII letters only, as the pattern's
    # (?i:) matches no other character for them); most lines hold none, and the check costs a tenth of the scan.
    if "socialpub_" not in text and "=" not in text and "bearer" not in text.lower():
        return text
    return _SECRET_RE.sub("[redacted]", text)


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": redact(record.getMessage()),
        }
        for name in ACCESS_FIELDS:
            value = getattr(record, name, None)
            if value is not None:
                out[name] = value
        if record.exc_info and record.exc_info[0] is not None:
            out["error"] = record.exc_info[0].__name__  # the type only: an exception's text may quote input
            out["trace"] = redact(self.formatException(record.exc_info))
        return json.dumps(out, ensure_ascii=False, default=str)


class TextFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")
        self._second: tuple[int, str] = (-1, "")

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        # logging's own text, with the second's part made once a second (localtime and strftime per line were a
        # sixth of an access line's cost).
        second = int(record.created)
        if self._second[0] != second:
            self._second = (second, time.strftime(self.default_time_format, self.converter(second)))
        return f"{self._second[1]},{int(record.msecs):03d}"  # logging's default_msec_format, "%s,%03d"

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


class StderrHandler(logging.StreamHandler):
    """Writes to whatever `sys.stderr` is at the time (as logging's own last-resort handler does), so a
    replaced stderr (pytest's capture, a daemon's redirection) never leaves it writing to a closed file."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value) -> None:
        pass


def configure(level: str, fmt: str) -> None:
    """Logs go to stderr: stdout carries command output (and, for `mcp --transport stdio`, only protocol)."""
    handler = StderrHandler()
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    logging.getLogger("alembic").setLevel(max(logging.WARNING, root.level))
    # uvicorn's own loggers propagate to ours, so its lines take the same format.
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logger = logging.getLogger(name)
        logger.handlers.clear()
        logger.propagate = True


def log_call(*, request_id: str, endpoint: str, status: int, started: float, transport: str | None,
             client: str | None) -> None:
    if not access.isEnabledFor(logging.INFO):
        return
    duration_ms = round((time.perf_counter() - started) * 1000, 2)
    # `access.info` without its `findCaller` (a walk of the stack for a source location no format shows): the
    # same record, through the same filters and handlers.
    access.handle(access.makeRecord(
        access.name, logging.INFO, "(unknown file)", 0, "%s %s %s %.1fms", (endpoint, status, request_id, duration_ms),
        None, extra={"request_id": request_id, "endpoint": endpoint, "status": status, "duration_ms": duration_ms,
                     "transport": transport, "key_id": KEY_ID.get(), "client": client}))

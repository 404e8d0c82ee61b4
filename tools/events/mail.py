"""Email over SMTP with aiosmtplib: the settings, the message (plain text and HTML from templates), one send.

`SOCIALPUB_SMTP_URL` is `smtp://[user[:password]@]host[:port]` (port 587 by default, STARTTLS when the server
offers it) or `smtps://...` (port 465, TLS from the start); `SOCIALPUB_MAIL_FROM` is the From address. Without
the URL no email is sent. The URL may hold a password: nothing here prints, logs or raises it.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass, field
from email.message import EmailMessage
from email.utils import formatdate
from urllib.parse import unquote, urlsplit

import aiosmtplib
from jinja2 import DictLoader, Environment, select_autoescape

from schemas.settings import Settings

TIMEOUT_SECONDS = 30.0


class MailConfigError(Exception):
    """The SMTP settings are unusable (the message never repeats the URL)."""


class Transient(Exception):
    """The server could not take the message now (4xx, connection refused or lost, timeout): retry later."""


class Permanent(Exception):
    """The server refused the message for good (5xx for the sender, recipient or content)."""


@dataclass(frozen=True)
class SmtpConfig:
    hostname: str
    port: int
    use_tls: bool
    mail_from: str
    username: str | None = None
    password: str | None = field(default=None, repr=False)

    def describe(self) -> str:
        """Where mail goes, without the credentials."""
        return f"{'smtps' if self.use_tls else 'smtp'}://{self.hostname}:{self.port}"


def smtp_config(settings: Settings) -> SmtpConfig | None:
    """The SMTP settings, or None when email is off (no `SOCIALPUB_SMTP_URL`)."""
    if not settings.smtp_url:
        return None
    try:
        parts = urlsplit(settings.smtp_url)
        port = parts.port
    except ValueError:
        raise MailConfigError("SOCIALPUB_SMTP_URL is not a URL (smtp://[user:password@]host[:port])") from None
    if parts.scheme not in ("smtp", "smtps") or not parts.hostname or parts.path not in ("", "/") \
            or parts.query or parts.fragment:
        raise MailConfigError("SOCIALPUB_SMTP_URL must look like smtp://[user:password@]host[:port] or smtps://...")
    if not settings.mail_from:
        raise MailConfigError("SOCIALPUB_MAIL_FROM must be set when SOCIALPUB_SMTP_URL is")
    tls = parts.scheme == "smtps"
    return SmtpConfig(hostname=parts.hostname, port=port or (465 if tls else 587), use_tls=tls,
                      mail_from=settings.mail_from,
                      username=unquote(parts.username) if parts.username else None,
                      password=unquote(parts.password) if parts.password else None)


_TEMPLATES = Environment(
    loader=DictLoader({
        "email.txt": (
            "{{ title }}\n\n{{ body }}\n\nOpen in the console: {{ link }}\n\n-- \n"
            "You get this email because your {{ category_label }} notifications are on for {{ brand }}.\n"
            "Change your email preferences: {{ preferences }}\n"),
        "email.html": (
            "<!doctype html><html><body style=\"font-family:sans-serif;max-width:40em\">"
            "<h2>{{ title }}</h2><p>{{ body }}</p>"
            "<p><a href=\"{{ link }}\">Open in the console</a></p>"
            "<hr><p style=\"color:#666;font-size:small\">You get this email because your {{ category_label }} "
            "notifications are on for {{ brand }}. <a href=\"{{ preferences }}\">Change your email preferences</a>."
            "</p></body></html>"),
    }),
    autoescape=select_autoescape(["html"]),
)


@dataclass(frozen=True)
class Letter:
    """What one email says; `link` and `preferences` are absolute URLs."""

    to: str
    subject: str
    title: str
    body: str
    link: str
    preferences: str
    brand: str
    category: str


def build(letter: Letter, mail_from: str, message_id: str) -> EmailMessage:
    """One message: plain text plus HTML, a `List-Unsubscribe` to the preference page. `message_id` is stable per
    outbox row, so a resend after a crash carries the same Message-ID (receivers may drop the copy)."""
    values = {"title": letter.title, "body": letter.body, "link": letter.link, "preferences": letter.preferences,
              "brand": letter.brand, "category_label": letter.category.replace("_", " ")}
    message = EmailMessage()
    message["From"] = mail_from
    message["To"] = letter.to
    message["Subject"] = letter.subject
    message["Date"] = formatdate(usegmt=True)
    message["Message-ID"] = message_id
    message["List-Unsubscribe"] = f"<{letter.preferences}>"
    message["Auto-Submitted"] = "auto-generated"
    message.set_content(_TEMPLATES.get_template("email.txt").render(values))
    message.add_alternative(_TEMPLATES.get_template("email.html").render(values), subtype="html")
    return message


def _code(exc: BaseException) -> int | None:
    code = getattr(exc, "code", None)
    return code if isinstance(code, int) else None


async def send(config: SmtpConfig, message: EmailMessage, *, tls_context: ssl.SSLContext | None = None) -> None:
    """Hand one message to the SMTP server. Raises `Transient` or `Permanent` (their text holds the server's
    reply code and class, never the credentials)."""
    try:
        await aiosmtplib.send(message, hostname=config.hostname, port=config.port, use_tls=config.use_tls,
                              username=config.username, password=config.password, timeout=TIMEOUT_SECONDS,
                              tls_context=tls_context)
    except aiosmtplib.SMTPRecipientsRefused as exc:
        codes = sorted({r.code for r in exc.recipients})
        reason = f"recipient refused (SMTP {', '.join(map(str, codes))})"
        raise (Permanent(reason) if all(c >= 500 for c in codes) else Transient(reason)) from None
    except aiosmtplib.SMTPAuthenticationError as exc:
        # The operator's settings, not the message: retried, so fixing the settings delivers it.
        raise Transient(f"SMTP authentication failed (SMTP {exc.code})") from None
    except aiosmtplib.SMTPResponseException as exc:
        kind = type(exc).__name__
        if exc.code >= 500:
            raise Permanent(f"{kind} (SMTP {exc.code})") from None
        raise Transient(f"{kind} (SMTP {exc.code})") from None
    except (aiosmtplib.SMTPException, OSError, TimeoutError) as exc:
        raise Transient(f"SMTP server unreachable ({type(exc).__name__})") from None

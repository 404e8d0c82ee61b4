"""The console's HTTP plumbing: templates, the session cookie, CSRF tokens, sign-in throttling, and `api()`,
which runs a catalogue endpoint through the shared dispatcher as the signed-in user.

CSRF tokens are HMACs from `tools.signing` (purpose-separated keys): bound to the session (signed in) or to a
random pre-session cookie (the sign-in form), so a token is useless in any other browser.
"""

from __future__ import annotations

import json
import secrets
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.fernet import InvalidToken
from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from server.console.identity import SignedIn
from server.dispatch import Dispatcher
from server.ratelimit import RateLimiter, retry_after
from storage import vault
from tools import catalogue
from tools.runtime import Runtime
from tools.services import signing

HERE = Path(__file__).parent
COOKIE = "socialpub_console"
PRE_COOKIE = "socialpub_console_pre"
PREFIX = "/console"
NEW_KEY_COOKIE = "socialpub_console_new_key"
NEW_KEY_TTL = 120  # seconds from creating a key to the page that shows its secret

SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; "
                               "form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
    "X-Frame-Options": "DENY",
}

templates = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(["html"]),
                        trim_blocks=True, lstrip_blocks=True)


def file_size(n: int | None) -> str:
    """Bytes for people: 1.5 GB, 20 MB, 512 bytes (binary units, as the plans count them)."""
    if n is None:
        return "no limit"
    size = float(n)
    for unit in ("bytes", "KB", "MB", "GB", "TB"):
        if size < 1024 or unit == "TB":
            return f"{int(size)} {unit}" if unit == "bytes" or size == int(size) else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} bytes"  # not reached


def price(cents: int, period: str) -> str:
    return "free" if cents == 0 else f"{cents / 100:,.2f} USD a {period}".replace(".00 ", " ")


LIMIT_LABELS = {"social_accounts": "Connected accounts (workspace)", "networks_per_brand": "Networks per brand",
                "media_items_per_brand": "Media items per brand",
                "media_storage_bytes_per_brand": "Media storage per brand"}
templates.filters.update(file_size=file_size, price=price)
templates.globals.update(limit_labels=LIMIT_LABELS)


class ConsoleError(Exception):
    """An action refused: shown on the page, with the HTTP status of the refusal."""

    def __init__(self, message: str, status: int = 400, issues: list[dict[str, Any]] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.issues = issues or []  # the API's field-level issues, for pages that show them by field


class Throttle:
    """Sign-in attempts, per process, keyed on the client address as resolved through the trusted proxies only
    (server/app.py) and on the account (docs/decisions.md, "Sign-in throttle"):

    - per address: 30 attempts per 5 minutes, right or wrong, over all accounts (guessing many accounts);
    - per address and account: 5 failures per 5 minutes (guessing one account from one place);
    - per account: 10 failures per 5 minutes from anywhere. Past that the account is under attack, and an
      address may try it only if it has not failed on it in the last 15 minutes. A distributed guesser gets
      one guess per address per 15 minutes, while the real user, from an address that has not been guessing,
      is still judged on the password: wrong guesses elsewhere never lock out the right one.

    A right password counts only against the address's overall budget. The clock is the runtime's, so tests
    step it instead of waiting."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.per_client = RateLimiter(30, 300, clock)
        self.per_pair = RateLimiter(5, 300, clock)
        self.per_account = RateLimiter(10, 300, clock)
        self.recent = RateLimiter(1, 900, clock)  # address and account: no failure in the last 15 minutes

    def admit(self, email: str, client: str) -> Admission:
        """Before the password is checked: an admission whose `wait` is None (go on) or the seconds to wait.
        The failure buckets are charged now (concurrent guesses cannot all pass one check) and refunded by
        `succeeded`."""
        pair, account = f"{client}\n{email}", email
        wait = self.per_client.check(client)
        if wait is None:
            wait = self.per_pair.check(pair)
            if wait is None:
                under_attack = self.per_account.check(account)
                stale = self.recent.check(pair)
                if under_attack is not None and stale is not None:
                    self.per_pair.refund(pair)
                    wait = min(under_attack, stale)
                else:
                    return Admission(None, [(self.per_pair, pair)]
                                     + ([(self.per_account, account)] if under_attack is None else [])
                                     + ([(self.recent, pair)] if stale is None else []))
        return Admission(retry_after(wait), [])

    def succeeded(self, admission: Admission) -> None:
        for limiter, bucket in admission.charged:
            limiter.refund(bucket)


@dataclass(frozen=True)
class Admission:
    wait: int | None
    charged: list[tuple[RateLimiter, str]]


def is_secure(request: Request, rt: Runtime) -> bool:
    return request.url.scheme == "https" or rt.settings.public_url.startswith("https://")


def set_cookie(response: Response, request: Request, rt: Runtime, name: str, value: str, max_age: int) -> None:
    response.set_cookie(name, value, max_age=max_age, path=PREFIX, httponly=True, samesite="lax",
                        secure=is_secure(request, rt))


def hand_over_secret(response: Response, request: Request, rt: Runtime, me: SignedIn, key_id: str,
                     secret: str) -> None:
    """Carry a new key's secret across the POST/redirect/GET to the one page that shows it: sealed with the vault
    (any replica can open it), bound to the session and the key, short-lived, on /console/keys only."""
    sealed = vault.fernet(rt.settings).encrypt(json.dumps([me.session_id, key_id, secret]).encode()).decode()
    response.set_cookie(NEW_KEY_COOKIE, sealed, max_age=NEW_KEY_TTL, path=f"{PREFIX}/keys", httponly=True,
                        samesite="strict", secure=is_secure(request, rt))


def take_secret(request: Request, rt: Runtime, me: SignedIn) -> tuple[str, str] | None:
    """The (key id, secret) handed over to this session, if any; `forget_secret` then deletes it from the browser,
    so a reload or a later visit shows nothing."""
    sealed = request.cookies.get(NEW_KEY_COOKIE)
    if not sealed:
        return None
    try:
        session_id, key_id, secret = json.loads(vault.fernet(rt.settings).decrypt(sealed.encode(), ttl=NEW_KEY_TTL))
    except (InvalidToken, ValueError, TypeError):
        return None
    return (key_id, secret) if session_id == me.session_id else None


def forget_secret(response: Response, request: Request, rt: Runtime) -> None:
    if NEW_KEY_COOKIE in request.cookies:
        response.delete_cookie(NEW_KEY_COOKIE, path=f"{PREFIX}/keys", httponly=True, samesite="strict",
                               secure=is_secure(request, rt))


MESSAGE_TTL = 300  # seconds: a connect's outcome carried back to the accounts page


def seal_message(rt: Runtime, message: str) -> str:
    """A message for a page to show, carried in its URL: sealed (nobody can make the console say something),
    short-lived."""
    return vault.fernet(rt.settings).encrypt(message[:1000].encode()).decode()


def open_message(rt: Runtime, sealed: str | None) -> str | None:
    if not sealed or len(sealed) > 4000:
        return None
    try:
        return vault.fernet(rt.settings).decrypt(sealed.encode(), ttl=MESSAGE_TTL).decode()
    except (InvalidToken, ValueError):
        return None


def csrf_for_session(rt: Runtime, me: SignedIn) -> str:
    return signing.sign(rt.settings, "console-csrf", me.session_id)


def csrf_for_pre(rt: Runtime, pre: str) -> str:
    return signing.sign(rt.settings, "console-login-csrf", pre)


def check_csrf(rt: Runtime, sent: Any, *, me: SignedIn | None = None, pre: str | None = None) -> None:
    if not isinstance(sent, str) or not sent:
        raise ConsoleError("This form has no security token. Reload the page and try again.", 403)
    if me is not None:
        ok = signing.verify(rt.settings, sent, "console-csrf", me.session_id)
    else:
        ok = bool(pre) and signing.verify(rt.settings, sent, "console-login-csrf", pre or "")
    if not ok:
        raise ConsoleError("This form's security token is not valid for your session. Reload the page and try "
                           "again.", 403)


def render(name: str, status: int = 200, headers: dict[str, str] | None = None, **context: Any) -> HTMLResponse:
    html = templates.get_template(name).render(prefix=PREFIX, **context)
    return HTMLResponse(html, status_code=status, headers={**SECURITY_HEADERS, **(headers or {})})


def redirect(path: str, notice: str | None = None) -> RedirectResponse:
    url = PREFIX + path + (f"?notice={notice}" if notice else "")
    return RedirectResponse(url, status_code=303, headers=SECURITY_HEADERS)


def new_idempotency_key() -> str:
    """Put in a form when it is rendered, so a double submit replays instead of acting twice."""
    return f"console-{uuid.uuid4()}"


def new_pre_session() -> str:
    return secrets.token_urlsafe(24)


async def api(dispatcher: Dispatcher, me: SignedIn, name: str, /, idempotency_key: str | None = None,
              **args: Any) -> Any:
    """Run a catalogue endpoint as the signed-in user (the same path as REST and MCP); its `data`, or
    ConsoleError with the API's own message and status."""
    if idempotency_key is not None:
        args["idempotency_key"] = idempotency_key
    outcome = await dispatcher.invoke(catalogue.get(name), args, token=None, caller=me.caller)
    if outcome.body is None or not outcome.ok:
        error = (outcome.body or {}).get("error") or {}
        message = error.get("message") or "The request was refused."
        code = error.get("code")
        issues = [i for i in error.get("issues") or [] if isinstance(i, dict)][:50]
        raise ConsoleError(f"{message} ({code})" if code else message, outcome.status, issues)
    return outcome.body["data"]

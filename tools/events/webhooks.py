"""Outbound webhook endpoints (Standard Webhooks, signed with the `standardwebhooks` library): create, list, delete,
rotate the secret, resend a message, read the delivery log. The CLI (`socialpub webhooks ...`) and the console's
webhooks page call these; only workspace admins manage endpoints.

The signing secret (`whsec_` + base64 of 24 random bytes) is shown once, when it is made; it is stored sealed by
the credentials vault and never returned again. A rotation keeps the previous secret signing beside the new one
for `ROTATION_OVERLAP` (the `webhook-signature` header then holds two `v1,` signatures), so receivers can switch
to the new secret at any moment within it.
"""

from __future__ import annotations

import base64
import os
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession
from standardwebhooks import Webhook

from providers import addresses
from schemas.ids import new_id
from schemas.settings import Settings
from storage import vault
from storage.tables.brands import Brand
from storage.tables.events import WebhookAttempt, WebhookEndpoint, WebhookMessage
from tools.services.errors import OperatorError
from tools.services.event_log import EVENT_TYPES

MAX_ENDPOINTS = 20  # per workspace
ROTATION_OVERLAP = timedelta(hours=24)
LOG_LIMIT = 50


class WebhookError(OperatorError):
    """A refused webhook action (the message is safe to show)."""


def new_secret() -> str:
    return "whsec_" + base64.b64encode(os.urandom(24)).decode()


def check_url(url: str, settings: Settings) -> str:
    """An http(s) URL whose host is not a private, loopback or metadata address (unless the operator allows the
    host in SOCIALPUB_FETCH_ALLOW_HOSTS). Host names are checked again at every connection (PinnedTransport)."""
    url = url.strip()
    try:
        parts = urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018  (raises on a malformed port)
    except ValueError:
        raise WebhookError("the URL is malformed") from None
    if parts.scheme not in ("https", "http") or not host or len(url) > 2000 or parts.username or parts.password:
        raise WebhookError("the URL must be http(s)://host/path, without credentials, at most 2000 characters")
    found = addresses.literal(addresses.normalise_host(host))
    allow = frozenset(addresses.normalise_host(h) for h in settings.fetch_allow_hosts)
    category = addresses.refusal(found, addresses.normalise_host(host), allow) if found is not None else None
    if category is None and found is None and addresses.normalise_host(host) in ("localhost",) \
            and "localhost" not in allow:
        category = "loopback"
    if category is not None:
        raise WebhookError(f"refused: {host[:100]} is a {category} address; webhooks go to public addresses only "
                           "(an operator may allow a private host in SOCIALPUB_FETCH_ALLOW_HOSTS)")
    return url


def check_types(types: list[str]) -> list[str]:
    if types == ["all"]:
        return list(EVENT_TYPES)
    unknown = sorted(set(types) - set(EVENT_TYPES))
    if unknown or not types:
        raise WebhookError(f"unknown event types: {', '.join(unknown) or '(none given)'}; known: "
                           f"{', '.join(EVENT_TYPES)}")
    return [t for t in EVENT_TYPES if t in types]


def public(endpoint: WebhookEndpoint) -> dict[str, Any]:
    """What any answer shows of an endpoint: never the secret."""
    return {"id": endpoint.id, "workspace_id": endpoint.workspace_id, "url": endpoint.url,
            "description": endpoint.description, "event_types": list(endpoint.event_types),
            "brand_ids": endpoint.brand_ids, "enabled": endpoint.enabled,
            "disabled_reason": endpoint.disabled_reason,
            "previous_secret_valid_until": endpoint.previous_until, "created_at": endpoint.created_at}


async def create(session: AsyncSession, now: datetime, settings: Settings, workspace_id: str, url: str,
                 event_types: list[str], brand_ids: list[str] | None = None,
                 description: str = "") -> tuple[WebhookEndpoint, str]:
    """A new endpoint and its secret (returned here only)."""
    url = check_url(url, settings)
    types = check_types(event_types)
    count = len((await session.exec(select(WebhookEndpoint.id).where(
        WebhookEndpoint.workspace_id == workspace_id).limit(MAX_ENDPOINTS + 1))).all())
    if count >= MAX_ENDPOINTS:
        raise WebhookError(f"a workspace has at most {MAX_ENDPOINTS} webhook endpoints")
    if brand_ids:
        found = set((await session.exec(select(Brand.id).where(Brand.workspace_id == workspace_id,
                                                               col(Brand.id).in_(brand_ids)))).all())
        if found != set(brand_ids):
            raise WebhookError(f"brands not in the workspace: {', '.join(sorted(set(brand_ids) - found))}")
    secret = new_secret()
    endpoint = WebhookEndpoint(id=new_id("whe"), workspace_id=workspace_id, url=url,
                               description=description.strip()[:200], event_types=types,
                               brand_ids=sorted(set(brand_ids)) if brand_ids else None,
                               secret=vault.seal_text(settings, secret), created_at=now, updated_at=now)
    session.add(endpoint)
    await session.flush()
    return endpoint, secret


async def get(session: AsyncSession, endpoint_id: str, workspace_id: str | None = None) -> WebhookEndpoint:
    endpoint = await session.get(WebhookEndpoint, endpoint_id)
    if endpoint is None or (workspace_id is not None and endpoint.workspace_id != workspace_id):
        raise WebhookError(f"no webhook endpoint {endpoint_id[:60]}")
    return endpoint


async def list_endpoints(session: AsyncSession, workspace_id: str | None = None) -> list[WebhookEndpoint]:
    query = select(WebhookEndpoint)
    if workspace_id is not None:
        query = query.where(WebhookEndpoint.workspace_id == workspace_id)
    return list((await session.exec(query.order_by(col(WebhookEndpoint.created_at), WebhookEndpoint.id)
                                    .limit(1000))).all())


async def delete(session: AsyncSession, endpoint_id: str, workspace_id: str | None = None) -> None:
    """The endpoint, its messages and its log."""
    from sqlalchemy import delete as sql_delete

    endpoint = await get(session, endpoint_id, workspace_id)
    await session.exec(sql_delete(WebhookAttempt).where(col(WebhookAttempt.endpoint_id) == endpoint.id))
    await session.exec(sql_delete(WebhookMessage).where(col(WebhookMessage.endpoint_id) == endpoint.id))
    await session.delete(endpoint)
    await session.flush()


async def rotate_secret(session: AsyncSession, now: datetime, settings: Settings, endpoint_id: str,
                        workspace_id: str | None = None) -> tuple[WebhookEndpoint, str]:
    """A new secret (returned here only); the current one keeps signing too until now + ROTATION_OVERLAP."""
    endpoint = await get(session, endpoint_id, workspace_id)
    secret = new_secret()
    endpoint.previous_secret, endpoint.previous_until = endpoint.secret, now + ROTATION_OVERLAP
    endpoint.secret, endpoint.updated_at = vault.seal_text(settings, secret), now
    await session.flush()
    return endpoint, secret


async def enable(session: AsyncSession, now: datetime, endpoint_id: str, workspace_id: str | None = None) -> None:
    endpoint = await get(session, endpoint_id, workspace_id)
    endpoint.enabled, endpoint.disabled_reason, endpoint.updated_at = True, None, now
    await session.flush()


def signing_secrets(settings: Settings, endpoint: WebhookEndpoint, now: datetime) -> list[str]:
    """The secrets that sign a message now: the current one, and the previous one within the overlap."""
    out = [vault.open_text(settings, endpoint.secret)]
    if endpoint.previous_secret and endpoint.previous_until and now < endpoint.previous_until:
        out.append(vault.open_text(settings, endpoint.previous_secret))
    return out


def sign(secrets: list[str], message_id: str, at: datetime, body: str) -> str:
    """The `webhook-signature` header: one space-separated `v1,<base64>` per secret (Standard Webhooks)."""
    return " ".join(Webhook(secret).sign(message_id, at, body) for secret in secrets)


async def resend(session: AsyncSession, now: datetime, message_id: str, workspace_id: str | None = None) -> WebhookMessage:
    """Deliver a message again (same `webhook-id`), now, with a fresh round of retries."""
    message = await session.get(WebhookMessage, message_id)
    if message is None or (workspace_id is not None and message.workspace_id != workspace_id):
        raise WebhookError(f"no webhook message {message_id[:60]}")
    if message.status == "sending":
        raise WebhookError("this message is being delivered right now")
    message.status, message.attempts, message.next_attempt_at = "pending", 0, now
    message.last_error, message.updated_at = None, now
    await session.flush()
    return message


async def delivery_log(session: AsyncSession, endpoint_id: str, limit: int = LOG_LIMIT) -> list[dict[str, Any]]:
    """The endpoint's latest messages, newest first, each with its attempts (response codes, errors)."""
    messages = (await session.exec(select(WebhookMessage).where(WebhookMessage.endpoint_id == endpoint_id)
                                   .order_by(col(WebhookMessage.id).desc()).limit(limit))).all()
    ids = [m.id for m in messages]
    attempts: dict[str, list[WebhookAttempt]] = {}
    if ids:
        for a in (await session.exec(select(WebhookAttempt).where(col(WebhookAttempt.message_id).in_(ids))
                                     .order_by(WebhookAttempt.id))).all():
            attempts.setdefault(a.message_id, []).append(a)
    return [{"id": m.id, "event_type": m.event_type, "event_id": m.event_id, "status": m.status,
             "attempts": m.attempts, "created_at": m.created_at, "delivered_at": m.delivered_at,
             "next_attempt_at": m.next_attempt_at if m.status == "pending" else None,
             "last_status_code": m.last_status_code, "last_error": m.last_error,
             "log": [{"at": a.created_at, "status_code": a.status_code, "error": a.error,
                      "duration_ms": a.duration_ms} for a in attempts.get(m.id, [])[-10:]]}
            for m in messages]

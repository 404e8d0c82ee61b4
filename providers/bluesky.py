"""Bluesky adapter: AT Protocol XRPC calls to the account's PDS (https://bsky.social, or any self-hosted PDS).

Sessions. Credentials hold the service URL, handle, DID, app password and the session's access and refresh JWTs
with their expiry. Every call reuses the access JWT; when the PDS refuses it (`InvalidToken` / `ExpiredToken`,
answered as 400) the adapter refreshes ONCE with the refresh JWT (`refreshSession`) and repeats the call; only
when the refresh is refused does it create a new session with the app password, because Bluesky allows about 30
`createSession` calls per 5 minutes. New tokens go through `Account.update_credentials`, so the caller stores
them; a refused app password is `reauth_required`.

Exactly once. Each post is written with `putRecord` under a record key derived from the target's idempotency
token (`bluesky_text.record_key`), so a retry rewrites the same record instead of posting twice, and `find_post`
is `getRecord` on that key. Thread parts are replies under keys derived from the post's key and their index.

Metrics. Likes, reposts and replies are counted by an AppView, not by the PDS that holds the records. The adapter
asks the account's own PDS for `app.bsky.feed.getPosts` with the `atproto-proxy` header naming the Bluesky AppView
(`did:web:api.bsky.app#bsky_appview`), as https://docs.bsky.app/docs/advanced-guides/api-directory describes for
authenticated app.bsky.* requests: the same session and address as every other call, and a self-hosted PDS reaches
the AppView it is configured for. A PDS that cannot proxy is a clear `unavailable` outcome, not a refused permission.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import httpx

from providers.addresses import AddressRefused
from providers.base import Account, CheckResult, Connection, Options, PostRequest, PostResult, ProviderError
from providers.bluesky_text import facet, find_spans, jwt_expiry, record_cid, record_key
from providers.http import DEFAULT_TIMEOUT, call, json_body, new_client, ssl_context, status_error
from providers.metrics import SUPPORT, PostMetrics, from_raw
from schemas.platforms.data import BLUESKY

NETWORK = "Bluesky"
DEFAULT_SERVICE = "https://bsky.social"
APP_URL = "https://bsky.app"
POST = "app.bsky.feed.post"
# The Bluesky AppView's service (DID and service ID) a PDS proxies app.bsky.* reads to
# (https://docs.bsky.app/docs/advanced-guides/api-directory, "Authenticated Bluesky app requests").
APPVIEW = "did:web:api.bsky.app#bsky_appview"
# A postView's counts (lexicons/app/bsky/feed/defs.json#postView) -> the common names; quoteCount stays raw.
COUNTS = {"likeCount": "likes", "repostCount": "reposts", "replyCount": "replies", "bookmarkCount": "saves"}
# XRPC errors of a PDS that cannot proxy to the AppView (no service configured, the AppView's DID unresolvable,
# the AppView unreachable or not implementing the method): not about the account.
PROXY_ERRORS = {"InvalidRequest", "MethodNotImplemented", "UpstreamFailure", "UpstreamTimeout", "InternalServerError"}
APPVIEW_REASON = ("The account's Bluesky server (PDS) could not reach the Bluesky AppView that counts likes and "
                  "reposts; metrics are read again later.")
SESSION_ERRORS = {"InvalidToken", "ExpiredToken", "AuthenticationRequired"}
ACCOUNT_ERRORS = {"AccountTakedown", "AccountDeactivated", "AccountSuspended"}
REFRESH_AHEAD = 15 * 60  # seconds: refresh_credentials renews an access JWT that expires sooner than this
REFRESH_JWT_AHEAD = 24 * 3600  # ... or a refresh JWT that expires within a day
IN_CALL_AHEAD = 60  # a call renews first when the access JWT has less than this left
MAX_THREAD_PARTS = BLUESKY.thread.max_parts if BLUESKY.thread else 24
# Upload limits from the platform registry (one source of truth with preflight).
IMAGE_MAX = BLUESKY.post_type("BS_IMAGE").image.max_size  # pyright: ignore[reportOptionalMemberAccess]  # the Bluesky descriptor has these post types (a missing one fails at import)
VIDEO_MAX = BLUESKY.post_type("BS_VIDEO").video.max_size  # pyright: ignore[reportOptionalMemberAccess]  # the Bluesky descriptor has these post types (a missing one fails at import)
_CODE = re.compile(r"^[A-Za-z]{1,64}$")
_POST_URI = re.compile(r"at://([^/]{1,300})/app\.bsky\.feed\.post/([A-Za-z0-9._:~-]{1,512})")
# The validation sentences a PDS answers for an over-long field, in the current form ("grapheme too big (maximum
# 300, got 301) at $.record.text") and the older one ("Record/text must not be longer than 300 graphemes").
_TOO_BIG = re.compile(r"\b(grapheme|string|bytes) too big \(maximum (\d{1,9}), got \d{1,12}\) at "
                      r"\$\.record(?:\.\w{1,40}|\[\d{1,4}\]){0,8}\.(\w{1,40})(?![\w.\[])")
_TOO_LONG = re.compile(r"(?:^|[/ ])(\w{1,40}) must not be longer than (\d{1,9}) (graphemes|characters|bytes)")
_UNITS = {"grapheme": "graphemes", "string": "bytes", "bytes": "bytes"}
_FIELD_NAMES = {"text": "text", "alt": "alt text", "tag": "a hashtag", "uri": "a link"}
REAUTH_REASON = "Bluesky no longer accepts the account's app password; reconnect the account."
SESSION_REASON = "Bluesky no longer accepts the account's session; reconnect the account."


class BlueskyError(ProviderError):
    """A ProviderError that remembers the XRPC error code (a bounded identifier, never the message)."""

    def __init__(self, kind: str, message: str, *, code: str | None = None, **kwargs: Any) -> None:
        super().__init__(kind, message, **kwargs)
        self.code = code


def _error_code(response: httpx.Response) -> tuple[str | None, str]:
    try:
        body = response.json()
    except ValueError:
        return None, ""
    if not isinstance(body, dict):
        return None, ""
    code = body.get("error")
    message = body.get("message")
    return (code if isinstance(code, str) and _CODE.match(code) else None,
            message[:2000] if isinstance(message, str) else "")


def refusal_reason(message: str) -> str:
    """A client-safe sentence for a refused record, from our words and the bounded facts of the PDS's message."""
    found = _TOO_BIG.search(message)
    if found:
        field, limit, unit = found.group(3), found.group(2), _UNITS[found.group(1)]
    elif found := _TOO_LONG.search(message):
        field, limit, unit = found.group(1), found.group(2), found.group(3)
    else:
        return "Bluesky refused the post."
    return f"Bluesky refused the post: {_FIELD_NAMES.get(field.lower(), 'a field')} is longer than {int(limit)} {unit}."


def classify(response: httpx.Response) -> ProviderError | None:
    """Bluesky's XRPC errors into the shared kinds; the log message names status, code and path only."""
    code, message = _error_code(response)
    status = response.status_code
    where = f"{NETWORK} answered {status} {code or ''} to {response.request.method} {response.request.url.path}"
    if code in SESSION_ERRORS or status == 401:
        return BlueskyError("reauth_required", where, code=code, safe_reason=SESSION_REASON)
    if code in ACCOUNT_ERRORS:
        return BlueskyError("reauth_required", where, code=code,
                            safe_reason="Bluesky has suspended or deactivated the account.")
    if status == 413 or code in ("BlobTooLarge", "PayloadTooLarge"):
        return BlueskyError("rejected", where, code=code,
                            safe_reason="Bluesky refused the post: a file is larger than its upload limit.")
    if status == 429 or status >= 500:
        error = status_error(response, NETWORK)
        return BlueskyError(error.kind, where, code=code, retry_after=error.retry_after)
    if code == "RecordNotFound":
        return BlueskyError("rejected", where, code=code, safe_reason="Bluesky has no such post.")
    return BlueskyError("rejected", where, code=code, safe_reason=refusal_reason(message))


def _iso(when: datetime) -> str:
    return when.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _reply(did: str, root_key: str, parent_key: str, cids: dict[str, str]) -> dict[str, Any]:
    def ref(rkey: str) -> dict[str, str]:
        return {"uri": f"at://{did}/{POST}/{rkey}", "cid": cids[rkey]}
    return {"root": ref(root_key), "parent": ref(parent_key)}


def _link_replies(did: str, built: list[tuple[str, dict[str, Any]]]) -> dict[str, str]:
    """Set each part's reply refs (the first post and the part before) from CIDs computed locally, in thread
    order; the CIDs by record key."""
    cids: dict[str, str] = {}
    for index, (rkey, record) in enumerate(built):
        if index:
            record["reply"] = _reply(did, built[0][0], built[index - 1][0], cids)
        cids[rkey] = record_cid(record)
    return cids


def permalink(handle_or_did: str, rkey: str) -> str:
    return f"{APP_URL}/profile/{handle_or_did}/post/{rkey}"


def normalise_service(service: str | None) -> str:
    """The PDS base URL: http(s), no credentials, no path beyond '/'; refused otherwise."""
    service = (service or DEFAULT_SERVICE).strip().rstrip("/")
    parts = urlsplit(service)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.username or parts.password \
            or parts.path or parts.query or parts.fragment or len(service) > 300:
        raise ProviderError("rejected", "invalid Bluesky service URL",
                            safe_reason="The Bluesky service must be a URL like https://bsky.social.")
    return service


def _session_credentials(base: dict[str, Any], answer: Any) -> dict[str, Any]:
    """Credentials updated from a createSession / refreshSession answer."""
    if not isinstance(answer, dict) or not all(isinstance(answer.get(k), str) for k in
                                               ("accessJwt", "refreshJwt", "did", "handle")):
        raise ProviderError("malformed", f"{NETWORK} answered a session without tokens")
    return {**base, "did": answer["did"], "handle": answer["handle"],
            "access_jwt": answer["accessJwt"], "refresh_jwt": answer["refreshJwt"],
            "access_expires_at": jwt_expiry(answer["accessJwt"]),
            "refresh_expires_at": jwt_expiry(answer["refreshJwt"]),
            # The vault keeps `expires_at` readable, so the token tick sees a refresh is due without decrypting.
            "expires_at": _expires_at(jwt_expiry(answer["accessJwt"]))}


def _expires_at(epoch: int | None) -> str | None:
    return _iso(datetime.fromtimestamp(epoch, UTC)) if isinstance(epoch, int) else None


async def _create_session(client: httpx.AsyncClient, identifier: str, app_password: str) -> Any:
    response = await call(client, "POST", "/xrpc/com.atproto.server.createSession", network=NETWORK,
                          classify=classify, json={"identifier": identifier, "password": app_password})
    return json_body(response, NETWORK)


async def connect(service: str | None, handle: str, app_password: str, *,
                  transport: httpx.AsyncBaseTransport | None = None) -> Connection:
    """Verify a handle and app password by creating a session; the Connection holds the session to store.
    A wrong password, an unknown handle or an unreachable service raise a ProviderError with a clear
    safe_reason (never the password)."""
    service = normalise_service(service)
    identifier = (handle or "").strip().removeprefix("@")
    if not identifier or len(identifier) > 253 or not app_password or len(app_password) > 200:
        raise ProviderError("rejected", "missing handle or app password",
                            safe_reason="Give the account's handle and an app password.")
    async with new_client(service, transport=transport) as client:
        try:
            answer = await _create_session(client, identifier, app_password)
        except ProviderError as exc:
            if exc.kind == "reauth_required" and getattr(exc, "code", None) not in ACCOUNT_ERRORS:
                raise ProviderError("rejected", exc.message, safe_reason=(
                    f"{NETWORK} refused the handle or app password for {identifier}; check both (create an app "
                    "password under Settings → Privacy and security → App passwords).")) from None
            if exc.kind in ("transient", "unavailable"):
                raise ProviderError(exc.kind, exc.message, retry_after=exc.retry_after,
                                    safe_reason=f"Could not reach the Bluesky service at {service}.") from None
            raise
    credentials = _session_credentials({"service": service, "app_password": app_password}, answer)
    return Connection(provider_account_id=credentials["did"], username=credentials["handle"],
                      display_name=credentials["handle"], credentials=credentials, state={"service": service})


class _Session:
    """One account's XRPC calls over one client: the stored session reused, renewed at most once per call."""

    def __init__(self, account: Account, client: httpx.AsyncClient) -> None:
        self.account = account
        self.client = client

    @property
    def credentials(self) -> dict[str, Any]:
        return self.account.credentials or {}

    @property
    def did(self) -> str:
        did = self.credentials.get("did") or self.account.provider_account_id
        if not did:
            raise ProviderError("reauth_required", "Bluesky account without a DID", safe_reason=REAUTH_REASON)
        return did

    @property
    def handle(self) -> str:
        return self.credentials.get("handle") or self.did

    async def renew(self) -> None:
        """refreshSession with the refresh JWT; createSession with the app password only if that is refused."""
        creds = self.credentials
        refresh_jwt = creds.get("refresh_jwt")
        if refresh_jwt:
            try:
                response = await call(self.client, "POST", "/xrpc/com.atproto.server.refreshSession",
                                      network=NETWORK, classify=classify,
                                      headers={"Authorization": f"Bearer {refresh_jwt}"})
                self.account.update_credentials(_session_credentials(creds, json_body(response, NETWORK)))
                return
            except ProviderError as exc:
                if exc.kind != "reauth_required" or getattr(exc, "code", None) in ACCOUNT_ERRORS \
                        or isinstance(exc, AddressRefused):  # the PDS's address, not the session: say so
                    raise
        identifier = creds.get("did") or creds.get("handle") or self.account.provider_account_id
        app_password = creds.get("app_password")
        if not identifier or not app_password:
            raise ProviderError("reauth_required", "Bluesky session refused and no app password stored",
                                safe_reason=REAUTH_REASON)
        try:
            answer = await _create_session(self.client, identifier, app_password)
        except ProviderError as exc:
            if exc.kind == "reauth_required" and not isinstance(exc, AddressRefused):
                raise ProviderError("reauth_required", exc.message, safe_reason=exc.safe_reason
                                    if getattr(exc, "code", None) in ACCOUNT_ERRORS else REAUTH_REASON) from None
            raise
        self.account.update_credentials(_session_credentials(creds, answer))

    async def xrpc(self, method: str, nsid: str, **kwargs: Any) -> Any:
        """An authenticated XRPC call's JSON answer; a refused session is renewed once and the call repeated."""
        if not self.credentials.get("access_jwt"):
            await self.renew()
        else:
            expires = self.credentials.get("access_expires_at")
            if isinstance(expires, int) and expires - datetime.now(UTC).timestamp() < IN_CALL_AHEAD:
                await self.renew()
        headers = dict(kwargs.pop("headers", {}))
        for attempt in range(2):
            headers["Authorization"] = f"Bearer {self.credentials.get('access_jwt')}"
            try:
                response = await call(self.client, method, f"/xrpc/{nsid}", network=NETWORK, classify=classify,
                                      headers=headers, **kwargs)
            except BlueskyError as exc:
                if attempt == 0 and exc.kind == "reauth_required" and exc.code not in ACCOUNT_ERRORS:
                    await self.renew()
                    continue
                raise
            return json_body(response, NETWORK) if response.content else {}
        raise AssertionError("unreachable")

    async def get_post(self, rkey: str) -> dict[str, Any] | None:
        """The post record under `rkey` in this account's repo ({uri, cid, value}), or None."""
        try:
            response = await call(self.client, "GET", "/xrpc/com.atproto.repo.getRecord", network=NETWORK,
                                  classify=classify, params={"repo": self.did, "collection": POST, "rkey": rkey})
        except BlueskyError as exc:
            if exc.code == "RecordNotFound":
                return None
            raise
        found = json_body(response, NETWORK)
        if not isinstance(found, dict) or not isinstance(found.get("uri"), str):
            raise ProviderError("malformed", f"{NETWORK} answered a record without a URI")
        return found


# An app password session carries no OAuth scopes (it may do everything but direct messages,
# https://docs.bsky.app/docs/advanced-guides/oauth-client#app-passwords): nothing to compare.
NEEDED_SCOPES: dict[str, tuple[str, ...]] = {"post_metrics": ()}


class BlueskyProvider:
    name = "bluesky"
    metrics_fields = SUPPORT["bluesky"].fields
    refresh_ahead = timedelta(seconds=REFRESH_AHEAD)  # access JWTs (about 2 hours) renewed this far ahead
    needed_scopes = NEEDED_SCOPES

    def __init__(self, *, transport: httpx.AsyncBaseTransport | None = None,
                 media_transport: httpx.AsyncBaseTransport | None = None,
                 timeout: httpx.Timeout = DEFAULT_TIMEOUT) -> None:
        self._transport = transport  # tests and proxies; None is the network
        self._media_transport = media_transport
        self._timeout = timeout

    @asynccontextmanager
    async def _session(self, account: Account) -> AsyncIterator[_Session]:
        creds = account.credentials or {}
        service = normalise_service(creds.get("service") or account.state.get("service"))
        async with new_client(service, transport=self._transport, timeout=self._timeout) as client:
            yield _Session(account, client)

    async def check(self, account: Account) -> CheckResult:
        """`com.atproto.server.getSession` with the stored access JWT (https://docs.bsky.app/docs/api/com-atproto-server-get-session):
        the session works and whose it is. Read-only: it never renews the session (a renewal rotates the refresh JWT,
        which the caller would have to store); an expired access JWT is reported with the session's lifetime."""
        creds = account.credentials or {}
        result = CheckResult(scopes_source="not_applicable", refreshable=bool(creds.get("app_password")),
                             expires_at=_expires_at(creds.get("refresh_expires_at")) or creds.get("expires_at"))
        access = creds.get("access_jwt")
        if not access:
            result.notes.append("No session is stored; the adapter signs in with the app password on its next call.")
            return result
        try:
            service = normalise_service(creds.get("service") or account.state.get("service"))
        except ProviderError as exc:
            result.failed(exc)
            return result
        async with new_client(service, transport=self._transport, timeout=self._timeout) as client:
            try:
                answer = json_body(await call(client, "GET", "/xrpc/com.atproto.server.getSession", network=NETWORK,
                                              classify=classify, headers={"Authorization": f"Bearer {access}"}),
                                   NETWORK)
            except BlueskyError as exc:
                if exc.kind == "reauth_required" and exc.code == "ExpiredToken" and result.refreshable:
                    result.notes.append("The access JWT expired; the adapter renews the session on its next call.")
                    return result  # token_valid stays unknown: only a renewal (a write) would tell
                result.failed(exc)
                return result
            except ProviderError as exc:
                result.failed(exc)
                return result
        if not isinstance(answer, dict) or not answer.get("did"):
            result.failed(ProviderError("malformed", f"{NETWORK} getSession answered without a DID"))
            return result
        result.token_valid = True
        result.reachable = answer.get("did") == (creds.get("did") or account.provider_account_id) \
            and answer.get("active", True) is not False
        result.account = f"@{str(answer.get('handle') or answer['did'])[:200]}"
        if answer.get("active") is False:
            result.notes.append(f"Bluesky reports the account as {str(answer.get('status') or 'inactive')[:30]}.")
        return result

    async def dynamic_options(self, account: Account, kind: str, *, refresh: bool) -> Options:
        raise ProviderError("malformed", f"Bluesky has no dynamic options of kind {kind[:40]}")

    # --- publish -----------------------------------------------------------------------------------------

    async def publish(self, account: Account, post: PostRequest) -> PostResult:
        if len(post.thread_parts) > MAX_THREAD_PARTS:
            raise ProviderError("rejected", "too many thread parts", safe_reason=(
                f"Bluesky refused the post: a thread has at most {MAX_THREAD_PARTS} parts after the first."))
        root_key = record_key(post.idempotency_token)
        posts = [(post.text, post.media, _alt_texts(post.settings, post.media))]
        posts += [(str(part.get("text") or ""), list(part.get("media") or []), _alt_texts(part, part.get("media")))
                  for part in post.thread_parts]
        async with self._session(account) as session:
            dids: dict[str, str | None] = {}
            now = datetime.now(UTC)
            built: list[tuple[str, dict[str, Any]]] = []
            for index, (text, media, alts) in enumerate(posts):
                # Media are uploaded before any record is written; parts get 1 ms apart, in thread order.
                record: dict[str, Any] = {"$type": POST, "text": text,
                                          "createdAt": _iso(now + timedelta(milliseconds=index))}
                facets = await self._facets(session, text, dids)
                if facets:
                    record["facets"] = facets
                embed = await self._embed(session, media, alts)
                if embed:
                    record["embed"] = embed
                built.append((root_key if index == 0 else record_key(root_key, index), record))
            expected = _link_replies(session.did, built)
            # The last part first, the first post last: the first post exists only once the whole thread does.
            written = {rkey: await self._put(session, rkey, record) for rkey, record in reversed(built)}
            if written != expected:  # the PDS encoded a record differently: relink the replies to what it wrote
                for index in range(1, len(built)):
                    rkey, record = built[index]
                    record["reply"] = _reply(session.did, root_key, built[index - 1][0], written)
                    written[rkey] = await self._put(session, rkey, record)
            return PostResult(f"at://{session.did}/{POST}/{root_key}", permalink(session.handle, root_key))

    async def _put(self, session: _Session, rkey: str, record: dict[str, Any]) -> str:
        written = await session.xrpc("POST", "com.atproto.repo.putRecord", json={
            "repo": session.did, "collection": POST, "rkey": rkey, "record": record})
        if not isinstance(written, dict) or not isinstance(written.get("cid"), str):
            raise ProviderError("malformed", f"{NETWORK} answered putRecord without a cid")
        return written["cid"]

    async def _facets(self, session: _Session, text: str, dids: dict[str, str | None]) -> list[dict[str, Any]]:
        out = []
        for span in find_spans(text):
            did = None
            if span.kind == "mention":
                if span.value not in dids:
                    dids[span.value] = await _resolve_handle(session, span.value)
                did = dids[span.value]
                if did is None:
                    continue  # an unknown handle stays plain text, as the Bluesky app does
            out.append(facet(span, did))
        return out

    async def _embed(self, session: _Session, media: list[dict[str, Any]], alts: list[str]) -> dict[str, Any] | None:
        if not media:
            return None
        videos = [m for m in media if str(m.get("content_type") or "").startswith("video/")]
        if videos:
            if len(media) != 1:
                raise ProviderError("rejected", "video mixed with other media", safe_reason=(
                    "Bluesky refused the post: a post takes one video, or up to 4 images."))
            blob = await self._upload(session, media[0], VIDEO_MAX, "video")
            embed: dict[str, Any] = {"$type": "app.bsky.embed.video", "video": blob}
            if alts[0]:
                embed["alt"] = alts[0]
            if _aspect(media[0]):
                embed["aspectRatio"] = _aspect(media[0])
            return embed
        if len(media) > 4:
            raise ProviderError("rejected", "more than 4 images",
                                safe_reason="Bluesky refused the post: a post takes at most 4 images.")
        images = []
        for item, alt in zip(media, alts, strict=True):
            image: dict[str, Any] = {"image": await self._upload(session, item, IMAGE_MAX, "image"), "alt": alt}
            if _aspect(item):
                image["aspectRatio"] = _aspect(item)
            images.append(image)
        return {"$type": "app.bsky.embed.images", "images": images}

    async def _upload(self, session: _Session, item: dict[str, Any], limit: int | None, kind: str) -> Any:
        data = await self._fetch(item, limit, kind)
        content_type = str(item.get("content_type") or "application/octet-stream")
        answer = await session.xrpc("POST", "com.atproto.repo.uploadBlob", content=data,
                                    headers={"Content-Type": content_type})
        blob = answer.get("blob") if isinstance(answer, dict) else None
        if not isinstance(blob, dict):
            raise ProviderError("malformed", f"{NETWORK} answered uploadBlob without a blob")
        return blob

    async def _fetch(self, item: dict[str, Any], limit: int | None, kind: str) -> bytes:
        """The media file from our own media URL, read no further than the limit."""
        url = str(item.get("url") or "")
        if not url:
            raise ProviderError("rejected", "media without a URL",
                                safe_reason="A media file of this post has no URL; nothing was sent.")
        chunks: list[bytes] = []
        size = 0
        try:
            async with httpx.AsyncClient(timeout=self._timeout, transport=self._media_transport,
                                         verify=ssl_context(), follow_redirects=True) as client, \
                    client.stream("GET", url) as response:
                if not response.is_success:
                    raise ProviderError("transient", f"media answered {response.status_code}",
                                        safe_reason="A media file of this post could not be read; will retry.")
                async for chunk in response.aiter_bytes():
                    size += len(chunk)
                    if limit is not None and size > limit:
                        raise ProviderError("rejected", f"{kind} over {limit} bytes", safe_reason=(
                            f"Bluesky refused the post: an {kind} is larger than {limit:,} bytes."))
                    chunks.append(chunk)
        except httpx.HTTPError as exc:
            raise ProviderError("transient", f"media could not be read ({type(exc).__name__})",
                                safe_reason="A media file of this post could not be read; will retry.") from None
        return b"".join(chunks)

    # --- find, delete, refresh -------------------------------------------------------------------------------

    async def find_post(self, account: Account, idempotency_token: str) -> PostResult | None:
        rkey = record_key(idempotency_token)
        async with self._session(account) as session:
            found = await session.get_post(rkey)
            return PostResult(found["uri"], permalink(session.handle, rkey)) if found else None

    async def delete_post(self, account: Account, publish_id: str) -> None:
        """Delete the post (an at:// URI) and the thread parts written under its derived keys, last first."""
        match = _POST_URI.fullmatch(publish_id or "")
        if match is None:
            raise ProviderError("rejected", "not a Bluesky post URI", safe_reason="That is not a Bluesky post.")
        root_key = match.group(2)
        async with self._session(account) as session:
            if match.group(1) != session.did:
                raise ProviderError("rejected", "post of another repository",
                                    safe_reason="That post belongs to another Bluesky account.")
            keys = [root_key]
            for index in range(1, MAX_THREAD_PARTS + 1):
                key = record_key(root_key, index)
                if await session.get_post(key) is None:
                    break
                keys.append(key)
            for key in reversed(keys):
                await session.xrpc("POST", "com.atproto.repo.deleteRecord",
                                   json={"repo": session.did, "collection": POST, "rkey": key})

    async def post_metrics(self, account: Account, publish_id: str, *, published_at: datetime,
                           now: datetime) -> PostMetrics:
        """`app.bsky.feed.getPosts` (https://docs.bsky.app/docs/api/app-bsky-feed-get-posts) for the post's at://
        URI through the account's PDS to the AppView: the postView's likeCount, repostCount, replyCount and
        bookmarkCount (quoteCount kept raw). No postView: the record is looked up in the repo, so a post the AppView
        has not indexed yet is tried again later and only a deleted one is `gone`."""
        match = _POST_URI.fullmatch(publish_id or "")
        if match is None:  # not a refusal of the account (which would stop its readings): a bad stored ID
            raise ProviderError("malformed", "not a Bluesky post URI")
        async with self._session(account) as session:
            try:
                answer = await session.xrpc("GET", "app.bsky.feed.getPosts", params={"uris": publish_id},
                                            headers={"atproto-proxy": APPVIEW})
            except BlueskyError as exc:
                if exc.code in PROXY_ERRORS or exc.kind in ("transient", "unavailable"):
                    raise ProviderError("unavailable", exc.message, retry_after=exc.retry_after,
                                        safe_reason=APPVIEW_REASON) from None
                raise
            posts = answer.get("posts") if isinstance(answer, dict) else None
            if not isinstance(posts, list):
                raise ProviderError("malformed", f"{NETWORK} getPosts answered without posts")
            view = next((p for p in posts if isinstance(p, dict) and p.get("uri") == publish_id), None)
            if view is None:
                if match.group(1) == session.did and await session.get_post(match.group(2)) is None:
                    return PostMetrics(gone=True)
                raise ProviderError("transient", "the AppView has no view of the post yet",
                                    safe_reason="The Bluesky AppView has not indexed the post yet; metrics are read "
                                                "again later.")
        return from_raw({k: view.get(k) for k in (*COUNTS, "quoteCount")}, COUNTS)

    async def refresh_credentials(self, account: Account, now: datetime) -> dict[str, Any] | None:
        """A renewed session when the access JWT expires within REFRESH_AHEAD (or the refresh JWT within a day),
        else None. A refused refresh falls back to the app password; a refused app password is reauth_required."""
        creds = account.credentials or {}
        access = creds.get("access_expires_at") or jwt_expiry(creds.get("access_jwt"))
        refresh = creds.get("refresh_expires_at") or jwt_expiry(creds.get("refresh_jwt"))
        at = now.timestamp()
        if isinstance(access, int) and access - at > REFRESH_AHEAD \
                and (not isinstance(refresh, int) or refresh - at > REFRESH_JWT_AHEAD):
            return None
        async with self._session(account) as session:
            await session.renew()
        return account.credentials


async def _resolve_handle(session: _Session, handle: str) -> str | None:
    try:
        response = await call(session.client, "GET", "/xrpc/com.atproto.identity.resolveHandle", network=NETWORK,
                              classify=classify, params={"handle": handle})
    except BlueskyError as exc:
        if exc.kind == "rejected":
            return None
        raise
    did = json_body(response, NETWORK).get("did")
    return did if isinstance(did, str) and did.startswith("did:") else None


def _alt_texts(settings: dict[str, Any], media: list[dict[str, Any]] | None) -> list[str]:
    """Alt text per media item: `alt_text` is keyed by media ID, and `media` follows `media_ids` in order."""
    media = media or []
    ids = list(settings.get("media_ids") or [])
    alt = settings.get("alt_text") or {}
    out = []
    for index, item in enumerate(media):
        media_id = item.get("id") or (ids[index] if index < len(ids) else None)
        text = alt.get(media_id) if isinstance(alt, dict) and media_id else None
        out.append(str(text)[:2000] if text else "")
    return out


def _aspect(item: dict[str, Any]) -> dict[str, int] | None:
    width, height = item.get("width"), item.get("height")
    if isinstance(width, int) and isinstance(height, int) and width > 0 and height > 0:
        return {"width": width, "height": height}
    return None

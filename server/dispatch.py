"""The request path shared by REST and MCP, read top-down in `Dispatcher._invoke`:

authenticate -> rate limit -> brand visibility -> scopes -> role -> validate (pydantic) -> idempotency ->
handler (one transaction) -> envelope. Adapters only translate: REST turns path, query and body into one
argument mapping (query strings coerced by types derived once at start-up), MCP passes the tool arguments as
they are. What an adapter finds wrong with the arguments (an unknown query parameter, a query value that is
not a number) is handed in as `refused` and reported at the validation step, so one call gives one answer on
both surfaces: a keyless bad request is 401, not 400. Every failure leaves as the spec's error envelope.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError
from sqlalchemy import bindparam, update
from sqlalchemy.exc import OperationalError
from sqlmodel import col, select

from schemas.errors import ApiError, issue
from schemas.ids import new_id
from server import logs, metrics
from server.ratelimit import RateLimiter, SharedLimiter, retry_after
from storage import idempotency
from storage.statements import Query
from storage.tables.accounts import ApiKey
from storage.tables.brands import Brand
from tools import catalogue
from tools.endpoint import Call, Endpoint, Reply, field_locations
from tools.retention import idempotency_cutoff
from tools.runtime import Runtime
from tools.services.auth import Caller, CallerCache, check_token
from tools.tool_schemas import envelope_schema, float_free

if TYPE_CHECKING:  # jsonschema is imported only where responses are checked (tests, development)
    from jsonschema import Draft202012Validator

log = logging.getLogger("socialpub.dispatch")

IDEMPOTENCY_KEY_RE = re.compile(r"^[\x21-\x7e]{1,255}$")

# pydantic error types -> our issue codes
_ISSUE_CODES = {
    "missing": "REQUIRED",
    "extra_forbidden": "UNKNOWN_FIELD",
    "string_too_long": "TOO_LONG",
    "string_too_short": "TOO_SHORT",
    "too_long": "TOO_MANY_ITEMS",
    "too_short": "TOO_FEW_ITEMS",
    "literal_error": "NOT_ALLOWED",
    "enum": "NOT_ALLOWED",
    "string_pattern_mismatch": "INVALID_FORMAT",
    "string_unicode": "INVALID_CHARACTER",  # pydantic-core refuses a lone surrogate in a constrained string
    "greater_than_equal": "OUT_OF_RANGE",
    "less_than_equal": "OUT_OF_RANGE",
    "greater_than": "OUT_OF_RANGE",
    "less_than": "OUT_OF_RANGE",
}


# Built once: every call on a brand's path reads it (building a statement costs more than running it).
_VISIBLE_BRAND = select(Brand).where(Brand.id == bindparam("brand_id"), Brand.workspace_id == bindparam("workspace_id"))
_VISIBLE_BRAND_ID = Query(select(Brand.id).where(Brand.id == bindparam("brand_id"),
                                                    Brand.workspace_id == bindparam("workspace_id")))


def new_request_id() -> str:
    return new_id("req")


@dataclass
class Outcome:
    status: int
    body: dict[str, Any] | None  # None only for 304
    headers: dict[str, str] = field(default_factory=dict)
    replayed: bool = False
    plain: bool = False  # the data was dumped from a float-free response model: REST may encode it with orjson

    @property
    def ok(self) -> bool:
        return self.status < 400


def field_path(loc: tuple[Any, ...]) -> str:
    out = "$"
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def issues_from(exc: ValidationError, query_fields: frozenset[str] = frozenset()) -> list[dict[str, Any]]:
    out = []
    for err in exc.errors(include_input=False, include_url=False):
        loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-")))
        ctx: dict[str, Any] = err.get("ctx") or {}
        code = ctx.get("issue_code") or _ISSUE_CODES.get(err["type"])
        if code is None and err["type"].endswith("_type") and loc and loc[0] in query_fields:
            code = "INVALID_TYPE"  # a query value that is not of the parameter's type ("limit=x")
        if isinstance(ctx.get("index"), int):  # point at the offending element of a list
            loc = (*loc, ctx["index"])
        if isinstance(ctx.get("at"), list):  # a string nested below the field (schemas/validators.check_strings)
            loc = (*loc, *ctx["at"])
        out.append(issue(field_path(loc), code or "INVALID_VALUE", _plain_message(err)))
    return out


def _plain_message(err: Mapping[str, Any]) -> str:
    msg = str(err.get("msg", "invalid value"))
    return msg.removeprefix("Value error, ").removeprefix("Assertion failed, ")


def validation_error(ep: Endpoint, exc: ValidationError, args: Mapping[str, Any]) -> ApiError:
    locations = field_locations(ep.request)
    issues = issues_from(exc, frozenset(n for n, where in locations.items() if where == "query"))
    roots = {i["field_path"].removeprefix("$.").split(".")[0].split("[")[0] for i in issues}
    # An unknown argument of a GET can only be a query parameter (a GET has no body).
    unknown_at = "query" if ep.method == "GET" else "body"
    where = {locations.get(r, unknown_at) for r in roots}
    # A bad identifier in the path is "no such resource"; a missing or non-string one (MCP arguments) is malformed.
    if where == {"path"} and all(isinstance(args.get(r), str) for r in roots):
        return ApiError("NOT_FOUND", "No resource has that identifier.", issues=issues)
    if where == {"query"}:
        return ApiError("INVALID_QUERY", issues=issues)
    return ApiError("MALFORMED_REQUEST", issues=issues)


def request_hash(ep: Endpoint, model: BaseModel) -> str:
    canonical = json.dumps({"endpoint": ep.name, "input": model.model_dump(mode="json")}, sort_keys=True,
                           separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


_SCALARS = frozenset({str, int, float, bool, type(None)})


def to_jsonable(data: Any) -> Any:
    # Scalars are passed through without a call per leaf (a list page has hundreds).
    if isinstance(data, BaseModel):
        return data.model_dump(mode="json", by_alias=True)
    if isinstance(data, list):
        return [v if type(v) in _SCALARS else to_jsonable(v) for v in data]
    if isinstance(data, dict):
        return {k: v if type(v) in _SCALARS else to_jsonable(v) for k, v in data.items()}
    return data


def _is_model_data(data: Any) -> bool:
    """A model, or (older lists) a list of models: what pydantic dumps, never a hand-built dict."""
    if isinstance(data, list):
        return all(isinstance(v, BaseModel) for v in data)
    return isinstance(data, BaseModel)


def success_body(request_id: str, data: Any, pagination: dict[str, Any] | None = None,
                 replayed: bool = False) -> dict[str, Any]:
    body: dict[str, Any] = {"success": True, "data": data}
    if pagination is not None:
        body["pagination"] = pagination
    meta: dict[str, Any] = {"request_id": request_id}
    if replayed:
        meta["idempotency_replayed"] = True
    body["meta"] = meta
    return body


class Dispatcher:
    """Holds what lives across requests (runtime, rate limiter, compiled response validators)."""

    def __init__(self, rt: Runtime, rate_limiter: RateLimiter | None = None) -> None:
        self.rt = rt
        # Public HTML pages (bio, claim) keep an in-process bucket per address; the API budget is shared.
        self.rate_limiter = rate_limiter or RateLimiter(rt.settings.rate_limit_requests,
                                                        rt.settings.rate_limit_window)
        self.limiter = SharedLimiter.from_settings(rt.settings, rt.db)
        self.callers = CallerCache()  # key -> Caller for a few seconds (tools/services/auth.py)
        self._last_touch: dict[str, datetime] = {}  # key ID -> last use recorded by this process
        # Response validators, compiled once at start-up (only when responses are checked: tests, development).
        self._validators: dict[str, Draft202012Validator] = {}
        if rt.settings.validate_responses:
            from jsonschema import Draft202012Validator

            self._validators = {ep.name: Draft202012Validator(envelope_schema(ep)) for ep in catalogue.endpoints()}

    async def invoke(
        self, ep: Endpoint, args: Mapping[str, Any], *, token: str | None, headers: Mapping[str, str] | None = None,
        idempotency_header: str | None = None, request_id: str | None = None, client: str = "anonymous",
        refused: ApiError | None = None, caller: Caller | None = None, transport: str | None = None,
        admitted: bool = False,
    ) -> Outcome:
        """`refused`: what the adapter found wrong with the arguments; reported at the validation step.
        `caller`: an identity already authenticated by another front door (the console's signed-in user,
        server/console/identity.py, or an MCP OAuth token) instead of `token`; every later step is the same.
        `admitted`: `admit` already authenticated `caller` and applied the rate limit (REST, before the body)."""
        request_id = request_id or new_request_id()
        started = time.perf_counter()
        if not admitted:
            logs.KEY_ID.set(None)
        try:
            outcome = await self._invoke(ep, dict(args), token, headers or {}, idempotency_header, request_id,
                                         client, refused, caller, admitted)
        except ApiError as exc:
            outcome = self.error(exc, request_id)
        except OperationalError as exc:
            log.warning("database unavailable on %s [%s]: %s", ep.name, request_id, exc.orig)
            outcome = self.error(ApiError("DEPENDENCY_UNAVAILABLE", "The database is busy or unavailable.",
                                          headers={"Retry-After": "1"}), request_id)
        except Exception:
            log.exception("unexpected error on %s [%s]", ep.name, request_id)
            outcome = self.error(ApiError("INTERNAL_ERROR"), request_id)
        metrics.count_call(ep.name, outcome.status, time.perf_counter() - started)
        logs.log_call(request_id=request_id, endpoint=ep.name, status=outcome.status, started=started,
                      transport=transport, client=client)
        return outcome

    async def admit(self, ep: Endpoint, token: str | None, *, request_id: str, client: str,
                    transport: str | None = None) -> Caller | Outcome | None:
        """The first steps of `_invoke` (authenticate, rate limit) from the headers alone, so an adapter can refuse
        a request before reading its body: a keyless or bad-key upload costs one small answer, and the per-key
        (keyless: per-address) budget applies to it. Returns the caller (None for a public endpoint), or the
        error outcome, already counted and logged; pass the caller to `invoke` with `admitted=True`."""
        started = time.perf_counter()
        logs.KEY_ID.set(None)
        try:
            if ep.public or not token:
                await self._rate_limit(f"ip:{client}")
            if ep.public:
                return None
            caller = self.callers.get(check_token(token))
            if caller is None:
                async with self.rt.db.session(write=False) as session:
                    caller = await self.callers.authenticate(session, token)
            logs.KEY_ID.set(caller.key_id)
            await self._rate_limit(f"key:{caller.key_id}")
            return caller
        except ApiError as exc:
            outcome = self.error(exc, request_id)
        except OperationalError as exc:
            log.warning("database unavailable on %s [%s]: %s", ep.name, request_id, exc.orig)
            outcome = self.error(ApiError("DEPENDENCY_UNAVAILABLE", "The database is busy or unavailable.",
                                          headers={"Retry-After": "1"}), request_id)
        metrics.count_call(ep.name, outcome.status, time.perf_counter() - started)
        logs.log_call(request_id=request_id, endpoint=ep.name, status=outcome.status, started=started,
                      transport=transport, client=client)
        return outcome

    def error(self, exc: ApiError, request_id: str) -> Outcome:
        return Outcome(exc.status, exc.body(request_id), dict(exc.headers))

    async def _invoke(self, ep: Endpoint, args: dict[str, Any], token: str | None, headers: Mapping[str, str],
                      idempotency_header: str | None, request_id: str, client: str,
                      refused: ApiError | None, given: Caller | None = None, admitted: bool = False) -> Outcome:
        rt = self.rt
        # Idempotency key: header or body field, equal when both are sent. Checked after authority and input
        # validation (step 4), so a key without the scope learns 403 before being asked for a key.
        body_key = args.pop("idempotency_key", None)

        if ep.public and not admitted:
            await self._rate_limit(f"ip:{client}")
        async with rt.db.session(write=not ep.changes_nothing) as session:
            caller: Caller | None = None
            if not ep.public:
                caller = given or await self.callers.authenticate(session, token)
                logs.KEY_ID.set(caller.key_id)
                if not admitted:
                    await self._rate_limit(f"key:{caller.key_id}")

            brand = brand_id = None
            deferred: Callable[[], Awaitable[object]] | None = None
            # (A missing or non-string brand_id, possible only over MCP, is left to validation.)
            if "brand_id" in ep.path_params and isinstance(args.get("brand_id"), str):
                if ep.brand_row:
                    brand = await self._visible_brand(session, caller, args["brand_id"])
                    brand_id = brand.id
                elif ep.brand_proved_by_handler:  # the handler's statement proves it (tools/endpoint.py)
                    brand_id = self._seen_brand_id(caller, args["brand_id"])
                    deferred = partial(self._visible_brand_id, session, caller, brand_id, alone=True)
                else:
                    brand_id = await self._visible_brand_id(session, caller, args["brand_id"],
                                                            alone=ep.changes_nothing)

            try:
                if caller is not None:
                    missing = [s for s in ep.scopes if s not in caller.scopes]
                    if missing:
                        raise ApiError("INSUFFICIENT_SCOPE",
                                       f"This API key lacks scope {', '.join(missing)} needed by {ep.name}.",
                                       details={"required_scopes": list(ep.scopes), "missing_scopes": missing})
                    if ep.roles and caller.role not in ep.roles:
                        raise ApiError("ROLE_REQUIRED", details={"required_roles": list(ep.roles)})

                if refused is not None:
                    raise refused
                try:
                    model = ep.request.model_validate(args)
                except ValidationError as exc:
                    raise validation_error(ep, exc, args) from None
                if "brand_id" in ep.path_params and brand_id is None:  # validation accepted no brand: fail closed
                    raise ApiError("NOT_FOUND", "Brand not found, or not visible to this API key.",
                                   next_action="list_brands")
                idem_key = self._idempotency_key(ep, idempotency_header, body_key)

                digest = record_id = None
                if idem_key is not None and caller is not None:
                    digest = request_hash(ep, model)
                    record_id = await self._reserve(session, caller, ep, idem_key, digest, request_id)
                    if isinstance(record_id, Outcome):
                        return record_id
            except ApiError:
                if deferred is not None:  # a brand the key cannot see answers 404 first, as everywhere
                    await deferred()
                raise

            call = Call(rt=rt, session=session, endpoint=ep, caller=caller, request_id=request_id,
                        now=rt.clock.now(), idempotency_key=idem_key,
                        headers={h: headers[h.lower()] for h in ep.headers if h.lower() in headers}
                        if ep.headers else {},
                        brand=brand, visible_brand_id=brand_id, brand_check=deferred)
            try:
                result = await ep.handler(call, model)
            except ApiError as exc:
                if exc.keep_changes:
                    if record_id is not None:
                        await idempotency.forget(session, record_id)  # the key stays usable for a retry
                    await session.commit()
                raise
            reply = result if isinstance(result, Reply) else Reply(data=result)
            status = reply.status or ep.status
            if reply.not_modified:
                return Outcome(304, None, reply.headers)
            # A validated model of a response model that holds no float dumps to JSON types that orjson encodes
            # as the standard library does: REST may use it (tools/tool_schemas.py `float_free`).
            plain = (ep.response is not None and _is_model_data(reply.data) and float_free(ep.response))
            data = to_jsonable(reply.data)
            if rt.settings.validate_responses:
                self._check_response(ep, data, reply.pagination, request_id)
            if record_id is not None:
                await idempotency.settle(session, record_id, status, {"data": data, "pagination": reply.pagination})
        # Committed: now it is safe to start follow-up work.
        if caller is not None:
            await self._touch_key(caller)
        for fn in call._after_commit:
            try:
                await fn()
            except Exception:
                log.exception("after-commit hook failed on %s [%s]", ep.name, request_id)
        return Outcome(status, success_body(request_id, data, reply.pagination), reply.headers, plain=plain)

    async def _touch_key(self, caller: Caller) -> None:
        """Record when a key was last used (shown in the console), at most once a minute per key, after the
        request's own transaction so a read stays a read."""
        now = self.rt.clock.now()
        last = self._last_touch.get(caller.key_id, caller.last_used_at)
        if last is not None and (now - last).total_seconds() < 60:
            return
        if len(self._last_touch) >= 4096:  # bounded; a forgotten key is at worst touched once more
            self._last_touch.clear()
        self._last_touch[caller.key_id] = now
        try:
            async with self.rt.db.session(write=True) as session:
                await session.exec(update(ApiKey).where(col(ApiKey.id) == caller.key_id).values(last_used_at=now)
                                   .execution_options(auth_unchanged=True))
        except OperationalError:
            log.info("could not record last use of key %s (database busy)", caller.key_id)

    def _idempotency_key(self, ep: Endpoint, header: str | None, body: Any) -> str | None:
        if ep.idempotency == "none":
            if header is not None or body is not None:
                raise ApiError("INVALID_HEADER" if header is not None else "MALFORMED_REQUEST",
                               f"{ep.name} does not accept an idempotency key; send the request without one.",
                               issues=[issue("$.idempotency_key", "NOT_ACCEPTED",
                                             "This route takes no idempotency key.")])
            return None
        if body is not None and not isinstance(body, str):
            raise ApiError("MALFORMED_REQUEST", issues=[issue("$.idempotency_key", "INVALID_TYPE",
                                                               "idempotency_key must be a string.")])
        if header is not None and body is not None and header != body:
            raise ApiError("INVALID_HEADER", "The Idempotency-Key header and body idempotency_key differ.",
                           issues=[issue("$.idempotency_key", "MISMATCH",
                                         "Send one idempotency key, or the same value in both places.")])
        key = header if header is not None else body
        if key is None:
            if ep.idempotency == "required":
                raise ApiError("MALFORMED_REQUEST", f"{ep.name} needs an idempotency key.",
                               issues=[issue("$.idempotency_key", "REQUIRED",
                                             "Send an Idempotency-Key header or an idempotency_key body field "
                                             "(e.g. a new UUID); reuse it only to retry this exact request.")])
            return None
        if not IDEMPOTENCY_KEY_RE.match(key):
            raise ApiError("INVALID_HEADER" if header is not None else "MALFORMED_REQUEST",
                           "An idempotency key is 1 to 255 printable ASCII characters without spaces.",
                           issues=[issue("$.idempotency_key", "INVALID_FORMAT",
                                         "Use 1 to 255 printable ASCII characters without spaces.")])
        return key

    async def _rate_limit(self, bucket: str) -> None:
        wait = await self.limiter.check(bucket)
        if wait is not None:
            metrics.RATE_LIMITED.labels(bucket.split(":", 1)[0]).inc()
            seconds = retry_after(wait)
            raise ApiError("RATE_LIMITED", f"Rate limit reached; retry in {seconds} s.",
                           headers={"Retry-After": str(seconds)}, details={"retry_after_seconds": seconds})

    async def _visible_brand(self, session, caller: Caller | None, brand_id: Any) -> Brand:
        if caller is None or not isinstance(brand_id, str) or not caller.sees_brand(brand_id):
            raise ApiError("NOT_FOUND", "Brand not found, or not visible to this API key.", next_action="list_brands")
        brand = (await session.exec(_VISIBLE_BRAND, params={"brand_id": brand_id,
                                                           "workspace_id": caller.workspace_id})).first()
        if brand is None:
            raise ApiError("NOT_FOUND", "Brand not found, or not visible to this API key.", next_action="list_brands")
        return brand

    @staticmethod
    def _seen_brand_id(caller: Caller | None, brand_id: Any) -> str:
        """The part of the brand check that needs no database: the key may see this brand ID."""
        if caller is None or not isinstance(brand_id, str) or not caller.sees_brand(brand_id):
            raise ApiError("NOT_FOUND", "Brand not found, or not visible to this API key.", next_action="list_brands")
        return brand_id

    async def _visible_brand_id(self, session, caller: Caller | None, brand_id: Any, *, alone: bool) -> str:
        """As `_visible_brand`, for a handler that needs only the ID: one column, no ORM object. `alone` (a read):
        the check is a statement on its own, outside the request's transaction (`Query.rows_alone`), so a read
        whose own work is one statement too needs no transaction at all; a write checks inside its transaction."""
        brand_id = self._seen_brand_id(caller, brand_id)
        assert caller is not None
        params = {"brand_id": brand_id, "workspace_id": caller.workspace_id}
        query = _VISIBLE_BRAND_ID.rows_alone if alone else _VISIBLE_BRAND_ID.rows
        if not await query(session, params):
            raise ApiError("NOT_FOUND", "Brand not found, or not visible to this API key.", next_action="list_brands")
        return brand_id

    async def _reserve(self, session, caller: Caller, ep: Endpoint, key: str, digest: str,
                       request_id: str) -> str | Outcome:
        """The reserved record's ID (a new request), or the replay of what this key stored. A reservation waits
        on the unique index for a concurrent request with the same key, then finds its record."""
        names = {"api_key_id": caller.key_id, "endpoint": ep.name, "key": key}
        for _ in range(2):
            record_id = await idempotency.reserve(session, **names, request_hash=digest, now=self.rt.clock.now())
            if record_id is not None:
                return record_id
            stored = await idempotency.stored(session, **names)
            if stored is None:
                continue  # forgotten between the two statements (retention): reserve it again
            if stored.created_at >= idempotency_cutoff(self.rt):
                return self._replay(ep, stored, digest, request_id)
            # Past SOCIALPUB_IDEMPOTENCY_TTL the key is forgotten: this is a new request.
            await idempotency.forget(session, stored.id)
        raise ApiError("CONFLICT", "A concurrent request with this idempotency key did not finish; retry.",
                       retryable=True, headers={"Retry-After": "1"}, next_action="wait_and_retry")

    def _replay(self, ep: Endpoint, stored: Any, digest: str, request_id: str) -> Outcome:
        if stored.request_hash != digest:
            raise ApiError("IDEMPOTENCY_KEY_CONFLICT",
                           "This idempotency key was used with different input; nothing was changed.")
        if stored.response is None:
            # Written by a request that has not finished (only visible on databases without locking reads).
            raise ApiError("CONFLICT", "A request with this idempotency key is still in progress.", retryable=True,
                           headers={"Retry-After": "1"}, next_action="wait_and_retry")
        data = stored.response.get("data")
        if ep.replay is not None:
            data = ep.replay(data)
        return Outcome(200, success_body(request_id, data, stored.response.get("pagination"), replayed=True),
                       {"Idempotency-Replayed": "true"}, replayed=True)

    def _check_response(self, ep: Endpoint, data: Any, pagination: Any, request_id: str) -> None:
        validator = self._validators.get(ep.name)
        if validator is None:  # an endpoint added after start-up (tests' probe endpoints)
            from jsonschema import Draft202012Validator

            validator = self._validators[ep.name] = Draft202012Validator(envelope_schema(ep))
        errors = sorted(validator.iter_errors(success_body(request_id, data, pagination)), key=str)
        if errors:
            raise AssertionError(f"{ep.name} returned a payload its response schema refuses: {errors[0].message} "
                                 f"at {list(errors[0].absolute_path)}")

"""The error envelope of the spec and the one table of error codes.

Every failure, whatever raised it, leaves the service as an `ApiError`; the adapters only render it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

# Upper bound on `error.issues`; the rest are counted in `details.issues_omitted`.
MAX_ISSUES = 50


@dataclass(frozen=True)
class ErrorCode:
    status: int
    retryable: bool
    message: str
    next_action: str | None = None
    repair_guidance: str | None = None


# One row per code. Codes beyond the spec's table (METHOD_NOT_ALLOWED, REQUEST_TOO_LARGE, ROLE_REQUIRED,
# PLAN_LIMIT_REACHED, UPLOAD_LINK_EXPIRED, URI_TOO_LONG, HEADERS_TOO_LARGE) are recorded in docs/decisions.md.
CODES: dict[str, ErrorCode] = {
    "MALFORMED_REQUEST": ErrorCode(
        400, False, "The request could not be interpreted or validated.", "fix_request",
        "Correct the fields listed in `issues` and send the request again."),
    "INVALID_HEADER": ErrorCode(
        400, False, "A request header is invalid.", "fix_request", "Correct the header named in the message."),
    "INVALID_QUERY": ErrorCode(
        400, False, "A query parameter is invalid.", "fix_request",
        "Correct the query parameters listed in `issues`."),
    "INVALID_CURSOR": ErrorCode(
        400, False, "The cursor is unknown or not valid for this list.", "restart_list",
        "Drop `cursor` and read the list from the first page with the same filters."),
    "UNAUTHORIZED": ErrorCode(
        401, False, "A valid API key is required.", "use_authorized_api_key",
        "Send `Authorization: Bearer socialpub_live_...` with a key created by `socialpub keys create`."),
    "INSUFFICIENT_SCOPE": ErrorCode(
        403, False, "The API key lacks a scope this request needs.", "use_authorized_api_key",
        "Use a key that holds every scope in `details.required_scopes`."),
    "ROLE_REQUIRED": ErrorCode(
        403, False, "This route needs a key whose owner has an admin role.", "use_admin_api_key",
        "Use a key owned by a user with a role in `details.required_roles`."),
    "BRAND_ACCESS_DENIED": ErrorCode(
        403, False, "The API key may not act on this brand.", "use_authorized_api_key"),
    "ENTITLEMENT_REQUIRED": ErrorCode(
        403, False, "The workspace plan does not include this feature.", "upgrade_plan",
        "Upgrade the workspace plan; see `details.upgrade_url`."),
    "NOT_FOUND": ErrorCode(
        404, False, "The resource does not exist or is not visible to this key.", "check_identifier"),
    "CONTENT_ITEM_NOT_FOUND": ErrorCode(
        404, False, "The content item does not exist or is not visible to this key.", "list_content_items"),
    "METHOD_NOT_ALLOWED": ErrorCode(
        405, False, "This route does not accept that HTTP method.", "fix_request",
        "Use one of the methods in the `Allow` header."),
    "CONFLICT": ErrorCode(
        409, False, "The resource is in a state that does not allow this change.", "read_resource_again"),
    "IDEMPOTENCY_KEY_CONFLICT": ErrorCode(
        409, False, "This idempotency key was already used with different input.", "use_new_idempotency_key",
        "Send the original input again, or use a new idempotency key for new input."),
    "REQUEST_TOO_LARGE": ErrorCode(
        413, False, "The request body is larger than this route accepts.", "fix_request"),
    "URI_TOO_LONG": ErrorCode(
        414, False, "The request's query string is longer than this service accepts.", "fix_request",
        "Send fewer or shorter query parameters; large input belongs in a JSON body."),
    "HEADERS_TOO_LARGE": ErrorCode(
        431, False, "The request's headers are larger than this service accepts.", "fix_request",
        "Send fewer or smaller headers."),
    "UPLOAD_LINK_EXPIRED": ErrorCode(
        410, False, "This upload link has expired; nothing was stored.", "create_media_upload_session",
        "Start a new upload (create_media_upload_session, or request_media_upload_url for the legacy flow) and PUT "
        "the bytes to the new URL."),
    "DOMAIN_VALIDATION_FAILED": ErrorCode(
        422, False, "The request is well formed but not valid for the current data.", "fix_request",
        "Correct the fields listed in `issues` and send the request again."),
    "PREFLIGHT_BLOCKED": ErrorCode(
        422, False, "Preflight found blockers; nothing was scheduled.", "repair_and_preflight",
        "Apply each blocker's repair_action, then run preflight again."),
    "PLAN_LIMIT_REACHED": ErrorCode(
        422, False, "The workspace plan limit for this resource is reached.", "upgrade_plan",
        "Remove an existing resource or upgrade the plan; see `details`."),
    "RATE_LIMITED": ErrorCode(
        429, True, "Too many requests for this API key.", "wait_and_retry",
        "Wait for the number of seconds in the `Retry-After` header, then retry."),
    "INTERNAL_ERROR": ErrorCode(
        500, False, "The service failed unexpectedly. Nothing was changed.", "contact_operator",
        "Report the request_id to the operator of this service."),
    "DEPENDENCY_UNAVAILABLE": ErrorCode(
        503, True, "A service this request depends on is unavailable.", "wait_and_retry",
        "Retry later; the request did not change anything."),
}


class ErrorIssue(BaseModel):
    """One field-level problem. Validation issues use code, field_path and message; preflight adds the rest."""

    model_config = ConfigDict(extra="allow")

    code: str
    field_path: str = Field(description="JSONPath-like location, e.g. `$.single_copy.hashtags[2]`.")
    message: str


@dataclass
class ApiError(Exception):
    """A failure with a stable code. `status`, `retryable` and default texts come from `CODES`."""

    code: str
    message: str | None = None
    issues: list[dict[str, Any]] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    repair_guidance: str | None = None
    next_action: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    retryable: bool | None = None
    # Commit what the handler wrote before failing (e.g. an integration marked for reauthorisation by the
    # provider call that failed). Default: the transaction is rolled back and nothing changes.
    keep_changes: bool = False

    def __post_init__(self) -> None:
        if self.code not in CODES:
            raise ValueError(f"unknown error code {self.code}")
        super().__init__(self.code)

    @property
    def status(self) -> int:
        return CODES[self.code].status

    def body(self, request_id: str) -> dict[str, Any]:
        spec = CODES[self.code]
        error: dict[str, Any] = {
            "code": self.code,
            "message": self.message or spec.message,
            "status": spec.status,
            "retryable": spec.retryable if self.retryable is None else self.retryable,
            "request_id": request_id,
        }
        if self.issues:
            error["issues"] = self.issues[:MAX_ISSUES]
        guidance = self.repair_guidance or spec.repair_guidance
        if guidance:
            error["repair_guidance"] = guidance
        action = self.next_action or spec.next_action
        if action:
            error["next_action"] = action
        details = dict(self.details)
        if len(self.issues) > MAX_ISSUES:
            details["issues_omitted"] = len(self.issues) - MAX_ISSUES
        if details:
            error["details"] = details
        return {"success": False, "error": error}


def issue(field_path: str, code: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"code": code, "field_path": field_path, "message": message, **extra}


class Issues:
    """Collects field issues and raises them together, so a caller sees every problem in one reply."""

    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []

    def add(self, field_path: str, code: str, message: str, **extra: Any) -> None:
        self.items.append(issue(field_path, code, message, **extra))

    def __bool__(self) -> bool:
        return bool(self.items)

    def raise_if_any(self, code: str = "DOMAIN_VALIDATION_FAILED", message: str | None = None) -> None:
        if self.items:
            raise ApiError(code, message, issues=self.items)


def not_found(what: str = "Resource", code: str = "NOT_FOUND") -> ApiError:
    return ApiError(code, f"{what} not found, or not visible to this API key.")


class ErrorBody(BaseModel):
    code: str
    message: str
    status: int
    retryable: bool
    request_id: str
    issues: list[ErrorIssue] | None = None
    repair_guidance: str | None = None
    next_action: str | None = None
    details: dict[str, Any] | None = None


class ErrorEnvelope(BaseModel):
    """The JSON body of every failure (`error.status` equals the HTTP status)."""

    success: bool = False
    error: ErrorBody

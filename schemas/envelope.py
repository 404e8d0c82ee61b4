"""Shared response pieces: link objects, the older `pagination` object, bounded-list pages."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class Link(BaseModel):
    """`{href, method?, required_scopes}`; `method` is omitted for GET."""

    model_config = ConfigDict(extra="forbid")

    href: str = Field(description="Path under the service base address, starting with /v1.")
    # Absent (not null) for GET, also when a handler returns a validated model.
    method: str | None = Field(default=None, description="HTTP method; omitted means GET.",
                               exclude_if=lambda v: v is None)
    required_scopes: list[str]


class OlderPagination(BaseModel):
    page: int
    limit: int
    has_more: bool


class Meta(BaseModel):
    request_id: str
    idempotency_replayed: bool | None = Field(
        default=None, description="True when this reply is the stored result of an earlier request with the same key.")

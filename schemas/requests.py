"""Request-model conventions. Request models are flat: path parameters, query parameters and body fields in
one model; location is marked on the field (`PathParam`, `QueryParam`), unmarked fields are body fields.
Every field is strict (no coercion: "5" is not 5); the REST adapter parses query strings by the field's
schema type before validation (MCP arguments arrive typed).
`idempotency_key` is never declared on a model: the endpoint's `idempotency` setting adds it.
"""

from __future__ import annotations

from functools import cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from schemas.validators import check_strings

Location = Literal["path", "query", "body"]
LOCATION_KEY = "x-in"


class RequestModel(BaseModel):
    """Base of every request model: unknown keys and type coercion are refused, never corrected."""

    model_config = ConfigDict(strict=True, extra="forbid", populate_by_name=False)

    @field_validator("*", mode="after")
    @classmethod
    def _valid_text(cls, value: Any) -> Any:
        """Every string of every request (nested ones too) is valid Unicode without control characters; the
        one check for all models (schemas/validators.py)."""
        check_strings(value)
        return value


class NoInput(RequestModel):
    """An endpoint that takes nothing."""


def PathParam(description: str = "", **kwargs: Any) -> Any:
    return Field(description=description, json_schema_extra={LOCATION_KEY: "path"}, min_length=1, max_length=64,
                 **kwargs)


def QueryParam(default: Any = ..., description: str = "", **kwargs: Any) -> Any:
    return Field(default, description=description, json_schema_extra={LOCATION_KEY: "query"}, **kwargs)


@cache
def field_locations(model: type[BaseModel]) -> dict[str, Location]:
    out: dict[str, Location] = {}
    for name, info in model.model_fields.items():
        extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
        out[name] = extra.get(LOCATION_KEY, "body")  # pyright: ignore[reportArgumentType]  # locations are written by schemas.requests itself, always a Location
    return out


def fields_at(model: type[BaseModel], location: Location) -> tuple[str, ...]:
    return tuple(n for n, loc in field_locations(model).items() if loc == location)

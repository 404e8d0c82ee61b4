"""The public platform capabilities document (`GET /v1/platforms/capabilities`)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class PlatformCapabilities(BaseModel):
    model_config = ConfigDict(extra="allow")

    key: str
    display_name: str
    account_modes: list[str]
    settings_key: str | None
    post_types: list[str]
    default_post_type: str | None
    dynamic_options: str | None
    settings_fields: dict[str, Any] = Field(description="JSON Schema of the platform's settings object.")


class Capabilities(BaseModel):
    model_config = ConfigDict(extra="allow")

    validation_version: str
    platforms: list[PlatformCapabilities]

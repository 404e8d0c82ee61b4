"""`GET /v1/platforms/capabilities`: the public platform registry, with an ETag and a five-minute cache."""

from __future__ import annotations

import hashlib
import json
from functools import cache
from typing import Any

from schemas.capabilities import Capabilities
from schemas.platform_settings import SETTINGS_MODELS
from schemas.platforms import PLATFORMS, VALIDATION_VERSION
from schemas.requests import NoInput
from tools.endpoint import Call, Endpoint, Reply

CACHE_CONTROL = "public, max-age=300"


@cache
def capabilities_document() -> dict[str, Any]:
    platforms = []
    for p in PLATFORMS:
        model = SETTINGS_MODELS.get(p.key)
        platforms.append({
            "key": p.key, "display_name": p.display_name, "account_modes": list(p.account_modes),
            "settings_key": p.settings_key, "post_types": list(p.post_types),
            "default_post_type": p.default_post_type, "dynamic_options": p.dynamic_options,
            "settings_fields": model.model_json_schema() if model else {},
        })
    return Capabilities.model_validate({"validation_version": VALIDATION_VERSION,
                                        "platforms": platforms}).model_dump(mode="json")


@cache
def etag() -> str:
    body = json.dumps(capabilities_document(), sort_keys=True, separators=(",", ":")).encode()
    return '"' + hashlib.sha256(body).hexdigest()[:32] + '"'


def _matches(header: str | None, tag: str) -> bool:
    if not header:
        return False
    candidates = {t.strip().removeprefix("W/") for t in header.split(",")}
    return tag in candidates or "*" in candidates


async def get_platform_capabilities(call: Call, req: NoInput) -> Reply:
    tag = etag()
    headers = {"ETag": tag, "Cache-Control": CACHE_CONTROL}
    if _matches(call.headers.get("If-None-Match"), tag):
        return Reply(not_modified=True, headers=headers)
    return Reply(data=capabilities_document(), headers=headers)


ENDPOINTS = [
    Endpoint(
        name="get_platform_capabilities", method="GET", path="/v1/platforms/capabilities", toolset="context",
        handler=get_platform_capabilities, public=True, response=Capabilities, headers=("If-None-Match",),
        title="Get platform capabilities",
        summary="Read the public platform registry: account modes, post types, text and media rules, settings "
                "fields with types and defaults, and guidance for every supported platform.",
        guidance="Public and cacheable (ETag, five minutes). Use it to build valid *_settings before "
                 "create_content_item; preflight_content checks the same rules.",
    ),
]

"""`GET /v1/platforms/capabilities`: the public platform registry, with an ETag and a five-minute cache."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from functools import cache
from typing import Any, get_args

from providers.metrics import not_offered as metrics_not_offered
from providers.metrics import support as metrics_support
from schemas.capabilities import Capabilities
from schemas.media_repair import RepairMode
from schemas.platform_settings import SETTINGS_MODELS
from schemas.platforms import REPAIR_POLICY, VALIDATION_VERSION, Platform, public_platforms, rules_fingerprint
from schemas.platforms.rules import MediaSpec, PostTypeRules, TextLimit
from schemas.requests import NoInput
from schemas.textcount import COUNTING_DESCRIPTIONS
from tools.endpoint import Call, Endpoint, Reply

CACHE_CONTROL = "public, max-age=300"


def _text(t: TextLimit | None) -> dict[str, Any] | None:
    if t is None:
        return None
    return {"field": t.field, "max": t.max, "counting": t.counting,
            "post_types": list(t.post_types) if t.post_types is not None else None, "source": t.source,
            "note": t.note}


def _aspect(r: tuple[int, int] | None) -> dict[str, Any] | None:
    return None if r is None else {"width": r[0], "height": r[1], "value": round(r[0] / r[1], 6)}


def _media(m: MediaSpec | None) -> dict[str, Any] | None:
    if m is None:
        return None
    return {"kind": m.kind, "content_types": list(m.content_types), "max_size_bytes": m.max_size,
            "min_width": m.min_width, "min_height": m.min_height, "max_width": m.max_width,
            "max_height": m.max_height, "max_pixels": m.max_pixels, "min_aspect_ratio": _aspect(m.min_aspect),
            "max_aspect_ratio": _aspect(m.max_aspect), "min_duration_seconds": m.min_duration,
            "max_duration_seconds": m.max_duration, "source": m.source, "note": m.note}


def _post_type(p: Platform, t: PostTypeRules) -> dict[str, Any]:
    return {"key": t.key, "description": t.description, "default": t.key == p.default_post_type,
            "text_required": t.text_required,
            "media": {"min": t.min_media, "max": t.max_media, "kinds": list(t.kinds), "max_images": t.max_images,
                      "max_videos": t.max_videos, "mixed": t.mixed},
            "image": _media(t.image), "video": _media(t.video), "source": t.source}


def _sources(p: Platform) -> list[str]:
    """Every `source` string anywhere in the platform's rules, in first-seen order."""
    found: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                if k == "source" and isinstance(v, str) and v and v not in found:
                    found.append(v)
                else:
                    walk(v)
        elif isinstance(value, (list, tuple)):
            for v in value:
                walk(v)
    walk(dataclasses.asdict(p.rules))
    return found


def _metrics(key: str) -> dict[str, Any]:
    known = metrics_support(key)
    why = known or metrics_not_offered(key)
    return {"supported": known is not None, "fields": list(known.fields) if known else [],
            "source": why.source if why else None, "note": (why.note or None) if why else None}


def _platform(p: Platform) -> dict[str, Any]:
    r = p.rules
    model = SETTINGS_MODELS.get(p.key)
    thread = None
    if r.thread is not None:
        pm = r.thread.part_media
        thread = {"settings_field": f"{p.settings_key}.thread_parts", "max_parts": r.thread.max_parts,
                  "part_text": _text(r.thread.part_text),
                  "part_media": None if pm is None else {"max": pm.max_media, "kinds": list(pm.kinds),
                                                         "max_videos": pm.max_videos},
                  "part_max_links": r.thread.part_links.max if r.thread.part_links else None,
                  "source": r.thread.source}
    return {
        "key": p.key, "display_name": p.display_name, "account_modes": list(p.account_modes),
        "settings_key": p.settings_key, "post_types": list(p.post_types), "default_post_type": p.default_post_type,
        "dynamic_options": p.dynamic_options, "settings_in_responses": "always" if p.main_settings else "when_set",
        "copy_key": p.key,
        "text_rules": [_text(t) for t in r.text],
        "count_rules": [{"subject": c.subject, "max": c.max, "unique": c.unique, "severity": c.severity,
                         "source": c.source, "note": c.note} for c in r.counts],
        "post_type_rules": [_post_type(p, t) for t in r.post_types],
        "required_settings": [{"field": q.field, "check": q.check, "code": q.code,
                               "post_types": list(q.post_types) if q.post_types is not None else None,
                               "when": q.when, "copy_fallback": q.copy_fallback, "message": q.message,
                               "source": q.source} for q in r.requirements],
        "thread": thread, "follow_up_reply": _text(r.follow_up_reply),
        "forbidden_characters": list(r.forbidden_characters),
        "settings_fields": model.model_json_schema() if model else {},
        "guidance": list(r.guidance), "sources": _sources(p),
        "metrics": _metrics(p.key),
    }


@cache
def capabilities_document() -> dict[str, Any]:
    """The whole public document; hidden platforms are left out."""
    policy = REPAIR_POLICY
    doc = {
        "validation_version": VALIDATION_VERSION, "rules_fingerprint": rules_fingerprint(),
        "counting_methods": [{"key": k, "description": v} for k, v in COUNTING_DESCRIPTIONS.items()],
        "repair_policy": {"max_crop_loss": policy.max_crop_loss, "max_pad_share": policy.max_pad_share,
                          "max_upscale": policy.max_upscale, "aspect_tolerance": policy.aspect_tolerance,
                          "kinds": list(policy.kinds), "max_video_seconds": policy.max_video_seconds,
                          "modes": list(get_args(RepairMode)), "background": policy.background},
        "platforms": [_platform(p) for p in public_platforms()],
    }
    return Capabilities.model_validate(doc).model_dump(mode="json")


@cache
def capabilities() -> Capabilities:
    """The document as its model, validated once: what the handler returns (dumped per request by the
    dispatcher, equal to `capabilities_document()`)."""
    return Capabilities.model_validate(capabilities_document())


@cache
def etag() -> str:
    """Strong tag over the document (which carries VALIDATION_VERSION): any change to either changes it."""
    return _etag_for(capabilities_document(), VALIDATION_VERSION)


def _etag_for(document: dict[str, Any], version: str) -> str:
    body = json.dumps({"v": version, "doc": document}, sort_keys=True, separators=(",", ":")).encode()
    return '"' + hashlib.sha256(body).hexdigest()[:32] + '"'


def _matches(header: str | None, tag: str) -> bool:
    if not header:
        return False
    candidates = {t.strip().removeprefix("W/") for t in header.split(",")}
    return tag in candidates or "*" in candidates


async def get_platform_capabilities(call: Call, req: NoInput) -> Reply[Capabilities]:
    tag = etag()
    headers = {"ETag": tag, "Cache-Control": CACHE_CONTROL}
    if _matches(call.headers.get("If-None-Match"), tag):
        return Reply(not_modified=True, headers=headers)
    return Reply(data=capabilities(), headers=headers)


ENDPOINTS = [
    Endpoint(
        name="get_platform_capabilities", method="GET", path="/v1/platforms/capabilities", toolset="context",
        handler=get_platform_capabilities, public=True, response=Capabilities, headers=("If-None-Match",),
        title="Get platform capabilities",
        summary="Read the public platform registry: post types, text, media and settings rules of "
                "every platform.",
        guidance="Changes nothing. preflight_content checks the same rules.",
    ),
]

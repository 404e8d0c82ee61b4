"""GET /v1/platforms/capabilities: the complete public document, ETag / If-None-Match (weak and list
forms), the five-minute public cache, hidden platforms, and an ETag that follows the rules version."""

from __future__ import annotations

import dataclasses

import pytest

from schemas.platform_settings import SETTINGS_MODELS
from schemas.platforms import BY_KEY, PLATFORMS, VALIDATION_VERSION
from tools.context import platforms as caps

pytestmark = pytest.mark.anyio
URL = "/v1/platforms/capabilities"


async def test_document_is_complete_and_public(sqlite_env) -> None:
    resp = await sqlite_env.rest.get(URL)
    assert resp.status_code == 200
    assert resp.headers["cache-control"] == "public, max-age=300"
    doc = resp.json()["data"]
    assert doc["validation_version"] == VALIDATION_VERSION
    assert [p["key"] for p in doc["platforms"]] == [p.key for p in PLATFORMS]
    assert {m["key"] for m in doc["counting_methods"]} >= {"x_weighted", "graphemes", "threads", "utf16"}
    by_key = {p["key"]: p for p in doc["platforms"]}
    for key, p in by_key.items():
        reg = BY_KEY[key]
        assert p["account_modes"] == list(reg.account_modes) and p["post_types"] == list(reg.post_types)
        assert [t["key"] for t in p["post_type_rules"]] == list(reg.post_types)
        assert p["guidance"] and p["sources"]
        model = SETTINGS_MODELS.get(key)
        # settings fields derive from the settings models: names, types and defaults
        assert p["settings_fields"] == (model.model_json_schema() if model else {})
    x = by_key["x"]
    assert x["text_rules"][0]["counting"] == "x_weighted" and x["text_rules"][0]["max"] == 280
    assert x["thread"]["max_parts"] == 24 and x["thread"]["part_media"]["max"] == 4
    th = by_key["threads"]
    assert th["thread"]["max_parts"] == 9 and th["thread"]["part_media"] is None
    assert th["follow_up_reply"]["max"] == 500 and th["count_rules"][0] == {
        "subject": "links", "max": 5, "unique": True, "severity": "blocker", "source": th["count_rules"][0]["source"],
        "note": th["count_rules"][0]["note"]}
    tiktok = by_key["tiktok"]
    assert {r["code"] for r in tiktok["required_settings"]} == {
        "TIKTOK_PRIVACY_LEVEL_REQUIRED", "TIKTOK_TERMS_NOT_AGREED", "TIKTOK_COMMERCIAL_TYPES_REQUIRED"}
    assert tiktok["settings_fields"]["properties"]["agreed_to_terms"]["default"] is False
    ig_grid = next(t for t in by_key["instagram"]["post_type_rules"] if t["key"] == "GRID_POST")
    assert ig_grid["image"]["min_aspect_ratio"] == {"width": 4, "height": 5, "value": 0.8}
    assert by_key["instagram"]["settings_in_responses"] == "always" and x["settings_in_responses"] == "when_set"
    assert by_key["google_business"]["settings_key"] is None and by_key["google_business"]["settings_fields"] == {}


async def test_etag_304_weak_and_list_forms(sqlite_env) -> None:
    rest = sqlite_env.rest
    tag = (await rest.get(URL)).headers["etag"]
    assert tag.startswith('"') and tag.endswith('"')
    for header in (tag, f"W/{tag}", f'"other", {tag}', f'W/"x", W/{tag}', "*"):
        resp = await rest.get(URL, headers={"If-None-Match": header})
        assert resp.status_code == 304, header
        assert resp.content == b"" and resp.headers["etag"] == tag
        assert resp.headers["cache-control"] == "public, max-age=300"
    for header in ('"stale"', 'W/"stale", "other"', tag[1:-1]):
        assert (await rest.get(URL, headers={"If-None-Match": header})).status_code == 200, header


async def test_public_over_mcp_dispatch_too(sqlite_env) -> None:
    out = await sqlite_env.call("get_platform_capabilities", None)
    assert out.status == 200
    assert len(out.body["data"]["platforms"]) == len(PLATFORMS)


def test_etag_changes_with_version_and_document() -> None:
    doc = caps.capabilities_document()
    tag = caps._etag_for(doc, VALIDATION_VERSION)
    assert tag == caps.etag()
    assert caps._etag_for(doc, "2099-01-01.1") != tag
    changed = {**doc, "platforms": doc["platforms"][:-1]}
    assert caps._etag_for(changed, VALIDATION_VERSION) != tag


def test_hidden_platforms_are_excluded(monkeypatch) -> None:
    import schemas.platforms as registry
    hidden = tuple(dataclasses.replace(p, hidden=True) if p.key == "discord" else p for p in registry.PLATFORMS)
    monkeypatch.setattr(registry, "PLATFORMS", hidden)
    monkeypatch.setattr(caps, "public_platforms", lambda: tuple(p for p in hidden if not p.hidden))
    caps.capabilities_document.cache_clear()
    caps.etag.cache_clear()
    try:
        doc = caps.capabilities_document()
        assert "discord" not in [p["key"] for p in doc["platforms"]] and len(doc["platforms"]) == len(registry.PLATFORMS) - 1
    finally:
        caps.capabilities_document.cache_clear()
        caps.etag.cache_clear()

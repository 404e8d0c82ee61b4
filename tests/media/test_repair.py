"""Repair derivatives: a preflight repair option becomes a new media item of exactly the option's geometry
(really rendered from real images), the source and drafts stay untouched, the aspect blocker goes away once
the new ID is attached; stale, foreign and unavailable options fail closed and write nothing; idempotency."""

from __future__ import annotations

import dataclasses
import hashlib
import io
from typing import Any

import pytest
from PIL import Image
from sqlmodel import select

from schemas.ids import new_id
from schemas.platforms import REPAIR_POLICY, VALIDATION_VERSION
from storage.tables.content import ContentItem
from storage.tables.jobs import Job
from storage.tables.media import Media
from tests.media.support import image_bytes, local, process, upload, video_bytes
from tools.media.items import blobs

pytestmark = pytest.mark.anyio

RED, GREEN, BLUE, WHITE = (220, 20, 20), (20, 200, 20), (20, 20, 220), (255, 255, 255)


def banded(width: int, height: int, bands: list[tuple[int, tuple[int, int, int]]], fmt: str,
           marker: tuple[int, int] | None = None) -> bytes:
    """Vertical colour bands [(until_x, colour), ...]; an optional white 8x8 marker at `marker`."""
    img = Image.new("RGB", (width, height))
    start = 0
    for until, colour in bands:
        img.paste(colour, (start, 0, until, height))
        start = until
    if marker:
        img.paste(WHITE, (*marker, marker[0] + 8, marker[1] + 8))
    out = io.BytesIO()
    img.save(out, fmt, **({"quality": 95} if fmt == "JPEG" else {}))
    return out.getvalue()


def near(a: object, b: tuple[int, ...], tol: int = 24) -> bool:
    """`a`, a pixel of an RGB image (Image.getpixel), is within `tol` of `b` in each channel."""
    assert isinstance(a, tuple)
    return all(abs(x - y) <= tol for x, y in zip(a[:3], b[:3], strict=True))


class Repair:
    def __init__(self, world: Any) -> None:
        self.world, self.env = world, world.env
        self.brand = world.brand_a
        self.key = world.full_key
        self.keys = 0

    def h(self, **extra: str) -> dict[str, str]:
        return self.env.auth(self.key, **extra)

    async def upload(self, data: bytes, content_type: str = "image/jpeg", name: str = "banner.jpg",
                     brand: Any = None) -> dict[str, Any]:
        self.keys += 1
        return await upload(self.env, self.key, (brand or self.brand).id, data, content_type, name,
                            key=f"up-{self.keys}")

    async def item(self, platform: str, post_type: str | None, media_id: str) -> str:
        """A draft for one platform; post_type None for platforms whose settings have none (X)."""
        settings: dict[str, Any] = {"media_ids": [media_id]}
        if post_type is not None:
            settings["post_type"] = post_type
        body = {"name": "Launch", "copy_mode": "single",
                "single_copy": {"caption": "New roast", "hashtags": [], "title": None},
                f"{platform}_settings": settings}
        resp = await self.env.rest.post(f"/v1/brands/{self.brand.id}/content-items", json=body, headers=self.h())
        assert resp.status_code == 201, resp.json()
        return resp.json()["data"]["content_item"]["id"]

    async def preflight(self, item_id: str, integration_id: str) -> dict[str, Any]:
        resp = await self.env.rest.post(f"/v1/brands/{self.brand.id}/content-items/{item_id}/preflight",
                                        json={"integration_ids": [integration_id]}, headers=self.h())
        assert resp.status_code == 200, resp.json()
        return resp.json()["data"]

    async def options(self, item_id: str, integration_id: str) -> dict[str, dict[str, Any]]:
        data = await self.preflight(item_id, integration_id)
        (blocker,) = [b for b in data["blockers"] if b["code"] == "MEDIA_ASPECT_RATIO_OUT_OF_RANGE"]
        return {o["mode"]: o for o in blocker["repair_options"]}

    async def repair(self, media_id: str, body: dict[str, Any], key: str = "rep-1", brand: Any = None) -> Any:
        return await self.env.rest.post(f"/v1/brands/{(brand or self.brand).id}/media/{media_id}/repair-derivatives",
                                        json=body, headers=self.h(Idempotency_Key=key))

    async def row(self, media_id: str) -> Media:
        async with self.env.db.session(write=False) as s:
            row = await s.get(Media, media_id)
            assert row is not None
            return row

    async def bytes_of(self, media_id: str) -> bytes:
        row = await self.row(media_id)
        assert row.storage_key is not None, "the bytes are stored"
        async with blobs(self.env.rt.settings).local_path(row.storage_key) as path:
            return path.read_bytes()

    async def items(self) -> list[dict[str, Any]]:
        async with self.env.db.session(write=False) as s:
            return [r.model_dump() for r in (await s.exec(select(ContentItem).order_by(ContentItem.id))).all()]

    async def mutate(self, media_id: str, **fields: Any) -> None:
        async with self.env.db.session(write=True) as s:
            row = await s.get(Media, media_id)
            for k, v in fields.items():
                setattr(row, k, v)


def body_of(option: dict[str, Any], **over: Any) -> dict[str, Any]:
    return {"integration_id": option["integration_id"], "platform": option["platform"],
            "post_type": option["post_type"], "mode": option["mode"], "repair_option_id": option["id"],
            "policy_version": option["policy_version"], **over}


@pytest.fixture
async def rp(world) -> Repair:
    return Repair(world)


# -- the whole flow ------------------------------------------------------------------------------------------------

async def test_crop_derivative_fixes_the_instagram_aspect_blocker(rp) -> None:
    env, ig = rp.env, rp.world.integrations["instagram"].id
    # 500x200 (2.5:1) JPEG; Instagram feed images take 4:5 .. 1.91:1. The centre crop keeps x 59..441.
    data = banded(500, 200, [(59, RED), (441, GREEN), (500, BLUE)], "JPEG", marker=(64, 96))
    source = await rp.upload(data)
    assert source["status"] == "completed"
    item = await rp.item("instagram", "GRID_POST", source["id"])
    crop = (await rp.options(item, ig))["centre_crop"]
    assert crop["available"] and crop["crop"] == {"x": 59, "y": 0, "width": 382, "height": 200}
    assert crop["target"] == {"width": 382, "height": 200}
    source_row, source_bytes, drafts = (await rp.row(source["id"])).model_dump(), await rp.bytes_of(source["id"]), \
        await rp.items()

    resp = await rp.repair(source["id"], body_of(crop))
    assert resp.status_code == 201, resp.json()
    data_out = resp.json()["data"]
    new = data_out["media"]
    assert data_out["outcome"] == "created" and data_out["derived_from_id"] == source["id"]
    assert new["id"] != source["id"] and new["source"] == "repair_derivative" and new["status"] == "processing"
    assert new["readiness"] == {"ready_for_content": False, "next_actions": [
        {"action": "read_media_again", "guidance": new["readiness"]["next_actions"][0]["guidance"]}]}
    assert new["file_name"] == "banner-centre_crop-382x200.jpg" and new["content_type"] == "image/jpeg"
    d = data_out["derivation"]
    assert d["repair_option_id"] == crop["id"] and d["mode"] == "centre_crop"
    assert d["policy_version"] == VALIDATION_VERSION and d["source_sha256"] == source_row["sha256"]
    assert (d["crop"], d["target"], d["safe_area"], d["resize"], d["pad"], d["background"]) == (
        crop["crop"], crop["target"], crop["safe_area"], None, None, None)
    assert [a["action"] for a in data_out["next_actions"]] == ["read_media_again", "attach_derivative",
                                                              "preflight_content"]
    assert new["id"] in data_out["next_actions"][1]["guidance"]
    assert "instagram_settings.media_ids" in data_out["next_actions"][1]["guidance"]
    assert data_out["links"]["self"]["href"] == f"/v1/brands/{rp.brand.id}/media/{new['id']}"
    assert data_out["links"]["source"]["href"] == f"/v1/brands/{rp.brand.id}/media/{source['id']}"
    assert resp.headers.get("Idempotency-Replayed") is None

    # rendered by the processing job
    assert await process(env) >= 1
    got = (await env.rest.get(f"/v1/brands/{rp.brand.id}/media/{new['id']}", headers=rp.h())).json()["data"]
    assert got["status"] == "completed" and got["readiness"] == {"ready_for_content": True, "next_actions": []}
    assert got["thumbnail_large_url"] and got["thumbnail_small_url"] and got["size"] > 0
    row = await rp.row(new["id"])
    assert (row.width, row.height, row.kind, row.derived_from_id) == (382, 200, "image", source["id"])
    assert row.derivation == d
    served = await env.rest.get(local(got["download_url"]))
    assert served.status_code == 200 and hashlib.sha256(served.content).hexdigest() == row.sha256
    img = Image.open(io.BytesIO(served.content)).convert("RGB")
    assert img.size == (382, 200)
    # the kept region: the marker moved by the crop offset; no red or blue (cut-away bands) at the edges
    assert near(img.getpixel((5 + 3, 96 + 3)), WHITE)
    for x, y in [(2, 2), (2, 197), (379, 2), (379, 197), (191, 100)]:
        assert near(img.getpixel((x, y)), GREEN), (x, y, img.getpixel((x, y)))

    # the source row and bytes, and every draft, are unchanged
    assert (await rp.row(source["id"])).model_dump() == source_row
    assert await rp.bytes_of(source["id"]) == source_bytes
    assert await rp.items() == drafts

    # attach the derivative and preflight again: the aspect blocker is gone
    patched = await env.rest.patch(f"/v1/brands/{rp.brand.id}/content-items/{item}", headers=rp.h(),
                                   json={"instagram_settings": {"media_ids": [new["id"]], "post_type": "GRID_POST"}})
    assert patched.status_code == 200, patched.json()
    after = await rp.preflight(item, ig)
    assert not [b for b in after["blockers"] if b["code"].startswith("MEDIA_")], after["blockers"]
    assert after["can_schedule"] is True


@pytest.mark.parametrize("mode", ["centre_crop", "pad"])
async def test_exact_pixels_of_crop_and_pad(rp, mode) -> None:
    """PNG (lossless) on Threads (1:10 .. 10:1): a 1200x100 strip is 12:1."""
    env, th = rp.env, rp.world.integrations["threads"].id
    data = banded(1200, 100, [(100, RED), (1100, GREEN), (1200, BLUE)], "PNG", marker=(100, 0))
    source = await rp.upload(data, "image/png", "strip.png")
    item = await rp.item("threads", "TH_IMAGE", source["id"])
    option = (await rp.options(item, th))[mode]
    resp = await rp.repair(source["id"], body_of(option))
    assert resp.status_code == 201, resp.json()
    new = resp.json()["data"]["media"]
    await process(env)
    out = Image.open(io.BytesIO(await rp.bytes_of(new["id"]))).convert("RGB")
    original = Image.open(io.BytesIO(data)).convert("RGB")
    assert out.size == (option["target"]["width"], option["target"]["height"])
    if mode == "centre_crop":
        assert option["crop"] == {"x": 100, "y": 0, "width": 1000, "height": 100}
        assert out.size == (1000, 100)
        assert out.tobytes() == original.crop((100, 0, 1100, 100)).tobytes()
    else:
        assert option["pad"] == {"left": 0, "top": 10, "right": 0, "bottom": 10}
        assert out.size == (1200, 120)
        assert out.crop((0, 10, 1200, 110)).tobytes() == original.tobytes()
        black = Image.new("RGB", (1200, 10), (0, 0, 0)).tobytes()
        assert out.crop((0, 0, 1200, 10)).tobytes() == black and out.crop((0, 110, 1200, 120)).tobytes() == black
    assert resp.json()["data"]["derivation"]["background"] == (REPAIR_POLICY.background if mode == "pad" else None)
    patched = await env.rest.patch(f"/v1/brands/{rp.brand.id}/content-items/{item}", headers=rp.h(),
                                   json={"threads_settings": {"media_ids": [new["id"]], "post_type": "TH_IMAGE"}})
    assert patched.status_code == 200, patched.json()
    assert (await rp.preflight(item, th))["can_schedule"] is True


# -- refusals: each fails closed and writes nothing ---------------------------------------------------------------

@pytest.fixture
async def wide(rp) -> dict[str, Any]:
    """A 500x200 JPEG attached to an Instagram draft, its current options and the preflight it came from."""
    source = await rp.upload(banded(500, 200, [(250, RED), (500, BLUE)], "JPEG"))
    item = await rp.item("instagram", "GRID_POST", source["id"])
    options = await rp.options(item, rp.world.integrations["instagram"].id)
    return {"source": source, "item": item, "options": options}


async def refused(rp, media_id: str, body: dict[str, Any], status: int, code: str, *, brand: Any = None) -> dict:
    before, drafts = await rp.env.row_counts(), await rp.items()
    resp = await rp.repair(media_id, body, key=f"refused-{new_id('zzz')}", brand=brand)
    assert resp.status_code == status, resp.json()
    error = resp.json()["error"]
    assert error["code"] == code
    assert await rp.env.row_counts() == before and await rp.items() == drafts
    return error


def only_issue(error: dict, field_path: str, code: str) -> dict:
    (found,) = error["issues"]
    assert (found["field_path"], found["code"]) == (field_path, code), found
    assert found["message"]
    return found


async def test_stale_after_the_source_changed(rp, wide) -> None:
    crop, sid = wide["options"]["centre_crop"], wide["source"]["id"]
    row = await rp.row(sid)
    await rp.mutate(sid, sha256="0" * 64)
    error = await refused(rp, sid, body_of(crop), 422, "DOMAIN_VALIDATION_FAILED")
    only_issue(error, "$.repair_option_id", "REPAIR_OPTION_STALE")
    assert error["next_action"] == "preflight_content"
    assert error["details"]["validation_version"] == VALIDATION_VERSION
    # new dimensions, same bytes hash
    await rp.mutate(sid, sha256=row.sha256, width=501)
    only_issue(await refused(rp, sid, body_of(crop), 422, "DOMAIN_VALIDATION_FAILED"),
               "$.repair_option_id", "REPAIR_OPTION_STALE")
    # restored: the same option is accepted again (it is recomputed, not remembered)
    await rp.mutate(sid, width=row.width)
    assert (await rp.repair(sid, body_of(crop))).status_code == 201


async def test_wrong_policy_version(rp, wide) -> None:
    crop, sid = wide["options"]["centre_crop"], wide["source"]["id"]
    error = await refused(rp, sid, body_of(crop, policy_version="2026-01-01.1"), 422, "DOMAIN_VALIDATION_FAILED")
    found = only_issue(error, "$.policy_version", "POLICY_VERSION_STALE")
    assert VALIDATION_VERSION in found["message"] and error["next_action"] == "preflight_content"


async def test_option_of_the_other_mode(rp, wide) -> None:
    pad, sid = wide["options"]["pad"], wide["source"]["id"]
    assert pad["available"]
    error = await refused(rp, sid, body_of(pad, mode="centre_crop"), 422, "DOMAIN_VALIDATION_FAILED")
    only_issue(error, "$.mode", "REPAIR_MODE_MISMATCH")


async def test_foreign_integration_and_other_platform(rp, wide) -> None:
    crop, sid = wide["options"]["centre_crop"], wide["source"]["id"]
    async with rp.env.db.session(write=False) as s:
        from storage.tables.integrations import Integration
        foreign = (await s.exec(select(Integration).where(Integration.brand_id == rp.world.brand_b.id))).first()
    error = await refused(rp, sid, body_of(crop, integration_id=foreign.id), 422, "DOMAIN_VALIDATION_FAILED")
    only_issue(error, "$.integration_id", "NOT_FOUND")
    error = await refused(rp, sid, body_of(crop, integration_id=new_id("int")), 422, "DOMAIN_VALIDATION_FAILED")
    only_issue(error, "$.integration_id", "NOT_FOUND")
    tiktok = rp.world.integrations["tiktok"].id
    error = await refused(rp, sid, body_of(crop, integration_id=tiktok), 422, "DOMAIN_VALIDATION_FAILED")
    only_issue(error, "$.platform", "PLATFORM_MISMATCH")
    # another Instagram account of the same brand: the option was issued for the first one
    other = await rp.env.integration(rp.brand, "instagram")
    error = await refused(rp, sid, body_of(crop, integration_id=other.id), 422, "DOMAIN_VALIDATION_FAILED")
    only_issue(error, "$.repair_option_id", "REPAIR_OPTION_STALE")


async def test_other_or_unknown_post_type(rp, wide) -> None:
    crop, sid = wide["options"]["centre_crop"], wide["source"]["id"]
    error = await refused(rp, sid, body_of(crop, post_type="STORY"), 422, "DOMAIN_VALIDATION_FAILED")
    only_issue(error, "$.repair_option_id", "REPAIR_OPTION_STALE")
    error = await refused(rp, sid, body_of(crop, post_type="FB_REEL"), 422, "DOMAIN_VALIDATION_FAILED")
    only_issue(error, "$.post_type", "POST_TYPE_UNKNOWN")


async def test_problems_are_reported_together(rp, wide) -> None:
    crop, sid = wide["options"]["centre_crop"], wide["source"]["id"]
    error = await refused(rp, sid, body_of(crop, integration_id=rp.world.integrations["x"].id,
                                           policy_version="2020-01-01.1"), 422, "DOMAIN_VALIDATION_FAILED")
    assert {(i["field_path"], i["code"]) for i in error["issues"]} == {
        ("$.platform", "PLATFORM_MISMATCH"), ("$.policy_version", "POLICY_VERSION_STALE")}


async def test_source_not_completed(rp, wide) -> None:
    crop, sid = wide["options"]["centre_crop"], wide["source"]["id"]
    await rp.mutate(sid, status="processing")
    error = await refused(rp, sid, body_of(crop), 422, "DOMAIN_VALIDATION_FAILED")
    only_issue(error, "$.media_id", "MEDIA_NOT_READY")
    assert error["next_action"] == "read_media_again"
    await rp.mutate(sid, status="failed")
    error = await refused(rp, sid, body_of(crop), 422, "DOMAIN_VALIDATION_FAILED")
    only_issue(error, "$.media_id", "MEDIA_FAILED")
    assert error["next_action"] == "repair_media"


async def test_media_of_another_brand_is_not_found(rp, wide) -> None:
    crop = wide["options"]["centre_crop"]
    theirs = await rp.upload(banded(500, 200, [(500, RED)], "JPEG"), brand=rp.world.brand_b)
    error = await refused(rp, theirs["id"], body_of(crop), 404, "NOT_FOUND")
    assert "issues" not in error
    # and brand A's media through brand B's path
    await refused(rp, wide["source"]["id"], body_of(crop), 404, "NOT_FOUND", brand=rp.world.brand_b)
    await refused(rp, new_id("med"), body_of(crop), 404, "NOT_FOUND")


async def test_unavailable_option(rp) -> None:
    # 1000x250 (4:1): a centre crop to 1.91:1 would cut away 52 % (limit 25 %): only pad is offered... and
    # padding to 1.91:1 would be 48 % of the output, within the 50 % limit.
    source = await rp.upload(banded(1000, 250, [(1000, GREEN)], "JPEG"))
    item = await rp.item("instagram", "GRID_POST", source["id"])
    options = await rp.options(item, rp.world.integrations["instagram"].id)
    crop = options["centre_crop"]
    assert not crop["available"] and crop["id"] is None and crop["unavailable_code"] == "REPAIR_CROP_LOSS_TOO_HIGH"
    body = body_of(options["pad"], mode="centre_crop", repair_option_id="ro_" + "0" * 32)
    error = await refused(rp, source["id"], body, 422, "DOMAIN_VALIDATION_FAILED")
    found = only_issue(error, "$.repair_option_id", "REPAIR_OPTION_UNAVAILABLE")
    assert found["unavailable_code"] == error["details"]["unavailable_code"] == "REPAIR_CROP_LOSS_TOO_HIGH"


async def test_video_pad_derivative_is_rendered_with_even_geometry_and_clears_the_blocker(rp) -> None:
    """A 416x96 (4.33:1) video for X (1:3 .. 3:1): cropping would cut 31 % (limit 25 %), so only pad is offered,
    with even sizes and offsets (the centred offset 21 becomes 20), and PyAV renders exactly that."""
    env, x = rp.env, rp.world.integrations["x"].id
    source = await rp.upload(video_bytes(416, 96, seconds=1.0, fps=12), "video/mp4", "clip.mp4")
    assert source["status"] == "completed", source
    item = await rp.item("x", None, source["id"])
    options = await rp.options(item, x)
    assert options["centre_crop"]["unavailable_code"] == "REPAIR_CROP_LOSS_TOO_HIGH"
    pad = options["pad"]
    assert pad["available"] and pad["target"] == {"width": 416, "height": 138}
    assert pad["pad"] == {"left": 0, "top": 20, "right": 0, "bottom": 22}

    resp = await rp.repair(source["id"], body_of(pad))
    assert resp.status_code == 201, resp.json()
    new = resp.json()["data"]["media"]
    assert new["content_type"] == "video/mp4" and new["file_name"] == "clip-pad-416x138.mp4"
    assert await process(env) >= 1
    row = await rp.row(new["id"])
    assert (row.status, row.kind, row.width, row.height) == ("completed", "video", 416, 138)
    assert row.duration is not None and abs(row.duration - 1.0) < 0.2  # frame timing kept

    patched = await env.rest.patch(f"/v1/brands/{rp.brand.id}/content-items/{item}", headers=rp.h(),
                                   json={"x_settings": {"media_ids": [new["id"]]}})
    assert patched.status_code == 200, patched.json()
    after = await rp.preflight(item, x)
    assert not [b for b in after["blockers"] if b["code"].startswith("MEDIA_")], after["blockers"]


async def test_video_longer_than_the_policy_is_not_repaired(rp) -> None:
    async with rp.env.db.session(write=True) as s:
        video = Media(id=new_id("med"), workspace_id=rp.brand.workspace_id, brand_id=rp.brand.id, file_name="v.mp4",
                      content_type="video/mp4", status="completed", source="upload", kind="video", width=1920,
                      height=1080, duration=REPAIR_POLICY.max_video_seconds + 1, size=1000, sha256="ab" * 32,
                      asset_id=new_id("ast"), created_at=rp.env.clock.now(), updated_at=rp.env.clock.now())
        s.add(video)
    body = {"integration_id": rp.world.integrations["facebook"].id, "platform": "facebook", "post_type": "FB_REEL",
            "mode": "pad", "repair_option_id": "ro_" + "1" * 32, "policy_version": VALIDATION_VERSION}
    error = await refused(rp, video.id, body, 422, "DOMAIN_VALIDATION_FAILED")
    assert only_issue(error, "$.repair_option_id", "REPAIR_OPTION_UNAVAILABLE")["unavailable_code"] == \
        "REPAIR_VIDEO_TOO_LONG"


async def test_transform_beyond_the_loss_limits_fails_closed(rp, wide, monkeypatch) -> None:
    """Defence in depth: an option whose loss exceeds the policy the route enforces is never applied."""
    import tools.media.repair as route

    crop, pad, sid = wide["options"]["centre_crop"], wide["options"]["pad"], wide["source"]["id"]
    for option, limits, words in ((crop, {"max_crop_loss": 0.1}, "crop loss"),
                                  (pad, {"max_pad_share": 0.1}, "padding share"),
                                  (crop, {"max_upscale": 0.5}, "enlargement")):
        monkeypatch.setattr(route, "REPAIR_POLICY", dataclasses.replace(REPAIR_POLICY, **limits))
        error = await refused(rp, sid, body_of(option), 422, "DOMAIN_VALIDATION_FAILED")
        found = only_issue(error, "$.repair_option_id", "REPAIR_LOSS_LIMIT_EXCEEDED")
        assert f"({words})" in found["message"]


async def test_malformed_input_is_400(rp, wide) -> None:
    crop, sid = wide["options"]["centre_crop"], wide["source"]["id"]
    for bad, path in ((body_of(crop, repair_option_id="ro_XYZ"), "$.repair_option_id"),
                      (body_of(crop, mode="stretch"), "$.mode"),
                      (body_of(crop, platform="myspace"), "$.platform"),
                      (body_of(crop, policy_version="latest"), "$.policy_version"),
                      ({k: v for k, v in body_of(crop).items() if k != "integration_id"}, "$.integration_id")):
        error = await refused(rp, sid, bad, 400, "MALFORMED_REQUEST")
        assert path in {i["field_path"] for i in error["issues"]}
    resp = await rp.env.rest.post(f"/v1/brands/{rp.brand.id}/media/{sid}/repair-derivatives", json=body_of(crop),
                                  headers=rp.h())
    assert resp.status_code == 400 and resp.json()["error"]["issues"][0]["code"] == "REQUIRED"


# -- idempotency --------------------------------------------------------------------------------------------------

async def test_replay_and_changed_parameters(rp, wide) -> None:
    env, crop, pad, sid = rp.env, wide["options"]["centre_crop"], wide["options"]["pad"], wide["source"]["id"]
    first = await rp.repair(sid, body_of(crop), key="same")
    assert first.status_code == 201
    created = first.json()["data"]
    counts = await env.row_counts()
    again = await rp.repair(sid, body_of(crop), key="same")
    assert again.status_code == 200 and again.headers["Idempotency-Replayed"] == "true"
    replay = again.json()["data"]
    assert replay["media"]["id"] == created["media"]["id"] and replay["outcome"] == "replayed"
    assert {k: v for k, v in replay.items() if k != "outcome"} == {k: v for k, v in created.items() if k != "outcome"}
    assert await env.row_counts() == counts  # no second derivative, no second job
    # processed: a replay still names the same single derivative
    await process(env)
    counts["events"] = (await env.row_counts())["events"]  # processing recorded media.ready (docs/events.md)
    again = await rp.repair(sid, body_of(crop), key="same")
    assert again.status_code == 200 and again.json()["data"]["media"]["id"] == created["media"]["id"]
    async with env.db.session(write=False) as s:
        derived = (await s.exec(select(Media).where(Media.derived_from_id == sid))).all()
        assert [m.id for m in derived] == [created["media"]["id"]]
        assert len((await s.exec(select(Job))).all()) == counts["jobs"]
    # changed parameters under the same key
    conflict = await rp.repair(sid, body_of(pad), key="same")
    assert conflict.status_code == 409 and conflict.json()["error"]["code"] == "IDEMPOTENCY_KEY_CONFLICT"
    assert await env.row_counts() == counts
    # the same input over direct dispatch (what MCP does) replays too
    direct = await env.call("repair_media_derivative", rp.key, idempotency_key="same", brand_id=rp.brand.id,
                            media_id=sid, **body_of(crop))
    assert direct.status == 200 and direct.body["data"]["media"]["id"] == created["media"]["id"]


async def test_a_new_key_makes_a_new_derivative_of_the_same_option(rp, wide) -> None:
    crop, sid = wide["options"]["centre_crop"], wide["source"]["id"]
    a = (await rp.repair(sid, body_of(crop), key="a")).json()["data"]["media"]["id"]
    b = (await rp.repair(sid, body_of(crop), key="b")).json()["data"]["media"]["id"]
    assert a != b
    await process(rp.env)
    assert (await rp.row(a)).sha256 == (await rp.row(b)).sha256  # deterministic rendering


# -- rendering ----------------------------------------------------------------------------------------------------

async def test_source_changed_before_rendering_fails_the_derivative(rp, wide) -> None:
    crop, sid = wide["options"]["centre_crop"], wide["source"]["id"]
    new = (await rp.repair(sid, body_of(crop))).json()["data"]["media"]
    await rp.mutate(sid, sha256="1" * 64)
    await process(rp.env)
    got = (await rp.env.rest.get(f"/v1/brands/{rp.brand.id}/media/{new['id']}", headers=rp.h())).json()["data"]
    assert got["status"] == "failed"
    (action,) = got["readiness"]["next_actions"]
    assert action["action"] == "repair_media" and action["reason_code"] == "REPAIR_SOURCE_CHANGED"
    source = await rp.row(sid)
    assert source.status == "completed" and source.storage_key  # the source keeps its bytes


async def test_gif_source_becomes_png_and_lists_as_derivative(rp) -> None:
    data = image_bytes(1200, 100, "GIF")
    source = await rp.upload(data, "image/gif", "strip.gif")
    item = await rp.item("threads", "TH_IMAGE", source["id"])
    pad = (await rp.options(item, rp.world.integrations["threads"].id))["pad"]
    resp = await rp.repair(source["id"], body_of(pad))
    assert resp.status_code == 201, resp.json()
    new = resp.json()["data"]["media"]
    assert new["content_type"] == "image/png" and new["file_name"] == "strip-pad-1200x120.png"
    await process(rp.env)
    row = await rp.row(new["id"])
    assert (row.status, row.content_type, row.format, row.width, row.height) == ("completed", "image/png", "PNG",
                                                                                 1200, 120)
    listed = (await rp.env.rest.get(f"/v1/brands/{rp.brand.id}/media", headers=rp.h())).json()["data"]["items"]
    assert listed[0]["id"] == new["id"] and listed[0]["source"] == "repair_derivative"


async def test_exif_rotated_source_is_repaired_as_displayed(rp) -> None:
    """Geometry is that of the picture as displayed: a 200x500 JPEG with EXIF orientation 6 shows as 500x200."""
    source = await rp.upload(image_bytes(200, 500, "JPEG", orientation=6))
    assert ((await rp.row(source["id"])).width, (await rp.row(source["id"])).height) == (500, 200)
    item = await rp.item("instagram", "GRID_POST", source["id"])
    crop = (await rp.options(item, rp.world.integrations["instagram"].id))["centre_crop"]
    new = (await rp.repair(source["id"], body_of(crop))).json()["data"]["media"]
    await process(rp.env)
    out = Image.open(io.BytesIO(await rp.bytes_of(new["id"])))
    assert out.size == (382, 200) and out.getexif().get(0x0112) in (None, 1)  # upright, no orientation left


async def _filler(rp, size: int) -> None:
    async with rp.env.db.session(write=True) as s:
        s.add(Media(id=new_id("med"), workspace_id=rp.brand.workspace_id, brand_id=rp.brand.id, file_name="f.jpg",
                    content_type="image/jpeg", status="completed", source="upload", kind="image", width=10, height=10,
                    size=size, sha256="cd" * 32, asset_id=new_id("ast"), created_at=rp.env.clock.now(),
                    updated_at=rp.env.clock.now()))


async def test_plan_caps_apply_to_derivatives(rp, wide) -> None:
    from schemas.plans import get_plan
    from storage.tables.accounts import Workspace

    crop, sid = wide["options"]["centre_crop"], wide["source"]["id"]
    async with rp.env.db.session(write=True) as s:
        (await s.get(Workspace, rp.brand.workspace_id)).plan_id = "free"
    free = get_plan("free").limits
    max_bytes, max_items = free["media_storage_bytes_per_brand"], free["media_items_per_brand"]
    assert max_bytes is not None and max_items is not None  # the free plan caps both
    # bytes: the derivative's size is known only once rendered; it fails there, and frees its slot
    used = (await rp.row(sid)).size or 0
    await _filler(rp, max_bytes - used - 100)
    new = (await rp.repair(sid, body_of(crop), key="bytes")).json()["data"]["media"]
    await process(rp.env)
    got = (await rp.env.rest.get(f"/v1/brands/{rp.brand.id}/media/{new['id']}", headers=rp.h())).json()["data"]
    assert got["status"] == "failed" and got["readiness"]["next_actions"][0]["reason_code"] == "PLAN_LIMIT_REACHED"
    # items: the derivative is a new media item, refused at the request once the brand is full
    for _ in range(max_items - 2):
        await _filler(rp, 1)
    error = await refused(rp, sid, body_of(crop), 422, "PLAN_LIMIT_REACHED")
    assert error["details"]["limit"] == "media_items_per_brand"

"""Repair options: exact geometry, stable IDs that change with every input, unavailable cases, and the exact
match the media repair-derivative route relies on."""

from __future__ import annotations

import dataclasses
from typing import Any, TypedDict, TypeVar

import pytest

from schemas.platforms import BY_KEY, REPAIR_POLICY, VALIDATION_VERSION
from schemas.platforms.rules import MediaSpec
from schemas.preflight import MediaFacts, RepairOption
from tools.schedules.repair_options import compute_repair_options, find_repair_option, geometry_ok

T = TypeVar("T")


class Target(TypedDict):
    integration_id: str
    platform: str
    post_type: str


SHA = "ab" * 32
BASE = Target(integration_id="int_01JABCDEFGHJKMNPQRSTVWXYZ0", platform="instagram", post_type="GRID_POST")


def present(value: T | None) -> T:
    """`value`, which the test knows is set (RepairOption types every geometry field as optional: an unavailable
    option has none)."""
    assert value is not None
    return value


def spec(platform: str, post_type: str, kind: str) -> MediaSpec:
    return present(present(BY_KEY[platform].rules.post_type(post_type)).spec(kind))


def img(w: int, h: int, **kw) -> MediaFacts:
    return MediaFacts(**{"id": "med_01JABCDEFGHJKMNPQRSTVWXYZ0", "status": "completed", "kind": "image",
                         "content_type": "image/jpeg", "width": w, "height": h, "size": 1000, "sha256": SHA, **kw})


def options(media: MediaFacts, **over: Any) -> dict[str, RepairOption]:
    return {o.mode: o for o in compute_repair_options(**{**BASE, **over}, media=media)}


def test_centre_crop_too_wide_keeps_height_and_cuts_sides() -> None:
    # 2000x1000 (2:1) on Instagram feed (4:5 .. 1.91:1): crop to floor(1000 * 1.91) = 1910 wide
    crop = options(img(2000, 1000))["centre_crop"]
    assert crop.available and present(crop.id).startswith("ro_")
    assert present(crop.crop).model_dump() == {"x": 45, "y": 0, "width": 1910, "height": 1000}
    assert present(crop.target).model_dump() == {"width": 1910, "height": 1000}
    assert present(crop.safe_area).model_dump() == {"x": 0, "y": 0, "width": 1910, "height": 1000}
    assert crop.scale == 1.0 and crop.crop_loss == 0.045 and crop.pad_share == 0.0
    assert crop.policy_version == VALIDATION_VERSION and crop.source_sha256 == SHA


def test_pad_too_tall_adds_width() -> None:
    # 1000x1500 (2:3) needs >= 4:5: pad width to ceil(1500 * 4/5) = 1200, centred
    pad = options(img(1000, 1500))["pad"]
    assert pad.available
    assert present(pad.target).model_dump() == {"width": 1200, "height": 1500}
    assert present(pad.resize).model_dump() == {"width": 1000, "height": 1500}
    assert present(pad.pad).model_dump() == {"left": 100, "top": 0, "right": 100, "bottom": 0}
    assert present(pad.safe_area).model_dump() == {"x": 100, "y": 0, "width": 1000, "height": 1500}
    assert pad.pad_share == round(1 - 1000 * 1500 / (1200 * 1500), 4)
    crop = options(img(1000, 1500))["centre_crop"]
    assert present(crop.crop).model_dump() == {"x": 0, "y": 125, "width": 1000, "height": 1250}


def test_outputs_meet_every_bound() -> None:
    for platform, post_type, w, h in [("instagram", "GRID_POST", 3000, 1000), ("instagram", "GRID_POST", 900, 1400),
                                      ("facebook", "FB_STORY", 1200, 1000), ("telegram", "TG_PHOTO", 200, 3900),
                                      ("linkedin", "LI_IMAGE", 9000, 6000)]:
        media = img(w, h)
        rules = spec(platform, post_type, "image")
        for o in compute_repair_options(integration_id="int_x", platform=platform, post_type=post_type, media=media):
            if o.available:
                target = present(o.target)
                assert geometry_ok(target.width, target.height, rules, REPAIR_POLICY.aspect_tolerance), o


def test_downscale_for_pixel_cap() -> None:
    # LinkedIn images: at most 36,152,320 pixels -> 9000x6000 scales down, ratio kept
    crop = options(img(9000, 6000), platform="linkedin", post_type="LI_IMAGE")["centre_crop"]
    assert crop.available and present(crop.scale) < 1
    target = present(crop.target)
    assert target.width * target.height <= 36_152_320
    assert present(crop.crop).model_dump() == {"x": 0, "y": 0, "width": 9000, "height": 6000}


def test_ids_are_stable_and_depend_on_every_input() -> None:
    a = options(img(2000, 1000))
    assert a["centre_crop"].id == options(img(2000, 1000))["centre_crop"].id
    assert a["centre_crop"].id != a["pad"].id
    variants = [
        options(img(2000, 1000, sha256="cd" * 32)),
        options(img(2000, 1000, id="med_01JABCDEFGHJKMNPQRSTVWXYZ1")),
        options(img(2000, 1001)),
        options(img(2000, 1000), integration_id="int_other"),
        {o.mode: o for o in compute_repair_options(**BASE, media=img(2000, 1000), policy_version="2000-01-01.1")},
    ]
    seen = {a["centre_crop"].id, a["pad"].id}
    for v in variants:
        for mode in ("centre_crop", "pad"):
            if v[mode].available:
                assert v[mode].id not in seen
    # post type: STORY bounds differ; GRID_POST's crop is not a STORY crop
    story = options(img(2000, 1000), post_type="STORY")
    assert story["centre_crop"].id != a["centre_crop"].id
    # the pad colour is part of the pad geometry
    white = {o.mode: o for o in compute_repair_options(**BASE, media=img(2000, 1000),
                                                       policy=dataclasses.replace(REPAIR_POLICY, background="#fff"))}
    assert white["pad"].id != a["pad"].id and white["centre_crop"].id == a["centre_crop"].id


@pytest.mark.parametrize(("media", "over", "code"), [
    (img(4000, 1000), {}, "REPAIR_CROP_LOSS_TOO_HIGH"),  # 4:1 -> 1.91:1 cuts 52%
    (img(1000, 2500), {}, "REPAIR_CROP_LOSS_TOO_HIGH"),
    (img(2000, 1000, sha256=None), {}, "REPAIR_SOURCE_UNKNOWN"),
    (img(0, 0), {}, "REPAIR_SOURCE_UNKNOWN"),
    (img(5000, 1000, kind="video", content_type="video/mp4", duration=10.0), {"platform": "x", "post_type": "X_POST"},
     "REPAIR_CROP_LOSS_TOO_HIGH"),  # 5:1 -> 3:1 cuts 40%
    (img(2000, 1000, kind="video", content_type="video/mp4"), {"platform": "x", "post_type": "X_POST"},
     "REPAIR_SOURCE_UNKNOWN"),  # a video's duration must be known
    (img(100, 100), {"platform": "facebook", "post_type": "FB_STORY"}, None),
])
def test_crop_unavailable(media, over, code) -> None:
    crop = options(media, **over)["centre_crop"]
    if code is None:
        return
    assert not crop.available and crop.id is None
    assert crop.unavailable_code == code and crop.explanation


def test_pad_limit_and_upscale_limit() -> None:
    # 1000x4000 (1:4) padded to 4:5 would be 80% padding
    pad = options(img(1000, 4000))["pad"]
    assert not pad.available and pad.unavailable_code == "REPAIR_PADDING_TOO_HIGH"
    # Facebook story video bounds are for videos; Telegram photo has no minimum; use Reels-like image bounds:
    # a 100x100 image where a spec needs 540x960 would need 5.4x enlargement
    from tools.schedules import repair_options as ro
    spec = MediaSpec("image", "spec:test", min_width=540, min_height=960, min_aspect=(9, 16), max_aspect=(9, 16))
    base = {"integration_id": "i", "platform": "p", "post_type": "t", "media_id": "m", "source_sha256": SHA,
            "policy_version": "v"}
    assert ro._centre_crop(100, 100, spec, REPAIR_POLICY, base).unavailable_code == "REPAIR_CROP_LOSS_TOO_HIGH"
    out = ro._pad(200, 400, spec, REPAIR_POLICY, base)  # canvas 225x400 -> needs 2.4x
    assert not out.available and out.unavailable_code == "REPAIR_UPSCALE_TOO_HIGH"
    ok = ro._pad(540, 900, spec, REPAIR_POLICY, base)  # needs ~1.07x: allowed
    assert ok.available and present(ok.target).model_dump() == {"width": 540, "height": 960}


def test_find_repair_option_exact_match_only() -> None:
    media = img(2000, 1000)
    crop = options(media)["centre_crop"]
    crop_id = present(crop.id)
    args = {**BASE, "media": media, "policy_version": VALIDATION_VERSION}
    assert find_repair_option(crop_id, mode="centre_crop", **args) == crop
    assert find_repair_option(crop_id, mode="pad", **args) is None  # wrong mode
    assert find_repair_option("ro_" + "0" * 32, mode="centre_crop", **args) is None
    assert find_repair_option(crop_id, mode="centre_crop", **{**args, "media": img(2000, 1000, sha256="ef" * 32)}) \
        is None  # source bytes changed
    assert find_repair_option(crop_id, mode="centre_crop", **{**args, "policy_version": "2020-01-01.1"}) is None
    assert find_repair_option(crop_id, mode="centre_crop", **{**args, "integration_id": "int_other"}) is None
    assert find_repair_option(crop_id, mode="centre_crop", **{**args, "post_type": "STORY"}) is None


def test_kinds_outside_the_policy_are_not_transformed() -> None:
    images_only = dataclasses.replace(REPAIR_POLICY, kinds=("image",))
    video = img(1000, 250, kind="video", content_type="video/mp4", duration=10.0)
    for option in compute_repair_options(**{**BASE, "platform": "x", "post_type": "X_POST"}, media=video,
                                         policy=images_only):
        assert not option.available and option.unavailable_code == "REPAIR_KIND_NOT_SUPPORTED"


def test_video_geometry_is_even_where_an_image_would_be_odd() -> None:
    # 1000x250 (4:1) for X video (1:3 .. 3:1): the centred crop keeps 750 wide at x=125; a video's crop box
    # starts on an even column instead, and every size is even (H.264 4:2:0).
    over = {"platform": "x", "post_type": "X_POST"}
    video = options(img(1000, 250, kind="video", content_type="video/mp4", duration=10.0), **over)
    crop, pad = video["centre_crop"], video["pad"]
    assert crop.available and present(crop.crop).model_dump() == {"x": 124, "y": 0, "width": 750, "height": 250}
    assert present(crop.target).model_dump() == {"width": 750, "height": 250}
    assert pad.available
    target, resize, padding = present(pad.target), present(pad.resize), present(pad.pad)
    assert target.width % 2 == 0 and target.height % 2 == 0
    numbers = [*resize.model_dump().values(), *padding.model_dump().values(), *present(pad.safe_area).model_dump().values()]
    assert all(v % 2 == 0 for v in numbers), pad
    assert resize.width + padding.left + padding.right == target.width
    assert geometry_ok(target.width, target.height, spec("x", "X_POST", "video"), REPAIR_POLICY.aspect_tolerance)


def test_video_longer_than_the_policy_is_explained() -> None:
    over = {"platform": "x", "post_type": "X_POST"}
    long = img(1000, 250, kind="video", content_type="video/mp4", duration=REPAIR_POLICY.max_video_seconds + 0.5)
    assert {o.unavailable_code for o in options(long, **over).values()} == {"REPAIR_VIDEO_TOO_LONG"}

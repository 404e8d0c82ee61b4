"""Deterministic repair options for media that break a post type's aspect-ratio or dimension bounds.

For one media item, target and post type this computes a `centre_crop` and a `pad` transform whose output
meets every geometric bound of the post type (aspect ratio, minimum/maximum width and height, pixel count),
or says why no safe transform exists. Each option's ID is a hash of everything that defines it: integration,
platform, post type, media ID, source hash, policy version, mode, source size, crop box / resize / padding,
target size and safe area. The media repair-derivative route recomputes the options for the same inputs and
accepts only an exact ID match (`find_repair_option`), so a stale option (new source bytes, new policy
version, changed rules) fails closed.

Geometry uses exact fractions; sizes are whole pixels. Video geometry is even throughout (crop box, sizes and
pad offsets), because H.264 4:2:0 output has even sizes and FFmpeg's crop and pad filters round odd offsets
down: the option is then exactly what gets rendered. Pure: no database, no I/O.
"""

from __future__ import annotations

import hashlib
import json
import math
from fractions import Fraction
from functools import lru_cache
from typing import Any, get_args

from schemas.media_repair import RepairMode
from schemas.platforms import BY_KEY, REPAIR_POLICY, VALIDATION_VERSION
from schemas.platforms.rules import MediaSpec, RepairPolicy
from schemas.preflight import Box, MediaFacts, Padding, RepairOption, Size

MODES: tuple[str, ...] = get_args(RepairMode)

UNAVAILABLE = {
    "REPAIR_SOURCE_UNKNOWN": "The source's dimensions or content hash are not known yet; read the media again "
                             "once processing has finished.",
    "REPAIR_KIND_NOT_SUPPORTED": "This kind of media cannot be transformed; re-export it at the required size "
                                 "and aspect ratio and upload it.",
    "REPAIR_VIDEO_TOO_LONG": "The video is longer than the repair policy renders (max_video_seconds in "
                             "get_platform_capabilities); re-export it at the required size and aspect ratio.",
    "REPAIR_CROP_LOSS_TOO_HIGH": "A centre crop would cut away more of the image than the repair policy allows; "
                                 "crop it yourself or use the pad option.",
    "REPAIR_PADDING_TOO_HIGH": "Padding would fill more of the image than the repair policy allows; use the "
                               "centre_crop option or upload a better-fitting image.",
    "REPAIR_UPSCALE_TOO_HIGH": "The image is too small: meeting the minimum size would enlarge it more than the "
                               "repair policy allows; upload a larger original.",
    "REPAIR_NO_GEOMETRY": "No size satisfies every bound of this post type for this image; upload an image "
                          "closer to the required size and aspect ratio.",
}


def within_aspect(width: int, height: int, spec: MediaSpec, tolerance: float) -> bool:
    lo, hi = spec.aspect_bounds
    r = Fraction(width, height)
    tol = Fraction(tolerance).limit_denominator(10_000)
    return not ((lo is not None and r < lo * (1 - tol)) or (hi is not None and r > hi * (1 + tol)))


def geometry_ok(width: int, height: int, spec: MediaSpec, tolerance: float) -> bool:
    """True when a `width` x `height` image meets every geometric bound of `spec`."""
    if width < 1 or height < 1:
        return False
    if (spec.min_width and width < spec.min_width) or (spec.min_height and height < spec.min_height):
        return False
    if (spec.max_width and width > spec.max_width) or (spec.max_height and height > spec.max_height):
        return False
    if spec.max_pixels and width * height > spec.max_pixels:
        return False
    return within_aspect(width, height, spec, tolerance)


def _target_ratio(width: int, height: int, spec: MediaSpec) -> Fraction:
    lo, hi = spec.aspect_bounds
    r = Fraction(width, height)
    if lo is not None and r < lo:
        return lo
    if hi is not None and r > hi:
        return hi
    return r


def _scale_bounds(w: int, h: int, spec: MediaSpec) -> tuple[Fraction, Fraction | None]:
    smin = Fraction(0)
    if spec.min_width:
        smin = max(smin, Fraction(spec.min_width, w))
    if spec.min_height:
        smin = max(smin, Fraction(spec.min_height, h))
    caps = []
    if spec.max_width:
        caps.append(Fraction(spec.max_width, w))
    if spec.max_height:
        caps.append(Fraction(spec.max_height, h))
    if spec.max_pixels:
        # largest s with (w*s)*(h*s) <= max_pixels, kept exact enough by a rational just below the root
        caps.append(Fraction(math.isqrt(spec.max_pixels * 10**12 // (w * h)), 10**6))
    return smin, (min(caps) if caps else None)


def _pick_scale(w: int, h: int, spec: MediaSpec) -> Fraction | None:
    smin, smax = _scale_bounds(w, h, spec)
    if smax is not None and smin > smax:
        return None
    if smin > 1:
        return smin
    if smax is not None and smax < 1:
        return smax
    return Fraction(1)


def _scaled(n: int, s: Fraction, lo: int | None, hi: int | None) -> int:
    v = math.ceil(n * s) if s > 1 else math.floor(n * s) if s < 1 else n
    if lo:
        v = max(v, lo)
    if hi:
        v = min(v, hi)
    return max(v, 1)


def _even(v: int, lo: int | None, hi: int | None) -> int:
    """The even size nearest `v` (down first) that stays within [lo, hi]; `v` when none does."""
    if v % 2 == 0:
        return v
    for candidate in (v - 1, v + 1):
        if candidate >= max(lo or 2, 2) and (hi is None or candidate <= hi):
            return candidate
    return v


def _unavailable(mode: str, code: str, base: dict[str, Any]) -> RepairOption:
    return RepairOption(available=False, mode=mode, unavailable_code=code,  # pyright: ignore[reportArgumentType]  # code is one of UNAVAILABLE's keys, the Literal's values
                        explanation=UNAVAILABLE[code], **base)


def _option_id(base: dict[str, Any], mode: str, geometry: dict[str, Any]) -> str:
    body = json.dumps({"v": 1, **base, "mode": mode, **geometry}, sort_keys=True, separators=(",", ":"))
    return "ro_" + hashlib.sha256(body.encode()).hexdigest()[:32]


def _centre_crop(W: int, H: int, spec: MediaSpec, policy: RepairPolicy, base: dict[str, Any],
                 even: bool = False) -> RepairOption:
    r = _target_ratio(W, H, spec)
    if Fraction(W, H) > r:  # too wide: keep full height, cut the sides (floor keeps the ratio inside bounds)
        cw, ch = max(1, math.floor(H * r)), H
    elif Fraction(W, H) < r:  # too tall: keep full width, cut top and bottom
        cw, ch = W, max(1, math.floor(W / r))
    else:
        cw, ch = W, H
    if even:
        cw, ch = _even(cw, 2, W), _even(ch, 2, H)
    loss = 1 - Fraction(cw * ch, W * H)
    if loss > Fraction(policy.max_crop_loss).limit_denominator(10_000):
        return _unavailable("centre_crop", "REPAIR_CROP_LOSS_TOO_HIGH", base)
    s = _pick_scale(cw, ch, spec)
    if s is None:
        return _unavailable("centre_crop", "REPAIR_NO_GEOMETRY", base)
    if s > Fraction(policy.max_upscale).limit_denominator(10_000):
        return _unavailable("centre_crop", "REPAIR_UPSCALE_TOO_HIGH", base)
    tw = _scaled(cw, s, spec.min_width, spec.max_width)
    th = _scaled(ch, s, spec.min_height, spec.max_height)
    if even:
        tw, th = _even(tw, spec.min_width, spec.max_width), _even(th, spec.min_height, spec.max_height)
    x, y = (W - cw) // 2, (H - ch) // 2
    if even:
        x, y = x - x % 2, y - y % 2
    if not geometry_ok(tw, th, spec, policy.aspect_tolerance) or (even and (tw % 2 or th % 2 or cw % 2 or ch % 2)):
        return _unavailable("centre_crop", "REPAIR_NO_GEOMETRY", base)
    crop = Box(x=x, y=y, width=cw, height=ch)
    target = Size(width=tw, height=th)
    safe = Box(x=0, y=0, width=tw, height=th)
    geometry = {"source": {"width": W, "height": H}, "crop": crop.model_dump(), "target": target.model_dump(),
                "safe_area": safe.model_dump()}
    return RepairOption(available=True, mode="centre_crop", id=_option_id(base, "centre_crop", geometry),
                        source=Size(width=W, height=H), target=target, crop=crop, safe_area=safe,
                        crop_loss=round(float(loss), 4), pad_share=0.0, scale=round(float(s), 6), **base)


def _pad(W: int, H: int, spec: MediaSpec, policy: RepairPolicy, base: dict[str, Any],
         even: bool = False) -> RepairOption:
    r = _target_ratio(W, H, spec)
    if Fraction(W, H) > r:  # too wide: add height (ceil keeps the ratio inside bounds)
        pw, ph = W, math.ceil(W / r)
    elif Fraction(W, H) < r:  # too tall: add width
        pw, ph = math.ceil(H * r), H
    else:
        pw, ph = W, H
    s = _pick_scale(pw, ph, spec)
    if s is None:
        return _unavailable("pad", "REPAIR_NO_GEOMETRY", base)
    if s > Fraction(policy.max_upscale).limit_denominator(10_000):
        return _unavailable("pad", "REPAIR_UPSCALE_TOO_HIGH", base)
    tw = _scaled(pw, s, spec.min_width, spec.max_width)
    th = _scaled(ph, s, spec.min_height, spec.max_height)
    rw, rh = min(tw, max(1, round(W * s))), min(th, max(1, round(H * s)))
    if even:
        tw, th = _even(tw, spec.min_width, spec.max_width), _even(th, spec.min_height, spec.max_height)
        rw, rh = _even(min(rw, tw), 2, tw), _even(min(rh, th), 2, th)
        if any(v % 2 for v in (tw, th, rw, rh)):
            return _unavailable("pad", "REPAIR_NO_GEOMETRY", base)
    share = 1 - Fraction(rw * rh, tw * th)
    if share > Fraction(policy.max_pad_share).limit_denominator(10_000):
        return _unavailable("pad", "REPAIR_PADDING_TOO_HIGH", base)
    if not geometry_ok(tw, th, spec, policy.aspect_tolerance):
        return _unavailable("pad", "REPAIR_NO_GEOMETRY", base)
    left, top = (tw - rw) // 2, (th - rh) // 2
    if even:
        left, top = left - left % 2, top - top % 2
    pad = Padding(left=left, top=top, right=tw - rw - left, bottom=th - rh - top)
    target, resize = Size(width=tw, height=th), Size(width=rw, height=rh)
    safe = Box(x=left, y=top, width=rw, height=rh)
    geometry = {"source": {"width": W, "height": H}, "resize": resize.model_dump(), "pad": pad.model_dump(),
                "target": target.model_dump(), "safe_area": safe.model_dump(), "background": policy.background}
    return RepairOption(available=True, mode="pad", id=_option_id(base, "pad", geometry),
                        source=Size(width=W, height=H), target=target, resize=resize, pad=pad, safe_area=safe,
                        crop_loss=0.0, pad_share=round(float(share), 4), scale=round(float(s), 6), **base)


def compute_repair_options(*, integration_id: str, platform: str, post_type: str, media: MediaFacts,
                           policy_version: str = VALIDATION_VERSION,
                           policy: RepairPolicy = REPAIR_POLICY) -> list[RepairOption]:
    """Both modes for `media` on this target and post type: available options, or unavailable entries with a
    code and explanation. Uses the registry's bounds for the media's kind."""
    return list(_compute(integration_id, platform, post_type, media, policy_version, policy))  # pyright: ignore[reportArgumentType]  # MediaFacts is frozen, so hashable; pyright does not read pydantic's frozen config


@lru_cache(maxsize=1024)
def _compute(integration_id: str, platform: str, post_type: str, media: MediaFacts, policy_version: str,
             policy: RepairPolicy) -> tuple[RepairOption, ...]:
    base = {"integration_id": integration_id, "platform": platform, "post_type": post_type, "media_id": media.id,
            "source_sha256": media.sha256, "policy_version": policy_version}
    rules = BY_KEY[platform].rules.post_type(post_type)
    spec = rules.spec(media.kind or "") if rules else None
    if media.kind not in policy.kinds:
        return tuple(_unavailable(m, "REPAIR_KIND_NOT_SUPPORTED", base) for m in MODES)
    if spec is None:
        return tuple(_unavailable(m, "REPAIR_NO_GEOMETRY", base) for m in MODES)
    video = media.kind == "video"
    if not media.width or not media.height or not media.sha256 or (video and media.duration is None):
        return tuple(_unavailable(m, "REPAIR_SOURCE_UNKNOWN", base) for m in MODES)
    if video and media.duration > policy.max_video_seconds:  # pyright: ignore[reportOptionalOperand]  # duration is checked not None just above for a video
        return tuple(_unavailable(m, "REPAIR_VIDEO_TOO_LONG", base) for m in MODES)
    return (_centre_crop(media.width, media.height, spec, policy, base, even=video),
            _pad(media.width, media.height, spec, policy, base, even=video))


def find_repair_option(option_id: str, *, mode: str, integration_id: str, platform: str, post_type: str,
                       media: MediaFacts, policy_version: str) -> RepairOption | None:
    """The available option with exactly this ID for these inputs, or None (stale or foreign: fail closed).
    An option issued under another policy version never matches: the version is part of the ID and must
    equal the current one."""
    if policy_version != VALIDATION_VERSION or platform not in BY_KEY:
        return None
    for opt in compute_repair_options(integration_id=integration_id, platform=platform, post_type=post_type,
                                      media=media, policy_version=policy_version):
        if opt.available and opt.mode == mode and opt.id == option_id:
            return opt
    return None

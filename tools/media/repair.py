"""`POST /v1/brands/{brand_id}/media/{media_id}/repair-derivatives`: turn a preflight repair option into a new,
immutable Media item.

The handler never trusts the option it is sent: it recomputes the options for the CURRENT source (its
SHA-256 and probed size), the named integration, platform and post type and the current policy version
(`tools.schedules.repair_options.find_repair_option`) and accepts only an exact, available match; anything else fails
closed with 422 and a reason. It then creates the derivative (source `repair_derivative`, `derived_from_id`,
`derivation`) through `tools.media.routes._new_media` (the plan quota check) in status `processing` and enqueues the
ordinary media processing job, which renders it (tools.media.derivatives) and settles it like any media.
The source item, its bytes and every draft are left untouched.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from sqlmodel import select

from schemas import media_repair as out
from schemas.errors import ApiError, issue
from schemas.media import FILENAME_MAX
from schemas.media_repair import RepairDerivativeRequest
from schemas.platforms import BY_KEY, REPAIR_POLICY, VALIDATION_VERSION
from schemas.preflight import MediaFacts, RepairOption
from storage.tables.integrations import Integration
from storage.tables.media import READY_STATUSES, Media
from tools.endpoint import Call, Endpoint, Reply
from tools.links import link
from tools.media.derivatives import (
    SOURCE,
    derivation_record,
    derivative_file_name,
    geometry_of,
    output_content_type,
)
from tools.media.items import media_item
from tools.media.routes import _get, _new_media, workspace_of
from tools.media.transform import TransformError
from tools.media.uploads import enqueue_processing
from tools.schedules.preflight import media_facts
from tools.schedules.repair_options import compute_repair_options, find_repair_option


def _refuse(issues: list[dict[str, Any]], *, next_action: str = "preflight_content", **details: Any) -> ApiError:
    return ApiError(
        "DOMAIN_VALIDATION_FAILED",
        "The repair derivative was refused; nothing was created. See `issues`.",
        issues=issues, next_action=next_action,
        repair_guidance="Run preflight_content again and send an available repair option exactly as it is issued "
                        "now (id, mode, integration_id, platform, post_type, policy_version).",
        details={"validation_version": VALIDATION_VERSION, **details})


async def _check_request(call: Call, req: RepairDerivativeRequest, source: Media) -> None:
    """Everything that does not depend on the option itself, reported together."""
    issues: list[dict[str, Any]] = []
    next_action = "preflight_content"
    integration = (await call.session.exec(select(Integration).where(
        Integration.id == req.integration_id, Integration.brand_id == call.brand_id,
        Integration.workspace_id == workspace_of(call)))).first()
    if integration is None:
        issues.append(issue("$.integration_id", "NOT_FOUND", "No integration of this brand has this ID; use the "
                                                             "integration_id of the repair option (list_targets)."))
    elif integration.platform != req.platform:
        issues.append(issue("$.platform", "PLATFORM_MISMATCH", f"This integration is a {integration.platform} "
                                                               f"account, not {req.platform}."))
    if req.post_type not in BY_KEY[req.platform].post_types:
        issues.append(issue("$.post_type", "POST_TYPE_UNKNOWN", f"{req.platform} has no post type {req.post_type}; "
                                                                "use the post_type of the repair option."))
    if source.status not in READY_STATUSES:
        failed = source.status == "failed"
        issues.append(issue("$.media_id", "MEDIA_FAILED" if failed else "MEDIA_NOT_READY",
                            "The source media item failed processing and cannot be repaired; upload a corrected file."
                            if failed else "The source media item is not processed yet; read it again (get_media) "
                                           "until readiness.ready_for_content is true, then run preflight."))
        next_action = "repair_media" if failed else "read_media_again"
    if req.policy_version != VALIDATION_VERSION:
        issues.append(issue("$.policy_version", "POLICY_VERSION_STALE",
                            f"The option was issued under policy {req.policy_version}; the current policy is "
                            f"{VALIDATION_VERSION}. Run preflight again for a current option."))
    if issues:
        raise _refuse(issues, next_action=next_action if len(issues) == 1 else "preflight_content")


def _facts(media: Media) -> MediaFacts:
    # The same facts preflight builds for this row, so the recomputed options are the ones preflight issues.
    return media_facts(media)


def _match(req: RepairDerivativeRequest, source: Media) -> RepairOption:
    """The exact, current, available option, or a refusal that says why the given one is not."""
    target = {"integration_id": req.integration_id, "platform": req.platform, "post_type": req.post_type,
              "media": _facts(source)}
    option = find_repair_option(req.repair_option_id, mode=req.mode, policy_version=req.policy_version, **target)
    if option is not None:
        return option
    current = compute_repair_options(policy_version=VALIDATION_VERSION, **target)
    mine = next((o for o in current if o.mode == req.mode), None)
    other = next((o for o in current if o.mode != req.mode and o.id == req.repair_option_id), None)
    if other is not None:
        raise _refuse([issue("$.mode", "REPAIR_MODE_MISMATCH", f"This option ID is the {other.mode} option; send "
                                                               f"mode {other.mode}, or the {req.mode} option's ID.")])
    if mine is not None and not mine.available:
        raise _refuse([issue("$.repair_option_id", "REPAIR_OPTION_UNAVAILABLE",
                             f"No safe {req.mode} transform exists for this media and post type: {mine.explanation}",
                             unavailable_code=mine.unavailable_code)],
                      unavailable_code=mine.unavailable_code)
    raise _refuse([issue("$.repair_option_id", "REPAIR_OPTION_STALE",
                         "This is not a repair option preflight issues now for this media, integration, post type "
                         "and mode: the source bytes or size changed since, or the option belongs to another target, "
                         "post type or mode. Run preflight again and use a current option.")])


def _check_loss(option: RepairOption) -> None:
    """Defence in depth: the option's transform stays within the versioned loss limits (exact arithmetic)."""
    assert option.source is not None and option.target is not None
    W, H = option.source.width, option.source.height
    policy = REPAIR_POLICY
    problems = []
    if option.crop is not None:
        loss = 1 - Fraction(option.crop.width * option.crop.height, W * H)
        if loss > Fraction(policy.max_crop_loss).limit_denominator(10_000):
            problems.append("crop loss")
    if option.resize is not None:
        share = 1 - Fraction(option.resize.width * option.resize.height, option.target.width * option.target.height)
        if share > Fraction(policy.max_pad_share).limit_denominator(10_000):
            problems.append("padding share")
    if option.crop is not None:  # centre_crop scales the kept box to the target; pad scales the source to resize
        kept, scaled = (option.crop.width, option.crop.height), (option.target.width, option.target.height)
    else:
        assert option.resize is not None
        kept, scaled = (W, H), (option.resize.width, option.resize.height)
    # Whole pixels round up by less than one pixel; that rounding is not enlargement.
    upscale = max(Fraction(max(s - 1, 1), k) for s, k in zip(scaled, kept, strict=True))
    if upscale > Fraction(policy.max_upscale).limit_denominator(10_000):
        problems.append("enlargement")
    if problems:
        raise _refuse([issue("$.repair_option_id", "REPAIR_LOSS_LIMIT_EXCEEDED",
                             f"The transform exceeds the repair policy ({', '.join(problems)}); it is not applied.")])


def _next_actions(media: Media, source: Media, platform: str, integration_id: str) -> list[dict[str, str]]:
    settings_key = BY_KEY[platform].settings_key or "platform settings"
    return [
        {"action": "read_media_again",
         "guidance": f"The derivative {media.id} is being rendered. Read it with get_media until "
                     "readiness.ready_for_content is true."},
        {"action": "attach_derivative",
         "guidance": f"In the content item, replace {source.id} with {media.id} in {settings_key}.media_ids (and "
                     "anywhere else this platform uses it) with update_content_item. Nothing was "
                     "changed for you: the source item and every draft are untouched."},
        {"action": "preflight_content",
         "guidance": f"Run preflight_content again for integration {integration_id} to confirm the blocker is "
                     "gone."},
    ]


async def repair_media_derivative(call: Call, req: RepairDerivativeRequest) -> Reply[out.RepairDerivativeResult]:
    source = await _get(call, req.media_id)
    await _check_request(call, req, source)
    option = _match(req, source)
    _check_loss(option)
    record = derivation_record(option, REPAIR_POLICY.background)
    try:
        geometry_of(out.Derivation.model_validate(record))
    except TransformError:  # never expected: options are consistent by construction
        raise _refuse([issue("$.repair_option_id", "REPAIR_GEOMETRY_INVALID",
                             "The repair option's geometry is inconsistent; it is not applied.")]) from None
    assert option.target is not None
    content_type = output_content_type(source.content_type)
    media = await _new_media(
        call, source=SOURCE, status="processing", content_type=content_type,
        file_name=derivative_file_name(source.file_name, option.mode, option.target.width, option.target.height,
                                       content_type, FILENAME_MAX),
        derived_from_id=source.id, derivation=record, folder_id=source.folder_id, description=source.description)
    await enqueue_processing(call.session, call.now, media.id)
    call.wake_worker_after_commit()
    return Reply(status=201, data=out.RepairDerivativeResult.model_validate({
        "media": media_item(media, call.rt.settings, call.now),
        "outcome": "created",
        "derived_from_id": source.id,
        "derivation": record,
        "next_actions": _next_actions(media, source, req.platform, req.integration_id),
        "links": {"self": link("get_media", brand_id=media.brand_id, media_id=media.id),
                  "source": link("get_media", brand_id=source.brand_id, media_id=source.id)},
    }))


def _replayed(data: Any) -> Any:
    return {**data, "outcome": "replayed"} if isinstance(data, dict) else data


ENDPOINTS = [
    Endpoint(
        name="repair_media_derivative", method="POST", path="/v1/brands/{brand_id}/media/{media_id}/repair-derivatives",
        toolset="media", handler=repair_media_derivative, request=RepairDerivativeRequest,
        response=out.RepairDerivativeResult, scopes=("media:write",), idempotency="required", status=201,
        replay=_replayed, title="Create a repair derivative",
        summary="Apply a preflight repair option (centre_crop or pad): a new media item of the "
                "target geometry.",
        guidance="Send the option as issued; stale: 422. Never changes the source or a draft. "
                 "Next: use the new ID in media_ids, preflight again.",
    ),
]

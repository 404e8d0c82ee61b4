"""Deterministic repair transforms: `centre_crop` or `pad` a picture to a target aspect ratio or exact size.

Used by repair derivatives (POST .../media/{media_id}/repair-derivatives): the route plans the geometry from
the source's probed size and a preflight repair option, checks the loss against its policy, then calls
`transform_file`, which writes a NEW file (the source is never touched) and returns the probe of the result.

- `plan(width, height, mode, aspect=(9, 16))`: no scaling; crop the largest centred region of that aspect, or
  pad the source centred onto the smallest canvas of that aspect.
- `plan(width, height, mode, size=(1080, 1920))`: exact output size; crop to the aspect then scale, or scale
  to fit inside then pad.
- Geometry is computed on the picture as displayed (EXIF orientation / video display rotation applied);
  video geometry uses even numbers (4:2:0 chroma). Same input and parameters -> same output geometry.
- Images keep their format (JPEG, PNG, WebP; a still GIF becomes PNG), lose their metadata, and transparent
  areas are flattened on white. Video is re-encoded to H.264 (yuv420p) in MP4, frame timing kept, audio
  copied when MP4 can carry it (AAC, MP3) and re-encoded to AAC otherwise. Frames are streamed through an
  FFmpeg filter graph (transpose, crop, scale, pad): memory does not grow with the video's length.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import asdict, dataclass
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from schemas.media import BY_CONTENT_TYPE
from tools.media.probe import (
    ProbeError,
    ProbeResult,
    _flatten,
    _open_image,
    check_type,
    frame_rotation,
    image_orientation,
    open_video,
    probe_file,
    upright,
)

# PyAV and Pillow are imported where a file is transformed, not with the module (see tools/media/probe.py).
if TYPE_CHECKING:
    import av
    import av.filter
    from av.video.stream import VideoStream

Mode = Literal["centre_crop", "pad"]
MODES: tuple[str, ...] = ("centre_crop", "pad")
PAD_COLOUR = (0, 0, 0)
VIDEO_CODEC = "libx264"
VIDEO_OPTIONS = {"crf": "20", "preset": "veryfast", "threads": "1"}  # one thread: bit-identical reruns
AUDIO_COPY = ("aac", "mp3")
IMAGE_OUTPUT = {"JPEG": ("JPEG", "image/jpeg"), "PNG": ("PNG", "image/png"), "WEBP": ("WEBP", "image/webp"),
                "GIF": ("PNG", "image/png")}


class TransformError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


@dataclass(frozen=True)
class Geometry:
    mode: str
    source_width: int
    source_height: int
    crop: tuple[int, int, int, int]  # x, y, width, height of the source region kept
    scaled: tuple[int, int]  # size the kept region is scaled to
    offset: tuple[int, int]  # where the scaled picture sits on the output canvas
    width: int  # output
    height: int
    cropped_fraction: float  # share of the source's area removed (centre_crop)
    padded_fraction: float  # share of the output's area that is padding (pad)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _even_down(value: int) -> int:
    return max(2, value - value % 2)


def _even_up(value: int) -> int:
    return value + value % 2


def plan(source_width: int, source_height: int, mode: str, *, aspect: tuple[int, int] | None = None,
         size: tuple[int, int] | None = None, even: bool = False) -> Geometry:
    """The geometry of a transform; exactly one of `aspect` (w, h ratio) and `size` (w, h pixels)."""
    if mode not in MODES:
        raise TransformError("MODE_UNSUPPORTED", f"mode must be one of {', '.join(MODES)}")
    if (aspect is None) == (size is None):
        raise TransformError("TARGET_REQUIRED", "give exactly one of aspect and size")
    if source_width < 1 or source_height < 1:
        raise TransformError("SOURCE_EMPTY", "the source has no pixels")
    target = size or aspect
    assert target is not None
    if target[0] < 1 or target[1] < 1:
        raise TransformError("TARGET_INVALID", "target dimensions must be positive")
    ratio = Fraction(target[0], target[1])
    sw, sh = source_width, source_height

    if mode == "centre_crop":
        if Fraction(sw, sh) > ratio:  # too wide: keep full height
            cw, ch = min(sw, max(1, round(sh * ratio))), sh
        else:
            cw, ch = sw, min(sh, max(1, round(sw / ratio)))
        if size is not None:
            out_w, out_h = size
        else:
            out_w, out_h = cw, ch
        if even:
            if size is None:
                cw, ch = min(_even_down(cw), sw), min(_even_down(ch), sh)
                out_w, out_h = cw, ch
            else:
                out_w, out_h = _even_down(out_w), _even_down(out_h)
        x, y = (sw - cw) // 2, (sh - ch) // 2
        return Geometry(mode, sw, sh, (x, y, cw, ch), (out_w, out_h), (0, 0), out_w, out_h,
                        cropped_fraction=round(1 - (cw * ch) / (sw * sh), 6), padded_fraction=0.0)

    # pad
    if size is not None:
        out_w, out_h = size
        scale = min(Fraction(out_w, sw), Fraction(out_h, sh))
        pw, ph = max(1, min(out_w, round(sw * scale))), max(1, min(out_h, round(sh * scale)))
        if even:
            out_w, out_h = _even_down(out_w), _even_down(out_h)
            pw, ph = min(_even_down(pw), out_w), min(_even_down(ph), out_h)
    else:
        if Fraction(sw, sh) > ratio:  # too wide: grow the height
            out_w, out_h = sw, max(sh, math.ceil(sw / ratio))
        else:
            out_w, out_h = max(sw, math.ceil(sh * ratio)), sh
        pw, ph = sw, sh
        if even:
            out_w, out_h = _even_up(out_w), _even_up(out_h)
            pw, ph = _even_down(pw), _even_down(ph)
    x, y = (out_w - pw) // 2, (out_h - ph) // 2
    if even:
        x, y = x - x % 2, y - y % 2
    return Geometry(mode, sw, sh, (0, 0, sw, sh), (pw, ph), (x, y), out_w, out_h, cropped_fraction=0.0,
                    padded_fraction=round(1 - (pw * ph) / (out_w * out_h), 6))


def explicit(source_width: int, source_height: int, mode: str, *, crop: tuple[int, int, int, int],
             scaled: tuple[int, int], offset: tuple[int, int], size: tuple[int, int]) -> Geometry:
    """A geometry given exactly (e.g. a preflight repair option: crop box, resize, padding, target size),
    checked for consistency. `transform_file(..., geometry=...)` then produces exactly that output."""
    if mode not in MODES:
        raise TransformError("MODE_UNSUPPORTED", f"mode must be one of {', '.join(MODES)}")
    x, y, cw, ch = crop
    (pw, ph), (ox, oy), (out_w, out_h) = scaled, offset, size
    if min(source_width, source_height, cw, ch, pw, ph, out_w, out_h) < 1 or min(x, y, ox, oy) < 0:
        raise TransformError("TARGET_INVALID", "sizes must be positive and offsets non-negative")
    if x + cw > source_width or y + ch > source_height:
        raise TransformError("TARGET_INVALID", "the crop box lies outside the source")
    if ox + pw > out_w or oy + ph > out_h:
        raise TransformError("TARGET_INVALID", "the scaled picture does not fit on the output canvas")
    return Geometry(mode, source_width, source_height, (x, y, cw, ch), (pw, ph), (ox, oy), out_w, out_h,
                    cropped_fraction=round(1 - (cw * ch) / (source_width * source_height), 6),
                    padded_fraction=round(1 - (pw * ph) / (out_w * out_h), 6))


def _resolve(given: Geometry | None, width: int, height: int, mode: str, aspect: tuple[int, int] | None,
             size: tuple[int, int] | None, *, even: bool) -> Geometry:
    if given is None:
        return plan(width, height, mode, aspect=aspect, size=size, even=even)
    if (given.source_width, given.source_height) != (width, height):
        raise TransformError("SOURCE_CHANGED", "the geometry was planned for a source of another size")
    if even and any(v % 2 for v in (given.width, given.height, *given.scaled)):
        raise TransformError("TARGET_INVALID", "video sizes must be even numbers")
    return given


def transform_file(src: Path, dst: Path, content_type: str, mode: str, *, aspect: tuple[int, int] | None = None,
                   size: tuple[int, int] | None = None, geometry: Geometry | None = None,
                   pad_colour: tuple[int, int, int] = PAD_COLOUR) -> tuple[Geometry, str, ProbeResult]:
    """Write the transformed picture to `dst`: planned from `aspect` or `size`, or exactly `geometry` (see
    `explicit`). Returns (geometry, output content type, probe of the output)."""
    check_type(src, content_type)
    if BY_CONTENT_TYPE[content_type].kind == "image":
        geometry, out_type = transform_image(src, dst, content_type, mode, aspect=aspect, size=size,
                                             geometry=geometry, pad_colour=pad_colour)
    else:
        geometry, out_type = transform_video(src, dst, content_type, mode, aspect=aspect, size=size,
                                             geometry=geometry, pad_colour=pad_colour)
    result = probe_file(dst, out_type)
    if (result.probe.width, result.probe.height) != (geometry.width, geometry.height):
        raise TransformError("GEOMETRY_MISMATCH", "the output does not have the planned size")
    return geometry, out_type, result


# -- images --------------------------------------------------------------------------------------------------

def transform_image(src: Path, dst: Path, content_type: str, mode: str, *, aspect: tuple[int, int] | None = None,
                    size: tuple[int, int] | None = None, geometry: Geometry | None = None,
                    pad_colour: tuple[int, int, int] = PAD_COLOUR) -> tuple[Geometry, str]:
    from PIL import Image

    family = BY_CONTENT_TYPE[content_type].family
    with _open_image(src, family) as img:
        if int(getattr(img, "n_frames", 1) or 1) > 1:
            raise TransformError("ANIMATED_IMAGE_UNSUPPORTED", "animated images cannot be transformed")
        fmt = img.format or "PNG"
        orientation = image_orientation(img)
        try:
            picture = upright(_flatten(img), orientation)
        except (OSError, ValueError) as exc:
            raise ProbeError("CORRUPT_FILE", "The image could not be decoded.") from exc
    geometry = _resolve(geometry, picture.width, picture.height, mode, aspect, size, even=False)
    x, y, cw, ch = geometry.crop
    if (x, y, cw, ch) != (0, 0, picture.width, picture.height):
        picture = picture.crop((x, y, x + cw, y + ch))
    if geometry.scaled != picture.size:
        picture = picture.resize(geometry.scaled, Image.Resampling.LANCZOS)
    if (geometry.width, geometry.height) != picture.size:
        canvas = Image.new("RGB", (geometry.width, geometry.height), pad_colour)
        canvas.paste(picture, geometry.offset)
        picture = canvas
    save_format, out_type = IMAGE_OUTPUT.get(fmt, ("PNG", "image/png"))
    options: dict[str, Any] = {"quality": 92} if save_format in ("JPEG", "WEBP") else {}
    picture.save(dst, save_format, **options)
    return geometry, out_type


# -- video ---------------------------------------------------------------------------------------------------

_ROTATION_FILTERS = {90: [("transpose", "cclock")], 270: [("transpose", "clock")],
                     180: [("hflip", ""), ("vflip", "")]}


def _graph(stream: VideoStream, rotation: int, geometry: Geometry,
           pad_colour: tuple[int, int, int]) -> av.filter.Graph:
    import av.filter

    graph = av.filter.Graph()
    chain = [graph.add_buffer(template=stream)]
    steps: list[tuple[str, str]] = list(_ROTATION_FILTERS.get(rotation, []))
    x, y, cw, ch = geometry.crop
    if (cw, ch) != (geometry.source_width, geometry.source_height):
        steps.append(("crop", f"w={cw}:h={ch}:x={x}:y={y}:exact=1"))
    if geometry.scaled != (cw, ch):
        steps.append(("scale", f"w={geometry.scaled[0]}:h={geometry.scaled[1]}:flags=lanczos"))
    if (geometry.width, geometry.height) != geometry.scaled:
        colour = "0x{:02x}{:02x}{:02x}".format(*pad_colour)
        steps.append(("pad", f"w={geometry.width}:h={geometry.height}:x={geometry.offset[0]}:"
                             f"y={geometry.offset[1]}:color={colour}"))
    steps += [("format", "pix_fmts=yuv420p"), ("setsar", "1")]
    for name, args in steps:
        chain.append(graph.add(name, args) if args else graph.add(name))
    chain.append(graph.add("buffersink"))
    for a, b in itertools.pairwise(chain):
        a.link_to(b)
    graph.configure()
    return graph


def transform_video(src: Path, dst: Path, content_type: str, mode: str, *, aspect: tuple[int, int] | None = None,
                    size: tuple[int, int] | None = None, geometry: Geometry | None = None,
                    pad_colour: tuple[int, int, int] = PAD_COLOUR) -> tuple[Geometry, str]:
    import av

    family = BY_CONTENT_TYPE[content_type].family
    # The geometry (and so the encoder's size) must be known before anything is muxed: read the first frame.
    with open_video(src, family) as inp:
        if not inp.streams.video:
            raise ProbeError("NO_VIDEO_STREAM", "The file has no video stream.")
        first = next(inp.decode(inp.streams.video[0]), None)
        if first is None:
            raise ProbeError("CORRUPT_FILE", "No picture could be decoded from the video.")
        rotation = frame_rotation(first)
        w, h = (first.height, first.width) if rotation in (90, 270) else (first.width, first.height)
    geometry = _resolve(geometry, w, h, mode, aspect, size, even=True)
    with open_video(src, family) as inp:
        vs = inp.streams.video[0]
        audio = inp.streams.audio[0] if inp.streams.audio else None
        out = av.open(str(dst), mode="w", format="mp4")
        try:
            _encode(inp, vs, audio, out, geometry, rotation, pad_colour)
        finally:
            out.close()
    return geometry, "video/mp4"


def _encode(inp: Any, vs: Any, audio: Any, out: Any, geometry: Geometry, rotation: int,
            pad_colour: tuple[int, int, int]) -> None:
    import av.error

    rate = vs.average_rate or vs.guessed_rate or Fraction(30)
    ovs = out.add_stream(VIDEO_CODEC, rate=rate)
    ovs.width, ovs.height, ovs.pix_fmt = geometry.width, geometry.height, "yuv420p"
    ovs.time_base = vs.time_base
    ovs.options = dict(VIDEO_OPTIONS)
    oas = None
    copy_audio = audio is not None and audio.codec_context.name in AUDIO_COPY
    if audio is not None:
        if copy_audio:
            oas = out.add_stream_from_template(audio)
        else:
            oas = out.add_stream("aac", rate=audio.codec_context.sample_rate or 48000)
    graph = _graph(vs, rotation, geometry, pad_colour)

    def drain(push: Any) -> None:
        graph.push(push)
        while True:
            try:
                frame = graph.pull()
            except (av.error.BlockingIOError, av.error.EOFError):
                return
            for packet in ovs.encode(frame):
                out.mux(packet)

    streams = [vs] + ([audio] if audio is not None else [])
    for packet in inp.demux(*streams):
        if packet.stream.type == "video":
            for frame in packet.decode():
                drain(frame)
        elif oas is not None and packet.dts is not None:
            if copy_audio:
                packet.stream = oas
                out.mux(packet)
            else:
                for frame in packet.decode():
                    frame.pts = None
                    for encoded in oas.encode(frame):
                        out.mux(encoded)
    drain(None)
    for packet in ovs.encode():
        out.mux(packet)
    if oas is not None and not copy_audio:
        for packet in oas.encode():
            out.mux(packet)

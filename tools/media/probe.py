"""Looking at the bytes: content sniffing, probing (Pillow for images, PyAV for video) and thumbnails.

Everything here is synchronous and CPU-bound: callers run it in a worker thread. Decoders are pinned to the
format the leading bytes announce (Pillow `formats=[...]`, a forced PyAV demuxer with only the `file`
protocol), so a file cannot steer a decoder into another format (e.g. an HLS playlist that fetches URLs).
Decompression bombs are refused from the header before any pixel is decoded.
"""

from __future__ import annotations

import io
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from schemas.media import (
    BY_CONTENT_TYPE,
    MAX_IMAGE_FRAMES,
    MAX_IMAGE_PIXELS,
    MAX_IMAGE_SIDE,
    MAX_VIDEO_SECONDS,
    MAX_VIDEO_SIDE,
    THUMBNAIL_LARGE,
    THUMBNAIL_SMALL,
)

# PyAV and Pillow are imported where a file is opened, not with the module: every process importing the areas
# (a server, a worker) imports this one, and most never look at a file (bench/HISTORY.md "Start-up").
if TYPE_CHECKING:
    import av
    from av.container import InputContainer
    from av.video.stream import VideoStream
    from PIL import Image

PIL_FORMATS = {"jpeg": "JPEG", "png": "PNG", "gif": "GIF", "webp": "WEBP"}
DEMUXERS = {"isobmff": "mp4", "webm": "matroska"}
FAMILY_TEXT = {"jpeg": "a JPEG image", "png": "a PNG image", "gif": "a GIF image", "webp": "a WebP image",
               "isobmff": "an MP4/QuickTime video", "webm": "a WebM video"}
EXIF_ORIENTATION = 0x0112
# EXIF orientation -> the transpose (a member of Pillow's `Image.Transpose`) that shows the picture upright.
_TRANSPOSE = {2: "FLIP_LEFT_RIGHT", 3: "ROTATE_180", 4: "FLIP_TOP_BOTTOM", 5: "TRANSPOSE", 6: "ROTATE_270",
              7: "TRANSVERSE", 8: "ROTATE_90"}
MAX_THUMBNAIL_DECODE_FRAMES = 300
_QT_ATOMS = (b"moov", b"mdat", b"wide", b"free", b"skip", b"pnot")


class ProbeError(Exception):
    """The bytes are not an acceptable file. `code` is stable; `message` is safe to show and says what to do."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


@dataclass(frozen=True)
class Probe:
    kind: str  # image | video
    family: str
    format: str  # decoder's name: JPEG, PNG, GIF, WEBP, mp4, matroska
    width: int  # as displayed (EXIF orientation / display rotation applied)
    height: int
    duration: float | None = None
    codec: str | None = None
    frame_rate: float | None = None
    has_audio: bool | None = None
    bit_rate: int | None = None
    orientation: int = 1  # EXIF orientation (images) or display rotation in degrees (video)
    frames: int = 1


@dataclass(frozen=True)
class ProbeResult:
    probe: Probe
    thumbnail_large: bytes | None
    thumbnail_small: bytes | None


def sniff(head: bytes) -> str | None:
    """The container family the leading bytes announce (at least 32 bytes), or None."""
    if head.startswith(b"\xff\xd8\xff"):
        return "jpeg"
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if head[:6] in (b"GIF87a", b"GIF89a"):
        return "gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "webp"
    if head[4:8] == b"ftyp" or (head[4:8] in _QT_ATOMS and int.from_bytes(head[:4], "big") >= 8):
        return "isobmff"
    if head[:4] == b"\x1a\x45\xdf\xa3" and (b"webm" in head[:64] or b"matroska" in head[:64]):
        return "webm"
    return None


def content_type_for(family: str, head: bytes) -> str:
    """The allow-listed content type for sniffed bytes (used when a server says application/octet-stream)."""
    if family == "isobmff":
        return "video/quicktime" if head[8:12] == b"qt  " or head[4:8] != b"ftyp" else "video/mp4"
    return next(t.content_type for t in BY_CONTENT_TYPE.values() if t.family == family)


def read_head(path: Path, size: int = 64) -> bytes:
    with open(path, "rb") as fh:
        return fh.read(size)


def check_type(path: Path, content_type: str) -> str:
    """Refuse bytes that are not what `content_type` declares. Returns the family."""
    declared = BY_CONTENT_TYPE.get(content_type)
    if declared is None:
        raise ProbeError("UNSUPPORTED_TYPE", "This content type is not supported; see docs/media.md for the list.")
    found = sniff(read_head(path))
    if found is None:
        raise ProbeError("CONTENT_TYPE_MISMATCH", f"The bytes are not a supported image or video, but {content_type} "
                                                  "was declared. Upload a JPEG, PNG, GIF, WebP, MP4, MOV or WebM file.")
    if found != declared.family:
        raise ProbeError("CONTENT_TYPE_MISMATCH", f"The bytes are {FAMILY_TEXT[found]}, not {content_type}. Upload "
                                                  "again declaring the type that matches the file.")
    return found


def probe_file(path: Path, content_type: str, *, thumbnails: bool = True) -> ProbeResult:
    family = check_type(path, content_type)
    if BY_CONTENT_TYPE[content_type].kind == "image":
        return _probe_image(path, family, thumbnails)
    return _probe_video(path, family, thumbnails)


# -- images --------------------------------------------------------------------------------------------------

def _open_image(path: Path, family: str) -> Image.Image:
    from PIL import Image

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            return Image.open(path, formats=[PIL_FORMATS[family]])
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise ProbeError("IMAGE_TOO_LARGE", f"The image has more than {MAX_IMAGE_PIXELS} pixels; upload a smaller "
                                            "image.") from None
    except (OSError, ValueError, SyntaxError):
        raise ProbeError("CORRUPT_FILE", "The image could not be read; it is damaged or not a real "
                                         f"{FAMILY_TEXT[family].split(' ', 1)[1]}.") from None


def image_orientation(img: Image.Image) -> int:
    try:
        value = int(img.getexif().get(EXIF_ORIENTATION, 1))
    except Exception:  # a damaged EXIF block is ignored, like browsers do
        return 1
    return value if value in range(1, 9) else 1


def upright(img: Image.Image, orientation: int) -> Image.Image:
    from PIL import Image

    method = _TRANSPOSE.get(orientation)
    return img.transpose(Image.Transpose[method]) if method is not None else img


def _probe_image(path: Path, family: str, thumbnails: bool) -> ProbeResult:
    img = _open_image(path, family)
    with img:
        width, height = img.size
        if width < 1 or height < 1:
            raise ProbeError("CORRUPT_FILE", "The image has no pixels.")
        if width > MAX_IMAGE_SIDE or height > MAX_IMAGE_SIDE or width * height > MAX_IMAGE_PIXELS:
            raise ProbeError("IMAGE_TOO_LARGE", f"Images may be at most {MAX_IMAGE_SIDE} pixels on a side and "
                                                f"{MAX_IMAGE_PIXELS} pixels in all; upload a smaller image.")
        frames = int(getattr(img, "n_frames", 1) or 1)
        if frames > MAX_IMAGE_FRAMES:
            raise ProbeError("IMAGE_TOO_LARGE", f"Animated images may have at most {MAX_IMAGE_FRAMES} frames.")
        orientation = image_orientation(img)
        fmt = img.format or PIL_FORMATS[family]
        try:
            if family == "jpeg":
                img.draft("RGB", (THUMBNAIL_LARGE, THUMBNAIL_LARGE))  # decode at a reduced scale: fast, small
            img.seek(0)
            img.load()  # decodes every byte of the first frame: a truncated or corrupt file fails here
            large = small = None
            if thumbnails:
                large, small = _thumbnails(upright(_flatten(img), orientation))
        except (OSError, ValueError, SyntaxError, EOFError):
            raise ProbeError("CORRUPT_FILE", "The image could not be decoded; it is damaged or truncated.") from None
    if orientation in (5, 6, 7, 8):
        width, height = height, width
    probe = Probe(kind="image", family=family, format=fmt, width=width, height=height, orientation=orientation,
                  frames=frames)
    return ProbeResult(probe, large, small)


def _flatten(img: Image.Image) -> Image.Image:
    """RGB for JPEG thumbnails: transparency composited on white."""
    from PIL import Image

    if img.mode in ("RGBA", "LA", "PA") or (img.mode == "P" and "transparency" in img.info):
        rgba = img.convert("RGBA")
        background = Image.new("RGB", rgba.size, (255, 255, 255))
        background.paste(rgba, mask=rgba.getchannel("A"))
        return background
    return img.convert("RGB")


def _jpeg(img: Image.Image) -> bytes:
    out = io.BytesIO()
    img.save(out, "JPEG", quality=85, optimize=True)
    return out.getvalue()


def _thumbnails(img: Image.Image) -> tuple[bytes, bytes]:
    from PIL import Image

    large = img.copy()
    large.thumbnail((THUMBNAIL_LARGE, THUMBNAIL_LARGE), Image.Resampling.LANCZOS)
    small = large.copy()
    small.thumbnail((THUMBNAIL_SMALL, THUMBNAIL_SMALL), Image.Resampling.LANCZOS)
    return _jpeg(large), _jpeg(small)


# -- video ---------------------------------------------------------------------------------------------------

def open_video(path: Path, family: str) -> InputContainer:
    import av
    from av.error import FFmpegError

    try:
        return av.open(str(path), mode="r", format=DEMUXERS[family], options={"protocol_whitelist": "file"},
                       metadata_errors="ignore")
    except FFmpegError:
        raise ProbeError("CORRUPT_FILE", "The video could not be read; it is damaged or not a real "
                                         f"{FAMILY_TEXT[family].split(' ', 1)[1]}.") from None


def video_duration(container: InputContainer, stream: VideoStream) -> float | None:
    import av

    if stream.duration is not None and stream.time_base is not None:
        return float(stream.duration * stream.time_base)
    if container.duration is not None:
        return container.duration / av.time_base
    return None


def frame_rotation(frame: av.VideoFrame) -> int:
    """Counter-clockwise degrees to rotate the decoded picture to show it upright (display matrix)."""
    try:
        return round(frame.rotation) % 360
    except Exception:
        return 0


def _probe_video(path: Path, family: str, thumbnails: bool) -> ProbeResult:
    from av.error import FFmpegError

    container = open_video(path, family)
    with container:
        if not container.streams.video:
            raise ProbeError("NO_VIDEO_STREAM", "The file has no video stream; upload a video with pictures.")
        stream = container.streams.video[0]
        ctx = stream.codec_context
        width, height = int(ctx.width or 0), int(ctx.height or 0)
        if width < 1 or height < 1:
            raise ProbeError("CORRUPT_FILE", "The video stream has no picture size; the file is damaged.")
        if width > MAX_VIDEO_SIDE or height > MAX_VIDEO_SIDE:
            raise ProbeError("VIDEO_TOO_LARGE", f"Videos may be at most {MAX_VIDEO_SIDE} pixels on a side.")
        duration = video_duration(container, stream)
        if duration is None or duration <= 0:
            raise ProbeError("CORRUPT_FILE", "The video's duration could not be determined; the file is damaged.")
        if duration > MAX_VIDEO_SECONDS:
            raise ProbeError("VIDEO_TOO_LONG", f"Videos may be at most {MAX_VIDEO_SECONDS} seconds long.")
        rate = stream.average_rate or stream.guessed_rate
        frame, target = None, min(1.0, duration / 2)
        try:
            frame = _frame_at(container, stream, target)
        except FFmpegError:
            frame = None
        if frame is None:
            raise ProbeError("CORRUPT_FILE", "No picture could be decoded from the video; the file is damaged or "
                                             "uses an unsupported codec.")
        rotation = frame_rotation(frame)
        large = small = None
        if thumbnails:
            picture = frame.to_image()
            if rotation:
                picture = picture.rotate(rotation, expand=True)
            large, small = _thumbnails(picture)
        bit_rate = container.bit_rate or None
        probe = Probe(
            kind="video", family=family, format=DEMUXERS[family],
            width=height if rotation in (90, 270) else width, height=width if rotation in (90, 270) else height,
            duration=round(duration, 3), codec=ctx.name, frame_rate=round(float(rate), 3) if rate else None,
            has_audio=bool(container.streams.audio), bit_rate=int(bit_rate) if bit_rate else None,
            orientation=rotation, frames=int(stream.frames or 0),
        )
    return ProbeResult(probe, large, small)


def _frame_at(container: InputContainer, stream: VideoStream,
              seconds: float) -> av.VideoFrame | None:
    """The first frame at or after `seconds` (bounded decode); the last decoded one if the video is shorter."""
    from av.error import FFmpegError

    if seconds > 0 and stream.time_base is not None:
        try:
            container.seek(int(seconds / stream.time_base), stream=stream, backward=True)
        except FFmpegError:
            container.seek(0)
    last = None
    for count, frame in enumerate(container.decode(stream)):
        last = frame
        if frame.time is None or frame.time >= seconds - 1e-6 or count >= MAX_THUMBNAIL_DECODE_FRAMES:
            break
    return last

"""Probing looks at the real bytes: dimensions (EXIF orientation applied), durations, codecs, thumbnails, and
refuses bytes that are not what was declared, damaged files and decompression bombs."""

from __future__ import annotations

import io
import struct
import zlib
from pathlib import Path

import pytest
from PIL import Image

from tests.media.support import image_bytes, video_bytes
from tools.media.probe import ProbeError, content_type_for, probe_file, sniff


def thumbnail(data: bytes | None) -> Image.Image:
    assert data is not None, "a thumbnail was made"
    return Image.open(io.BytesIO(data))


def write(tmp_path: Path, data: bytes, name: str = "f") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(("fmt", "content_type"), [("PNG", "image/png"), ("JPEG", "image/jpeg"),
                                                    ("GIF", "image/gif"), ("WEBP", "image/webp")])
def test_image_dimensions_and_thumbnails(tmp_path: Path, fmt: str, content_type: str) -> None:
    result = probe_file(write(tmp_path, image_bytes(1600, 900, fmt)), content_type)
    assert (result.probe.kind, result.probe.width, result.probe.height) == ("image", 1600, 900)
    assert result.probe.format == fmt
    large = thumbnail(result.thumbnail_large)
    small = thumbnail(result.thumbnail_small)
    assert large.format == small.format == "JPEG"
    assert large.size == (1280, 720) and small.size == (320, 180)


def test_small_images_are_never_upscaled(tmp_path: Path) -> None:
    result = probe_file(write(tmp_path, image_bytes(100, 50)), "image/png")
    assert thumbnail(result.thumbnail_large).size == (100, 50)


@pytest.mark.parametrize(("orientation", "size"), [(1, (40, 20)), (3, (40, 20)), (6, (20, 40)), (8, (20, 40)),
                                                   (5, (20, 40))])
def test_exif_orientation_is_applied_to_reported_size(tmp_path: Path, orientation: int, size: tuple) -> None:
    result = probe_file(write(tmp_path, image_bytes(40, 20, "JPEG", orientation=orientation)), "image/jpeg")
    assert (result.probe.width, result.probe.height) == size
    assert result.probe.orientation == orientation
    assert thumbnail(result.thumbnail_large).size == size  # thumbnails are upright too


def test_transparent_png_thumbnail_is_flattened(tmp_path: Path) -> None:
    result = probe_file(write(tmp_path, image_bytes(10, 10, mode="RGBA", colour=(0, 0, 0, 0))), "image/png")
    thumb = thumbnail(result.thumbnail_small).convert("RGB")
    pixel = thumb.getpixel((9, 9))
    assert isinstance(pixel, tuple) and pixel[0] > 240  # white, not black


@pytest.mark.parametrize(("container", "content_type", "codec"), [("mp4", "video/mp4", "h264"),
                                                                   ("webm", "video/webm", "vp9")])
def test_video_dimensions_duration_codec(tmp_path: Path, container: str, content_type: str, codec: str) -> None:
    data = video_bytes(96, 54, seconds=2.0, fps=12, container=container, audio=True)
    result = probe_file(write(tmp_path, data), content_type)
    probe = result.probe
    assert (probe.kind, probe.width, probe.height, probe.codec) == ("video", 96, 54, codec)
    assert probe.duration == pytest.approx(2.0, abs=0.05)
    assert probe.frame_rate == 12.0 and probe.has_audio is True
    assert thumbnail(result.thumbnail_large).size == (96, 54)


def test_mpeg4_part2_video_and_quicktime_type(tmp_path: Path) -> None:
    result = probe_file(write(tmp_path, video_bytes(64, 48, seconds=0.5, codec="mpeg4")), "video/quicktime")
    assert (result.probe.codec, result.probe.width, result.probe.height) == ("mpeg4", 64, 48)
    assert result.probe.duration == pytest.approx(0.5, abs=0.05)


@pytest.mark.parametrize(("rotation", "size"), [(90, (48, 64)), (-90, (48, 64)), (180, (64, 48))])
def test_video_display_rotation_is_applied_to_reported_size(tmp_path: Path, rotation: int, size: tuple) -> None:
    result = probe_file(write(tmp_path, video_bytes(64, 48, rotation=rotation)), "video/mp4")
    assert (result.probe.width, result.probe.height) == size
    assert thumbnail(result.thumbnail_large).size == size


@pytest.mark.parametrize(("data", "declared"), [
    (image_bytes(10, 10, "PNG"), "image/jpeg"),
    (image_bytes(10, 10, "JPEG"), "image/png"),
    (image_bytes(10, 10, "GIF"), "image/webp"),
    (b"<html><script>alert(1)</script></html>" + b" " * 64, "image/png"),
    (b"#EXTM3U\n#EXT-X-MEDIA-SEQUENCE:0\n#EXTINF:10.0,\nhttp://169.254.169.254/latest\n", "video/mp4"),
    (image_bytes(10, 10, "PNG"), "video/mp4"),
])
def test_bytes_that_do_not_match_the_declared_type_are_refused(tmp_path: Path, data: bytes, declared: str) -> None:
    with pytest.raises(ProbeError) as exc:
        probe_file(write(tmp_path, data), declared)
    assert exc.value.code == "CONTENT_TYPE_MISMATCH"
    assert declared in exc.value.message


def test_webm_bytes_declared_as_mp4_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ProbeError, match="CONTENT_TYPE_MISMATCH"):
        probe_file(write(tmp_path, video_bytes(32, 32, container="webm")), "video/mp4")


def _png_header_only(width: int, height: int) -> bytes:
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\x00" * 64)) + chunk(b"IEND", b"")


@pytest.mark.parametrize(("width", "height"), [(10_000, 10_000), (20_000, 10), (30_000, 30_000)])
def test_decompression_bombs_are_refused_from_the_header(tmp_path: Path, width: int, height: int) -> None:
    with pytest.raises(ProbeError) as exc:
        probe_file(write(tmp_path, _png_header_only(width, height)), "image/png")
    assert exc.value.code == "IMAGE_TOO_LARGE"


def test_truncated_files_are_refused(tmp_path: Path) -> None:
    png = image_bytes(300, 300, "PNG")
    with pytest.raises(ProbeError, match="CORRUPT_FILE"):
        probe_file(write(tmp_path, png[: len(png) // 2]), "image/png")
    video = video_bytes(64, 48)
    with pytest.raises(ProbeError, match="CORRUPT_FILE"):
        probe_file(write(tmp_path, video[:200], "v"), "video/mp4")


def test_video_without_a_video_stream_is_refused(tmp_path: Path) -> None:
    import av

    path = tmp_path / "audio.mp4"
    out = av.open(str(path), "w", format="mp4")
    stream = out.add_stream("aac", rate=48000)
    for i in range(10):
        frame = av.AudioFrame(format="fltp", layout="mono", samples=1024)
        frame.planes[0].update(bytes(4096))
        frame.sample_rate, frame.pts = 48000, i * 1024
        for packet in stream.encode(frame):
            out.mux(packet)
    for packet in stream.encode():
        out.mux(packet)
    out.close()
    with pytest.raises(ProbeError, match="NO_VIDEO_STREAM"):
        probe_file(path, "video/mp4")


def test_sniffing() -> None:
    assert sniff(image_bytes(4, 4, "PNG")) == "png"
    assert sniff(image_bytes(4, 4, "JPEG")) == "jpeg"
    assert sniff(image_bytes(4, 4, "WEBP")) == "webp"
    assert sniff(image_bytes(4, 4, "GIF")) == "gif"
    mp4 = video_bytes(16, 16, seconds=0.2)
    assert sniff(mp4) == "isobmff" and content_type_for("isobmff", mp4[:64]) == "video/mp4"
    assert sniff(video_bytes(16, 16, seconds=0.2, container="webm")) == "webm"
    assert sniff(b"GIF88a" + bytes(40)) is None
    assert sniff(b"") is None

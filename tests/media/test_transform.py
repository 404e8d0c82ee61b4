"""Repair transforms: exact geometry of centre_crop and pad, for images (Pillow) and video (PyAV re-encode)."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image

from tests.media.support import image_bytes, video_bytes
from tools.media.probe import probe_file
from tools.media.transform import TransformError, plan, transform_file


def green(img: Image.Image, x: int, y: int) -> int:
    """The green channel of an RGB image's pixel."""
    pixel = img.getpixel((x, y))
    assert isinstance(pixel, tuple)
    return int(pixel[1])


@pytest.mark.parametrize(("src", "mode", "kwargs", "crop", "scaled", "offset", "out"), [
    # centre_crop to an aspect: the largest centred region, no scaling
    ((1920, 1080), "centre_crop", {"aspect": (9, 16)}, (656, 0, 608, 1080), (608, 1080), (0, 0), (608, 1080)),
    ((1080, 1920), "centre_crop", {"aspect": (1, 1)}, (0, 420, 1080, 1080), (1080, 1080), (0, 0), (1080, 1080)),
    ((1000, 500), "centre_crop", {"aspect": (4, 5)}, (300, 0, 400, 500), (400, 500), (0, 0), (400, 500)),
    ((400, 500), "centre_crop", {"aspect": (4, 5)}, (0, 0, 400, 500), (400, 500), (0, 0), (400, 500)),
    # centre_crop to an exact size: crop to the aspect, then scale
    ((1920, 1080), "centre_crop", {"size": (1080, 1920)}, (656, 0, 608, 1080), (1080, 1920), (0, 0), (1080, 1920)),
    ((300, 200), "centre_crop", {"size": (100, 100)}, (50, 0, 200, 200), (100, 100), (0, 0), (100, 100)),
    # pad to an aspect: the smallest canvas, source centred, no scaling
    ((1920, 1080), "pad", {"aspect": (1, 1)}, (0, 0, 1920, 1080), (1920, 1080), (0, 420), (1920, 1920)),
    ((1080, 1920), "pad", {"aspect": (4, 5)}, (0, 0, 1080, 1920), (1080, 1920), (228, 0), (1536, 1920)),
    # pad to an exact size: fit inside, then pad
    ((1920, 1080), "pad", {"size": (1080, 1920)}, (0, 0, 1920, 1080), (1080, 608), (0, 656), (1080, 1920)),
    ((300, 200), "pad", {"size": (100, 100)}, (0, 0, 300, 200), (100, 67), (0, 16), (100, 100)),
])
def test_plan_geometry(src: tuple[int, int], mode: str, kwargs: dict, crop, scaled, offset, out) -> None:
    g = plan(*src, mode, **kwargs)
    assert (g.crop, g.scaled, g.offset, (g.width, g.height)) == (crop, scaled, offset, out)
    assert plan(*src, mode, **kwargs) == g  # deterministic


def test_plan_reports_loss() -> None:
    crop = plan(1920, 1080, "centre_crop", aspect=(9, 16))
    assert crop.cropped_fraction == pytest.approx(1 - 608 / 1920, abs=1e-6) and crop.padded_fraction == 0
    pad = plan(1920, 1080, "pad", aspect=(1, 1))
    assert pad.padded_fraction == pytest.approx(1 - 1080 / 1920, abs=1e-6) and pad.cropped_fraction == 0


def test_plan_even_for_video() -> None:
    g = plan(1001, 999, "centre_crop", aspect=(16, 9), even=True)
    assert g.width % 2 == 0 and g.height % 2 == 0
    g = plan(1001, 999, "pad", aspect=(9, 16), even=True)
    assert g.width % 2 == 0 and g.height % 2 == 0 and g.offset[0] % 2 == 0 and g.offset[1] % 2 == 0


def test_plan_refusals() -> None:
    with pytest.raises(TransformError):
        plan(10, 10, "stretch", aspect=(1, 1))
    with pytest.raises(TransformError):
        plan(10, 10, "pad")
    with pytest.raises(TransformError):
        plan(10, 10, "pad", aspect=(1, 1), size=(2, 2))
    with pytest.raises(TransformError):
        plan(10, 10, "pad", size=(0, 2))


def _write(tmp_path: Path, data: bytes, name: str = "src") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(("fmt", "content_type"), [("PNG", "image/png"), ("JPEG", "image/jpeg"),
                                                    ("WEBP", "image/webp")])
def test_image_centre_crop(tmp_path: Path, fmt: str, content_type: str) -> None:
    src = _write(tmp_path, image_bytes(400, 200, fmt))
    before = src.read_bytes()
    geometry, out_type, result = transform_file(src, tmp_path / "out", content_type, "centre_crop", aspect=(1, 1))
    assert out_type == content_type
    assert (geometry.width, geometry.height) == (200, 200) == (result.probe.width, result.probe.height)
    assert src.read_bytes() == before  # the source is never touched
    img = Image.open(tmp_path / "out").convert("RGB")
    assert img.size == (200, 200)
    # the green marker sat in the left quarter (x < 100): the centre crop (x 100..300) cut it away
    assert green(img, 0, 0) < 100


def test_image_pad_geometry_and_colour(tmp_path: Path) -> None:
    src = _write(tmp_path, image_bytes(400, 200, "PNG"))
    geometry, _, _result = transform_file(src, tmp_path / "out.png", "image/png", "pad", aspect=(1, 1))
    assert (geometry.width, geometry.height, geometry.offset) == (400, 400, (0, 100))
    img = Image.open(tmp_path / "out.png").convert("RGB")
    assert img.getpixel((200, 50)) == (0, 0, 0)  # padding
    assert green(img, 0, 100) == 255  # the marker, moved down by the offset
    assert img.getpixel((200, 399)) == (0, 0, 0)


def test_image_exact_size_and_exif_orientation(tmp_path: Path) -> None:
    # stored 40x20, displayed 20x40 (orientation 6): geometry uses the displayed picture
    src = _write(tmp_path, image_bytes(40, 20, "JPEG", orientation=6))
    geometry, _, result = transform_file(src, tmp_path / "out.jpg", "image/jpeg", "pad", size=(100, 100))
    assert (geometry.source_width, geometry.source_height) == (20, 40)
    assert geometry.scaled == (50, 100) and geometry.offset == (25, 0)
    assert (result.probe.width, result.probe.height, result.probe.orientation) == (100, 100, 1)


def test_still_gif_becomes_png_and_animated_is_refused(tmp_path: Path) -> None:
    src = _write(tmp_path, image_bytes(30, 10, "GIF"))
    _, out_type, result = transform_file(src, tmp_path / "o", "image/gif", "centre_crop", aspect=(1, 1))
    assert out_type == "image/png" and (result.probe.width, result.probe.height) == (10, 10)
    frames = [Image.new("RGB", (10, 10), (i * 50, 0, 0)) for i in range(3)]
    frames[0].save(tmp_path / "anim.gif", save_all=True, append_images=frames[1:])
    with pytest.raises(TransformError, match="ANIMATED"):
        transform_file(tmp_path / "anim.gif", tmp_path / "o2", "image/gif", "pad", aspect=(1, 1))


def test_transform_output_is_deterministic(tmp_path: Path) -> None:
    src = _write(tmp_path, image_bytes(300, 120, "PNG"))
    transform_file(src, tmp_path / "a", "image/png", "pad", size=(64, 64))
    transform_file(src, tmp_path / "b", "image/png", "pad", size=(64, 64))
    assert (tmp_path / "a").read_bytes() == (tmp_path / "b").read_bytes()


@pytest.mark.parametrize(("mode", "kwargs", "out"), [
    ("centre_crop", {"aspect": (9, 16)}, (36, 64)),
    ("pad", {"aspect": (9, 16)}, (96, 172)),
    ("centre_crop", {"size": (72, 128)}, (72, 128)),
    ("pad", {"size": (72, 128)}, (72, 128)),
])
def test_video_transforms(tmp_path: Path, mode: str, kwargs: dict, out: tuple) -> None:
    src = _write(tmp_path, video_bytes(96, 64, seconds=1.5, fps=10, audio=True))
    geometry, out_type, result = transform_file(src, tmp_path / "out.mp4", "video/mp4", mode, **kwargs)
    probe = result.probe
    assert out_type == "video/mp4"
    assert (geometry.width, geometry.height) == out == (probe.width, probe.height)
    assert probe.codec == "h264" and probe.has_audio is True
    assert probe.duration == pytest.approx(1.5, abs=0.1)
    assert probe.frame_rate == 10.0


def test_webm_video_pad_with_rotation(tmp_path: Path) -> None:
    src = _write(tmp_path, video_bytes(64, 32, container="webm", audio=True))
    geometry, _, result = transform_file(src, tmp_path / "o.mp4", "video/webm", "pad", aspect=(1, 1))
    assert (result.probe.width, result.probe.height) == (64, 64) and result.probe.has_audio
    rotated = _write(tmp_path, video_bytes(64, 32, rotation=90), "rot")
    assert (probe_file(rotated, "video/mp4").probe.width, probe_file(rotated, "video/mp4").probe.height) == (32, 64)
    geometry, _, result = transform_file(rotated, tmp_path / "r.mp4", "video/mp4", "centre_crop", aspect=(1, 1))
    assert (geometry.source_width, geometry.source_height) == (32, 64)
    assert (result.probe.width, result.probe.height, result.probe.orientation) == (32, 32, 0)


def test_explicit_geometry_is_applied_exactly(tmp_path: Path) -> None:
    """A repair option's exact geometry (crop box, resize, padding, target) is produced as given."""
    from tools.media.transform import explicit

    src = _write(tmp_path, image_bytes(400, 200, "PNG"))
    g = explicit(400, 200, "pad", crop=(0, 0, 400, 200), scaled=(300, 150), offset=(10, 75), size=(320, 300))
    geometry, _, result = transform_file(src, tmp_path / "o.png", "image/png", "pad", geometry=g)
    assert geometry == g and (result.probe.width, result.probe.height) == (320, 300)
    img = Image.open(tmp_path / "o.png").convert("RGB")
    assert img.getpixel((9, 100)) == (0, 0, 0) and green(img, 10, 75) == 255  # marker at the offset
    assert g.padded_fraction == pytest.approx(1 - 300 * 150 / (320 * 300), abs=1e-6)

    crop = explicit(400, 200, "centre_crop", crop=(100, 0, 200, 200), scaled=(64, 64), offset=(0, 0), size=(64, 64))
    _, _, result = transform_file(src, tmp_path / "c.png", "image/png", "centre_crop", geometry=crop)
    assert (result.probe.width, result.probe.height) == (64, 64)

    video = _write(tmp_path, video_bytes(64, 48), "v")
    g = explicit(64, 48, "centre_crop", crop=(8, 0, 48, 48), scaled=(32, 32), offset=(0, 0), size=(32, 32))
    _, _, result = transform_file(video, tmp_path / "v.mp4", "video/mp4", "centre_crop", geometry=g)
    assert (result.probe.width, result.probe.height) == (32, 32)


def test_explicit_geometry_refusals(tmp_path: Path) -> None:
    from tools.media.transform import explicit

    with pytest.raises(TransformError, match="outside"):
        explicit(100, 100, "centre_crop", crop=(50, 0, 60, 100), scaled=(60, 100), offset=(0, 0), size=(60, 100))
    with pytest.raises(TransformError, match="fit"):
        explicit(100, 100, "pad", crop=(0, 0, 100, 100), scaled=(100, 100), offset=(10, 0), size=(100, 120))
    with pytest.raises(TransformError):
        explicit(100, 100, "stretch", crop=(0, 0, 100, 100), scaled=(100, 100), offset=(0, 0), size=(100, 100))
    src = _write(tmp_path, image_bytes(400, 200, "PNG"))
    stale = explicit(401, 200, "pad", crop=(0, 0, 401, 200), scaled=(401, 200), offset=(0, 0), size=(401, 401))
    with pytest.raises(TransformError, match="SOURCE_CHANGED"):
        transform_file(src, tmp_path / "o.png", "image/png", "pad", geometry=stale)
    video = _write(tmp_path, video_bytes(64, 48), "v")
    odd = explicit(64, 48, "centre_crop", crop=(0, 0, 48, 48), scaled=(33, 33), offset=(0, 0), size=(33, 33))
    with pytest.raises(TransformError, match="even"):
        transform_file(video, tmp_path / "v.mp4", "video/mp4", "centre_crop", geometry=odd)

"""Media test helpers: real files made on the spot (Pillow, PyAV), upload and processing shortcuts, and a
loopback HTTP server for import tests (bound to 127.0.0.1 on an ephemeral port)."""

from __future__ import annotations

import contextlib
import hashlib
import io
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import av
from PIL import Image

from server.worker import Worker


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def image_bytes(width: int, height: int, fmt: str = "PNG", *, mode: str = "RGB", orientation: int | None = None,
                colour: Any = (200, 30, 60)) -> bytes:
    img = Image.new(mode, (width, height), colour)
    # a marker in the top-left corner, so crops and pads can be checked by pixel
    img.paste((0, 255, 0) if mode == "RGB" else colour, (0, 0, max(1, width // 4), max(1, height // 4)))
    out = io.BytesIO()
    kwargs: dict[str, Any] = {}
    if orientation is not None:
        exif = img.getexif()
        exif[0x0112] = orientation
        kwargs["exif"] = exif.tobytes()
    img.save(out, fmt, **kwargs)
    return out.getvalue()


def video_bytes(width: int, height: int, *, seconds: float = 1.0, fps: int = 12, container: str = "mp4",
                codec: str | None = None, audio: bool = False, rotation: int | None = None) -> bytes:
    codec = codec or ("libvpx-vp9" if container == "webm" else "libx264")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"v.{container}"
        out = av.open(str(path), "w", format=container)
        stream = out.add_stream(codec, rate=fps)
        assert isinstance(stream, av.VideoStream)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        if rotation is not None:
            stream.set_display_rotation(rotation)
        astream = None
        if audio:
            astream = out.add_stream("aac" if container == "mp4" else "libopus", rate=48000)
            assert isinstance(astream, av.AudioStream)
        frames = round(seconds * fps)
        for i in range(frames):
            img = Image.new("RGB", (width, height), ((i * 20) % 255, 120, 200))
            for packet in stream.encode(av.VideoFrame.from_image(img)):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
        if astream is not None:
            size = 960 if container == "webm" else 1024  # encoder frame sizes (opus 20 ms, aac)
            for i in range(int(48000 * seconds) // size):
                frame = av.AudioFrame(format="fltp", layout="mono", samples=size)
                frame.planes[0].update(bytes(size * 4))
                frame.sample_rate, frame.pts = 48000, i * size
                for packet in astream.encode(frame):
                    out.mux(packet)
            for packet in astream.encode():
                out.mux(packet)
        out.close()
        return path.read_bytes()


async def process(env: Any) -> int:
    """Run the worker once (tests run without the background worker)."""
    return await Worker(env.rt).run_once()


async def start_upload(env: Any, secret: str, brand_id: str, data: bytes, content_type: str,
                       filename: str = "file.bin", key: str = "k1", **extra: Any) -> dict[str, Any]:
    resp = await env.rest.post(f"/v1/brands/{brand_id}/media/upload-sessions", headers=env.auth(secret, Idempotency_Key=key),
                               json={"filename": filename, "content_type": content_type, "size": len(data),
                                     "sha256": sha(data), **extra})
    assert resp.status_code == 201, resp.json()
    return resp.json()["data"]


def local(url: str) -> str:
    """An absolute URL of this service -> the path the ASGI test client sends."""
    return url.removeprefix("http://testserver")


async def put_bytes(env: Any, session: dict[str, Any], data: bytes, **headers: str) -> Any:
    send = {**session["upload"]["headers"], **headers}
    return await env.rest.put(local(session["upload"]["url"]), content=data, headers=send)


async def upload(env: Any, secret: str, brand_id: str, data: bytes, content_type: str, filename: str = "file.bin",
                 key: str = "k1", run: bool = True) -> dict[str, Any]:
    """Upload session + PUT (+ processing): returns the Media item as get_media reads it."""
    session = await start_upload(env, secret, brand_id, data, content_type, filename, key)
    resp = await put_bytes(env, session, data)
    assert resp.status_code == 200, resp.json()
    if run:
        await process(env)
    got = await env.rest.get(f"/v1/brands/{brand_id}/media/{session['id']}", headers=env.auth(secret))
    return got.json()["data"]


# -- a loopback HTTP server ---------------------------------------------------------------------------------------

@dataclass
class Reply:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    content_length: int | str | None = -1  # -1: the real length; None: no header (close-delimited)
    delay: float = 0.0


@dataclass
class FileServer:
    """Serves `routes[path]` (a Reply or a callable returning one) and records every request path."""

    routes: dict[str, Reply | Callable[[], Reply]] = field(default_factory=dict)
    hits: list[str] = field(default_factory=list)
    host_headers: list[str] = field(default_factory=list)
    server: ThreadingHTTPServer | None = None
    tls: Any = None  # an ssl.SSLContext to serve HTTPS

    @property
    def port(self) -> int:
        assert self.server is not None
        return self.server.server_address[1]

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"{'https' if self.tls else 'http'}://{host}:{self.port}{path}"

    def start(self) -> FileServer:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                import time

                owner.hits.append(self.path)
                owner.host_headers.append(self.headers.get("Host", ""))
                route = owner.routes.get(self.path.split("?")[0])
                reply = route() if callable(route) else route
                if reply is None:
                    reply = Reply(404, b"missing")
                if reply.delay:
                    time.sleep(reply.delay)
                self.send_response(reply.status)
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                if reply.content_length == -1:
                    self.send_header("Content-Length", str(len(reply.body)))
                elif reply.content_length is not None:
                    self.send_header("Content-Length", str(reply.content_length))
                if reply.content_length is None or reply.content_length != -1:
                    self.send_header("Connection", "close")
                    self.close_connection = True
                self.end_headers()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.wfile.write(reply.body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        if self.tls is not None:
            self.server.socket = self.tls.wrap_socket(self.server.socket, server_side=True)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()

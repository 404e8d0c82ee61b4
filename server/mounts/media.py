"""Media routes outside the catalogue: the signed upload PUT and asset serving.

- `PUT /media/uploads/{media_id}?expires=&signature=`: an upload capability (tools.media.uploads). The body
  is streamed to storage as it arrives; responses use the API's envelopes.
- `GET|HEAD /media/assets/{asset_id}`: a completed media item's bytes or thumbnails by opaque capability ID,
  without an API key (platforms fetch these). Single byte ranges are served (206) for video seeking.
  `SOCIALPUB_MEDIA_URL` (default `{public_url}/media`) is the public base that reaches `/media` here.
"""

from __future__ import annotations

import re
from typing import Any

from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from schemas.errors import ApiError
from server.dispatch import Dispatcher, new_request_id, success_body
from server.rest import ALL_METHODS, error_response
from tools.media.items import ASSET_ROUTE, UPLOAD_ROUTE, blobs, find_asset
from tools.media.uploads import receive_upload
from tools.runtime import Runtime

ASSET_ID_RE = re.compile(r"^[A-Za-z0-9_-]{32}$")
RANGE_RE = re.compile(r"^bytes=(\d*)-(\d*)$")
ASSET_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": "default-src 'none'; sandbox",
    "Cross-Origin-Resource-Policy": "cross-origin",
    "Cache-Control": "public, max-age=86400, immutable",  # an asset ID always names the same bytes
    "Referrer-Policy": "no-referrer",
    "Accept-Ranges": "bytes",
}


def _not_found(request_id: str) -> Response:
    return error_response(ApiError("NOT_FOUND", "No media asset has this address."), request_id)


def parse_range(header: str | None, size: int) -> tuple[int, int] | str | None:
    """(start, end) inclusive for one satisfiable range; None to send everything; "unsatisfiable"."""
    if not header:
        return None
    match = RANGE_RE.match(header.strip())
    if not match or (not match.group(1) and not match.group(2)):
        return None  # malformed or multiple ranges: ignore the header and send the whole file (RFC 9110)
    first, last = match.group(1), match.group(2)
    if not first:  # suffix: the last N bytes
        length = int(last)
        if length == 0:
            return "unsatisfiable"
        return max(0, size - length), size - 1
    start = int(first)
    end = min(int(last), size - 1) if last else size - 1
    if start >= size or start > end:
        return "unsatisfiable"
    return start, end


def routes(rt: Runtime, dispatcher: Dispatcher) -> list[Route]:
    async def upload(request: Request) -> Response:
        request_id = new_request_id()
        if request.method != "PUT":
            return error_response(ApiError("METHOD_NOT_ALLOWED", "Upload URLs accept PUT only.",
                                           headers={"Allow": "PUT"}), request_id)
        try:
            data = await receive_upload(
                rt, request.path_params["media_id"], expires=request.query_params.get("expires"),
                signature=request.query_params.get("signature"), content_type=request.headers.get("content-type"),
                content_length=request.headers.get("content-length"), chunks=request.stream())
        except ApiError as exc:
            return error_response(exc, request_id)
        except ClientDisconnect:  # the client went away mid-body: nothing was kept, nobody to answer
            return Response(status_code=499)
        return JSONResponse(success_body(request_id, data), headers={"X-Request-Id": request_id})

    async def asset(request: Request) -> Response:
        request_id = new_request_id()
        if request.method not in ("GET", "HEAD"):
            return error_response(ApiError("METHOD_NOT_ALLOWED", "Assets are read with GET or HEAD.",
                                           headers={"Allow": "GET, HEAD"}), request_id)
        asset_id = request.path_params["asset_id"]
        if not ASSET_ID_RE.match(asset_id):
            return _not_found(request_id)
        async with rt.db.session(write=False) as session:
            found = await find_asset(session, asset_id)
        store = blobs(rt.settings)
        size = await store.size(found.storage_key) if found else None
        if found is None or size is None:
            return _not_found(request_id)
        headers: dict[str, Any] = {**ASSET_HEADERS, "ETag": found.etag, "Content-Type": found.content_type}
        if request.headers.get("if-none-match") == found.etag:
            return Response(status_code=304, headers={k: v for k, v in headers.items() if k != "Content-Type"})
        wanted = parse_range(request.headers.get("range"), size)
        if wanted == "unsatisfiable":
            return Response(status_code=416, headers={**headers, "Content-Range": f"bytes */{size}"})
        status, start, end = 200, 0, size - 1
        if isinstance(wanted, tuple) and request.headers.get("if-range", found.etag) == found.etag:
            status, (start, end) = 206, wanted
            headers["Content-Range"] = f"bytes {start}-{end}/{size}"
        headers["Content-Length"] = str(end - start + 1)
        if request.method == "HEAD" or size == 0:
            return Response(status_code=status, headers=headers)
        return StreamingResponse(store.open_range(found.storage_key, start, end), status_code=status,
                                 headers=headers, media_type=found.content_type)

    return [Route(UPLOAD_ROUTE, upload, methods=ALL_METHODS), Route(ASSET_ROUTE, asset, methods=ALL_METHODS)]

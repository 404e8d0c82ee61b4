"""Hostile input over REST and MCP: invalid Unicode and control characters in strings (one validator for every
request model), malformed JSON bodies (deep nesting, duplicate keys) refused before authentication."""

from __future__ import annotations

import contextlib
import json
import logging

import pytest

from tests.mcp.support import envelope, in_memory

pytestmark = pytest.mark.anyio


def raw(body: dict) -> bytes:
    """JSON with \\u escapes kept (a lone surrogate cannot be UTF-8 encoded any other way)."""
    return json.dumps(body, ensure_ascii=True).encode()


def post(env, path: str, key: str | None, content: bytes):
    headers = {"Content-Type": "application/json", **(env.auth(key) if key else {})}
    return env.rest.post(path, content=content, headers=headers)


def check_issue(resp, field_path: str, code: str = "INVALID_CHARACTER") -> None:
    body = resp.json()
    assert resp.status_code == 400, body
    assert body["error"]["code"] == "MALFORMED_REQUEST", body
    assert any(i["field_path"] == field_path and i["code"] == code for i in body["error"]["issues"]), body


CASES = [
    ("labels", {"name": "\ud800"}, "$.name"),
    ("labels", {"name": "a\x00b"}, "$.name"),
    ("labels", {"name": "two\nlines"}, "$.name"),
    ("content-items", {"name": "\udfff"}, "$.name"),
    ("content-items", {"name": "nul\x00"}, "$.name"),
    ("content-items", {"name": "x", "single_copy": {"caption": "bad \ud83d here"}}, "$.single_copy.caption"),
    ("content-items", {"name": "x", "single_copy": {"caption": "bell \x07"}}, "$.single_copy.caption"),
    ("snippets", {"name": "s", "text": "esc \x1b[31m"}, "$.text"),
    ("queues", {"name": "\ud800q", "mode": "fifo"}, "$.name"),
]


@pytest.mark.parametrize(("route", "body", "at"), CASES)
async def test_bad_characters_are_400_at_the_field_over_rest(world, caplog, route, body, at) -> None:
    caplog.set_level(logging.ERROR)
    resp = await post(world.env, f"/v1/brands/{world.brand_a.id}/{route}", world.full_key, raw(body))
    check_issue(resp, at)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


async def test_text_keeps_newlines_and_tabs(world) -> None:
    env = world.env
    resp = await post(env, f"/v1/brands/{world.brand_a.id}/content-items", world.full_key,
                      raw({"name": "Multi", "single_copy": {"caption": "line one\nline\ttwo\r\n"}}))
    assert resp.status_code == 201, resp.json()
    assert resp.json()["data"]["content_item"]["single_copy"]["caption"] == "line one\nline\ttwo\r\n"


async def test_bad_characters_over_mcp(world) -> None:
    async with in_memory(world.env, world.full_key) as client:
        for tool, args, at in [
            ("create_label", {"name": "\ud800"}, "$.name"),
            ("create_label", {"name": "x\x00"}, "$.name"),
            ("create_content_item", {"name": "\ud800"}, "$.name"),
            ("create_content_item", {"name": "ok", "single_copy": {"caption": "\ud800"}}, "$.single_copy.caption"),
        ]:
            result = await client.call_tool(tool, {"brand_id": world.brand_a.id, **args})
            body = envelope(result)
            assert body["error"]["status"] == 400, body
            assert any(i["field_path"] == at and i["code"] == "INVALID_CHARACTER" for i in body["error"]["issues"])


DEEP = b"[" * 10_000 + b"]" * 10_000


def no_errors_logged(caplog) -> None:
    bad = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert not bad, [r.getMessage() for r in bad]


@pytest.mark.parametrize("content", [DEEP, b'{"name": ' + b"[" * 65 + b"]" * 65 + b"}",
                                     b'{"name": "a", "name": "b"}', b'{"name": {"x": 1, "x": 2}}'])
async def test_malformed_json_is_400_without_a_traceback(world, caplog, content) -> None:
    caplog.set_level(logging.DEBUG)
    for key, status in ((None, 401), (world.full_key, 400)):  # the key is checked before the body is read
        resp = await post(world.env, f"/v1/brands/{world.brand_a.id}/labels", key, content)
        body = resp.json()
        assert resp.status_code == status, body
        assert body["error"]["code"] == ("MALFORMED_REQUEST" if key else "UNAUTHORIZED"), body
    no_errors_logged(caplog)


async def test_nesting_within_the_bound_is_parsed(world) -> None:
    # 64 levels are JSON the parser accepts; the request model then refuses the shape (not a string).
    content = b'{"name": ' + b"[" * 63 + b"]" * 63 + b"}"
    resp = await post(world.env, f"/v1/brands/{world.brand_a.id}/labels", world.full_key, content)
    assert resp.status_code == 400 and resp.json()["error"]["issues"][0]["field_path"] == "$.name"


async def test_deep_nesting_over_mcp_http(sqlite_env, caplog) -> None:
    import httpx

    from server.mcp_server.run import http_app
    from server.mcp_server.selection import Selection
    from tests.mcp.support import serving
    from tools.toolsets import TOOLSETS

    env = sqlite_env
    ws = await env.workspace()
    key = await env.key(ws, role="admin")
    caplog.set_level(logging.DEBUG)
    app = http_app(env.rt, transport="http", selection=Selection(toolsets=tuple(t.name for t in TOOLSETS)),
                   run_worker=False)
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    async with serving(app) as base, httpx.AsyncClient(base_url=base, timeout=20) as http:
        for auth in ({}, env.auth(key)):
            expected = 400 if auth else 401  # the key is checked first
            r = await http.post("/mcp", content=DEEP, headers={**headers, **auth})
            assert r.status_code == expected, r.text
            r = await http.post("/mcp", content=b'{"jsonrpc": "2.0", "jsonrpc": "2.0", "id": 1, "method": "ping"}',
                                headers={**headers, **auth})
            assert r.status_code == expected, r.text
            if auth:
                assert r.json()["error"]["code"] == -32700 and "repeats the key" in r.json()["error"]["message"]
    no_errors_logged(caplog)


async def test_oversized_query_and_headers_are_enveloped(world) -> None:
    rest = world.env.rest
    resp = await rest.get("/v1/context?x=" + "a" * 20_000)
    assert resp.status_code == 414 and resp.json()["error"]["code"] == "URI_TOO_LONG"
    resp = await rest.get("/v1/context", headers={f"x-h{i}": "v" * 1000 for i in range(20)})
    assert resp.status_code == 431 and resp.json()["error"]["code"] == "HEADERS_TOO_LARGE"


@pytest.mark.parametrize("method", ["TRACE", "CONNECT", "PROPFIND", "DELETE"])
async def test_every_method_on_every_path_is_enveloped(world, method) -> None:
    rest = world.env.rest
    for path in ("/v1/context", "/v1/openapi.json", f"/v1/brands/{world.brand_a.id}/labels"):
        resp = await rest.request(method, path, headers=world.env.auth(world.full_key))
        body = resp.json()
        assert resp.status_code == 405 and body["error"]["code"] == "METHOD_NOT_ALLOWED", (path, body)
        assert resp.headers["allow"]


async def test_a_megabyte_query_over_a_socket_is_414(sqlite_env) -> None:
    """Through uvicorn with the settings `serve` uses: the answer is the envelope, not a reset connection."""
    import contextlib

    import anyio
    import httpx
    import uvicorn

    from server.rest import UVICORN_HEAD_OPTIONS

    server = uvicorn.Server(uvicorn.Config(sqlite_env.app, host="127.0.0.1", port=0, log_level="warning",
                                           lifespan="off", **UVICORN_HEAD_OPTIONS))
    server.capture_signals = contextlib.nullcontext  # pyright: ignore[reportAttributeAccessIssue]  # the test replaces it for this run
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve)
        with anyio.fail_after(10):
            while not server.started:
                await anyio.sleep(0.01)
        port = server.servers[0].sockets[0].getsockname()[1]
        try:
            with anyio.fail_after(20):
                stream = await anyio.connect_tcp("127.0.0.1", port)
                async with stream:
                    await stream.send(b"GET /v1/context?q=" + b"a" * 1_000_000 + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                      b"Connection: close\r\n\r\n")
                    answer = b""
                    with contextlib.suppress(anyio.EndOfStream):
                        while True:
                            answer += await stream.receive()
            assert answer.startswith(b"HTTP/1.1 414"), answer[:200]
            assert json.loads(answer.split(b"\r\n\r\n", 1)[1])["error"]["code"] == "URI_TOO_LONG"
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=20) as http:
                resp = await http.request("TRACE", "/v1/context")
                assert resp.status_code == 405 and resp.json()["error"]["code"] == "METHOD_NOT_ALLOWED"
        finally:
            server.should_exit = True


@contextlib.asynccontextmanager
async def uvicorn_port(app):
    import anyio
    import uvicorn

    from server.rest import UVICORN_HEAD_OPTIONS

    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="off",
                                           **UVICORN_HEAD_OPTIONS))
    server.capture_signals = contextlib.nullcontext  # pyright: ignore[reportAttributeAccessIssue]  # the test replaces it for this run
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve)
        with anyio.fail_after(10):
            while not server.started:
                await anyio.sleep(0.01)
        try:
            yield server.servers[0].sockets[0].getsockname()[1]
        finally:
            server.should_exit = True


async def test_an_abandoned_upload_logs_no_error(world, caplog) -> None:
    """Over a socket: a client announces a large body, sends part of it and leaves, with no key and with a
    valid key. Neither is an ERROR or a traceback in the log; the keyless one is refused before its body."""
    import anyio

    caplog.set_level(logging.DEBUG)
    path = f"/v1/brands/{world.brand_a.id}/labels".encode()
    async with uvicorn_port(world.env.app) as port:
        for auth in (b"", f"Authorization: Bearer {world.full_key}\r\n".encode()):
            with anyio.fail_after(10):
                stream = await anyio.connect_tcp("127.0.0.1", port)
                await stream.send(b"POST " + path + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                                  + auth + b"Content-Length: 100000\r\n\r\n" + b'{"name": "' + b"a" * 5000)
                if not auth:  # answered without waiting for the body
                    answer = await stream.receive()
                    assert answer.startswith(b"HTTP/1.1 401"), answer[:100]
                await anyio.sleep(0.2)
                await stream.aclose()
            await anyio.sleep(0.3)  # let the server notice the disconnect
    no_errors_logged(caplog)
    assert any("disconnected" in r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG)


def test_bad_character_is_the_character_walk() -> None:
    """`bad_character` skips its walk when one regex scan finds no suspect character: the same answers as the
    walk over every character (kept here) for random text rich in controls, surrogates and their neighbours."""
    import random

    from schemas.validators import bad_character

    def walk(value: str, single_line: bool) -> tuple[int, str] | None:
        for i, ch in enumerate(value):
            cp = ord(ch)
            if 0xD800 <= cp <= 0xDFFF:
                return i, "a lone surrogate (not valid Unicode)"
            if (cp < 0x20 or 0x7F <= cp <= 0x9F) and (single_line or ch not in "\t\n\r"):
                return i, f"control character U+{cp:04X}"
        return None

    rng = random.Random(18)
    for _ in range(50_000):
        value = "".join(chr(rng.choice([rng.randrange(0x110000), rng.randrange(0x100), rng.randrange(0xD7F0, 0xE010)]))
                        for _ in range(rng.randrange(6)))
        for single_line in (False, True):
            assert bad_character(value, single_line=single_line) == walk(value, single_line), repr(value)

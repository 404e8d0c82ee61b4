"""URL imports through the API: refused synchronously before any record exists when the URL is not public,
fetched by the processing job from a loopback server allowed by name (fetch_allow_hosts), idempotent."""

from __future__ import annotations

import socket
from types import SimpleNamespace

import pytest

from providers import addresses
from storage.tables.jobs import Job
from tests.media.support import FileServer, Reply, image_bytes, local, process, video_bytes
from tools.media.items import create_media_folder

pytestmark = pytest.mark.anyio


@pytest.fixture
def dns(monkeypatch: pytest.MonkeyPatch) -> SimpleNamespace:
    table: dict[str, list[str]] = {"media.test": ["127.0.0.1"], "internal.test": ["127.0.0.1"],
                                   "private.example": ["10.0.0.7"]}
    calls: list[str] = []

    async def resolve(host: str, port: int) -> list[str]:
        calls.append(host)
        if host == "flaky.example":
            raise socket.gaierror(socket.EAI_AGAIN, "temporary failure")
        if host not in table:
            raise socket.gaierror(socket.EAI_NONAME, "unknown")
        return table[host]

    monkeypatch.setattr(addresses, "resolve_host", resolve)
    return SimpleNamespace(table=table, calls=calls)


@pytest.fixture
def server():
    srv = FileServer().start()
    yield srv
    srv.stop()


@pytest.fixture
async def setup(env_factory, dns, server):
    async with env_factory(fetch_allow_hosts=("media.test",)) as env:
        ws = await env.workspace()
        brand = await env.brand(ws, "Imports")
        other = await env.brand(ws, "Other")
        secret = await env.key(ws)
        yield SimpleNamespace(env=env, brand=brand, other=other, secret=secret, server=server, dns=dns, ws=ws)


def imports_url(brand_id: str) -> str:
    return f"/v1/brands/{brand_id}/media/imports"


async def do_import(s, body: dict, key: str | None = None):
    headers = s.env.auth(s.secret, **({"Idempotency_Key": key} if key else {}))
    return await s.env.rest.post(imports_url(s.brand.id), json=body, headers=headers)


async def read(s, media_id: str) -> dict:
    resp = await s.env.rest.get(f"/v1/brands/{s.brand.id}/media/{media_id}", headers=s.env.auth(s.secret))
    return resp.json()["data"]


async def test_import_happy_path(setup) -> None:
    s = setup
    png = image_bytes(640, 480, "PNG")
    s.server.routes["/photos/sunset%20beach.png"] = Reply(body=png, headers={"Content-Type": "image/png"})
    resp = await do_import(s, {"url": s.server.url("/photos/sunset%20beach.png", host="media.test")})
    assert resp.status_code == 201, resp.json()
    data = resp.json()["data"]
    assert set(data) == {"id", "status", "replayed", "download_url", "links"}
    assert (data["status"], data["replayed"]) == ("processing", False)
    assert data["links"]["self"]["href"] == f"/v1/brands/{s.brand.id}/media/{data['id']}"
    assert s.server.hits == []  # the fetch is the job's, not the request's

    item = await read(s, data["id"])
    assert item["readiness"]["next_actions"][0]["action"] == "read_media_again"
    assert await process(s.env) == 1
    item = await read(s, data["id"])
    assert item["status"] == "completed", item
    assert (item["file_name"], item["content_type"], item["size"], item["source"]) == (
        "sunset beach.png", "image/png", len(png), "remote_import")
    assert item["download_url"] == data["download_url"]
    got = await s.env.rest.get(local(item["download_url"]))
    assert got.content == png
    assert s.server.hits == ["/photos/sunset%20beach.png"]
    assert s.server.host_headers == [f"media.test:{s.server.port}"]


async def test_import_video_and_octet_stream(setup) -> None:
    s = setup
    mp4 = video_bytes(80, 60, seconds=1.5)
    s.server.routes["/v"] = Reply(body=mp4, headers={"Content-Type": "application/octet-stream"})
    resp = await do_import(s, {"url": s.server.url("/v", host="media.test"), "filename": "clip one.mp4"})
    await process(s.env)
    item = await read(s, resp.json()["data"]["id"])
    assert (item["status"], item["content_type"], item["file_name"]) == ("completed", "video/mp4", "clip one.mp4")
    assert item["duration"] == pytest.approx(1.5, abs=0.05)


async def test_exact_replay_does_not_fetch_again(setup) -> None:
    s = setup
    s.server.routes["/a.png"] = Reply(body=image_bytes(10, 10), headers={"Content-Type": "image/png"})
    body = {"url": s.server.url("/a.png", host="media.test"), "filename": "a.png"}
    first = await do_import(s, body, key="imp-1")
    await process(s.env)
    counts = await s.env.row_counts()
    again = await do_import(s, body, key="imp-1")
    assert again.status_code == 200
    assert again.headers["idempotency-replayed"] == "true"
    data = again.json()["data"]
    assert data["replayed"] is True and data["id"] == first.json()["data"]["id"]
    assert {k: v for k, v in data.items() if k != "replayed"} == {
        k: v for k, v in first.json()["data"].items() if k != "replayed"}
    assert await process(s.env) == 0
    assert s.server.hits == ["/a.png"]  # fetched once
    assert await s.env.row_counts() == counts
    other = await do_import(s, {**body, "filename": "b.png"}, key="imp-1")
    assert (other.status_code, other.json()["error"]["code"]) == (409, "IDEMPOTENCY_KEY_CONFLICT")
    # over the direct (MCP) path the replay says so too
    outcome = await s.env.call("import_media", s.secret, idempotency_key="imp-1", brand_id=s.brand.id, **body)
    assert outcome.status == 200 and outcome.body["data"]["replayed"] is True
    assert outcome.body["meta"]["idempotency_replayed"] is True


@pytest.mark.parametrize(("url", "code"), [
    ("http://127.0.0.1:{port}/a.png", "URL_HOST_NOT_ALLOWED"),  # the test server itself, by a literal address
    ("http://internal.test:{port}/a.png", "URL_HOST_NOT_ALLOWED"),  # the same server by a non-allowed name
    ("http://[::1]:{port}/a.png", "URL_HOST_NOT_ALLOWED"),
    ("http://[::ffff:127.0.0.1]:{port}/a.png", "URL_HOST_NOT_ALLOWED"),
    ("http://2130706433:{port}/a.png", "URL_HOST_NOT_ALLOWED"),
    ("http://0x7f000001:{port}/a.png", "URL_HOST_NOT_ALLOWED"),
    ("http://127.1:{port}/a.png", "URL_HOST_NOT_ALLOWED"),
    ("http://169.254.169.254/latest/meta-data/", "URL_HOST_NOT_ALLOWED"),
    ("http://[fd00:ec2::254]/latest/meta-data/", "URL_HOST_NOT_ALLOWED"),
    ("http://private.example/a.png", "URL_HOST_NOT_ALLOWED"),
    ("http://[fe80::1]/a.png", "URL_HOST_NOT_ALLOWED"),
    ("http://[fc00::1]/a.png", "URL_HOST_NOT_ALLOWED"),
    ("ftp://media.test/a.png", "URL_SCHEME_NOT_ALLOWED"),
    ("file:///etc/passwd", "URL_SCHEME_NOT_ALLOWED"),
    ("http://user:pw@media.test:{port}/a.png", "URL_CREDENTIALS_NOT_ALLOWED"),
    ("http://nowhere.example/a.png", "URL_HOST_NOT_FOUND"),
    ("not a url", "URL_INVALID"),
])
async def test_refused_urls_create_nothing_and_fetch_nothing(setup, url: str, code: str) -> None:
    s = setup
    s.server.routes["/a.png"] = Reply(body=image_bytes(10, 10), headers={"Content-Type": "image/png"})
    before = await s.env.row_counts()
    resp = await do_import(s, {"url": url.format(port=s.server.port)}, key="k")
    assert resp.status_code == 422, resp.json()
    err = resp.json()["error"]
    assert err["code"] == "DOMAIN_VALIDATION_FAILED"
    assert [(i["field_path"], i["code"]) for i in err["issues"]] == [("$.url", code)]
    assert url.format(port=s.server.port) not in resp.text
    assert await s.env.row_counts() == before
    assert s.server.hits == []
    # the key was not used up by the refusal
    s.server.routes["/ok.png"] = Reply(body=image_bytes(10, 10), headers={"Content-Type": "image/png"})
    assert (await do_import(s, {"url": s.server.url("/ok.png", host="media.test")}, key="k")).status_code == 201


async def test_other_input_refusals(setup) -> None:
    s = setup
    before = await s.env.row_counts()
    url = s.server.url("/a.png", host="media.test")
    cases = [
        ({"url": url, "folder_id": "mfd_01HZZZZZZZZZZZZZZZZZZZZZZZ"}, 422, "$.folder_id"),
        ({"url": url, "filename": "x" * 501}, 400, "$.filename"),
        ({"url": "http://media.test/" + "a" * 2000}, 400, "$.url"),
        ({}, 400, "$.url"),
        ({"url": 5}, 400, "$.url"),
    ]
    for body, status, path in cases:
        resp = await do_import(s, body)
        assert resp.status_code == status, (body, resp.json())
        assert path in [i["field_path"] for i in resp.json()["error"]["issues"]]
    resp = await do_import(s, {"url": "http://flaky.example/a.png"})
    assert (resp.status_code, resp.json()["error"]["code"], resp.json()["error"]["retryable"]) == (
        503, "DEPENDENCY_UNAVAILABLE", True)
    assert await s.env.row_counts() == before


async def test_folder_of_another_brand_is_refused_and_own_folder_is_used(setup) -> None:
    s = setup
    async with s.env.db.session(write=True) as session:
        mine = await create_media_folder(session, s.env.clock.now(), s.brand, "Campaign")
        theirs = await create_media_folder(session, s.env.clock.now(), s.other, "Theirs")
    s.server.routes["/a.png"] = Reply(body=image_bytes(10, 10), headers={"Content-Type": "image/png"})
    url = s.server.url("/a.png", host="media.test")
    resp = await do_import(s, {"url": url, "folder_id": theirs.id})
    assert resp.status_code == 422 and resp.json()["error"]["issues"][0]["field_path"] == "$.folder_id"
    resp = await do_import(s, {"url": url, "folder_id": mine.id})
    assert resp.status_code == 201
    assert (await read(s, resp.json()["data"]["id"]))["folder_id"] == mine.id


@pytest.mark.parametrize("target", ["http://127.0.0.1:{port}/secret.png", "http://internal.test:{port}/secret.png",
                                    "http://169.254.169.254/latest/meta-data/"])
async def test_redirect_to_a_refused_address_fails_the_import(setup, target: str) -> None:
    s = setup
    s.server.routes["/start.png"] = Reply(302, headers={"Location": target.format(port=s.server.port)})
    s.server.routes["/secret.png"] = Reply(body=image_bytes(10, 10), headers={"Content-Type": "image/png"})
    resp = await do_import(s, {"url": s.server.url("/start.png", host="media.test")})
    assert resp.status_code == 201
    await process(s.env)
    item = await read(s, resp.json()["data"]["id"])
    assert item["status"] == "failed"
    [action] = item["readiness"]["next_actions"]
    assert (action["action"], action["reason_code"]) == ("repair_media", "URL_HOST_NOT_ALLOWED")
    assert s.server.hits == ["/start.png"]  # the second hop was never requested


@pytest.mark.parametrize(("reply", "code"), [
    (Reply(body=b"<html>hi</html>", headers={"Content-Type": "text/html"}), "CONTENT_TYPE_NOT_ALLOWED"),
    (Reply(body=b"<html>" + b" " * 100, headers={"Content-Type": "image/png"}), "CONTENT_TYPE_MISMATCH"),
    (Reply(body=image_bytes(10, 10, "JPEG"), headers={"Content-Type": "image/png"}), "CONTENT_TYPE_MISMATCH"),
    (Reply(body=b"x" * 100, headers={"Content-Type": "image/png"}, content_length=None), "CONTENT_LENGTH_REQUIRED"),
    (Reply(404, body=b"gone"), "HTTP_STATUS"),
])
async def test_bad_remote_files_fail_with_a_reason(setup, reply: Reply, code: str) -> None:
    s = setup
    s.server.routes["/f"] = reply
    resp = await do_import(s, {"url": s.server.url("/f", host="media.test")})
    await process(s.env)
    item = await read(s, resp.json()["data"]["id"])
    assert item["status"] == "failed"
    assert item["readiness"]["next_actions"][0]["reason_code"] == code
    assert (await s.env.rest.get(local(item["download_url"]))).status_code == 404


async def test_transient_failures_retry_then_fail(setup) -> None:
    s = setup
    s.server.routes["/busy"] = Reply(503, body=b"busy")
    resp = await do_import(s, {"url": s.server.url("/busy", host="media.test")})
    media_id = resp.json()["data"]["id"]
    await process(s.env)
    assert (await read(s, media_id))["status"] == "processing"  # retried later, not failed yet
    for _ in range(10):
        s.env.clock.advance(seconds=400)
        await process(s.env)
    item = await read(s, media_id)
    assert item["status"] == "failed" and item["readiness"]["next_actions"][0]["reason_code"] == "HTTP_STATUS"
    assert len(s.server.hits) == 5  # max_attempts
    async with s.env.db.session(write=False) as session:
        from sqlmodel import select

        job = (await session.exec(select(Job))).one()
    assert job.status == "done"

    # a server that recovers within the attempts completes the import
    s.server.hits.clear()
    answers = iter([Reply(503), Reply(body=image_bytes(10, 10), headers={"Content-Type": "image/png"})])
    s.server.routes["/flaky"] = lambda: next(answers)
    resp = await do_import(s, {"url": s.server.url("/flaky", host="media.test")})
    await process(s.env)
    s.env.clock.advance(seconds=400)
    await process(s.env)
    assert (await read(s, resp.json()["data"]["id"]))["status"] == "completed"


async def test_imports_of_another_brand_are_hidden(setup) -> None:
    s = setup
    s.server.routes["/a.png"] = Reply(body=image_bytes(10, 10), headers={"Content-Type": "image/png"})
    resp = await do_import(s, {"url": s.server.url("/a.png", host="media.test")})
    media_id = resp.json()["data"]["id"]
    got = await s.env.rest.get(f"/v1/brands/{s.other.id}/media/{media_id}", headers=s.env.auth(s.secret))
    assert got.status_code == 404


async def test_import_over_the_plan_byte_cap_fails_once_its_size_is_known(setup, monkeypatch) -> None:
    """An import's size is unknown until fetched: the per-brand byte cap fails the item then, with the code."""
    import dataclasses

    from schemas.plans import get_plan
    from tools.context import plans
    s = setup
    png = image_bytes(64, 64, "PNG")
    plan = get_plan("agency")
    capped = dataclasses.replace(plan, limits={**plan.limits, "media_storage_bytes_per_brand": len(png) - 1})
    monkeypatch.setattr(plans, "get_plan", lambda plan_id: capped if plan_id == "agency" else get_plan(plan_id))
    s.server.routes["/big.png"] = Reply(body=png, headers={"Content-Type": "image/png"})
    resp = await do_import(s, {"url": s.server.url("/big.png", host="media.test")})
    assert resp.status_code == 201, resp.json()
    await process(s.env)
    item = await read(s, resp.json()["data"]["id"])
    assert item["status"] == "failed"
    assert item["readiness"]["ready_for_content"] is False
    assert item["readiness"]["next_actions"][0]["action"] == "repair_media"

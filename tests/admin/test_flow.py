"""Admin marketing end to end: a small website served on loopback (allowed by name through fetch_allow_hosts,
DNS simulated), scanned by the worker, turned into sample drafts by the content pipeline, until the marketing
sample pack is ready with media whose bytes download through the app."""

from __future__ import annotations

import pytest
from sqlmodel import select

from schemas.ids import new_id
from storage.tables.jobs import Job
from storage.tables.media import Media
from tests.admin.support import (
    BEANS,
    CAFE,
    HOME_PAGE,
    LOGO,
    SITE_HOST,
    admin_setup,
    create_prospect,
    install_dns,
    patch,
    path,
    png,
    serve_site,
    until_quiet,
)
from tests.media.support import FileServer, Reply, local
from tools.media.items import new_asset_id

pytestmark = pytest.mark.anyio


@pytest.fixture
def server():
    srv = FileServer().start()
    yield srv
    srv.stop()


@pytest.fixture
async def setup(env_factory, monkeypatch, server):
    install_dns(monkeypatch)
    async with env_factory(fetch_allow_hosts=(SITE_HOST,)) as env:
        s = await admin_setup(env)
        s.server = server
        s.site = server.url("/", host=SITE_HOST)
        yield s


async def job_errors(env) -> list[tuple[str, str, int, str | None]]:
    async with env.db.session(write=False) as session:
        return [(j.kind, j.status, j.attempts, j.last_error) for j in (await session.exec(select(Job))).all()]


async def start_scan(s, brand_id: str, body: dict | None = None, key: str | None = None):
    headers = s.env.auth(s.admin, **({"Idempotency_Key": key} if key else {}))
    return await s.env.rest.post(path("start_website_scan", brand_id), json=body or {}, headers=headers)


async def read(s, name: str, brand_id: str, query: str = "") -> dict:
    resp = await s.env.rest.get(path(name, brand_id) + query, headers=s.env.auth(s.admin))
    assert resp.status_code == 200, resp.json()
    return resp.json()["data"]


def steps(scan: dict) -> dict[str, str]:
    return {st["name"]: st["status"] for st in scan["steps"]}


async def test_full_flow_to_a_ready_sample_pack(setup) -> None:
    s = setup
    env = s.env
    serve_site(s.server)
    brand = await create_prospect(env, s.admin, "Bean There")
    bid = brand["id"]
    resp = await patch(env, s.admin, bid, {"config": {"website": s.site, "mode": "automatic",
                                                      "image_posting": {"cross_post": True}}})
    assert resp.status_code == 200, resp.json()
    assert resp.json()["data"]["onboarding_step"] == "website_added"

    resp = await start_scan(s, bid)
    assert resp.status_code == 201, resp.json()
    scan = resp.json()["data"]
    assert scan["status"] == "queued" and scan["done"] is False and scan["website_url"] == s.site
    assert [st["name"] for st in scan["steps"]] == ["fetch_site", "extract_identity", "extract_colors",
                                                     "categorise", "import_logo", "import_images"]
    assert set(steps(scan).values()) == {"pending"}
    assert s.server.hits == []  # the fetch is the worker's, not the request's
    assert (await read(s, "get_website_scan", bid))["id"] == scan["id"]

    # the scan job fetches and extracts, then each image's import job processes it and settles the scan
    await until_quiet(env)
    scan = await read(s, "get_website_scan", bid)
    assert scan["status"] == "completed" and scan["done"] is True, scan
    assert set(steps(scan).values()) == {"completed"}
    assert all(st["error"] is None and st["finished_at"] for st in scan["steps"])
    found = scan["found"]
    assert found["title"] == "Bean There Coffee"
    assert found["description"].startswith("Small-batch coffee roastery")
    assert found["category"] == "Food & Beverage"
    assert found["colors"][:3] == ["#6F4E37", "#C8A27A", "#1F4E5F"]  # theme colour first, greys skipped
    assert len(found["media_ids"]) == 3 and found["media_ids"][0] == found["logo_media_id"]
    # the page's script was never run or fetched; tiny and data: images were skipped
    assert sorted(s.server.hits) == sorted(["/", "/img/logo.png", "/img/cafe.png", "/img/beans.png"])

    # the facts are the brand's now
    ctx = await env.rest.get(f"/v1/brands/{bid}/context", headers=env.auth(s.admin))
    ctx = ctx.json()["data"]
    assert ctx["brand"]["description"] == found["description"] and ctx["brand"]["category"] == "Food & Beverage"
    assert ctx["identity"]["colors"] == found["colors"] and ctx["identity"]["logo_url"] == found["logo_url"]
    logo = await env.rest.get(local(found["logo_url"]))
    assert logo.status_code == 200 and logo.content == LOGO
    media = await env.rest.get(f"/v1/brands/{bid}/media/{found['logo_media_id']}", headers=env.auth(s.admin))
    assert media.json()["data"]["source"] == "remote_import" and media.json()["data"]["status"] == "completed"

    status = await read(s, "get_prospect_status", bid)
    assert status["onboarding_step"] == "website_scanned" and status["generation"]["status"] == "not_started"
    assert status["automation"]["completed_media"] == 3

    # the content pipeline: queued once, a second request returns the same run
    keyed = env.auth(s.admin, Idempotency_Key="pipe-1")
    resp = await env.rest.post(path("start_content_pipeline", bid), json={}, headers=keyed)
    assert resp.status_code == 201, resp.json()
    first = resp.json()["data"]
    assert first["queued"] is True and first["run"]["status"] == "queued"
    replay = await env.rest.post(path("start_content_pipeline", bid), json={}, headers=keyed)
    assert replay.status_code == 200 and replay.headers["idempotency-replayed"] == "true"
    assert replay.json()["data"] == first
    again = await env.rest.post(path("start_content_pipeline", bid), json={}, headers=env.auth(s.admin))
    assert again.status_code == 200 and again.json()["data"]["queued"] is False
    assert again.json()["data"]["run"]["id"] == first["run"]["id"]
    pack = await read(s, "get_marketing_sample_pack", bid)
    assert pack["ready"] is False and "running" in pack["reason"]

    await until_quiet(env)
    status = await read(s, "get_prospect_status", bid)
    assert status["generation"]["status"] == "completed"
    assert status["generation"]["run"]["samples_created"] == 5
    assert status["automation"]["sample_content_items"] == 5 and status["automation"]["usable_samples"] == 5
    assert status["onboarding_step"] == "content_generated"

    pack = await read(s, "get_marketing_sample_pack", bid)
    assert pack["ready"] is True, pack
    assert pack["brand"] == {"id": bid, "name": "Bean There", "website": s.site}
    assert len(pack["samples"]) == 3 and pack["limit"] == 3
    served = {found["logo_media_id"]: LOGO}
    served.update(dict(zip(found["media_ids"][1:], (CAFE, BEANS), strict=True)))
    for sample in pack["samples"]:
        assert sample["caption"] and sample["title"] and "BeanThere" in sample["hashtags"]
        assert all("#" not in tag and " " not in tag for tag in sample["hashtags"])
        assert len(sample["media"]) == 1
        m = sample["media"][0]
        assert m["content_type"] == "image/png"
        got = await env.rest.get(local(m["download_url"]))
        assert got.status_code == 200 and got.content == served[m["media_id"]]
        # a real draft of the brand, readable through the content routes
        item = await env.rest.get(f"/v1/brands/{bid}/content-items/{sample['content_item_id']}",
                                  headers=env.auth(s.admin))
        assert item.status_code == 200, item.json()
        draft = item.json()["data"]["content_item"]
        assert draft["single_copy"]["caption"] == sample["caption"]
        assert draft["instagram_settings"]["post_type"] == "GRID_POST"
        assert draft["facebook_settings"]["post_type"] == "FB_POST"  # image cross-posting is on
    wide = await read(s, "get_marketing_sample_pack", bid, "?limit=10")
    assert wide["ready"] is False and len(wide["samples"]) == 5 and "Only 5 of the 10" in wide["reason"]

    # a second run adds five more, continuing the rotation of angles
    resp = await env.rest.post(path("start_content_pipeline", bid), json={}, headers=env.auth(s.admin))
    assert resp.status_code == 201
    await until_quiet(env)
    wide = await read(s, "get_marketing_sample_pack", bid, "?limit=10")
    assert wide["ready"] is True and len({x["title"] for x in wide["samples"]}) == 10


async def test_scan_conflict_and_idempotent_replay(setup) -> None:
    s = setup
    serve_site(s.server)
    bid = (await create_prospect(s.env, s.admin))["id"]
    first = await start_scan(s, bid, {"website_url": s.site}, key="scan-1")
    assert first.status_code == 201
    replay = await start_scan(s, bid, {"website_url": s.site}, key="scan-1")
    assert replay.status_code == 200 and replay.headers["idempotency-replayed"] == "true"
    assert replay.json()["data"]["id"] == first.json()["data"]["id"]
    other = await start_scan(s, bid, {"website_url": s.site + "other"}, key="scan-1")
    assert other.status_code == 409 and other.json()["error"]["code"] == "IDEMPOTENCY_KEY_CONFLICT"
    counts = await s.env.row_counts()
    busy = await start_scan(s, bid, {"website_url": s.site})
    err = busy.json()["error"]
    assert busy.status_code == 409 and err["code"] == "CONFLICT" and err["next_action"] == "get_website_scan"
    assert err["details"]["scan_id"] == first.json()["data"]["id"]
    assert await s.env.row_counts() == counts
    # the pipeline waits for the scan too
    await patch(s.env, s.admin, bid, {"config": {"mode": "automatic"}})
    resp = await s.env.rest.post(path("start_content_pipeline", bid), json={}, headers=s.env.auth(s.admin))
    assert resp.status_code == 409 and resp.json()["error"]["next_action"] == "get_website_scan"

    await until_quiet(s.env)
    again = await start_scan(s, bid)  # the stored website; images already imported are reused
    assert again.status_code == 201
    await until_quiet(s.env)
    scan = await read(s, "get_website_scan", bid)
    assert scan["id"] == again.json()["data"]["id"] and scan["status"] == "completed"
    assert s.server.hits.count("/img/logo.png") == 1


async def test_a_stalled_scan_is_replaced(setup) -> None:
    s = setup
    serve_site(s.server)
    bid = (await create_prospect(s.env, s.admin))["id"]
    first = (await start_scan(s, bid, {"website_url": s.site})).json()["data"]
    s.env.clock.advance(minutes=31)  # no worker ever picked it up
    resp = await start_scan(s, bid, {"website_url": s.site})
    assert resp.status_code == 201 and resp.json()["data"]["id"] != first["id"]
    await until_quiet(s.env)
    scan = await read(s, "get_website_scan", bid)
    # once (2026-11-24, one clean-clone CI of three) this read "running": the steps and the jobs' last errors say
    # which step waited on a retry if it happens again
    assert scan["status"] == "completed", (scan["steps"], await job_errors(s.env))


async def test_site_errors_fail_the_first_step(setup) -> None:
    s = setup
    bid = (await create_prospect(s.env, s.admin))["id"]
    s.server.routes["/gone"] = Reply(404, b"nope")
    await start_scan(s, bid, {"website_url": s.server.url("/gone", host=SITE_HOST)})
    await until_quiet(s.env)
    scan = await read(s, "get_website_scan", bid)
    assert scan["status"] == "failed" and scan["done"] is True
    fetch_site = scan["steps"][0]
    assert fetch_site["status"] == "failed" and fetch_site["error"]["code"] == "HTTP_STATUS"
    assert "404" in fetch_site["error"]["message"]
    assert all(st["status"] == "failed" and st["error"]["code"] == "NOT_RUN" for st in scan["steps"][1:])
    status = await read(s, "get_prospect_status", bid)
    assert status["onboarding_step"] == "website_added"  # a failed scan moves nothing forward


async def test_redirects_are_checked_again(setup) -> None:
    s = setup
    bid = (await create_prospect(s.env, s.admin))["id"]
    # a public-looking start that redirects to a private address and to loopback under another name
    s.server.routes["/to-private"] = Reply(302, headers={"Location": "http://private.example/admin"})
    s.server.routes["/to-loopback"] = Reply(302, headers={"Location": s.server.url("/", host="127.0.0.1")})
    serve_site(s.server)
    for route in ("/to-private", "/to-loopback"):
        resp = await start_scan(s, bid, {"website_url": s.server.url(route, host=SITE_HOST)})
        assert resp.status_code == 201, resp.json()
        await until_quiet(s.env)
        scan = await read(s, "get_website_scan", bid)
        assert scan["steps"][0]["error"]["code"] == "URL_HOST_NOT_ALLOWED", scan
    assert "/" not in s.server.hits  # the loopback target was never requested


async def test_non_html_and_retry_of_transient_failures(setup) -> None:
    s = setup
    bid = (await create_prospect(s.env, s.admin))["id"]
    s.server.routes["/data.json"] = Reply(body=b"{}", headers={"Content-Type": "application/json"})
    await start_scan(s, bid, {"website_url": s.server.url("/data.json", host=SITE_HOST)})
    await until_quiet(s.env)
    scan = await read(s, "get_website_scan", bid)
    assert scan["steps"][0]["error"]["code"] == "CONTENT_TYPE_NOT_ALLOWED"

    # a 503 is retried with backoff; the step stays running meanwhile, then the site recovers
    calls = {"n": 0}

    def flaky() -> Reply:
        calls["n"] += 1
        if calls["n"] == 1:
            return Reply(503, b"busy")
        return Reply(body=HOME_PAGE.encode(), headers={"Content-Type": "text/html"})

    s.server.routes["/"] = flaky
    s.server.routes.update({"/img/logo.png": png(LOGO), "/img/cafe.png": png(CAFE), "/img/beans.png": png(BEANS)})
    await start_scan(s, bid, {"website_url": s.site})
    await until_quiet(s.env)
    scan = await read(s, "get_website_scan", bid)
    assert scan["status"] == "running" and scan["steps"][0]["status"] == "running"
    s.env.clock.advance(seconds=5)
    await until_quiet(s.env)
    scan = await read(s, "get_website_scan", bid)
    assert scan["status"] == "completed", scan


async def test_a_broken_logo_fails_its_step_and_the_scan(setup) -> None:
    s = setup
    bid = (await create_prospect(s.env, s.admin))["id"]
    serve_site(s.server)
    s.server.routes["/img/logo.png"] = Reply(404, b"missing")
    await start_scan(s, bid, {"website_url": s.site})
    await until_quiet(s.env)
    scan = await read(s, "get_website_scan", bid)
    state = steps(scan)
    assert state["import_logo"] == "failed" and state["import_images"] == "completed"
    logo_step = next(st for st in scan["steps"] if st["name"] == "import_logo")
    assert logo_step["error"]["code"] == "HTTP_STATUS" and "logo.png" in logo_step["error"]["message"]
    assert scan["status"] == "failed" and scan["done"] is True and scan["found"]["logo_url"] is None
    # what was found before the failure is kept, and the pipeline can still use the imported images
    assert scan["found"]["category"] == "Food & Beverage"
    await patch(s.env, s.admin, bid, {"config": {"mode": "automatic"}})
    resp = await s.env.rest.post(path("start_content_pipeline", bid), json={}, headers=s.env.auth(s.admin))
    assert resp.status_code == 201
    await until_quiet(s.env)
    pack = await read(s, "get_marketing_sample_pack", bid)
    assert pack["ready"] is True
    assert {m["media_id"] for x in pack["samples"] for m in x["media"]} <= set(scan["found"]["media_ids"][1:])


async def test_a_page_without_images_makes_no_samples(setup) -> None:
    s = setup
    bid = (await create_prospect(s.env, s.admin, description="Our own words."))["id"]
    page = "<html><head><title>Plain</title></head><body><p>Hello there, welcome.</p></body></html>"
    s.server.routes["/"] = Reply(body=page.encode(), headers={"Content-Type": "text/html"})
    await patch(s.env, s.admin, bid, {"config": {"mode": "automatic", "business_category": "Bakery"}})
    await start_scan(s, bid, {"website_url": s.site})
    await until_quiet(s.env)
    scan = await read(s, "get_website_scan", bid)
    assert scan["status"] == "completed"
    assert {st["name"]: st["summary"] for st in scan["steps"]}["import_logo"] == "No logo found on the page."
    assert scan["found"]["category"] == "Other"
    status = await read(s, "get_prospect_status", bid)
    # values an admin set are kept: the description given at creation, the category from config
    ctx = (await s.env.rest.get(f"/v1/brands/{bid}/context", headers=s.env.auth(s.admin))).json()["data"]
    assert ctx["brand"]["description"] == "Our own words." and ctx["brand"]["category"] == "Bakery"
    assert status["automation"]["completed_media"] == 0

    await s.env.rest.post(path("start_content_pipeline", bid), json={}, headers=s.env.auth(s.admin))
    await until_quiet(s.env)
    status = await read(s, "get_prospect_status", bid)
    run = status["generation"]["run"]
    assert status["generation"]["status"] == "failed" and run["error"]["code"] == "NO_MEDIA"
    pack = await read(s, "get_marketing_sample_pack", bid)
    assert pack["ready"] is False and pack["samples"] == [] and "failed" in pack["reason"]


async def test_scan_jobs_are_bounded(setup) -> None:
    s = setup
    serve_site(s.server)
    bid = (await create_prospect(s.env, s.admin))["id"]
    await start_scan(s, bid, {"website_url": s.site})
    async with s.env.db.session(write=False) as session:
        jobs = (await session.exec(select(Job))).all()
    assert [(j.kind, j.max_attempts) for j in jobs] == [("admin.website_scan", 3)]


async def test_page_images_on_private_addresses_are_never_fetched(setup) -> None:
    s = setup
    bid = (await create_prospect(s.env, s.admin))["id"]
    page = ("<html><head><title>Sneaky</title><meta property='og:image' content='http://private.example/logo.png'>"
            "</head><body><img src='http://169.254.169.254/latest/meta-data/x.png'>"
            f"<img src='{s.server.url('/img/cafe.png', host='127.0.0.1')}'></body></html>")
    s.server.routes["/"] = Reply(body=page.encode(), headers={"Content-Type": "text/html"})
    s.server.routes["/img/cafe.png"] = png(CAFE)
    await start_scan(s, bid, {"website_url": s.site})
    await until_quiet(s.env)
    scan = await read(s, "get_website_scan", bid)
    by_name = {st["name"]: st for st in scan["steps"]}
    assert by_name["import_logo"]["status"] == "failed"
    assert by_name["import_logo"]["error"]["code"] == "URL_HOST_NOT_ALLOWED"
    assert by_name["import_images"]["status"] == "failed"
    assert by_name["import_images"]["error"]["code"] == "URL_HOST_NOT_ALLOWED"
    assert scan["found"]["media_ids"] == [] and scan["status"] == "failed"
    assert s.server.hits == ["/"]  # only the page itself (the loopback image was refused by its address)
    media = await s.env.rest.get(f"/v1/brands/{bid}/media", headers=s.env.auth(s.admin))
    assert media.json()["data"]["items"] == []


async def test_imports_respect_the_plans_media_cap(env_factory, monkeypatch, server) -> None:
    install_dns(monkeypatch)
    async with env_factory(fetch_allow_hosts=(SITE_HOST,)) as env:
        ws = await env.workspace(plan_id="free")  # 50 media items per brand
        admin = await env.key(ws, role="admin")
        serve_site(server)
        bid = (await create_prospect(env, admin))["id"]
        async with env.db.session(write=True) as session:
            now = env.clock.now()
            for i in range(49):
                session.add(Media(id=new_id("med"), workspace_id=ws.id, brand_id=bid, file_name=f"{i}.png",
                                  content_type="image/png", status="completed", source="upload", size=10,
                                  asset_id=new_asset_id(), label_ids=[], created_at=now, updated_at=now))
        resp = await env.rest.post(path("start_website_scan", bid), json={"website_url": server.url("/", SITE_HOST)},
                                   headers=env.auth(admin))
        assert resp.status_code == 201
        await until_quiet(env)
        scan = (await env.rest.get(path("get_website_scan", bid), headers=env.auth(admin))).json()["data"]
        by_name = {st["name"]: st for st in scan["steps"]}
        assert by_name["import_logo"]["status"] == "completed"  # the 50th item
        assert by_name["import_images"]["status"] == "failed"
        assert by_name["import_images"]["error"]["code"] == "PLAN_LIMIT_REACHED"
        assert "/img/cafe.png" not in server.hits

"""Link in bio: API reads, the public page (views, visitors, clicks), status sync with brand context, the CLI."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import text
from sqlmodel import select

from server.cli import main
from storage.tables.bio import BioSalt, BioVisitor
from storage.tables.brands import Brand
from tools import bio
from tools.operator import actions as operator

pytestmark = pytest.mark.anyio

UA = "TestAgent/1.0 (bio)"


async def edit(env, brand, fn, *args, **kwargs):
    async with env.db.session(write=True) as s:
        fresh = await s.get(Brand, brand.id)
        return await fn(s, env.clock.now(), fresh, *args, **kwargs)


async def published_page(env, brand, handle: str = "brand-a"):
    await edit(env, brand, bio.create_page, handle, title="Brand <A> & Co", bio='Fresh "beans" <script>x</script>',
               theme="dark", accent_color="#FF0000")
    link = await edit(env, brand, bio.add_link, "Shop", "https://shop.example/a?b=1&c=2")
    await edit(env, brand, bio.publish)
    return link


async def get_bio(env, secret, brand_id, suffix=""):
    return await env.rest.get(f"/v1/brands/{brand_id}/bio{suffix}", headers=env.auth(secret))


async def visit(env, handle: str, ua: str = UA, method: str = "GET"):
    return await env.rest.request(method, f"/@{handle}", headers={"User-Agent": ua})


async def test_no_page_reads_null_and_zero_stats(world) -> None:
    env = world.env
    before = await env.row_counts()
    resp = await get_bio(env, world.full_key, world.brand_a.id)
    assert resp.status_code == 200 and resp.json()["data"] == {"page": None}
    stats = (await get_bio(env, world.full_key, world.brand_a.id, "/stats")).json()["data"]
    assert stats["days"] == 7 and stats["status"] == "not_created"
    assert (stats["views"], stats["visitors"], stats["link_clicks"]) == (0, 0, 0)
    assert stats["start_date"] == "2026-02-24" and stats["end_date"] == "2026-03-02"
    assert [d["date"] for d in stats["daily"]][:2] == ["2026-02-24", "2026-02-25"] and len(stats["daily"]) == 7
    assert len((await get_bio(env, world.full_key, world.brand_a.id, "/stats?days=28")).json()["data"]["daily"]) == 28
    assert await env.row_counts() == before
    for bad in ("?days=10", "?days=0", "?days=seven", "?window=7"):
        resp = await get_bio(env, world.full_key, world.brand_a.id, "/stats" + bad)
        assert resp.status_code == 400 and resp.json()["error"]["code"] == "INVALID_QUERY", bad
    # scope: posts:read
    no_posts = await env.key(world.ws, scopes=["brands:read"], name="no posts")
    resp = await get_bio(env, no_posts, world.brand_a.id)
    assert resp.status_code == 403 and resp.json()["error"]["details"]["required_scopes"] == ["posts:read"]


async def test_page_lifecycle_syncs_brand_context(world) -> None:
    env = world.env
    ctx_url = f"/v1/brands/{world.brand_a.id}/context"
    await edit(env, world.brand_a, bio.create_page, "@Brand-A", bio="Hello")
    page = (await get_bio(env, world.full_key, world.brand_a.id)).json()["data"]["page"]
    assert page["handle"] == "brand-a" and page["status"] == "draft" and page["url"] is None
    assert page["draft"] == {"title": "Brand A", "bio": "Hello", "theme": {"mode": "light", "accent_color": None},
                             "links": []}
    assert page["published"] is None and page["published_at"] is None
    ctx = (await env.rest.get(ctx_url, headers=env.auth(world.full_key))).json()["data"]["link_in_bio"]
    assert ctx == {"status": "draft", "handle": "brand-a", "url": None, "published_at": None}
    assert (await visit(env, "brand-a")).status_code == 404  # drafts are not public

    link = await edit(env, world.brand_a, bio.add_link, "Shop", "https://shop.example/")
    env.clock.advance(hours=1)
    await edit(env, world.brand_a, bio.publish)
    page = (await get_bio(env, world.full_key, world.brand_a.id)).json()["data"]["page"]
    assert page["status"] == "published" and page["url"] == "http://testserver/@brand-a"
    assert page["published"]["links"] == [link] and page["published_at"] == "2026-03-02T10:00:00.000Z"
    ctx = (await env.rest.get(ctx_url, headers=env.auth(world.full_key))).json()["data"]["link_in_bio"]
    assert ctx == {"status": "published", "handle": "brand-a", "url": "http://testserver/@brand-a",
                   "published_at": "2026-03-02T10:00:00.000Z"}

    # draft edits do not reach the public page until published again
    await edit(env, world.brand_a, bio.update_page, title="New title")
    page = (await get_bio(env, world.full_key, world.brand_a.id)).json()["data"]["page"]
    assert page["draft"]["title"] == "New title" and page["published"]["title"] == "Brand A"
    assert "New title" not in (await visit(env, "brand-a")).text

    # takedown: offline, publicly 404, content kept; publishing again needs restore
    await edit(env, world.brand_a, bio.takedown, "reported")
    assert (await visit(env, "brand-a")).status_code == 404
    page = (await get_bio(env, world.full_key, world.brand_a.id)).json()["data"]["page"]
    assert page["status"] == "offline" and page["url"] is None and page["published"] is not None
    assert page["offline_at"] == "2026-03-02T10:00:00.000Z"
    ctx = (await env.rest.get(ctx_url, headers=env.auth(world.full_key))).json()["data"]["link_in_bio"]
    assert ctx["status"] == "offline" and ctx["url"] is None
    with pytest.raises(operator.OperatorError, match="restore"):
        await edit(env, world.brand_a, bio.publish)
    await edit(env, world.brand_a, bio.publish, restore=True)
    resp = await visit(env, "brand-a")
    assert resp.status_code == 200 and "New title" in resp.text

    # unpublish: back to draft, publicly 404
    await edit(env, world.brand_a, bio.unpublish)
    assert (await visit(env, "brand-a")).status_code == 404
    ctx = (await env.rest.get(ctx_url, headers=env.auth(world.full_key))).json()["data"]["link_in_bio"]
    assert ctx == {"status": "draft", "handle": "brand-a", "url": None, "published_at": None}

    # brand B cannot see brand A's page through its restricted key
    assert (await get_bio(env, world.key_b_only, world.brand_a.id)).status_code == 404
    assert (await get_bio(env, world.key_b_only, world.brand_b.id)).json()["data"]["page"] is None


async def test_operator_refusals(world) -> None:
    env = world.env
    for handle in ("ab", "-abc", "has space", "x" * 31, "ünïcode"):
        with pytest.raises(operator.OperatorError, match="handle"):
            await edit(env, world.brand_a, bio.create_page, handle)
    with pytest.raises(operator.OperatorError, match="no Link in bio page"):
        await edit(env, world.brand_a, bio.publish)
    await edit(env, world.brand_a, bio.create_page, "taken")
    with pytest.raises(operator.OperatorError, match="already taken"):
        await edit(env, world.brand_b, bio.create_page, "TAKEN")
    with pytest.raises(operator.OperatorError, match="already has"):
        await edit(env, world.brand_a, bio.create_page, "other")
    for url in ("javascript:alert(1)", "ftp://x.example/", "https://user:pw@x.example/", "https://x.example/a b",
                "/relative", "https://" + "a" * 2000 + ".example/"):
        with pytest.raises(operator.OperatorError, match="url"):
            await edit(env, world.brand_a, bio.add_link, "Bad", url)
    with pytest.raises(operator.OperatorError, match="title"):
        await edit(env, world.brand_a, bio.add_link, "", "https://ok.example/")
    with pytest.raises(operator.OperatorError, match="accent_color"):
        await edit(env, world.brand_a, bio.update_page, accent_color="red")
    with pytest.raises(operator.OperatorError, match="bio"):
        await edit(env, world.brand_a, bio.update_page, bio="b" * 501)
    for i in range(20):
        await edit(env, world.brand_a, bio.add_link, f"L{i}", f"https://l{i}.example/")
    with pytest.raises(operator.OperatorError, match="at most 20 links"):
        await edit(env, world.brand_a, bio.add_link, "One more", "https://more.example/")
    with pytest.raises(operator.OperatorError, match="not published"):
        await edit(env, world.brand_a, bio.unpublish)
    await edit(env, world.brand_a, bio.update_page, title="", handle="renamed")
    with pytest.raises(operator.OperatorError, match="no link"):
        await edit(env, world.brand_a, bio.remove_link, "lnk_missing")


async def test_public_page_is_escaped_and_counts_views_visitors_and_clicks(world) -> None:
    env = world.env
    link = await published_page(env, world.brand_a)
    resp = await visit(env, "brand-a")
    assert resp.status_code == 200 and resp.headers["content-type"].startswith("text/html")
    assert "default-src 'none'" in resp.headers["content-security-policy"]
    assert resp.headers["cache-control"] == "no-store"
    body = resp.text
    assert "<script>" not in body and "&lt;script&gt;" in body and "Brand &lt;A&gt; &amp; Co" in body
    assert f'href="/@brand-a/l/{link["id"]}"' in body and "shop.example" not in body  # links go via the redirect
    assert "#FF0000" in body

    await visit(env, "BRAND-A")  # handles are case-insensitive: same visitor, second view
    await visit(env, "brand-a", ua="OtherAgent/2.0")  # same address, other browser: a second visitor
    assert (await visit(env, "brand-a", method="HEAD")).status_code == 200  # HEAD is not a view
    assert (await visit(env, "nobody-here")).status_code == 404
    assert (await visit(env, "bad handle!")).status_code == 404

    click = await env.rest.get(f"/@brand-a/l/{link['id']}", headers={"User-Agent": UA})
    assert click.status_code == 302 and click.headers["location"] == "https://shop.example/a?b=1&c=2"
    assert (await env.rest.get("/@brand-a/l/lnk_01ARZ3NDEKTSV4RRFFQ69G5FAV")).status_code == 404
    # a link only in the draft is not clickable until published
    draft_link = await edit(env, world.brand_a, bio.add_link, "Draft only", "https://draft.example/")
    assert (await env.rest.get(f"/@brand-a/l/{draft_link['id']}")).status_code == 404

    before = await env.row_counts()
    stats = (await get_bio(env, world.full_key, world.brand_a.id, "/stats")).json()["data"]
    assert await env.row_counts() == before  # reading stats writes nothing
    assert (stats["views"], stats["visitors"], stats["link_clicks"]) == (3, 2, 1)
    assert stats["status"] == "published"
    assert stats["daily"][-1] == {"date": "2026-03-02", "views": 3, "visitors": 2, "link_clicks": 1}
    # the same through direct dispatch
    assert (await env.call("get_bio_stats", world.full_key, brand_id=world.brand_a.id)).body["data"] == stats

    # no raw address or user agent is stored anywhere
    async with env.db.read_engine.connect() as conn:
        dump = []
        for table in ("bio_pages", "bio_daily_stats", "bio_visitors", "bio_salts", "brands"):
            dump.extend(str(r) for r in (await conn.execute(text(f"SELECT * FROM {table}"))).all())
    joined = " ".join(dump)
    assert "127.0.0.1" not in joined and "TestAgent" not in joined and "OtherAgent" not in joined

    # windows: the next day is a new salt, so the same browser is a new visitor; old salts are forgotten
    env.clock.advance(days=1)
    await visit(env, "brand-a")
    async with env.db.session(write=False) as s:
        assert len((await s.exec(select(BioSalt))).all()) == 1
        assert {v.day.isoformat() for v in (await s.exec(select(BioVisitor))).all()} == {"2026-03-03"}
    week = (await get_bio(env, world.full_key, world.brand_a.id, "/stats")).json()["data"]
    assert (week["views"], week["visitors"], week["link_clicks"]) == (4, 3, 1)
    # eight days later the first day has left the 7-day window but not the 28-day one
    env.clock.advance(days=6)
    week = (await get_bio(env, world.full_key, world.brand_a.id, "/stats")).json()["data"]
    assert (week["views"], week["visitors"], week["link_clicks"]) == (1, 1, 0)
    assert week["start_date"] == "2026-03-03" and week["end_date"] == "2026-03-09"
    month = (await get_bio(env, world.full_key, world.brand_a.id, "/stats?days=28")).json()["data"]
    assert (month["views"], month["visitors"], month["link_clicks"]) == (4, 3, 1)
    # brand B's stats are its own
    b = (await get_bio(env, world.full_key, world.brand_b.id, "/stats?days=28")).json()["data"]
    assert (b["views"], b["link_clicks"]) == (0, 0)

    # offline pages count nothing
    await edit(env, world.brand_a, bio.takedown)
    assert (await visit(env, "brand-a")).status_code == 404
    assert (await env.rest.get(f"/@brand-a/l/{link['id']}")).status_code == 404
    month2 = (await get_bio(env, world.full_key, world.brand_a.id, "/stats?days=28")).json()["data"]
    assert (month2["views"], month2["link_clicks"]) == (4, 1) and month2["status"] == "offline"


async def test_public_page_is_rate_limited(env_factory) -> None:
    async with env_factory(rate_limit_requests=2, rate_limit_window=60) as env:
        ws = await env.workspace()
        brand = await env.brand(ws, "Limited")
        await published_page(env, brand, "limited")
        assert (await visit(env, "limited")).status_code == 200
        assert (await visit(env, "limited")).status_code == 200
        resp = await visit(env, "limited")
        assert resp.status_code == 429 and int(resp.headers["retry-after"]) >= 1


# -- CLI -------------------------------------------------------------------------------------------------------


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("SOCIALPUB_HOME", str(tmp_path))
    monkeypatch.delenv("SOCIALPUB_DATABASE_URL", raising=False)
    return tmp_path


def run_json(capsys, *argv: str) -> dict:
    assert main([*argv, "--json"]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def test_bio_cli(home, capsys) -> None:
    demo = run_json(capsys, "init", "--demo")
    seeded, brand_id = demo["brands"][0]["id"], demo["brands"][1]["id"]
    shown = run_json(capsys, "bio", "show", "--brand", seeded)  # the demo publishes a page for brand 1
    assert shown["status"] == "published" and shown["published"]["links"]

    page = run_json(capsys, "bio", "create", "--brand", brand_id, "--handle", "northwind", "--theme", "dark",
                    "--bio", "Alpine gear")
    assert page["status"] == "draft" and page["handle"] == "northwind" and page["draft"]["theme"]["mode"] == "dark"
    link = run_json(capsys, "bio", "add-link", "--brand", brand_id, "--title", "Guides",
                    "--url", "https://northwind.example/guides")
    assert link["id"].startswith("lnk_") and link["url"] == "https://northwind.example/guides"
    page = run_json(capsys, "bio", "update", "--brand", brand_id, "--title", "Northwind", "--accent", "#00AA00")
    assert page["draft"]["title"] == "Northwind" and page["draft"]["theme"]["accent_color"] == "#00AA00"
    page = run_json(capsys, "bio", "update", "--brand", brand_id, "--bio", "")
    assert page["draft"]["bio"] is None and page["draft"]["title"] == "Northwind"
    page = run_json(capsys, "bio", "publish", "--brand", brand_id)
    assert page["status"] == "published" and page["url"].endswith("/@northwind")
    assert page["published"]["links"] == [link]
    assert main(["bio", "publish", "--brand", brand_id]) == 0
    assert "@northwind" in capsys.readouterr().out
    page = run_json(capsys, "bio", "takedown", "--brand", brand_id, "--reason", "spam report")
    assert page["status"] == "offline"
    assert main(["bio", "publish", "--brand", brand_id]) == 2
    assert "--restore" in capsys.readouterr().err
    assert run_json(capsys, "bio", "publish", "--brand", brand_id, "--restore")["status"] == "published"
    assert run_json(capsys, "bio", "unpublish", "--brand", brand_id)["status"] == "draft"
    page = run_json(capsys, "bio", "remove-link", "--brand", brand_id, "--link", link["id"])
    assert page["draft"]["links"] == []
    assert main(["bio", "create", "--brand", brand_id, "--handle", "x"]) == 2
    assert "already has" in capsys.readouterr().err
    assert main(["bio", "add-link", "--brand", brand_id, "--title", "x", "--url", "javascript:alert(1)"]) == 2
    assert "http" in capsys.readouterr().err
    assert main(["bio", "show", "--brand", "brd_missing"]) == 2

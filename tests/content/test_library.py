"""Labels (discovery and older variants), snippets and ideas: CRUD, list shapes, sorting and every limit."""

from __future__ import annotations

import pytest

from schemas.ids import new_id
from tests.content.conftest import Content

pytestmark = pytest.mark.anyio


def base(c: Content, what: str) -> str:
    return f"/v1/brands/{c.brand_id}/{what}"


async def test_labels_discovery_and_older_variants(content: Content) -> None:
    env, c = content.env, content
    env.clock.advance(seconds=1)
    resp = await env.rest.post(base(c, "labels"), json={"name": " alpha ", "color": "#ABCDEF"}, headers=c.headers())
    assert resp.status_code == 201
    alpha = resp.json()["data"]
    assert alpha["name"] == "alpha" and alpha["color"] == "#ABCDEF" and alpha["created_at"]
    disc = (await env.rest.get(base(c, "labels"), headers=c.headers())).json()["data"]
    assert [x["name"] for x in disc["items"]] == ["alpha", "Promo", "Tips"]  # by name, ignoring case
    assert set(disc["items"][0]) == {"id", "name", "color"}
    older = (await env.rest.get(base(c, "labels?variant=older&limit=2"), headers=c.headers())).json()
    assert older["pagination"] == {"page": 1, "limit": 2, "has_more": True}
    assert older["data"][0]["id"] == alpha["id"]  # newest first
    # scopes: discovery needs posts:read, the older variant labels:read
    reader = await env.key(c.world.ws, scopes=["posts:read"], name="posts reader")
    assert (await env.rest.get(base(c, "labels"), headers=env.auth(reader))).status_code == 200
    resp = await env.rest.get(base(c, "labels?variant=older"), headers=env.auth(reader))
    assert resp.status_code == 403 and resp.json()["error"]["details"]["required_scopes"] == ["labels:read"]


@pytest.mark.parametrize(("body", "status", "path"), [
    ({}, 400, "$.name"),
    ({"name": "n" * 101}, 400, "$.name"),
    ({"name": " "}, 400, "$.name"),
    ({"name": "ok", "color": "#" + "a" * 20}, 400, "$.color"),
    ({"name": "ok", "color": "red"}, 400, "$.color"),
    ({"name": "ok", "colour": "#fff"}, 400, "$.colour"),
    ({"name": "PROMO"}, 422, "$.name"),
])
async def test_label_create_refusals(content: Content, body, status, path) -> None:
    env, c = content.env, content
    before = await env.row_counts()
    resp = await env.rest.post(base(c, "labels"), json=body, headers=c.headers())
    assert resp.status_code == status, resp.json()
    assert resp.json()["error"]["issues"][0]["field_path"] == path
    assert await env.row_counts() == before


async def test_label_update_and_delete_removes_it_from_content(content: Content) -> None:
    env, c = content.env, content
    lid = c.labels[0]
    resp = await env.rest.patch(base(c, f"labels/{lid}"), json={"name": "n" * 100, "color": None},
                                headers=c.headers())
    assert resp.status_code == 200 and resp.json()["data"]["color"] is None
    resp = await env.rest.patch(base(c, f"labels/{lid}"), json={"name": "tips"}, headers=c.headers())
    assert resp.status_code == 422 and resp.json()["error"]["details"]["existing_label_id"] == c.labels[1]
    resp = await env.rest.patch(base(c, f"labels/{lid}"), json={}, headers=c.headers())
    assert resp.status_code == 400
    item = await c.created({"name": "labelled", "label_ids": c.labels})
    snippet = (await env.rest.post(base(c, "snippets"), json={"text": "t", "label_ids": c.labels},
                                   headers=c.headers())).json()["data"]
    resp = await env.rest.delete(base(c, f"labels/{lid}"), headers=c.headers())
    assert resp.status_code == 200 and resp.json()["data"] == {"id": lid, "outcome": "deleted"}
    after = (await c.get(item["id"])).json()["data"]["content_item"]
    assert after["label_ids"] == [c.labels[1]] and after["updated_at"] == item["updated_at"]
    snippets = (await env.rest.get(base(c, "snippets"), headers=c.headers())).json()["data"]
    assert snippets[0]["id"] == snippet["id"] and snippets[0]["label_ids"] == [c.labels[1]]
    assert (await env.rest.delete(base(c, f"labels/{lid}"), headers=c.headers())).status_code == 404
    other = c.other_brand["label"]
    assert (await env.rest.delete(base(c, f"labels/{other}"), headers=c.headers())).status_code == 404


async def test_snippets(content: Content) -> None:
    env, c = content.env, content
    empty = await env.rest.post(base(c, "snippets"), json={}, headers=c.headers())
    assert empty.status_code == 201
    assert empty.json()["data"] | {"id": "", "created_at": "", "updated_at": ""} == {
        "id": "", "name": None, "text": None, "label_ids": [], "created_at": "", "updated_at": ""}
    env.clock.advance(seconds=1)
    full = (await env.rest.post(base(c, "snippets"), json={"name": "n" * 200, "text": "t" * 10_000,
                                                           "label_ids": c.labels}, headers=c.headers())).json()["data"]
    listed = (await env.rest.get(base(c, "snippets?limit=1"), headers=c.headers())).json()
    assert [s["id"] for s in listed["data"]] == [full["id"]] and listed["pagination"]["has_more"] is True
    for body, status, path in (({"name": "n" * 201}, 400, "$.name"), ({"text": "t" * 10_001}, 400, "$.text"),
                               ({"label_ids": [f"lbl_01J{n:023d}" for n in range(51)]}, 400, "$.label_ids"),
                               ({"label_ids": c.labels[::-1]}, 400, "$.label_ids[1]"),
                               ({"label_ids": [c.other_brand["label"]]}, 422, "$.label_ids[0]")):
        before = await env.row_counts()
        resp = await env.rest.post(base(c, "snippets"), json=body, headers=c.headers())
        assert resp.status_code == status and resp.json()["error"]["issues"][0]["field_path"] == path, body
        resp = await env.rest.patch(base(c, f"snippets/{full['id']}"), json=body, headers=c.headers())
        assert resp.status_code == status, body
        assert await env.row_counts() == before
    resp = await env.rest.patch(base(c, f"snippets/{full['id']}"), json={"text": None}, headers=c.headers())
    assert resp.status_code == 200 and resp.json()["data"]["text"] is None
    assert resp.json()["data"]["name"] == "n" * 200
    assert (await env.rest.delete(base(c, f"snippets/{full['id']}"), headers=c.headers())).json()["data"] == {
        "id": full["id"], "outcome": "deleted"}
    resp = await env.rest.patch(base(c, f"snippets/{full['id']}"), json={"text": "x"}, headers=c.headers())
    assert resp.status_code == 404


async def test_ideas(content: Content) -> None:
    env, c = content.env, content
    ids = []
    for n, status in enumerate(("new", "used", "in_progress")):
        env.clock.advance(seconds=1)
        resp = await env.rest.post(base(c, "ideas"), json={"name": f"idea {n}", "status": status,
                                                           "labels": ["autumn"]}, headers=c.headers())
        assert resp.status_code == 201
        ids.append(resp.json()["data"]["id"])
    listed = (await env.rest.get(base(c, "ideas"), headers=c.headers())).json()
    assert [i["id"] for i in listed["data"]] == ids[::-1]
    env.clock.advance(seconds=1)
    resp = await env.rest.patch(base(c, f"ideas/{ids[0]}"), json={"status": "used", "type": "reel"},
                                headers=c.headers())
    used = resp.json()["data"]
    assert used["status"] == "used" and used["type"] == "reel" and used["last_used_at"] == used["updated_at"]
    by_use = (await env.rest.get(base(c, "ideas?sort_by=last_used_at&sort_dir=desc"), headers=c.headers())).json()
    assert [i["id"] for i in by_use["data"]] == [ids[0], ids[1], ids[2]]  # never used last
    by_use = (await env.rest.get(base(c, "ideas?sort_by=last_used_at&sort_dir=asc"), headers=c.headers())).json()
    assert [i["id"] for i in by_use["data"]] == [ids[1], ids[0], ids[2]]
    for body, status, path in (({"name": "n" * 501}, 400, "$.name"),
                               ({"description": "d" * 10_001}, 400, "$.description"),
                               ({"labels": [f"l{n}" for n in range(51)]}, 400, "$.labels"),
                               ({"labels": ["a", "a"]}, 400, "$.labels[1]"),
                               ({"status": "done"}, 400, "$.status"),
                               ({"Name": "x"}, 400, "$.Name")):
        before = await env.row_counts()
        resp = await env.rest.post(base(c, "ideas"), json=body, headers=c.headers())
        assert resp.status_code == status and resp.json()["error"]["issues"][0]["field_path"] == path, body
        assert await env.row_counts() == before
    ok = await env.rest.post(base(c, "ideas"), json={"name": "n" * 500, "description": "d" * 10_000,
                                                     "labels": [f"l{n}" for n in range(50)]}, headers=c.headers())
    assert ok.status_code == 201 and ok.json()["data"]["status"] == "new"
    resp = await env.rest.get(base(c, "ideas?sort_by=name"), headers=c.headers())
    assert resp.status_code == 400
    assert (await env.rest.delete(base(c, f"ideas/{ids[1]}"), headers=c.headers())).status_code == 200
    assert (await env.rest.delete(base(c, f"ideas/{new_id('ide')}"), headers=c.headers())).status_code == 404


async def test_demo_seed_has_labels(sqlite_env) -> None:
    from tools.operator import demo
    async with sqlite_env.db.session(write=True) as s:
        seeded = await demo.seed_demo(s, sqlite_env.clock.now())
    assert len(seeded["labels"]) == 3 * len(seeded["brands"])
    resp = await sqlite_env.rest.get(f"/v1/brands/{seeded['brands'][0].id}/labels",
                                     headers=sqlite_env.auth(seeded["secret"]))
    assert [x["name"] for x in resp.json()["data"]["items"]] == ["Behind the scenes", "Promotion", "Tips"]

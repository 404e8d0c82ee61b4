"""Community posts: every route's success shape, limits and enums, counts, workspace scope and authority."""

from __future__ import annotations

import pytest
from sqlmodel import select

from schemas.community import MAX_COMMENTS_PER_POST
from schemas.scopes import ALL_SCOPES
from storage.tables.community import CommunityPost
from tools import community
from tools.services.auth import Caller

pytestmark = pytest.mark.anyio

BASE = "/v1/community/posts"


async def create(env, secret, **body):
    body = {"title": "Bulk scheduling", "type": "feature_request", **body}
    return await env.rest.post(BASE, json=body, headers=env.auth(secret))


async def test_create_get_and_defaults(world) -> None:
    env = world.env
    resp = await create(env, world.full_key, title="  Bulk scheduling  ")
    assert resp.status_code == 201, resp.text
    post = resp.json()["data"]
    assert post["id"].startswith("cpo_")
    assert post["title"] == "Bulk scheduling" and post["type"] == "feature_request"
    assert post["status"] == "pending" and post["admin_only"] is False
    assert post["description"] is None and post["category"] is None
    assert post["created_by"] == env.key_row(world.full_key).user_id
    assert (post["vote_count"], post["comment_count"]) == (0, 0)
    assert post["admin_notes"] is None and post["admin_thread"] == [] and post["rejected_reason"] is None
    assert post["created_at"] == post["updated_at"] == "2026-03-02T09:00:00.000Z"

    full = await create(env, world.full_key, title="Crash on upload", type="bug_report", description="d" * 10_000,
                        category="integrations", status="approved", admin_only=True)
    assert full.status_code == 201
    data = full.json()["data"]
    assert (data["type"], data["category"], data["status"], data["admin_only"]) == (
        "bug_report", "integrations", "approved", True)

    before = await env.row_counts()
    got = await env.rest.get(f"{BASE}/{post['id']}", headers=env.auth(world.full_key))
    assert got.status_code == 200 and got.json()["data"] == post
    assert await env.row_counts() == before
    direct = await env.call("get_community_post", world.full_key, post_id=post["id"])
    assert direct.body["data"] == post


async def test_create_refusals_write_nothing(world) -> None:
    env = world.env
    before = await env.row_counts()
    cases = [
        ({"title": "x" * 501}, "$.title", "TOO_LONG"),
        ({"title": "   "}, "$.title", "INVALID_VALUE"),
        ({"type": "question"}, "$.type", "NOT_ALLOWED"),
        ({"description": "d" * 10_001}, "$.description", "TOO_LONG"),
        ({"category": "marketing"}, "$.category", "NOT_ALLOWED"),
        ({"status": "done"}, "$.status", "NOT_ALLOWED"),
        ({"admin_only": "yes"}, "$.admin_only", "INVALID_VALUE"),
        ({"votes": 3}, "$.votes", "UNKNOWN_FIELD"),
    ]
    for body, path, code in cases:
        resp = await create(env, world.full_key, **body)
        err = resp.json()["error"]
        assert resp.status_code == 400 and err["code"] == "MALFORMED_REQUEST", body
        assert [(i["field_path"], i["code"]) for i in err["issues"]] == [(path, code)], body
    resp = await env.rest.post(BASE, json={"type": "bug_report"}, headers=env.auth(world.full_key))
    assert resp.json()["error"]["issues"][0] == {"code": "REQUIRED", "field_path": "$.title",
                                                 "message": "Field required"}
    assert await env.row_counts() == before


async def test_list_older_shape_sorting_and_limits(world) -> None:
    env = world.env
    ids = []
    for i in range(3):
        env.clock.advance(minutes=1)
        ids.append((await create(env, world.full_key, title=f"p{i}")).json()["data"]["id"])
    # give p0 two votes and p1 one comment
    async with env.db.session(write=True) as s:
        p0 = await s.get(CommunityPost, ids[0])
        assert await community.add_vote(s, env.clock.now(), p0, "usr_a")
        assert await community.add_vote(s, env.clock.now(), p0, "usr_b")
        assert not await community.add_vote(s, env.clock.now(), p0, "usr_b")  # one vote per user
    env.clock.advance(minutes=1)
    await env.rest.post(f"{BASE}/{ids[1]}/comments", json={"content": "hi"}, headers=env.auth(world.full_key))

    resp = await env.rest.get(BASE, headers=env.auth(world.full_key))
    body = resp.json()
    assert resp.status_code == 200 and body["pagination"] == {"page": 1, "limit": 50, "has_more": False}
    assert [p["title"] for p in body["data"]] == ["p2", "p1", "p0"]  # created_at desc by default
    assert "admin_thread" not in body["data"][0] and "admin_notes" not in body["data"][0]
    assert body["data"][2]["vote_count"] == 2 and body["data"][1]["comment_count"] == 1

    async def titles(query: str) -> list[str]:
        return [p["title"] for p in (await env.rest.get(BASE + query, headers=env.auth(world.full_key))).json()["data"]]

    assert await titles("?sort_dir=asc") == ["p0", "p1", "p2"]
    assert (await titles("?sort_by=vote_count"))[0] == "p0"
    assert (await titles("?sort_by=comment_count"))[0] == "p1"
    assert await titles("?sort_by=updated_at&sort_dir=asc") == ["p0", "p2", "p1"]  # p1 changed by its comment
    page = (await env.rest.get(BASE + "?limit=2&page=2", headers=env.auth(world.full_key))).json()
    assert [p["title"] for p in page["data"]] == ["p0"] and page["pagination"] == {"page": 2, "limit": 2,
                                                                                   "has_more": False}
    first = (await env.rest.get(BASE + "?limit=2", headers=env.auth(world.full_key))).json()
    assert first["pagination"]["has_more"] is True
    for bad, path in (("?limit=101", "$.limit"), ("?limit=0", "$.limit"), ("?sort_by=title", "$.sort_by"),
                      ("?sort_dir=up", "$.sort_dir"), ("?page=0", "$.page"), ("?status=pending", "$.status")):
        resp = await env.rest.get(BASE + bad, headers=env.auth(world.full_key))
        assert resp.status_code == 400 and resp.json()["error"]["code"] == "INVALID_QUERY", bad
        assert resp.json()["error"]["issues"][0]["field_path"] == path
    assert (await env.call("list_community_posts", world.full_key)).body["data"] == body["data"]


async def test_patch_fields_and_refusals(world) -> None:
    env = world.env
    post = (await create(env, world.full_key, description="old", category="ai")).json()["data"]
    url = f"{BASE}/{post['id']}"
    env.clock.advance(minutes=3)
    resp = await env.rest.patch(url, json={"status": "rejected", "rejected_reason": "Out of scope",
                                           "admin_notes": "Talked to the team", "description": None,
                                           "category": None, "type": "improvement", "title": " Renamed ",
                                           "admin_only": True}, headers=env.auth(world.full_key))
    assert resp.status_code == 200, resp.text
    data = resp.json()["data"]
    assert (data["status"], data["rejected_reason"], data["admin_notes"]) == ("rejected", "Out of scope",
                                                                              "Talked to the team")
    assert data["description"] is None and data["category"] is None and data["type"] == "improvement"
    assert data["title"] == "Renamed" and data["admin_only"] is True
    assert data["updated_at"] == "2026-03-02T09:03:00.000Z" and data["created_at"] == post["created_at"]
    # only sent fields change
    data2 = (await env.rest.patch(url, json={"status": "planned"}, headers=env.auth(world.full_key))).json()["data"]
    assert data2["status"] == "planned" and data2["admin_notes"] == "Talked to the team"

    before = await env.row_counts()
    cases = [
        ({}, "$", "REQUIRED"),
        ({"title": None}, "$.title", "INVALID_VALUE"),
        ({"title": "t" * 501}, "$.title", "TOO_LONG"),
        ({"admin_notes": "n" * 10_001}, "$.admin_notes", "TOO_LONG"),
        ({"rejected_reason": "r" * 2_001}, "$.rejected_reason", "TOO_LONG"),
        ({"description": "d" * 10_001}, "$.description", "TOO_LONG"),
        ({"status": "closed"}, "$.status", "NOT_ALLOWED"),
        ({"vote_count": 9}, "$.vote_count", "UNKNOWN_FIELD"),
    ]
    for body, path, code in cases:
        resp = await env.rest.patch(url, json=body, headers=env.auth(world.full_key))
        err = resp.json()["error"]
        assert resp.status_code == 400 and err["code"] == "MALFORMED_REQUEST", body
        assert (err["issues"][0]["field_path"], err["issues"][0]["code"]) == (path, code), body
    missing = await env.rest.patch(f"{BASE}/cpo_01ARZ3NDEKTSV4RRFFQ69G5FAV", json={"status": "planned"},
                                   headers=env.auth(world.full_key))
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "NOT_FOUND"
    malformed = await env.rest.get(f"{BASE}/not-an-id", headers=env.auth(world.full_key))
    assert malformed.status_code == 404
    assert await env.row_counts() == before


async def test_notes_comments_counts_and_delete(world) -> None:
    env = world.env
    post = (await create(env, world.full_key)).json()["data"]
    url = f"{BASE}/{post['id']}"
    note = await env.rest.post(f"{url}/notes", json={"content": "Check with design"},
                               headers=env.auth(world.full_key))
    assert note.status_code == 201
    thread = note.json()["data"]["admin_thread"]
    assert [n["content"] for n in thread] == ["Check with design"]
    assert thread[0]["author_user_id"] == env.key_row(world.full_key).user_id
    await env.rest.post(f"{url}/notes", json={"content": "Design says yes"}, headers=env.auth(world.full_key))
    got = (await env.rest.get(url, headers=env.auth(world.full_key))).json()["data"]
    assert [n["content"] for n in got["admin_thread"]] == ["Check with design", "Design says yes"]
    assert got["comment_count"] == 0  # notes are not comments

    c1 = await env.rest.post(f"{url}/comments", json={"content": "Thanks!"}, headers=env.auth(world.full_key))
    assert c1.status_code == 201
    c1 = c1.json()["data"]
    assert c1 == {"id": c1["id"], "post_id": post["id"], "user_name": "Admin", "content": "Thanks!",
                  "is_admin": True, "created_at": "2026-03-02T09:00:00.000Z"}
    c2 = (await env.rest.post(f"{url}/comments", json={"content": "On it", "user_name": "Sam"},
                              headers=env.auth(world.full_key))).json()["data"]
    assert c2["user_name"] == "Sam" and c2["is_admin"] is True
    listed = (await env.rest.get(f"{url}/comments", headers=env.auth(world.full_key))).json()["data"]
    assert [c["id"] for c in listed["items"]] == [c1["id"], c2["id"]] and listed["comment_count"] == 2
    assert (await env.rest.get(url, headers=env.auth(world.full_key))).json()["data"]["comment_count"] == 2

    before = await env.row_counts()
    for body, path in (({"content": ""}, "$.content"), ({"content": "x" * 10_001}, "$.content"),
                       ({"content": "ok", "user_name": "u" * 201}, "$.user_name"), ({}, "$.content"),
                       ({"content": "ok", "is_admin": False}, "$.is_admin")):
        resp = await env.rest.post(f"{url}/comments", json=body, headers=env.auth(world.full_key))
        assert resp.status_code == 400 and resp.json()["error"]["issues"][0]["field_path"] == path, body
    for body in ({"content": "  "}, {"content": "n" * 10_001}):
        resp = await env.rest.post(f"{url}/notes", json=body, headers=env.auth(world.full_key))
        assert resp.status_code == 400 and resp.json()["error"]["issues"][0]["field_path"] == "$.content"
    assert await env.row_counts() == before

    deleted = await env.rest.delete(f"{url}/comments/{c1['id']}", headers=env.auth(world.full_key))
    assert deleted.status_code == 200
    assert deleted.json()["data"] == {"id": c1["id"], "post_id": post["id"], "outcome": "deleted",
                                      "comment_count": 1}
    again = await env.rest.delete(f"{url}/comments/{c1['id']}", headers=env.auth(world.full_key))
    assert again.status_code == 404
    # a comment of another post is not found through this post
    other = (await create(env, world.full_key, title="Other")).json()["data"]
    resp = await env.rest.delete(f"{BASE}/{other['id']}/comments/{c2['id']}", headers=env.auth(world.full_key))
    assert resp.status_code == 404
    assert (await env.rest.get(url, headers=env.auth(world.full_key))).json()["data"]["comment_count"] == 1

    # deleting the post removes its comments, notes and votes
    async with env.db.session(write=True) as s:
        await community.add_vote(s, env.clock.now(), await s.get(CommunityPost, post["id"]), "usr_x")
    counts = await env.row_counts()
    resp = await env.rest.delete(url, headers=env.auth(world.full_key))
    assert resp.status_code == 200 and resp.json()["data"] == {"id": post["id"], "outcome": "deleted"}
    after = await env.row_counts()
    assert counts["community_posts"] - after["community_posts"] == 1
    assert counts["community_comments"] - after["community_comments"] == 1
    assert counts["community_notes"] - after["community_notes"] == 2
    assert counts["community_votes"] - after["community_votes"] == 1
    assert (await env.rest.get(url, headers=env.auth(world.full_key))).status_code == 404
    assert (await env.rest.get(f"{url}/comments", headers=env.auth(world.full_key))).status_code == 404


async def test_comment_cap(world) -> None:
    env = world.env
    post = (await create(env, world.full_key)).json()["data"]
    async with env.db.session(write=True) as s:
        row = await s.get(CommunityPost, post["id"])
        row.comment_count = MAX_COMMENTS_PER_POST  # as if full
    before = await env.row_counts()
    resp = await env.rest.post(f"{BASE}/{post['id']}/comments", json={"content": "one more"},
                               headers=env.auth(world.full_key))
    assert resp.status_code == 422 and resp.json()["error"]["code"] == "DOMAIN_VALIDATION_FAILED"
    assert resp.json()["error"]["issues"][0]["code"] == "TOO_MANY_COMMENTS"
    assert await env.row_counts() == before


async def test_workspace_scope_roles_and_scopes(world) -> None:
    env = world.env
    post = (await create(env, world.full_key)).json()["data"]
    other_ws = await env.workspace("Other workspace")
    outsider = await env.key(other_ws, role="super_admin", name="other admin")
    assert (await env.rest.get(f"{BASE}/{post['id']}", headers=env.auth(outsider))).status_code == 404
    assert (await env.rest.get(BASE, headers=env.auth(outsider))).json()["data"] == []
    resp = await env.rest.delete(f"{BASE}/{post['id']}", headers=env.auth(outsider))
    assert resp.status_code == 404
    # super_admin works like admin in its own workspace
    assert (await create(env, outsider)).status_code == 201

    member = await env.key_beyond_role(world.ws, ALL_SCOPES, name="member")
    resp = await env.rest.get(BASE, headers=env.auth(member))
    assert resp.status_code == 403 and resp.json()["error"]["code"] == "ROLE_REQUIRED"
    reader = await env.key(world.ws, role="admin", scopes=["community:read"], name="reader")
    assert (await env.rest.get(BASE, headers=env.auth(reader))).status_code == 200
    resp = await create(env, reader)
    assert resp.status_code == 403 and resp.json()["error"]["details"]["required_scopes"] == ["community:write"]


async def test_admin_only_posts_hidden_from_non_admin_callers(world) -> None:
    env = world.env
    await create(env, world.full_key, title="Public")
    await create(env, world.full_key, title="Secret", admin_only=True)

    def caller(role: str) -> Caller:
        return Caller(key_id="k", key_name="k", workspace_id=world.ws.id, workspace_name="w", user_id="u", role=role,
                      scopes=frozenset(), brand_ids=None)

    async with env.db.session(write=False) as s:
        member = (await s.exec(community.visible(select(CommunityPost), caller("member")))).all()
        admin = (await s.exec(community.visible(select(CommunityPost), caller("admin")))).all()
    assert [p.title for p in member] == ["Public"]
    assert sorted(p.title for p in admin) == ["Public", "Secret"]


async def test_create_replays_with_an_idempotency_key(world) -> None:
    env = world.env
    headers = env.auth(world.full_key, Idempotency_Key="post-1")
    first = await env.rest.post(BASE, json={"title": "Once", "type": "improvement"}, headers=headers)
    assert first.status_code == 201
    replay = await env.rest.post(BASE, json={"title": "Once", "type": "improvement"}, headers=headers)
    assert replay.status_code == 200 and replay.headers["idempotency-replayed"] == "true"
    assert replay.json()["data"] == first.json()["data"]
    conflict = await env.rest.post(BASE, json={"title": "Twice", "type": "improvement"}, headers=headers)
    assert conflict.status_code == 409 and conflict.json()["error"]["code"] == "IDEMPOTENCY_KEY_CONFLICT"
    assert len((await env.rest.get(BASE, headers=env.auth(world.full_key))).json()["data"]) == 1

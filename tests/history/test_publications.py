"""Publications (older page/limit list) and History (items, has_more, safe permalinks): shapes, limits, scopes."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from server.worker import Worker
from tests.publishing.outcomes import ACTION_REQUIRED, FAILED, PROVIDER_TEXT, PUBLISHED, run, schedule

pytestmark = pytest.mark.anyio

PUBLICATION_FIELDS = {"id", "platform", "post_id", "post_name", "post_type", "media_type", "status", "source",
                      "failure_reason", "integration_id", "publish_id", "published_at", "created_at", "updated_at"}


class Setup:
    def __init__(self, world: Any) -> None:
        self.world, self.env = world, world.env
        self.brand = world.brand_a
        self.ig, self.tt, self.fb = (world.integrations[p] for p in ("instagram", "tiktok", "facebook"))

    async def get(self, what: str, secret: str | None = None, brand_id: str | None = None, **query: Any) -> Any:
        return await self.env.rest.get(f"/v1/brands/{brand_id or self.brand.id}/{what}", params=query,
                                       headers=self.env.auth(secret or self.world.full_key))

    async def seed(self, outcomes: list[tuple[Any, dict[str, Any]]], **kwargs: Any) -> dict[str, Any]:
        sched = await schedule(self.env, self.brand, [i for i, _ in outcomes], self.world.full_key,
                               source=kwargs.pop("source", "api"))
        return await run(self.env, sched, outcomes, **kwargs)


@pytest.fixture
async def pb(world) -> Setup:
    return Setup(world)


def error(resp: Any, status: int, code: str) -> dict[str, Any]:
    assert resp.status_code == status, resp.json()
    assert resp.json()["error"]["code"] == code, resp.json()
    return resp.json()["error"]


# -- publications ----------------------------------------------------------------------------------------------------


async def test_publications_have_exactly_the_spec_fields(pb) -> None:
    seeded = await pb.seed([(pb.ig, PUBLISHED), (pb.tt, FAILED)], source="queue")
    resp = await pb.get("publications")
    assert resp.status_code == 200, resp.json()
    body = resp.json()
    assert body["pagination"] == {"page": 1, "limit": 50, "has_more": False}
    by_platform = {p["platform"]: p for p in body["data"]}
    assert all(set(p) == PUBLICATION_FIELDS for p in body["data"])
    ig, tt = by_platform["instagram"], by_platform["tiktok"]
    assert ig == {
        "id": seeded["publications"][pb.ig.id].id, "platform": "instagram",
        "post_id": seeded["publications"][pb.ig.id].post_id, "post_name": "Spring launch", "post_type": "GRID_POST",
        "media_type": "image", "status": "published", "source": "queue", "failure_reason": None,
        "integration_id": pb.ig.id, "publish_id": seeded["targets"][pb.ig.id].publish_id,
        "published_at": "2026-03-02T09:00:00.000Z", "created_at": "2026-03-02T09:00:00.000Z",
        "updated_at": "2026-03-02T09:00:00.000Z"}
    assert tt["status"] == "failed" and tt["publish_id"] is None and tt["published_at"] is None
    # the stored text was the provider's; the client sees the fixed safe reason for the error kind
    assert tt["failure_reason"].startswith("The platform refused this post")
    assert PROVIDER_TEXT not in json.dumps(body) and "idem_tok" not in json.dumps(body)


async def test_publications_page_sort_and_source(pb) -> None:
    ids = []
    for _ in range(3):
        seeded = await pb.seed([(pb.ig, PUBLISHED)])
        ids.append(seeded["publications"][pb.ig.id].id)
        pb.env.clock.advance(minutes=1)
    newest_first = (await pb.get("publications")).json()["data"]
    assert [p["id"] for p in newest_first] == ids[::-1]
    assert {p["source"] for p in newest_first} == {"calendar"}
    page = (await pb.get("publications", limit=2, page=1, sort_dir="asc")).json()
    assert [p["id"] for p in page["data"]] == ids[:2] and page["pagination"] == {"page": 1, "limit": 2,
                                                                                 "has_more": True}
    page2 = (await pb.get("publications", limit=2, page=2, sort_dir="asc", sort_by="updated_at")).json()
    assert [p["id"] for p in page2["data"]] == ids[2:] and page2["pagination"]["has_more"] is False
    empty = (await pb.get("publications", page=3, limit=2)).json()
    assert empty["data"] == [] and empty["pagination"] == {"page": 3, "limit": 2, "has_more": False}


async def test_publications_query_limits(pb) -> None:
    assert (await pb.get("publications", limit=100)).status_code == 200
    for bad in ({"limit": 0}, {"limit": 101}, {"page": 0}, {"sort_by": "published_at"}, {"sort_dir": "up"},
                {"limit": "ten"}, {"cursor": "x"}):
        error(await pb.get("publications", **bad), 400, "INVALID_QUERY")


async def test_publications_scope_and_brand_restriction(pb) -> None:
    await pb.seed([(pb.ig, PUBLISHED)])
    no_scope = await pb.env.key(pb.world.ws, scopes=["schedule:read", "posts:read"], name="no publications")
    err = error(await pb.get("publications", secret=no_scope), 403, "INSUFFICIENT_SCOPE")
    assert err["details"]["missing_scopes"] == ["publications:read"]
    error(await pb.get("publications", secret=pb.world.key_b_only), 404, "NOT_FOUND")
    # brand B sees none of brand A's publications
    other = (await pb.get("publications", secret=pb.world.key_b_only, brand_id=pb.world.brand_b.id)).json()
    assert other["data"] == []


# -- history ---------------------------------------------------------------------------------------------------------


async def test_history_items_and_safe_links(pb) -> None:
    seeded = await pb.seed([(pb.ig, PUBLISHED), (pb.tt, FAILED), (pb.fb, ACTION_REQUIRED)])
    resp = await pb.get("history")
    assert resp.status_code == 200, resp.json()
    data = resp.json()["data"]
    assert set(data) == {"items", "has_more"} and data["has_more"] is False
    by_platform = {i["platform"]: i for i in data["items"]}
    assert set(by_platform["instagram"]) == {"id", "platform", "integration_id", "post_id", "post_name",
                                             "post_type", "media_type", "status", "failure_reason",
                                             "permalink_url", "published_at", "created_at", "updated_at"}
    assert by_platform["instagram"]["permalink_url"] == seeded["targets"][pb.ig.id].permalink_url
    assert by_platform["instagram"]["post_name"] == "Spring launch"
    assert by_platform["tiktok"]["permalink_url"] is None and by_platform["tiktok"]["status"] == "failed"
    assert by_platform["facebook"]["failure_reason"].startswith("The account's authorisation")
    text = json.dumps(resp.json())
    assert PROVIDER_TEXT not in text and "publish_id" not in text and "sbx_secret" not in text
    assert pb.env.sandbox.calls == []  # no provider, no engagement fetch


@pytest.mark.parametrize("url, shown", [
    ("https://www.instagram.com/p/Cabc123/", True),
    ("http://example.com/post/1", True),
    ("javascript:alert(1)", False),
    ("ftp://example.com/post", False),
    ("https://user:pass@example.com/post", False),
    ("//example.com/post", False),
    ("https://example.com/a b", False),
    ("https://example.com:99999/post", False),
    ("data:text/html,hi", False),
])
async def test_history_permalink_only_for_plain_http_links(pb, url: str, shown: bool) -> None:
    await pb.seed([(pb.ig, {"state": "published", "permalink_url": url})])
    [item] = (await pb.get("history")).json()["data"]["items"]
    assert item["permalink_url"] == (url if shown else None)


async def test_history_hides_the_link_of_a_post_removed_by_cleanup(pb) -> None:
    seeded = await pb.seed([(pb.ig, PUBLISHED)])
    sched_id = seeded["execution"].schedule_id
    receipt = (await pb.env.rest.get(f"/v1/brands/{pb.brand.id}/schedules/{sched_id}/receipt",
                                     headers=pb.env.auth(pb.world.full_key))).json()["data"]
    resp = await pb.env.rest.post(f"/v1/brands/{pb.brand.id}/schedules/{sched_id}/provider-cleanup",
                                  json={"cleanup_authority": receipt["cleanup_authority"]},
                                  headers=pb.env.auth(pb.world.full_key, Idempotency_Key="c1"))
    assert resp.status_code == 200, resp.json()
    [item] = (await pb.get("history")).json()["data"]["items"]
    assert item["permalink_url"] is not None  # queued only: the post is still up
    await Worker(pb.env.rt).run_once()
    [item] = (await pb.get("history")).json()["data"]["items"]
    assert item["permalink_url"] is None and item["status"] == "published"


async def test_history_paging_and_limits(pb) -> None:
    ids = []
    for _ in range(3):
        seeded = await pb.seed([(pb.ig, PUBLISHED)])
        ids.append(seeded["publications"][pb.ig.id].id)
        pb.env.clock.advance(minutes=1)
    first = (await pb.get("history", limit=2)).json()["data"]
    assert [i["id"] for i in first["items"]] == ids[:0:-1] and first["has_more"] is True
    second = (await pb.get("history", limit=2, page=2)).json()["data"]
    assert [i["id"] for i in second["items"]] == ids[:1] and second["has_more"] is False
    assert len((await pb.get("history")).json()["data"]["items"]) == 3  # default limit 20
    assert (await pb.get("history", limit=50)).status_code == 200
    for bad in ({"limit": 0}, {"limit": 51}, {"page": 0}, {"page": -1}, {"sort_by": "created_at"}):
        error(await pb.get("history", **bad), 400, "INVALID_QUERY")


async def test_history_scope_and_brand_restriction(pb) -> None:
    no_scope = await pb.env.key(pb.world.ws, scopes=["schedule:read"], name="no publications")
    error(await pb.get("history", secret=no_scope), 403, "INSUFFICIENT_SCOPE")
    error(await pb.get("history", secret=pb.world.key_b_only), 404, "NOT_FOUND")


async def test_mcp_and_rest_give_the_same_lists(pb) -> None:
    await pb.seed([(pb.ig, PUBLISHED), (pb.tt, FAILED)])
    for name, path in (("list_history", "history"), ("list_publications", "publications")):
        rest = (await pb.get(path)).json()
        direct = await pb.env.call(name, pb.world.full_key, brand_id=pb.brand.id)
        assert direct.status == 200 and direct.body["data"] == rest["data"]
        assert direct.body.get("pagination") == rest.get("pagination")


async def test_a_deep_history_page_skips_index_entries_not_rows(pb) -> None:
    """Page numbers stay (the spec's), but the OFFSET walks a subquery of IDs over ix_publications_brand_created
    (index-only on SQLite), and only the page's rows are read in full."""
    from sqlalchemy import event

    await pb.seed([(pb.ig, PUBLISHED)])
    sent: list[tuple[str, Any]] = []

    def capture(_conn, _cursor, statement, parameters, _context, _many) -> None:
        sent.append((statement, parameters))

    engine = pb.env.db.read_engine.sync_engine
    event.listen(engine, "before_cursor_execute", capture)
    try:
        assert (await pb.get("history", page=40, limit=20)).status_code == 200
    finally:
        event.remove(engine, "before_cursor_execute", capture)
    [(statement, params)] = [(q, p) for q, p in sent if "FROM publications" in q and "OFFSET" in q]
    assert re.search(r"\(SELECT publications\.id AS id\s+FROM publications ", statement), statement  # IDs only
    if pb.env.backend != "sqlite":
        return  # PostgreSQL plans a table this small with a sequential scan, whatever the query
    prefix = "EXPLAIN QUERY PLAN "
    async with pb.env.db.session(write=False) as s:
        plan = "\n".join(" ".join(str(v) for v in row) for row in
                         (await (await s.connection()).exec_driver_sql(prefix + statement, params)).all())
    assert "COVERING INDEX ix_publications_brand_created" in plan, plan
    assert "SCAN publications" not in plan, plan

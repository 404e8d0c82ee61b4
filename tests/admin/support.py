"""Admin marketing test helpers: an admin setup, a small website served on loopback, and the flow's steps."""

from __future__ import annotations

import socket
from types import SimpleNamespace
from typing import Any

from providers import addresses
from tests.media.support import FileServer, Reply, image_bytes, process

SITE_HOST = "site.test"
ADMIN_PATHS = {
    "create_prospect_brand": "/v1/admin/brands",
    "update_prospect_brand": "/v1/admin/brands/{id}",
    "start_website_scan": "/v1/admin/brands/{id}/website-scan",
    "get_website_scan": "/v1/admin/brands/{id}/website-scan",
    "get_prospect_status": "/v1/admin/brands/{id}/status",
    "start_content_pipeline": "/v1/admin/brands/{id}/content-pipeline",
    "get_marketing_sample_pack": "/v1/admin/brands/{id}/marketing-sample-pack",
    "create_claim_link": "/v1/admin/brands/{id}/claim-link",
}

HOME_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>Bean There Coffee</title>
<meta name="description" content="Small-batch coffee roastery and cafe in Lyon. Fresh espresso every morning.">
<meta name="theme-color" content="#6f4e37">
<meta property="og:image" content="/img/logo.png">
<link rel="icon" href="/favicon.ico">
<style>.hero{background:#c8a27a} .card{border:1px solid #1f4e5f} body{color:#222222}</style>
<script>document.title = "hacked"; fetch("/steal")</script>
</head>
<body>
<h1>Fresh coffee, roasted daily</h1>
<p style="color:#c8a27a">Our roastery serves espresso, filter coffee and pastry from our kitchen.</p>
<img src="/img/cafe.png" width="800" height="600" alt="The cafe">
<img src="/img/beans.png" alt="Beans">
<img src="/pixel.gif" width="1" height="1">
<img src="data:image/png;base64,AAAA">
</body></html>"""

LOGO = image_bytes(200, 200, "PNG", colour=(111, 78, 55))
CAFE = image_bytes(640, 480, "PNG", colour=(200, 162, 122))
BEANS = image_bytes(320, 240, "PNG", colour=(31, 78, 95))


def png(data: bytes) -> Reply:
    return Reply(body=data, headers={"Content-Type": "image/png"})


def serve_site(server: FileServer, page: str = HOME_PAGE) -> None:
    server.routes.update({
        "/": Reply(body=page.encode(), headers={"Content-Type": "text/html; charset=utf-8"}),
        "/img/logo.png": png(LOGO), "/img/cafe.png": png(CAFE), "/img/beans.png": png(BEANS),
    })


def install_dns(monkeypatch: Any, table: dict[str, list[str]] | None = None) -> dict[str, list[str]]:
    table = {SITE_HOST: ["127.0.0.1"], "private.example": ["10.0.0.7"], **(table or {})}

    async def resolve(host: str, port: int) -> list[str]:
        if host not in table:
            raise socket.gaierror(socket.EAI_NONAME, "unknown")
        return table[host]

    monkeypatch.setattr(addresses, "resolve_host", resolve)
    return table


def path(name: str, brand_id: str = "") -> str:
    return ADMIN_PATHS[name].format(id=brand_id)


async def create_prospect(env: Any, secret: str, name: str = "Bean There", **body: Any) -> dict[str, Any]:
    resp = await env.rest.post(path("create_prospect_brand"), json={"name": name, **body}, headers=env.auth(secret))
    assert resp.status_code == 201, resp.json()
    return resp.json()["data"]


async def patch(env: Any, secret: str, brand_id: str, body: dict[str, Any]) -> Any:
    return await env.rest.patch(path("update_prospect_brand", brand_id), json=body, headers=env.auth(secret))


async def until_quiet(env: Any, rounds: int = 10) -> int:
    """Run the worker until it finds nothing to do."""
    total = 0
    for _ in range(rounds):
        done = await process(env)
        total += done
        if not done:
            return total
    raise AssertionError("the worker kept finding work")


async def admin_setup(env: Any) -> SimpleNamespace:
    ws = await env.workspace()
    admin = await env.key(ws, role="admin", name="admin")
    return SimpleNamespace(env=env, ws=ws, admin=admin)

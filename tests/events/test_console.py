"""The console's event pages: the notifications page says whether email is on (and shows admins the emails that
could not be delivered); the webhooks pages (admins only, CSRF-protected) create an endpoint showing its secret
once, send a test, show the delivery log with response codes, and resend."""

from __future__ import annotations

import re

import pytest

from storage.tables.accounts import Workspace
from tests.console.support import csrf_of, make_user, signed_in
from tests.events.receiver import Receiver
from tools.operator import actions as operator

pytestmark = pytest.mark.anyio


def _found(pattern: str, text: str) -> str:
    match = re.search(pattern, text)
    assert match is not None, pattern
    return match.group(1)


async def test_notifications_page_says_whether_email_is_on(sqlite_env) -> None:
    env = sqlite_env
    async with env.db.session(write=True) as s:
        ws: Workspace = await operator.create_workspace(s, env.clock.now(), "Console", "agency")
        brand = await operator.create_brand(s, env.clock.now(), ws, "Console brand")
    await make_user(env, ws, "admin@c.example")
    await env.key(ws, name="agent")  # its owner has no email address
    admin = await signed_in(env, "admin@c.example")
    page = await admin.get(f"/console/brands/{brand.id}/notifications")
    assert page.status_code == 200 and "Email is off" in page.text
    env.rt.settings.smtp_url, env.rt.settings.mail_from = "smtp://user:hunter22@127.0.0.1:2525", "n@socialpub.test"
    page = await admin.get(f"/console/brands/{brand.id}/notifications")
    assert "Email is on" in page.text and "post_failed on" in page.text and "hunter22" not in page.text
    # admins see, per user, whether email reaches them (a user without an address: off)
    table = page.text.split("Email per user")[1].split("</table>")[0]
    assert "admin@c.example" in table and table.count('class="email-user-state">on') == 1
    assert table.count('class="email-user-state">off') == 1


async def test_webhook_pages(sqlite_env) -> None:
    env = sqlite_env
    env.rt.settings.fetch_allow_hosts = ("127.0.0.1",)
    receiver = Receiver(script=[500]).start()
    try:
        async with env.db.session(write=True) as s:
            ws = await operator.create_workspace(s, env.clock.now(), "Console", "agency")
        await make_user(env, ws, "admin@c.example")
        await make_user(env, ws, "member@c.example", role="member")
        admin = await signed_in(env, "admin@c.example")
        page = await admin.get("/console/webhooks")
        assert page.status_code == 200 and "No webhook endpoints yet." in page.text
        # CSRF: a form without its token is refused
        refused = await admin.post("/console/webhooks", data={"url": receiver.url, "event_types": "media.ready"})
        assert refused.status_code == 403
        made = await admin.post("/console/webhooks", data={
            "csrf": csrf_of(page.text), "url": receiver.url, "event_types": ["media.ready", "schedule.failed"]})
        assert made.status_code == 200 and made.headers["cache-control"] == "no-store"
        secret = _found(r'value="(whsec_[^"]+)"', made.text)
        endpoint = _found(r'href="/console/webhooks/(whe_[^"]+)"', made.text)
        listing = await admin.get("/console/webhooks")
        assert endpoint in listing.text and secret not in listing.text
        # a private address is refused on the form too
        private = await admin.post("/console/webhooks", data={"csrf": csrf_of(listing.text),
                                                               "url": "http://172.16.0.9/x",
                                                               "event_types": "media.ready"})
        assert private.status_code == 422 and "refused" in private.text
        detail = await admin.get(f"/console/webhooks/{endpoint}")
        tested = await admin.post(f"/console/webhooks/{endpoint}/test", data={"csrf": csrf_of(detail.text)})
        assert "retry (HTTP 500)" in tested.text and secret not in tested.text
        message = _found(r"<code>(msg_[^<]+)</code>", tested.text)
        # the worker retries it after its backoff; then the log shows both response codes and offers Resend
        env.clock.advance(minutes=1)
        from tools.events import webhook_delivery
        await webhook_delivery.deliver_webhooks(env.rt, "w1")
        detail = await admin.get(f"/console/webhooks/{endpoint}")
        row = detail.text.split(message, 1)[1].split("</tr>")[0]
        assert "delivered" in row and "500" in row and "200" in row and "Resend" in row
        resent = await admin.post(f"/console/webhooks/{endpoint}/resend",
                                  data={"csrf": csrf_of(detail.text), "message_id": message})
        assert resent.status_code == 303
        await webhook_delivery.deliver_webhooks(env.rt, "w1")
        assert [r.id for r in receiver.received] == [message] * 3
        receiver.received[-1].verify(secret)
        rotated = await admin.post(f"/console/webhooks/{endpoint}/rotate", data={"csrf": csrf_of(detail.text)})
        new = _found(r'value="(whsec_[^"]+)"', rotated.text)
        assert new != secret and "previous secret also signs until" in rotated.text
        # members may not see or manage webhooks
        member = await signed_in(env, "member@c.example")
        assert (await member.get("/console/webhooks")).status_code == 403
        assert (await member.get(f"/console/webhooks/{endpoint}")).status_code == 403
        assert "/console/webhooks" not in (await member.get("/console/workspace")).text
        deleted = await admin.post(f"/console/webhooks/{endpoint}/delete", data={"csrf": csrf_of(detail.text)})
        assert deleted.status_code == 303
        assert "No webhook endpoints yet." in (await admin.get("/console/webhooks")).text
    finally:
        receiver.stop()

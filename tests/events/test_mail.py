"""Email delivery (tools/events/mail_delivery.py) against a real SMTP server (aiosmtpd on 127.0.0.1): a failed
sandbox post mails each user whose preference is on (account default and brand override both), a SMTP server that
is down then up gets the message once, permanent refusals are recorded, the review digest is daily, and
`socialpub mail test` sends one message."""

from __future__ import annotations

import logging
import os
import sys
from datetime import timedelta

import anyio
import pytest
from sqlmodel import select

from schemas.ids import new_id
from storage.tables.accounts import User
from storage.tables.notifications import EmailOutbox, NotificationBrandOverride
from tests.events.smtp import SmtpServer
from tests.publishing.support import seed_post, seed_schedule, set_provider_state
from tools.events import digest, mail_delivery
from tools.notifications import notify
from tools.publishing import worker as publishing

pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings("ignore:Requiring AUTH while not requiring TLS")]


async def set_email(env, secret: str, address: str) -> str:
    user_id = env.key_row(secret).user_id
    async with env.db.session(write=True) as s:
        user = await s.get(User, user_id)
        user.email = address
    return user_id


async def rows(env) -> list[EmailOutbox]:
    async with env.db.session(write=False) as s:
        return list((await s.exec(select(EmailOutbox).order_by(EmailOutbox.id))).all())


async def failing_post(world) -> str:
    env = world.env
    item, _ = await seed_post(env.db, world.brand_a, env.clock.now())
    ig = world.integrations["instagram"].id
    sid = await seed_schedule(env.db, world.brand_a, item, [ig], env.clock.now())
    async with env.db.session(write=True) as s:
        await set_provider_state(s, ig, {"faults": {"publish": "rejected"}})
    env.clock.advance(minutes=5)
    await publishing.publish_due(env.rt, "w1")
    return sid


def use_smtp(env, server: SmtpServer, url: str | None = None) -> None:
    env.rt.settings.smtp_url = url or server.url
    env.rt.settings.mail_from = "socialpub <noreply@socialpub.test>"


async def test_post_failed_mails_each_user_whose_preference_is_on(world, caplog) -> None:
    env = world.env
    server = await SmtpServer().start()
    server.sink.login = ("mailer", "s3cret-pass")
    try:
        await set_email(env, world.full_key, "admin@example.test")  # the built-in default: on
        off_by_override = await set_email(env, world.key_b_only, "override-off@example.test")
        off_by_account = await set_email(env, await env.key(world.ws, name="quiet"), "account-off@example.test")
        on_key = await env.key(world.ws, name="override on")
        on_by_override = await set_email(env, on_key, "override-on@example.test")
        async with env.db.session(write=True) as s:
            for uid, value in ((off_by_account, False), (on_by_override, False)):
                await notify.set_account_defaults(s, env.clock.now(), await s.get(User, uid), {"post_failed": value})
        # brand A overrides: one through the API turns post_failed back on over an "off" account default; the
        # other turns it off over the "on" default (set directly: the only-B key cannot reach brand A)
        r = await env.rest.patch(f"/v1/brands/{world.brand_a.id}/notification-settings", headers=env.auth(on_key),
                                 json={"email_notifications": {"post_failed": True}})
        assert r.status_code == 200, r.text
        async with env.db.session(write=True) as s:
            s.add(NotificationBrandOverride(id=new_id("nbo"), workspace_id=world.ws.id, brand_id=world.brand_a.id,
                                            user_id=off_by_override, email_notifications={"post_failed": False},
                                            created_at=env.clock.now(), updated_at=env.clock.now()))

        # without SMTP settings nothing is sent: the rows wait
        sid = await failing_post(world)
        assert await mail_delivery.deliver_mail(env.rt, "w1") == 0
        assert {r.status for r in await rows(env)} == {"pending"}

        caplog.set_level(logging.DEBUG)
        use_smtp(env, server, f"smtp://mailer:s3cret-pass@127.0.0.1:{server.port}")
        assert await mail_delivery.deliver_mail(env.rt, "w1") == 2
        got = {m["To"] for m in server.sink.messages}
        assert got == {"admin@example.test", "override-on@example.test"}
        message = server.sink.to("override-on@example.test")[0]
        assert "Post failed on Instagram" in message["Subject"] and message["From"].endswith("@socialpub.test>")
        page = f"http://testserver/console/brands/{world.brand_a.id}"
        assert message["List-Unsubscribe"] == f"<{page}/notifications#email>"
        plain, rich = message.get_body(("plain",)), message.get_body(("html",))
        assert plain is not None and rich is not None
        text = plain.get_content()
        html = rich.get_content()
        assert f"{page}/schedules/{sid}" in text and f'href="{page}/schedules/{sid}"' in html
        assert {r.status for r in await rows(env)} == {"sent"}
        assert all(r.sent_at == env.clock.now() and r.attempts == 1 for r in await rows(env))
        # sent once: another pass finds nothing
        assert await mail_delivery.deliver_mail(env.rt, "w2") == 0 and len(server.sink.messages) == 2
        # no secret in an email or a log line
        everything = b"".join(m.as_bytes() for m in server.sink.messages).decode(errors="replace") + caplog.text
        for secret in (world.full_key, world.key_b_only, on_key, "s3cret-pass"):
            assert secret not in everything
    finally:
        await server.stop()


async def test_smtp_down_then_up_delivers_once(world) -> None:
    env = world.env
    await set_email(env, world.full_key, "admin@example.test")
    server = await SmtpServer().start()
    port = server.port
    await server.stop()  # down
    use_smtp(env, server)
    await failing_post(world)
    assert await mail_delivery.deliver_mail(env.rt, "w1") >= 1
    [row] = [r for r in await rows(env) if r.to_email]
    assert row.status == "pending" and row.attempts == 1 and row.last_error is not None and "unreachable" in row.last_error
    assert row.next_attempt_at == env.clock.now() + timedelta(minutes=1)
    assert await mail_delivery.deliver_mail(env.rt, "w1") == 0  # not due yet

    await server.start(port)  # up again
    try:
        env.clock.advance(minutes=1)
        await mail_delivery.deliver_mail(env.rt, "w1")
        await mail_delivery.deliver_mail(env.rt, "w2")
        assert len(server.sink.to("admin@example.test")) == 1
        [row] = [r for r in await rows(env) if r.to_email]
        assert row.status == "sent" and row.attempts == 2
    finally:
        await server.stop()


async def test_crash_after_claim_is_sent_by_another_worker(world) -> None:
    env = world.env
    await set_email(env, world.full_key, "admin@example.test")
    server = await SmtpServer().start()
    try:
        use_smtp(env, server)
        await failing_post(world)
        # w1 claims and dies before sending (its lease is never renewed)
        now = env.clock.now()
        claimed = await mail_delivery.OUTBOX.claim(env.db, mail_delivery.due(now), now, "w1",
                                                   lease=mail_delivery.LEASE, limit=10)
        assert claimed
        assert await mail_delivery.deliver_mail(env.rt, "w2") == 0  # held under w1's lease
        env.clock.advance(minutes=3)
        await mail_delivery.deliver_mail(env.rt, "w2")
        assert len(server.sink.to("admin@example.test")) == 1
    finally:
        await server.stop()


async def test_permanent_refusal_is_recorded_and_shown_to_admins(world) -> None:
    env = world.env
    await set_email(env, world.full_key, "gone@example.test")
    server = await SmtpServer().start()
    server.sink.refuse.add("gone@example.test")
    try:
        use_smtp(env, server)
        await failing_post(world)
        await mail_delivery.deliver_mail(env.rt, "w1")
        [row] = [r for r in await rows(env) if r.to_email]
        assert row.status == "failed" and row.last_error is not None and "550" in row.last_error and server.sink.messages == []
        env.clock.advance(hours=2)
        assert await mail_delivery.deliver_mail(env.rt, "w1") == 0  # never retried
        [failure] = await mail_delivery.recent_failures(env.rt, world.ws.id)
        assert failure.id == row.id
    finally:
        await server.stop()


async def test_review_digest_is_daily_and_follows_preferences(world) -> None:
    env = world.env
    await set_email(env, world.full_key, "admin@example.test")
    quiet = await set_email(env, world.key_b_only, "quiet@example.test")
    async with env.db.session(write=True) as s:
        await notify.set_account_defaults(s, env.clock.now(), await s.get(User, quiet),
                                          {"planner_review_reminders": False})
    item, _ = await seed_post(env.db, world.brand_a, env.clock.now())
    ig = world.integrations["instagram"].id
    for _ in range(2):
        await seed_schedule(env.db, world.brand_a, item, [ig], env.clock.now(), approval_status="pending_review")
    server = await SmtpServer().start()
    try:
        use_smtp(env, server)
        assert await digest.review_digest(env.rt, "w1", force=True) == 1
        await mail_delivery.deliver_mail(env.rt, "w1")
        [message] = server.sink.messages
        assert message["To"] == "admin@example.test" and "2 posts awaiting review" in message["Subject"]
        plain = message.get_body(("plain",))
        assert plain is not None and "Brand A: 2" in plain.get_content()
        # at most daily per user
        env.clock.advance(hours=23)
        assert await digest.review_digest(env.rt, "w1", force=True) == 0
        env.clock.advance(hours=2)
        assert await digest.review_digest(env.rt, "w1", force=True) == 1
        # the per-event notification of the category sends no email (only the digest does)
        async with env.db.session(write=True) as s:
            result = await notify.notify(s, env.clock.now(), world.brand_a, "autopilot_review_pending",
                                         "planner_review_reminders", "Review", "A post is held.")
        assert result.notifications >= 1 and result.emails == 0
    finally:
        await server.stop()


async def test_mail_test_command_sends_one_message(tmp_path) -> None:
    server = await SmtpServer().start()
    try:
        environ = {**os.environ, "SOCIALPUB_HOME": str(tmp_path), "SOCIALPUB_SMTP_URL": server.url,
                   "SOCIALPUB_MAIL_FROM": "noreply@socialpub.test"}
        done = await anyio.run_process([sys.executable, "-m", "server.cli", "mail", "test", "--to",
                                        "ops@example.test"], env=environ, check=False)
        assert done.returncode == 0, done.stderr
        assert "Sent a test message to ops@example.test" in done.stdout.decode()
        [message] = server.sink.messages
        assert message["To"] == "ops@example.test" and message.get_body(("html",)) is not None
        # without settings: refused, nothing sent
        environ.pop("SOCIALPUB_SMTP_URL")
        done = await anyio.run_process([sys.executable, "-m", "server.cli", "mail", "test", "--to",
                                        "ops@example.test"], env=environ, check=False)
        assert done.returncode != 0 and b"email is off" in done.stdout + done.stderr
        assert len(server.sink.messages) == 1
    finally:
        await server.stop()

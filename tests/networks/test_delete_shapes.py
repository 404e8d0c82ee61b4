"""Deleting a published post: each adapter's delete request, answered by respx, goes through the autouse
validation against the network's description (tests/providers/descriptions.py) like every other captured
request; the networks without a description are held to the reference their case module cites."""

from __future__ import annotations

import contextlib

import httpx
import pytest
import respx

from providers.base import Account, ProviderError
from providers.discord import DiscordProvider
from tests.networks.cases.facebook import FacebookCase
from tests.networks.cases.google_business import LOCATION, GoogleBusinessCase
from tests.networks.cases.linkedin import LinkedInCase
from tests.networks.cases.pinterest import PinterestCase
from tests.networks.cases.threads import ThreadsCase
from tests.networks.cases.tumblr import TumblrCase
from tests.networks.cases.x import XCase
from tests.networks.cases.youtube import YouTubeCase
from tests.networks.support import DISCORD_ENDPOINT, DISCORD_WEBHOOK

pytestmark = pytest.mark.anyio
CASES = [(XCase(), "1800000000000000001"), (PinterestCase(), "813744226420795884"), (YouTubeCase(), "Ks-_Mh1QhMc"),
         (FacebookCase(), "104000000000001_900"), (GoogleBusinessCase(), f"{LOCATION}/localPosts/77"),
         (ThreadsCase(), "17900000000000001"), (LinkedInCase(), "urn:li:share:7100000000000000001"),
         (TumblrCase(), "750000000001")]


@pytest.mark.parametrize(("case", "publish_id"), CASES, ids=[c.platform for c, _ in CASES])
async def test_delete_request_follows_the_description(case, publish_id) -> None:
    with respx.mock(assert_all_called=True) as router:
        route = router.route().respond(200, json={"data": {"deleted": True}, "success": True, "meta": {"status": 200}})
        with contextlib.suppress(ProviderError):  # the answer's shape is not what this test is about
            await case.provider().delete_post(case.account(), publish_id)
    assert route.call_count >= 1 and route.calls[0].request.method in ("DELETE", "POST")


async def test_discord_delete_uses_the_versioned_webhook_path() -> None:
    account = Account(integration_id="int_d", platform="discord", status="connected",
                      provider_account_id="223344556677889900", credentials={"webhook_url": DISCORD_WEBHOOK}, state={})
    with respx.mock(assert_all_called=True) as router:
        route = router.delete(f"{DISCORD_ENDPOINT}/messages/9001").mock(return_value=httpx.Response(204))
        await DiscordProvider().delete_post(account, "9001")
    assert route.called

"""The OAuth networks: one `OAuthNetwork` per network (authorization server, paths, scopes, how its client app is
obtained and how a token becomes a verified account). The flow over them is tools/networks/oauth.py; the
operator apps of networks without dynamic registration are tools/networks/apps.py. The networks of issue 15
add entries to NETWORKS.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from providers import (
    facebook,
    google,
    google_business,
    instagram,
    linkedin,
    mastodon,
    pinterest,
    threads,
    tiktok,
    tumblr,
    x,
    youtube,
)
from providers.base import Connection
from providers.oauth import form_exchange

# (server, redirect_uri, scopes, website) -> (client_id, client_secret)
Register = Callable[[str, str, tuple[str, ...], str], Awaitable[tuple[str, str]]]
# (server, access_token) -> the verified account
VerifyToken = Callable[[str, str], Awaitable[Connection]]


@dataclass(frozen=True)
class OAuthNetwork:
    platform: str
    provider: str
    display_name: str
    scopes: tuple[str, ...]
    authorize_path: str  # joined to the server, or absolute
    token_path: str
    verify_token: VerifyToken
    server: str = ""  # fixed authorization server; "" when each account names its own (Mastodon instances)
    register: Register | None = None  # dynamic client registration per server; None: operator-configured app
    authorize_params: dict[str, str] = field(default_factory=dict)
    token_auth: str = "client_secret_post"  # how a confidential client authenticates at the token endpoint
    # A network whose authorize URL names the client differently (TikTok: `client_key`) and whose code
    # exchange is its own: (endpoint, client_id, client_secret, redirect_uri, code, verifier) -> token.
    client_id_param: str = "client_id"
    exchange: Callable[..., Awaitable[dict[str, Any]]] | None = None
    pkce: bool = True  # False where the network's token request describes no code_verifier (Pinterest)
    scope_separator: str = " "  # RFC 6749; TikTok and Pinterest join their scopes with commas

    @property
    def scope_param(self) -> str:
        """The `scope` value the authorize URL carries."""
        return self.scope_separator.join(self.scopes)

    def url(self, server: str, path: str) -> str:
        return path if path.startswith("https://") else f"{server.rstrip('/')}{path}"


NETWORKS: dict[str, OAuthNetwork] = {
    "mastodon": OAuthNetwork(
        platform="mastodon", provider="mastodon", display_name="Mastodon", scopes=("read", "write"),
        authorize_path="/oauth/authorize", token_path="/oauth/token", verify_token=mastodon.verify,
        register=mastodon.register_app),
    # Operator apps (tools/networks/apps.py): `socialpub apps set --platform x ...`.
    "x": OAuthNetwork(
        platform="x", provider="x", display_name="X", scopes=x.SCOPES, authorize_path=x.AUTHORIZE_URL,
        token_path="/2/oauth2/token", verify_token=x.verify, server=x.API_URL, token_auth="client_secret_basic"),
    # Facebook Login for Business; the short-lived user token is exchanged at once for a long-lived one
    # (instagram.exchange_code), which the token tick exchanges again ahead of expiry with the app's credentials.
    "instagram": OAuthNetwork(
        platform="instagram", provider="instagram", display_name="Instagram", scopes=instagram.SCOPES,
        authorize_path=instagram.AUTHORIZE_URL, token_path="/oauth/access_token", verify_token=instagram.verify,
        server=instagram.GRAPH_URL, exchange=instagram.exchange_code),
    "tiktok": OAuthNetwork(
        platform="tiktok", provider="tiktok", display_name="TikTok", scopes=tiktok.SCOPES,
        authorize_path=tiktok.AUTHORIZE_URL, token_path="/v2/oauth/token/", verify_token=tiktok.verify,
        server=tiktok.API_URL, client_id_param="client_key", exchange=tiktok.exchange_code,
        scope_separator=tiktok.SCOPE_SEPARATOR),
    # Threads: the code exchange is followed at once by the long-lived token exchange (threads.exchange_code).
    "threads": OAuthNetwork(
        platform="threads", provider="threads", display_name="Threads", scopes=threads.SCOPES,
        authorize_path=threads.AUTHORIZE_URL, token_path="/oauth/access_token", verify_token=threads.verify,
        server=threads.API_URL, exchange=threads.exchange_code),
    # Facebook Pages: Facebook Login; the long-lived user token is made at connect, so its Page tokens last.
    "facebook": OAuthNetwork(
        platform="facebook", provider="facebook", display_name="Facebook", scopes=facebook.SCOPES,
        authorize_path=facebook.AUTHORIZE_URL, token_path="/oauth/access_token", verify_token=facebook.verify,
        server=facebook.GRAPH_URL, exchange=facebook.exchange_code),
    "linkedin": OAuthNetwork(
        platform="linkedin", provider="linkedin", display_name="LinkedIn", scopes=linkedin.SCOPES,
        authorize_path=linkedin.AUTHORIZE_URL, token_path=linkedin.TOKEN_URL, verify_token=linkedin.verify,
        server=linkedin.API_URL, exchange=linkedin.exchange_code),
    # Google: offline access with a forced consent, so every connect returns a refresh token.
    "youtube": OAuthNetwork(
        platform="youtube", provider="youtube", display_name="YouTube", scopes=youtube.SCOPES,
        authorize_path=google.AUTHORIZE_URL, token_path=google.TOKEN_URL, verify_token=youtube.verify,
        server=youtube.API_URL, authorize_params=google.AUTHORIZE_PARAMS, exchange=form_exchange("YouTube")),
    # Pinterest separates scopes with commas. Its OpenAPI description's code exchange
    # (OauthAccessTokenRequestCode) has no code_verifier: no PKCE, the state alone.
    "pinterest": OAuthNetwork(
        platform="pinterest", provider="pinterest", display_name="Pinterest", scopes=pinterest.SCOPES,
        scope_separator=",",
        authorize_path=pinterest.AUTHORIZE_URL, token_path="/v5/oauth/token", verify_token=pinterest.verify,
        server=pinterest.API_URL, token_auth="client_secret_basic", pkce=False,
        exchange=form_exchange("Pinterest", "client_secret_basic", pkce=False)),
    "tumblr": OAuthNetwork(
        platform="tumblr", provider="tumblr", display_name="Tumblr", scopes=tumblr.SCOPES,
        authorize_path=tumblr.AUTHORIZE_URL, token_path="/v2/oauth2/token", verify_token=tumblr.verify,
        server=tumblr.API_URL, exchange=form_exchange("Tumblr")),
    "google_business": OAuthNetwork(
        platform="google_business", provider="google_business", display_name="Google Business Profile",
        scopes=google_business.SCOPES, authorize_path=google.AUTHORIZE_URL, token_path=google.TOKEN_URL,
        verify_token=google_business.verify, server=google_business.API_URL,
        authorize_params=google.AUTHORIZE_PARAMS, exchange=form_exchange("Google Business Profile")),
}

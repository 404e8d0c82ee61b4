"""Link in bio: page content rules and the read models of `GET .../bio` and `GET .../bio/stats`."""

from __future__ import annotations

import re
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

from schemas.requests import PathParam, QueryParam, RequestModel

HANDLE_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{2,29}$")
HANDLE_RULE = "3 to 30 characters: lower-case letters, digits, '_' or '-', starting with a letter or digit"
PAGE_STATUSES = ("draft", "published", "offline")  # plus `not_created` when a brand has no page
MAX_LINKS = 20
TITLE_MAX = 100
BIO_MAX = 500
LINK_TITLE_MAX = 100
URL_MAX = 2000


def check_url(value: str) -> str:
    """An absolute http(s) URL with a host, no credentials, no whitespace or control characters."""
    if len(value) > URL_MAX:
        raise ValueError(f"a link URL is at most {URL_MAX} characters")
    if any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in value):
        raise ValueError("a link URL may not contain spaces or control characters")
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("a link URL must be an absolute http:// or https:// address")
    if parts.username or parts.password:
        raise ValueError("a link URL may not carry a user name or password")
    return value


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class BioLink(_Model):
    id: str
    title: str = Field(min_length=1, max_length=LINK_TITLE_MAX)
    url: str = Field(description="Where the public page's link redirects (http or https).")

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        return check_url(value)


class Theme(_Model):
    mode: Literal["light", "dark"] = "light"
    accent_color: str | None = Field(default=None, pattern=r"^#[0-9A-Fa-f]{6}$")


class PageContent(_Model):
    title: str | None = Field(default=None, max_length=TITLE_MAX)
    bio: str | None = Field(default=None, max_length=BIO_MAX)
    theme: Theme = Field(default_factory=Theme)
    links: list[BioLink] = Field(default_factory=list, max_length=MAX_LINKS)


class BioPage(_Model):
    id: str
    brand_id: str
    handle: str
    status: Literal["draft", "published", "offline"]
    url: str | None = Field(description="Public address while published; null otherwise.")
    draft: PageContent
    published: PageContent | None = Field(description="What the public page shows (kept while offline).")
    published_at: str | None
    offline_at: str | None
    created_at: str
    updated_at: str


class BioPageRead(_Model):
    page: BioPage | None = Field(description="Null when the brand has no Link in bio page.")


class BioDay(_Model):
    date: str = Field(description="UTC day, YYYY-MM-DD.")
    views: int
    visitors: int
    link_clicks: int


class BioStats(_Model):
    days: Literal[7, 28]
    start_date: str = Field(description="First UTC day of the window (inclusive).")
    end_date: str = Field(description="Last UTC day of the window (today, inclusive).")
    status: Literal["not_created", "draft", "published", "offline"]
    views: int = Field(description="Public page views in the window.")
    visitors: int = Field(description="Distinct visitors per day, summed over the window's days.")
    link_clicks: int = Field(description="Clicks through the page's links in the window.")
    daily: list[BioDay]


# -- request models ------------------------------------------------------------------------------------------

BrandId = Annotated[str, PathParam("Brand ID, from get_context or list_brands.")]


class BrandPath(RequestModel):
    brand_id: BrandId


class StatsRequest(RequestModel):
    brand_id: BrandId
    days: Literal[7, 28] = QueryParam(7, "Window in days ending today (UTC): 7 (default) or 28.")

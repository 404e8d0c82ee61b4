"""Link in bio: one page per brand, and privacy-preserving daily counters of views, visitors and clicks.

No raw IP address or user agent is stored. A visitor is a SHA-256 of (daily salt, page, IP, user agent);
salts are random per UTC day and deleted after two days, so old hashes cannot be recomputed or linked.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

from sqlalchemy import Column, Date, Index
from sqlmodel import Field, SQLModel

from storage.tables import accounts, brands  # noqa: F401  # tables its foreign keys name (storage/tables/__init__.py)
from storage.tables._base import TABLE_CONFIG, Stamped, json_field, utc_field


class BioPage(Stamped, table=True):
    __tablename__ = "bio_pages"  # pyright: ignore[reportAssignmentType]  # SQLModel types it as a declared_attr; SQLAlchemy takes a str

    id: str = Field(primary_key=True, max_length=40)
    workspace_id: str = Field(foreign_key="workspaces.id", index=True, max_length=40)
    brand_id: str = Field(foreign_key="brands.id", unique=True, max_length=40)
    handle: str = Field(unique=True, max_length=30)  # lower case; served at /@{handle}
    status: str = Field(default="draft", max_length=20)  # draft | published | offline
    draft: dict[str, Any] = json_field(dict, nullable=False)  # {title, bio, theme, links[]}
    published: dict[str, Any] | None = json_field()  # snapshot of the draft at publish time
    published_at: datetime | None = utc_field(nullable=True)
    offline_at: datetime | None = utc_field(nullable=True)
    offline_reason: str | None = Field(default=None, max_length=500)


class BioDailyStats(SQLModel, table=True):
    """Counters per brand per UTC day: stats sum at most 28 rows, whatever the traffic."""

    model_config = TABLE_CONFIG
    __tablename__ = "bio_daily_stats"  # pyright: ignore[reportAssignmentType]  # SQLModel types it as a declared_attr; SQLAlchemy takes a str

    brand_id: str = Field(foreign_key="brands.id", primary_key=True, max_length=40)
    day: date = Field(sa_column=Column(Date, primary_key=True))
    views: int = 0
    visitors: int = 0  # distinct visitor hashes that day (salts rotate daily, so visitors sum across days)
    link_clicks: int = 0


class BioVisitor(SQLModel, table=True):
    """First sighting of a visitor hash on a day (to count distinct visitors). Pruned with the salts."""

    model_config = TABLE_CONFIG
    __tablename__ = "bio_visitors"  # pyright: ignore[reportAssignmentType]  # SQLModel types it as a declared_attr; SQLAlchemy takes a str
    __table_args__ = (Index("ix_bio_visitors_day", "day"),)

    brand_id: str = Field(foreign_key="brands.id", primary_key=True, max_length=40)
    day: date = Field(sa_column=Column(Date, primary_key=True))
    visitor_hash: str = Field(primary_key=True, max_length=64)


class BioSalt(SQLModel, table=True):
    model_config = TABLE_CONFIG
    __tablename__ = "bio_salts"  # pyright: ignore[reportAssignmentType]  # SQLModel types it as a declared_attr; SQLAlchemy takes a str
    __table_args__ = (Index("ix_bio_salts_created", "created_at"),)

    day: date = Field(sa_column=Column(Date, primary_key=True))
    salt: str = Field(max_length=64)
    created_at: datetime = utc_field()

"""Community posts (feature requests, bug reports, improvements), scoped to a workspace, with the internal
admin thread, comments and votes. `vote_count` and `comment_count` are kept in step with their rows."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Index, UniqueConstraint
from sqlmodel import Field, SQLModel

from storage.tables import accounts  # noqa: F401  # tables its foreign keys name (storage/tables/__init__.py)
from storage.tables._base import TABLE_CONFIG, Stamped, utc_field


class CommunityPost(Stamped, table=True):
    __tablename__ = "community_posts"  # pyright: ignore[reportAssignmentType]  # SQLModel types it as a declared_attr; SQLAlchemy takes a str
    __table_args__ = (
        Index("ix_community_posts_ws_created", "workspace_id", "created_at", "id"),
        Index("ix_community_posts_ws_updated", "workspace_id", "updated_at", "id"),
    )

    id: str = Field(primary_key=True, max_length=40)
    workspace_id: str = Field(foreign_key="workspaces.id", max_length=40)
    type: str = Field(max_length=30)
    title: str = Field(max_length=500)
    description: str | None = Field(default=None, max_length=10000)
    status: str = Field(default="pending", max_length=20)
    category: str | None = Field(default=None, max_length=100)
    created_by: str | None = Field(default=None, max_length=40)  # user ID of the author
    vote_count: int = 0
    comment_count: int = 0
    admin_notes: str | None = Field(default=None, max_length=10000)
    rejected_reason: str | None = Field(default=None, max_length=2000)
    admin_only: bool = False


class CommunityNote(SQLModel, table=True):
    """One entry of a post's internal admin thread."""

    model_config = TABLE_CONFIG
    __tablename__ = "community_notes"  # pyright: ignore[reportAssignmentType]  # SQLModel types it as a declared_attr; SQLAlchemy takes a str
    __table_args__ = (Index("ix_community_notes_post_created", "post_id", "created_at", "id"),)

    id: str = Field(primary_key=True, max_length=40)
    workspace_id: str = Field(foreign_key="workspaces.id", index=True, max_length=40)
    post_id: str = Field(foreign_key="community_posts.id", max_length=40)
    author_user_id: str | None = Field(default=None, max_length=40)
    content: str = Field(max_length=10000)
    created_at: datetime = utc_field()


class CommunityComment(SQLModel, table=True):
    model_config = TABLE_CONFIG
    __tablename__ = "community_comments"  # pyright: ignore[reportAssignmentType]  # SQLModel types it as a declared_attr; SQLAlchemy takes a str
    __table_args__ = (Index("ix_community_comments_post_created", "post_id", "created_at", "id"),)

    id: str = Field(primary_key=True, max_length=40)
    workspace_id: str = Field(foreign_key="workspaces.id", index=True, max_length=40)
    post_id: str = Field(foreign_key="community_posts.id", max_length=40)
    user_id: str | None = Field(default=None, max_length=40)
    user_name: str | None = Field(default=None, max_length=200)
    content: str = Field(max_length=10000)
    is_admin: bool = False
    created_at: datetime = utc_field()


class CommunityVote(SQLModel, table=True):
    """One user's vote on a post (no route casts votes yet; seeding and the dashboard do)."""

    model_config = TABLE_CONFIG
    __tablename__ = "community_votes"  # pyright: ignore[reportAssignmentType]  # SQLModel types it as a declared_attr; SQLAlchemy takes a str
    __table_args__ = (UniqueConstraint("post_id", "user_id", name="uq_community_vote_post_user"),)

    id: str = Field(primary_key=True, max_length=40)
    workspace_id: str = Field(foreign_key="workspaces.id", index=True, max_length=40)
    post_id: str = Field(foreign_key="community_posts.id", index=True, max_length=40)
    user_id: str = Field(max_length=40)
    created_at: datetime = utc_field()

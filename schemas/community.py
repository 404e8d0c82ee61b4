"""Community posts (admin only): enums, limits and response models."""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

PostType = Literal["feature_request", "bug_report", "improvement"]
PostStatus = Literal["pending", "approved", "planned", "in_progress", "completed", "rejected"]
Category = Literal["automation", "integrations", "analytics", "scheduling", "design", "ai", "other"]
SortField = Literal["created_at", "updated_at", "vote_count", "comment_count"]
CATEGORIES: tuple[str, ...] = get_args(Category)

TITLE_MAX = 500
DESCRIPTION_MAX = 10_000
CATEGORY_MAX = 100
ADMIN_NOTES_MAX = 10_000
REJECTED_REASON_MAX = 2_000
CONTENT_MAX = 10_000
USER_NAME_MAX = 200
DEFAULT_USER_NAME = "Admin"
# Bounds on what one post accumulates: the comments route and the admin thread have no paging.
MAX_COMMENTS_PER_POST = 500
MAX_NOTES_PER_POST = 200


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AdminNote(_Out):
    id: str
    content: str
    author_user_id: str | None
    created_at: str


class CommunityPostSummary(_Out):
    """A list item: every post field except the admin notes and the internal admin thread."""

    id: str
    type: PostType
    title: str
    description: str | None
    status: PostStatus
    category: Category | None
    created_by: str | None = Field(description="User ID of the author, or null.")
    vote_count: int
    comment_count: int
    rejected_reason: str | None
    admin_only: bool
    created_at: str
    updated_at: str


class CommunityPost(CommunityPostSummary):
    admin_notes: str | None
    admin_thread: list[AdminNote] = Field(description="Internal admin notes, oldest first.")


class Comment(_Out):
    id: str
    post_id: str
    user_name: str | None
    content: str
    is_admin: bool
    created_at: str


class CommentList(_Out):
    post_id: str
    items: list[Comment] = Field(description="Every comment of the post, oldest first.")
    comment_count: int


class Deleted(_Out):
    id: str
    outcome: Literal["deleted"]


class CommentDeleted(Deleted):
    post_id: str
    comment_count: int

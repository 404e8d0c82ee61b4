"""Community posts (admin only): enums, limits and response models."""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator

from schemas.ids import ID_PATTERN
from schemas.paging import OlderLimit, Page, SortDir
from schemas.requests import PathParam, QueryParam, RequestModel

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


# -- request models ------------------------------------------------------------------------------------------

PostId = Annotated[str, PathParam("Community post ID, from list_community_posts.", pattern=ID_PATTERN)]
CommentId = Annotated[str, PathParam("Comment ID, from list_community_post_comments.", pattern=ID_PATTERN)]


def _no_default(schema: dict) -> None:
    schema.pop("default", None)


def _optional(**kwargs: Any) -> Any:
    """A PATCH field that may be omitted but, when sent, must have its type (null refused)."""
    return Field(default=None, json_schema_extra=_no_default, **kwargs)


def _trimmed(value: str | None) -> str | None:
    if value is None:
        return None
    value = value.strip()
    if not value:
        raise ValueError("must not be blank")
    return value


class ListPostsRequest(RequestModel):
    page: Page = 1
    limit: OlderLimit = 50
    sort_by: SortField = QueryParam("created_at", "Sort field: created_at (default), updated_at, vote_count, "
                                                      "comment_count.")
    sort_dir: SortDir = "desc"


class PostPath(RequestModel):
    post_id: PostId


class CreatePostRequest(RequestModel):
    title: str = Field(min_length=1, max_length=TITLE_MAX, description="Trimmed; up to 500 characters.")
    type: PostType
    description: str | None = Field(default=None, max_length=DESCRIPTION_MAX)
    category: Category | None = Field(default=None, max_length=CATEGORY_MAX)
    status: PostStatus = "pending"
    admin_only: bool = Field(default=False, description="True hides the post from everyone but admins.")

    @field_validator("title")
    @classmethod
    def _trim(cls, value: str) -> str | None:
        return _trimmed(value)


class UpdatePostRequest(RequestModel):
    post_id: PostId
    status: PostStatus = _optional()
    title: str = _optional(min_length=1, max_length=TITLE_MAX)
    description: str | None = _optional(max_length=DESCRIPTION_MAX, description="null clears it.")
    type: PostType = _optional()
    category: Category | None = _optional(max_length=CATEGORY_MAX, description="null clears it.")
    admin_notes: str | None = _optional(max_length=ADMIN_NOTES_MAX, description="null clears it.")
    rejected_reason: str | None = _optional(max_length=REJECTED_REASON_MAX, description="null clears it.")
    admin_only: bool = _optional()

    @field_validator("title")
    @classmethod
    def _trim(cls, value: str) -> str | None:
        return _trimmed(value)


class AddNoteRequest(RequestModel):
    post_id: PostId
    content: str = Field(min_length=1, max_length=CONTENT_MAX)

    @field_validator("content")
    @classmethod
    def _trim(cls, value: str) -> str | None:
        return _trimmed(value)


class CreateCommentRequest(RequestModel):
    post_id: PostId
    content: str = Field(min_length=1, max_length=CONTENT_MAX)
    user_name: str = Field(default=DEFAULT_USER_NAME, min_length=1, max_length=USER_NAME_MAX)

    @field_validator("content", "user_name")
    @classmethod
    def _trim(cls, value: str) -> str | None:
        return _trimmed(value)


class CommentPath(RequestModel):
    post_id: PostId
    comment_id: CommentId

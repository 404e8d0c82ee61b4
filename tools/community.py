"""Community posts (feature requests, bug reports, improvements) of the key's workspace: admin role only.

Posts belong to a workspace. `comment_count` and `vote_count` are stored and changed in the same transaction
as the comment or vote rows (the post row is locked first), so they always equal the rows. `admin_only`
posts are hidden from any caller whose owner is not an admin (every route here requires an admin today;
`visible()` is the one filter any future member-facing read must use).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import delete
from sqlmodel import col, func, select
from sqlmodel.ext.asyncio.session import AsyncSession

from schemas import community as out
from schemas.community import (
    AddNoteRequest,
    CommentPath,
    CreateCommentRequest,
    CreatePostRequest,
    ListPostsRequest,
    PostPath,
    UpdatePostRequest,
)
from schemas.errors import ApiError, issue, not_found
from schemas.ids import new_id
from schemas.scopes import ADMIN_ROLES
from schemas.time import iso
from storage.pagination import older_page, sort_order
from storage.tables.community import CommunityComment, CommunityNote, CommunityPost, CommunityVote
from tools.endpoint import Call, Endpoint, Reply
from tools.services.auth import Caller

# -- requests --------------------------------------------------------------------------------------------------


# -- helpers ---------------------------------------------------------------------------------------------------


def visible(query: Any, caller: Caller) -> Any:
    """Scope a post query to the caller's workspace, hiding admin_only posts from non-admin owners."""
    query = query.where(CommunityPost.workspace_id == caller.workspace_id)
    if caller.role not in ADMIN_ROLES:
        query = query.where(col(CommunityPost.admin_only).is_(False))
    return query


async def _post(call: Call, post_id: str, *, for_update: bool = False) -> CommunityPost:
    assert call.caller is not None
    query = visible(select(CommunityPost).where(CommunityPost.id == post_id), call.caller)
    if for_update:
        query = query.with_for_update()  # counts and caps change with their rows, one writer at a time
    post = (await call.session.exec(query)).first()
    if post is None:
        raise not_found("Community post")
    return post


def summary(post: CommunityPost) -> dict[str, Any]:
    return {"id": post.id, "type": post.type, "title": post.title, "description": post.description,
            "status": post.status, "category": post.category, "created_by": post.created_by,
            "vote_count": post.vote_count, "comment_count": post.comment_count,
            "rejected_reason": post.rejected_reason, "admin_only": post.admin_only,
            "created_at": iso(post.created_at), "updated_at": iso(post.updated_at)}


async def full(session: AsyncSession, post: CommunityPost) -> out.CommunityPost:
    notes = (await session.exec(select(CommunityNote).where(CommunityNote.post_id == post.id)
                                .order_by(col(CommunityNote.created_at), CommunityNote.id)
                                .limit(out.MAX_NOTES_PER_POST))).all()
    return out.CommunityPost.model_validate({
        **summary(post), "admin_notes": post.admin_notes,
        "admin_thread": [{"id": n.id, "content": n.content, "author_user_id": n.author_user_id,
                          "created_at": iso(n.created_at)} for n in notes]})


def comment_out(c: CommunityComment) -> dict[str, Any]:
    return {"id": c.id, "post_id": c.post_id, "user_name": c.user_name, "content": c.content,
            "is_admin": c.is_admin, "created_at": iso(c.created_at)}


async def _count(session: AsyncSession, model: Any, post_id: str) -> int:
    return (await session.exec(select(func.count()).select_from(model).where(model.post_id == post_id))).one()


# -- handlers --------------------------------------------------------------------------------------------------


async def list_community_posts(call: Call, req: ListPostsRequest) -> Reply[list[out.CommunityPostSummary]]:
    assert call.caller is not None
    order = sort_order(getattr(CommunityPost, req.sort_by), CommunityPost.id, req.sort_dir)
    rows, pagination = await older_page(call.session, visible(select(CommunityPost), call.caller).order_by(*order),
                                        req.page, req.limit)
    return Reply(data=[out.CommunityPostSummary.model_validate(summary(p)) for p in rows], pagination=pagination)


async def get_community_post(call: Call, req: PostPath) -> out.CommunityPost:
    return await full(call.session, await _post(call, req.post_id))


async def create_community_post(call: Call, req: CreatePostRequest) -> out.CommunityPost:
    assert call.caller is not None
    post = CommunityPost(id=new_id("cpo"), workspace_id=call.caller.workspace_id, type=req.type, title=req.title,
                         description=req.description, status=req.status, category=req.category,
                         created_by=call.caller.user_id, admin_only=req.admin_only,
                         created_at=call.now, updated_at=call.now)
    call.session.add(post)
    await call.session.flush()
    return await full(call.session, post)


async def update_community_post(call: Call, req: UpdatePostRequest) -> out.CommunityPost:
    given = req.model_fields_set - {"post_id"}
    if not given:
        raise ApiError("MALFORMED_REQUEST", "Send at least one field to change.",
                       issues=[issue("$", "REQUIRED", "Send at least one of: status, title, description, type, "
                                                      "category, admin_notes, rejected_reason, admin_only.")])
    post = await _post(call, req.post_id, for_update=True)
    for name in sorted(given):
        setattr(post, name, getattr(req, name))
    post.updated_at = call.now
    await call.session.flush()
    return await full(call.session, post)


async def delete_community_post(call: Call, req: PostPath) -> out.Deleted:
    post = await _post(call, req.post_id, for_update=True)
    for model in (CommunityComment, CommunityNote, CommunityVote):
        await call.session.exec(delete(model).where(col(model.post_id) == post.id))
    await call.session.delete(post)
    await call.session.flush()
    return out.Deleted(id=post.id, outcome="deleted")


async def add_community_post_note(call: Call, req: AddNoteRequest) -> Reply[out.CommunityPost]:
    assert call.caller is not None
    post = await _post(call, req.post_id, for_update=True)
    if await _count(call.session, CommunityNote, post.id) >= out.MAX_NOTES_PER_POST:
        raise ApiError("DOMAIN_VALIDATION_FAILED", f"A post's admin thread holds at most {out.MAX_NOTES_PER_POST} "
                       "notes; summarise the thread in admin_notes instead.",
                       issues=[issue("$.content", "TOO_MANY_NOTES", "The admin thread is full.")])
    call.session.add(CommunityNote(id=new_id("cno"), workspace_id=post.workspace_id, post_id=post.id,
                                   author_user_id=call.caller.user_id, content=req.content, created_at=call.now))
    post.updated_at = call.now
    await call.session.flush()
    return Reply(data=await full(call.session, post), status=201)


async def list_community_post_comments(call: Call, req: PostPath) -> out.CommentList:
    post = await _post(call, req.post_id)
    rows = (await call.session.exec(select(CommunityComment).where(CommunityComment.post_id == post.id)
                                    .order_by(col(CommunityComment.created_at), CommunityComment.id)
                                    .limit(out.MAX_COMMENTS_PER_POST))).all()
    return out.CommentList.model_validate({"post_id": post.id, "items": [comment_out(c) for c in rows],
                                           "comment_count": post.comment_count})


async def create_community_post_comment(call: Call, req: CreateCommentRequest) -> out.Comment:
    assert call.caller is not None
    post = await _post(call, req.post_id, for_update=True)
    if post.comment_count >= out.MAX_COMMENTS_PER_POST:
        raise ApiError("DOMAIN_VALIDATION_FAILED", f"A post holds at most {out.MAX_COMMENTS_PER_POST} comments; "
                       "delete one first.", issues=[issue("$.content", "TOO_MANY_COMMENTS", "The post is full.")])
    comment = CommunityComment(id=new_id("cco"), workspace_id=post.workspace_id, post_id=post.id,
                               user_id=call.caller.user_id, user_name=req.user_name, content=req.content,
                               is_admin=True, created_at=call.now)
    call.session.add(comment)
    post.comment_count += 1
    post.updated_at = call.now
    await call.session.flush()
    return out.Comment.model_validate(comment_out(comment))


async def delete_community_post_comment(call: Call, req: CommentPath) -> out.CommentDeleted:
    post = await _post(call, req.post_id, for_update=True)
    comment = (await call.session.exec(select(CommunityComment).where(
        CommunityComment.id == req.comment_id, CommunityComment.post_id == post.id))).first()
    if comment is None:
        raise not_found("Comment")
    await call.session.delete(comment)
    post.comment_count = max(0, post.comment_count - 1)
    post.updated_at = call.now
    await call.session.flush()
    return out.CommentDeleted(id=comment.id, post_id=post.id, outcome="deleted", comment_count=post.comment_count)


# -- votes (no route casts them; the dashboard and the demo do) -----------------------------------------------


async def add_vote(session: AsyncSession, now: Any, post: CommunityPost, user_id: str) -> bool:
    """One vote per user and post; returns False when the user had already voted."""
    exists = (await session.exec(select(CommunityVote.id).where(CommunityVote.post_id == post.id,
                                                                CommunityVote.user_id == user_id))).first()
    if exists is not None:
        return False
    session.add(CommunityVote(id=new_id("cvo"), workspace_id=post.workspace_id, post_id=post.id, user_id=user_id,
                              created_at=now))
    post.vote_count += 1
    await session.flush()
    return True


async def seed_demo(session: AsyncSession, now: Any, workspace: Any, brands: list[Any]) -> dict:
    posts = [
        CommunityPost(id=new_id("cpo"), workspace_id=workspace.id, type="feature_request",
                      title="Schedule Threads carousels from the queue", category="scheduling", status="planned",
                      created_at=now, updated_at=now),
        CommunityPost(id=new_id("cpo"), workspace_id=workspace.id, type="bug_report",
                      title="Pinterest board list is empty after reconnecting", category="integrations",
                      admin_only=True, created_at=now, updated_at=now),
    ]
    session.add_all(posts)
    await session.flush()
    return {"community_posts": posts}


_ADMIN: dict[str, Any] = dict(toolset="community", roles=ADMIN_ROLES)
_READ: dict[str, Any] = dict(_ADMIN, scopes=("community:read",))
_WRITE: dict[str, Any] = dict(_ADMIN, scopes=("community:write",))
_NEVER = "Admin only; affects only this workspace's community board and never publishes anything."

ENDPOINTS = [
    Endpoint(
        name="list_community_posts", method="GET", path="/v1/community/posts", handler=list_community_posts,
        request=ListPostsRequest, response=out.CommunityPostSummary, list_shape="older",
        title="List community posts", **_READ,
        summary="List the workspace's community posts (feature requests, bug reports, improvements), older "
                "page/limit shape, newest first by default.",
        guidance="Read-only. Items leave out admin notes and the admin thread: read them with get_community_post.",
    ),
    Endpoint(
        name="get_community_post", method="GET", path="/v1/community/posts/{post_id}", handler=get_community_post,
        request=PostPath, response=out.CommunityPost, title="Get community post", **_READ,
        summary="Read one community post with its counts, admin notes and the internal admin thread.",
        guidance="Read-only. Comments are listed by list_community_post_comments.",
    ),
    Endpoint(
        name="create_community_post", method="POST", path="/v1/community/posts", handler=create_community_post,
        request=CreatePostRequest, response=out.CommunityPost, status=201, idempotency="optional",
        title="Create community post", **_WRITE,
        summary="Create a community post (feature request, bug report or improvement) in the workspace; status "
                "defaults to pending.",
        guidance=_NEVER + " Send an idempotency key to retry safely.",
    ),
    Endpoint(
        name="update_community_post", method="PATCH", path="/v1/community/posts/{post_id}",
        handler=update_community_post, request=UpdatePostRequest, response=out.CommunityPost,
        title="Update community post", **_WRITE,
        summary="Change a community post's status, title, description, type, category, admin notes, rejection "
                "reason or admin_only flag; only the fields sent change.",
        guidance=_NEVER + " Send null to clear description, category, admin_notes or rejected_reason.",
    ),
    Endpoint(
        name="delete_community_post", method="DELETE", path="/v1/community/posts/{post_id}",
        handler=delete_community_post, request=PostPath, response=out.Deleted, destructive=True,
        title="Delete community post", **_WRITE,
        summary="Permanently delete a community post with its comments, votes and admin thread.",
        guidance="Cannot be undone and never touches other posts. To close a post without losing it, update its "
                 "status instead.",
    ),
    Endpoint(
        name="add_community_post_note", method="POST", path="/v1/community/posts/{post_id}/notes",
        handler=add_community_post_note, request=AddNoteRequest, response=out.CommunityPost, status=201,
        idempotency="optional", title="Add community post note", **_WRITE,
        summary="Add a note to a community post's internal admin thread and return the post with its thread.",
        guidance=_NEVER + " Notes are internal: never shown as comments.",
    ),
    Endpoint(
        name="list_community_post_comments", method="GET", path="/v1/community/posts/{post_id}/comments",
        handler=list_community_post_comments, request=PostPath, response=out.CommentList,
        title="List community post comments", **_READ,
        summary="List every comment of a community post, oldest first (at most 500 per post).",
        guidance="Read-only.",
    ),
    Endpoint(
        name="create_community_post_comment", method="POST", path="/v1/community/posts/{post_id}/comments",
        handler=create_community_post_comment, request=CreateCommentRequest, response=out.Comment, status=201,
        idempotency="optional", title="Create community post comment", **_WRITE,
        summary="Add an admin comment to a community post (user_name defaults to Admin); the post's comment_count "
                "goes up by one.",
        guidance=_NEVER + " Comments made here are always marked is_admin.",
    ),
    Endpoint(
        name="delete_community_post_comment", method="DELETE",
        path="/v1/community/posts/{post_id}/comments/{comment_id}", handler=delete_community_post_comment,
        request=CommentPath, response=out.CommentDeleted, destructive=True, title="Delete community post comment",
        **_WRITE,
        summary="Permanently delete one comment of a community post; the post's comment_count goes down by one.",
        guidance="Cannot be undone; never touches the post or its other comments.",
    ),
]

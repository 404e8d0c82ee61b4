"""providers.oauth.refresh_due: the one rule every OAuth adapter uses to decide a refresh is due."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from providers.oauth import refresh_due

NOW = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)
AHEAD = timedelta(minutes=15)


def test_due_only_within_the_window() -> None:
    creds = {"refresh_token": "r", "expires_at": "2026-11-24T12:20:00.000Z"}
    assert not refresh_due(creds, NOW, AHEAD)
    assert refresh_due({**creds, "expires_at": "2026-11-24T12:10:00.000Z"}, NOW, AHEAD)
    assert refresh_due({**creds, "expires_at": "2026-11-24T11:00:00.000Z"}, NOW, AHEAD)  # already expired


def test_nothing_to_refresh_with() -> None:
    assert not refresh_due({"expires_at": "2026-11-24T12:10:00.000Z"}, NOW, AHEAD)  # no refresh token
    assert refresh_due({"expires_at": "2026-11-24T12:10:00.000Z"}, NOW, AHEAD, needs_refresh_token=False)
    assert not refresh_due({"refresh_token": "r"}, NOW, AHEAD)  # no expiry: the token does not expire


def test_unreadable_expiry_is_due() -> None:
    assert refresh_due({"refresh_token": "r", "expires_at": "soon"}, NOW, AHEAD)

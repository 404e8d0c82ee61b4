"""What of a publish outcome a client may see: safe failure text and safe public links.

Shared by the receipt, publications and History, so the rules live once. A provider's own error words never
reach a client: a failure with a provider error kind is described by the fixed text below, whatever was
stored, unless the worker stored the adapter's own `ProviderError.safe_reason` (built from our words and bounded
facts) under ADAPTER_MARK: then that sentence, which says more ("Mastodon refused the post: ..."). A permalink is shown only as an absolute http(s) URL with a host and no credentials.
"""

from __future__ import annotations

from urllib.parse import urlsplit

# Safe reason and next action per provider error kind (providers.base.ERROR_KINDS).
SAFE_FAILURES: dict[str, tuple[str, str]] = {
    "reauth_required": ("The account's authorisation is no longer valid; it must be reconnected.",
                        "reconnect_integration"),
    "rejected": ("The platform refused this post (its rules, format or the account's permissions).",
                 "repair_and_preflight"),
    "rate_limited": ("The platform kept limiting requests until the publish retries ran out.", "create_schedule"),
    "transient": ("The platform could not be reached before the publish retries ran out.", "create_schedule"),
    "unavailable": ("The platform was unavailable until the publish retries ran out.", "create_schedule"),
    "malformed": ("The platform answered with data that could not be trusted.", "contact_operator"),
}
GENERIC_FAILURE = "This target was not published."
# Prefix of a stored failure reason the worker took from ProviderError.safe_reason (trusted, shown without it).
ADAPTER_MARK = "[adapter] "


def adapter_reason(stored: str | None) -> str | None:
    """The adapter's safe sentence from a stored reason, or None when the reason is anything else."""
    if stored and stored.startswith(ADAPTER_MARK):
        return stored[len(ADAPTER_MARK):] or None
    return None
FAILURE_MAX = 500
PERMALINK_MAX = 2000


def safe_failure(error_kind: str | None, stored: str | None, state: str) -> tuple[str | None, str | None]:
    """(failure_reason, next_action) a client may see for a target or publication in `state`."""
    if state not in ("failed", "action_required"):
        return None, None
    if error_kind in SAFE_FAILURES:
        text, action = SAFE_FAILURES[error_kind]
        return (adapter_reason(stored) or text)[:FAILURE_MAX], action
    if error_kind is not None:  # a kind we do not know: say nothing specific
        return GENERIC_FAILURE, "contact_operator"
    # No provider kind: our own code wrote the reason (e.g. a readiness check at run time), already safe text.
    action = "reconnect_integration" if state == "action_required" else "repair_and_preflight"
    return (stored or GENERIC_FAILURE)[:FAILURE_MAX], action


def safe_permalink(url: str | None) -> str | None:
    """The URL if it is a plain public http(s) link, else None."""
    if not url or len(url) > PERMALINK_MAX or any(c.isspace() or ord(c) < 32 for c in url):
        return None
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  (raises on a malformed port)
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname or "@" in parts.netloc:
        return None
    return url

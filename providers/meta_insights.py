"""Reading post metrics from Meta's Graph-style APIs (Instagram, Facebook Pages, Threads): the error answers of a
metrics read, and the `insights` edge's answer as one flat name -> value map.

Errors (Graph API "Handling Errors", https://developers.facebook.com/docs/graph-api/guides/error-handling, and
the insights references cited by each adapter), classified for the metrics job (tools/analytics/collect.py):
- a post the network no longer has: HTTP 404, or code 100 with subcode 33 ("Unsupported get request. Object with
  ID … does not exist") → `read` answers None (the reading says `gone`);
- Instagram's "(#10) Not enough viewers for the media to show insights" (Stories under 5 viewers, IG Media
  Insights reference) is no refusal: the reading has no figures yet;
- a missing permission: code 10, 200-299 or HTTP 403 → `rejected` (the job stops the account's readings once,
  `permission_missing`, and tells its admins);
- 190 → reauth_required; rate limits 4, 17, 32, 613, 80002 or HTTP 429 → rate_limited (providers.instagram);
- any other code 100 (an invalid metric or parameter) → `malformed`: our request is wrong, tried again later and
  never mistaken for a missing permission.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import httpx

from providers.base import ProviderError
from providers.http import call, json_body
from providers.metrics import RAW_MAX

GONE_SUBCODE = 33
NO_DATA = "not enough viewers"


class _Gone(ProviderError):
    """The network no longer has the object; never leaves this module (`read` answers None)."""


class _NoData(ProviderError):
    """Instagram has too few viewers to report; never leaves this module (`read` answers an empty `data`)."""


def _error(response: httpx.Response) -> dict[str, Any]:
    try:
        error = response.json().get("error")
    except (ValueError, AttributeError):
        return {}
    return error if isinstance(error, dict) else {}


def metrics_classify(network: str) -> Callable[[httpx.Response], ProviderError | None]:
    from providers.instagram import graph_classify  # instagram imports this module

    base = graph_classify(network)

    def classify(response: httpx.Response) -> ProviderError | None:
        error = _error(response)
        try:
            code, subcode = int(error.get("code") or 0), int(error.get("error_subcode") or 0)
        except (TypeError, ValueError):
            code, subcode = 0, 0
        where = f"{network} answered {response.status_code} (code {code}) to {response.request.url.path}"
        if response.status_code == 404 or (code == 100 and subcode == GONE_SUBCODE):
            return _Gone("rejected", where)
        if code == 10 and NO_DATA in str(error.get("message") or "").lower():
            return _NoData("rejected", where)
        found = base(response)
        if code == 100 and found is not None and found.kind == "rejected":
            return ProviderError("malformed", f"{where}: the request named something {network} does not accept")
        if found is not None and found.kind == "rejected":
            return ProviderError("rejected", where, safe_reason=f"{network} refused to share post metrics: the "
                                                                "account did not grant the insights permission.")
        return found
    return classify


async def read(client: httpx.AsyncClient, path: str, params: Mapping[str, str], network: str) -> Any | None:
    """One metrics GET: its JSON, or None when the network no longer has the object."""
    try:
        return json_body(await call(client, "GET", path, network=network, classify=metrics_classify(network),
                                    params=dict(params)), network)
    except _Gone:
        return None
    except _NoData:
        return {"data": []}


def insight_values(body: Any, network: str) -> dict[str, Any]:
    """The `insights` edge's answer (`{"data": [{"name", "period", "values": [{"value"}], "title", "id"}]}`; a
    metric asked with a total answers `total_value.value` instead) as name -> latest value. Only a number is
    kept (providers.metrics.from_raw drops the rest)."""
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list):
        raise ProviderError("malformed", f"{network} insights answered without data")
    out: dict[str, Any] = {}
    for item in data[:RAW_MAX]:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            continue
        values = item.get("values")
        total = item.get("total_value")
        if isinstance(values, list) and values and isinstance(values[-1], dict):
            out[item["name"]] = values[-1].get("value")
        elif isinstance(total, dict):
            out[item["name"]] = total.get("value")
    return out

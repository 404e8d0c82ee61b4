"""Console pages and form handlers, mounted at /console by `server/mounts/console.py`: one module per page group,
each exposing `routes(console)`; `routes` below is the one place that assembles them.

Reads and writes that the API offers go through `Console.api` (the dispatcher, as the signed-in user's key);
operator actions the API does not offer (keys, sandbox accounts, read state) call the same functions as the
CLI (`tools.operator`, `tools.notify`, `server/commands/sandbox.py`). Every form posts a CSRF token; every
POST answers with a redirect (303) on success, so a reload never repeats an action.
"""

from __future__ import annotations

from starlette.routing import BaseRoute, Mount
from starlette.staticfiles import StaticFiles

from server.console import web
from server.console.pages import (
    accounts,
    accounts_oauth,
    analytics,
    apps,
    brand,
    brand_settings,
    calendar,
    compose,
    consent,
    history,
    keys,
    notifications,
    review,
    schedule,
    signin,
    team,
    webhooks,
    workspace,
)
from server.console.pages.shared import Console
from server.dispatch import Dispatcher
from tools.runtime import Runtime

MODULES = (signin, workspace, review, consent, keys, brand, accounts, calendar, compose, schedule, history,
           analytics, notifications, team, apps, brand_settings, accounts_oauth, webhooks)


def routes(rt: Runtime, dispatcher: Dispatcher) -> list[BaseRoute]:
    console = Console(rt, dispatcher)
    found: list[BaseRoute] = [route for module in MODULES for route in module.routes(console)]
    return [*found, Mount("/static", StaticFiles(directory=web.HERE / "static"), name="console-static")]

"""Schemathesis drives the REST app in-process from `/v1/openapi.json`: every operation, positive and negative
data, a bounded and seeded number of examples, against the demo workspace with its full-scope admin key.

Checked on every response: no server error (5xx), the status is one the operation documents, and the body
matches the documented schema for that status. `SOCIALPUB_FUZZ_EXAMPLES` raises the examples per operation
for a longer run (docs/operations.md, "Fuzzing").
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.core.result import Err
from schemathesis.python import asgi
from schemathesis.specs.openapi.checks import response_schema_conformance, status_code_conformance

from schemas.time import FrozenClock
from server.app import build_app
from storage.db import Database
from tests.support import START, copy_template, make_settings
from tools import catalogue
from tools.operator import demo
from tools.runtime import Runtime

# Per operation and mode (positive, negative): 5 + 5 keeps the CI run near a minute and a half.
EXAMPLES = int(os.environ.get("SOCIALPUB_FUZZ_EXAMPLES", "5"))
ONLY = os.environ.get("SOCIALPUB_FUZZ_ONLY", "")  # fuzz only operations whose operationId contains this
CHECKS = [not_a_server_error, status_code_conformance, response_schema_conformance]
EVERY_HEALTH_CHECK: list[HealthCheck] = list(HealthCheck)  # pyright: ignore[reportAssignmentType]  # hypothesis's HealthCheckMeta.__iter__ is untyped; it yields the members


@dataclass
class Demo:
    app: Any
    secret: str
    brand_id: str


@dataclass
class Tally:
    operations: int = 0
    requests: int = 0
    statuses: dict[int, int] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def _demo_app(tmp_path: Path, template: Path) -> Demo:
    """The demo workspace in a scratch SQLite database, and an app that has not touched it yet: schemathesis
    serves the app from its own event-loop thread, where the app's connections are then made."""
    url = copy_template(template, tmp_path)

    async def seed() -> dict[str, Any]:
        db = Database(url)
        try:
            async with db.session(write=True) as s:
                return await demo.seed_demo(s, FrozenClock(START).now())
        finally:
            await db.dispose()

    seeded = anyio.run(seed)
    rt = Runtime(settings=make_settings(tmp_path, url), db=Database(url), clock=FrozenClock(START))

    @contextlib.asynccontextmanager
    async def close_database(rt: Runtime) -> AsyncIterator[None]:
        yield
        await rt.db.dispose()

    app = build_app(rt, run_worker=False, extra_lifespans=[close_database])
    return Demo(app=app, secret=seeded["secret"], brand_id=seeded["brands"][0].id)


# A positive (schema-valid) request refused for one of these reasons means the document is looser than the
# server. Rules JSON Schema cannot state (IDs in ascending order, "send at least one field", one field needing
# another, a cursor the list never issued) may still answer 400 to a schema-valid request: docs/decisions.md.
# (NOT_ALLOWED is not listed: besides an enumeration, which the document states, it names cross-field rules such
# as TikTok's commercial_types needing is_commercial_content.)
DOCUMENT_WRONG = frozenset({"INVALID_CHARACTER", "UNKNOWN_FIELD", "INVALID_TYPE", "REPEATED", "TOO_LONG",
                            "OUT_OF_RANGE", "INVALID_FORMAT"})


def _accepted_as_documented(response: Any) -> None:
    if response.status_code != 400:
        return
    issues = response.json()["error"].get("issues") or []
    wrong = sorted({i["code"] for i in issues} & DOCUMENT_WRONG)
    assert not wrong, f"a schema-valid request was refused ({', '.join(wrong)}): {response.text[:600]}"


def _fuzz_operation(operation: Any, demo: Demo, tally: Tally, mode: GenerationMode) -> None:
    headers = {"Authorization": f"Bearer {demo.secret}"}

    def aim(case: Any) -> Any:
        # Positive cases go to the demo brand, so the handlers behind brand visibility are reached.
        if mode is GenerationMode.POSITIVE and case.path_parameters and "brand_id" in case.path_parameters:
            case.path_parameters["brand_id"] = demo.brand_id
        return case

    @settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None, print_blob=False,
              phases=[Phase.explicit, Phase.generate], suppress_health_check=EVERY_HEALTH_CHECK)
    @given(case=operation.as_strategy(generation_mode=mode).map(aim))
    def run(case: Any) -> None:
        response = case.call(headers=headers)
        tally.requests += 1
        tally.statuses[response.status_code] = tally.statuses.get(response.status_code, 0) + 1
        case.validate_response(response, checks=CHECKS, headers=headers)
        if mode is GenerationMode.POSITIVE:
            _accepted_as_documented(response)

    try:
        run()
    except Unsatisfiable:  # nothing to negate: the operation takes no input (GET /v1/plans)
        tally.skipped.append(f"{operation.label} [{mode.value}]")
    except (Exception, BaseExceptionGroup) as exc:  # one operation's failure must not hide another's
        # (schemathesis reports its failures as a FailureGroup, a BaseExceptionGroup)
        tally.failures.append(f"{operation.label} [{mode.value}]: {exc}")


@pytest.mark.slow
def test_fuzz_rest_api(tmp_path: Path, sqlite_template: Path) -> None:
    demo = _demo_app(tmp_path, sqlite_template)
    schema = schemathesis.openapi.from_asgi("/v1/openapi.json", demo.app)
    tally = Tally()
    started = time.perf_counter()
    try:
        for result in schema.get_all_operations():
            if isinstance(result, Err):
                raise result.err()  # the schema has an operation schemathesis cannot read
            operation = result.ok()
            if ONLY not in operation.definition.raw.get("operationId", ""):
                continue
            tally.operations += 1
            for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
                _fuzz_operation(operation, demo, tally, mode)
    finally:
        asgi.shutdown_lifespans()
    seconds = time.perf_counter() - started
    print(f"fuzz: {tally.operations} operations, {tally.requests} requests, {len(tally.failures)} failures, "
          f"{seconds:.0f} s, no negative data for {tally.skipped}, statuses {dict(sorted(tally.statuses.items()))}")
    assert tally.operations == (len(catalogue.endpoints()) if not ONLY else tally.operations) and tally.operations
    assert tally.requests >= tally.operations * 2
    assert not tally.failures, "\n\n".join(tally.failures)

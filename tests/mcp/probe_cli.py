"""`python -m tests.mcp.probe_cli mcp ...`: the real `socialpub` CLI with the idempotency probe endpoint added
to the catalogue, so the stdio subprocess test can exercise a write with a replay (main has no idempotent
endpoint of its own yet)."""

from __future__ import annotations

import sys

from server.cli import main
from tests.test_idempotency import PROBE
from tools import catalogue

_real = catalogue.endpoints()
catalogue.endpoints = lambda: (*_real, PROBE)

if __name__ == "__main__":
    sys.exit(main())

"""The PDS harness: a missing install skips with its reason, except in CI with SOCIALPUB_REQUIRE_PDS=1."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.networks.conftest import _unavailable
from tests.networks.pds import PdsUnavailable, start_pds


def test_a_missing_install_is_unavailable_with_the_command_to_fix_it(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOCIALPUB_PDS_DIR", str(tmp_path / "nothing"))
    with pytest.raises(PdsUnavailable, match=r"run `bash \.ci/pds/install\.sh`"):
        start_pds(tmp_path)


def test_ci_that_requires_the_pds_fails_instead_of_skipping(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SOCIALPUB_REQUIRE_PDS", raising=False)
    with pytest.raises(pytest.skip.Exception):
        _unavailable("no PDS")
    monkeypatch.setenv("CI", "1")
    monkeypatch.setenv("SOCIALPUB_REQUIRE_PDS", "1")
    with pytest.raises(pytest.fail.Exception, match="SOCIALPUB_REQUIRE_PDS=1"):
        _unavailable("no PDS")

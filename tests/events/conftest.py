"""The worker subprocess tests' fixtures (a home after `socialpub init`), shared with tests/publishing."""

from tests.publishing.conftest import init_home, initialized  # noqa: F401

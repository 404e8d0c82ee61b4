"""Every request respx answers in these tests is checked against its network's description (autouse)."""

from tests.providers.descriptions import described_requests  # noqa: F401 - autouse fixture

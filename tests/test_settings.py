"""The settings model (schemas/settings.py) is the one source of the `SOCIALPUB_*` environment: how each variable
is read, that the README's table is generated from it, that no other module reads a setting of it, and the one-line
refusal when S3 is configured without the `s3` extra."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from schemas.settings import Settings

ROOT = Path(__file__).resolve().parent.parent


def _from(monkeypatch: pytest.MonkeyPatch, **env: str) -> Settings:
    for name in list(os.environ):
        if name.upper().startswith("SOCIALPUB_"):
            monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(f"SOCIALPUB_{name}", value)
    return Settings.from_env()


def test_defaults_without_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    s = _from(monkeypatch)
    assert s == Settings()
    assert s.home == tmp_path / "socialpub" and s.rate_limit_requests == 600 and s.rate_limit_window == 60.0
    assert s.worker_enabled and s.expect_worker is None and s.trusted_proxies == ("127.0.0.1", "::1")
    assert s.idempotency_ttl == 86_400.0 and s.media_store is None and s.log_format == "text"


def test_each_variable_is_read_as_before(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    s = _from(monkeypatch, HOME=str(tmp_path), DATABASE_URL="sqlite+aiosqlite:///x.db", RATE_LIMIT="5/10",
              PUBLIC_URL="https://pub.example/", MEDIA_URL="https://cdn.example/m/", FETCH_ALLOW_HOSTS="A.example, b ,",
              SIGNING_SECRET="sig", SECRET_KEYS="k1, k2", TELEGRAM_API_URL="http://tg.local/", UPGRADE_URL="u",
              ALLOWED_HOSTS="MCP.example", TRUSTED_PROXIES="10.0.0.0/8, ::1", API_KEY="key", WORKER="off",
              RATE_LIMIT_STORAGE="redis://r:6379/0", METRICS_TOKEN="m", EXPECT_WORKER="yes", IDEMPOTENCY_TTL="15m",
              MEDIA_STORE="s3://bucket/p", S3_ENDPOINT_URL="http://minio:9000", S3_REGION="eu", S3_ACCESS_KEY_ID="a",
              S3_SECRET_ACCESS_KEY="b", MCP_TOOLSETS="all", MCP_READ_ONLY="on", LOG_FORMAT="json")
    assert (s.home, s.database_url, s.rate_limit_requests, s.rate_limit_window) == (tmp_path, "sqlite+aiosqlite:///x.db", 5, 10.0)
    assert (s.public_url, s.media_url, s.telegram_api_url) == ("https://pub.example", "https://cdn.example/m", "http://tg.local")
    assert s.fetch_allow_hosts == ("a.example", "b") and s.allowed_hosts == ("mcp.example",)
    assert s.secret_keys == ("k1", "k2") and s.trusted_proxies == ("10.0.0.0/8", "::1")
    assert (s.signing_secret, s.upgrade_url, s.api_key, s.metrics_token) == ("sig", "u", "key", "m")
    assert s.worker_enabled is False and s.expect_worker is True and s.idempotency_ttl == 900.0
    assert (s.media_store, s.s3_endpoint_url, s.s3_region, s.s3_access_key_id, s.s3_secret_access_key) == (
        "s3://bucket/p", "http://minio:9000", "eu", "a", "b")
    assert (s.mcp_toolsets, s.mcp_read_only, s.log_format, s.rate_limit_storage) == ("all", True, "json", "redis://r:6379/0")


@pytest.mark.parametrize(("env", "field", "value"), [
    ({"RATE_LIMIT": "0"}, "rate_limit_requests", 0),
    ({"RATE_LIMIT": "30"}, "rate_limit_window", 60.0),
    ({"WORKER": "maybe"}, "worker_enabled", True),  # only off, 0, false, no turn it off
    ({"WORKER": ""}, "worker_enabled", True),  # empty is unset
    ({"EXPECT_WORKER": "0"}, "expect_worker", False),
    ({"TRUSTED_PROXIES": "none"}, "trusted_proxies", ()),
    ({"IDEMPOTENCY_TTL": "90"}, "idempotency_ttl", 90.0),
    ({"MAX_BODY_BYTES": "5"}, "max_body_bytes", 1_048_576),  # set by code, not by the environment
    ({"VALIDATE_RESPONSES": "true"}, "validate_responses", False),
])
def test_edge_values(monkeypatch: pytest.MonkeyPatch, env: dict[str, str], field: str, value: object) -> None:
    assert getattr(_from(monkeypatch, **env), field) == value


def test_overrides_win_and_constructed_settings_ignore_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOCIALPUB_WORKER", "off")
    monkeypatch.setenv("SOCIALPUB_PUBLIC_URL", "https://env.example")
    assert Settings.from_env(worker_enabled=True).worker_enabled is True
    assert Settings().worker_enabled is True and Settings().public_url == "http://127.0.0.1:8000"


@pytest.mark.parametrize(("env", "message"), [
    ({"MEDIA_STORE": "ftp://x"}, "SOCIALPUB_MEDIA_STORE must look like s3://bucket"),
    ({"TRUSTED_PROXIES": "proxy.local"}, "trusted proxies must be IP addresses or networks"),
])
def test_malformed_values_are_refused_at_start_up(monkeypatch: pytest.MonkeyPatch, env: dict[str, str],
                                                  message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _from(monkeypatch, **env)


def test_every_documented_variable_is_a_field_and_the_readme_table_is_generated() -> None:
    from server import generate

    rows = Settings.documented()
    variables = [v for v, _, _ in rows]
    assert len(variables) == len(set(variables)) and all(v.startswith("SOCIALPUB_") for v in variables)
    readme = (ROOT / "README.md").read_text()
    assert "\n".join(generate.settings_table()) in readme, "run `python -m server.generate`"
    assert all(f"`{v}`" in readme for v in variables)


# -- nothing else reads the settings' variables ---------------------------------------------------------------

# Read outside the model, on purpose: each network adapter's base URLs and API version pins (read once at import,
# documented in docs/networks.md) and the per-platform operator app variables (SOCIALPUB_<PLATFORM>_CLIENT_ID).
OUTSIDE_THE_MODEL = {"providers", "tools/networks/apps.py", "schemas/settings.py"}


def _environment_reads(tree: ast.AST) -> list[str]:
    """String constants naming SOCIALPUB_* variables inside os.environ/os.getenv reads."""
    found = []
    for node in ast.walk(tree):
        target = None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            base = ast.unparse(node.func.value)
            if (node.func.attr in ("get", "pop", "setdefault") and base.endswith("environ")) or \
                    node.func.attr == "getenv":
                target = node.args[0] if node.args else None
        elif isinstance(node, ast.Subscript) and ast.unparse(node.value).endswith("environ"):
            target = node.slice
        if target is not None:
            text = ast.unparse(target)
            if "SOCIALPUB_" in text:
                found.append(text)
    return found


def environment_reads(root: Path) -> dict[str, list[str]]:
    out = {}
    for package in ("schemas", "storage", "providers", "tools", "server"):
        for path in (root / package).rglob("*.py"):
            rel = path.relative_to(root).as_posix()
            if rel in OUTSIDE_THE_MODEL or rel.split("/")[0] in OUTSIDE_THE_MODEL:
                continue
            reads = _environment_reads(ast.parse(path.read_text(), rel))
            if reads:
                out[rel] = reads
    return out


def test_no_module_reads_a_setting_past_the_model() -> None:
    assert environment_reads(ROOT) == {}, "read it from rt.settings (schemas/settings.py), declared once"


def test_the_guard_sees_a_planted_read(tmp_path: Path) -> None:
    for package in ("schemas", "storage", "providers", "tools", "server"):
        (tmp_path / package).mkdir()
    (tmp_path / "server" / "planted.py").write_text(
        'import os\nA = os.environ.get("SOCIALPUB_SMTP_HOST")\nB = os.getenv("SOCIALPUB_X")\nC = os.environ["SOCIALPUB_Y"]\n')
    assert environment_reads(tmp_path) == {"server/planted.py": ["'SOCIALPUB_SMTP_HOST'", "'SOCIALPUB_X'", "'SOCIALPUB_Y'"]}


# -- S3 without the `s3` extra ----------------------------------------------------------------------------------

def test_s3_store_without_boto3_is_one_line_naming_the_extra(tmp_path: Path) -> None:
    # A process where boto3 cannot be imported (as after `pip install socialpub` without `[s3]`).
    code = "import sys; sys.modules['boto3'] = None; from server.cli import main; sys.exit(main(['workspaces', 'list']))"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOCIALPUB_")}
    env.update(SOCIALPUB_HOME=str(tmp_path), SOCIALPUB_MEDIA_STORE="s3://bucket/media", PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        "socialpub: SOCIALPUB_MEDIA_STORE names an S3 store but boto3 is not installed: pip install 'socialpub[s3]'"]
    # Without S3 configured, the same process runs.
    env.pop("SOCIALPUB_MEDIA_STORE")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert "not installed" not in done.stderr

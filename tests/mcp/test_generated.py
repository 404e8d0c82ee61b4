"""manifest.json and docs/tools.md are generated from the catalogue; these fail when either is stale.
Regenerate with `python -m server.generate`."""

from __future__ import annotations

import json
from pathlib import Path

from jsonschema import Draft7Validator

from server import generate
from tools import catalogue

ROOT = Path(__file__).parents[2]
# The MCP Bundle manifest schema, copied from @anthropic-ai/mcpb 2.1.2 (MIT) so the check runs offline.
# `npx -y @anthropic-ai/mcpb validate manifest.json` is the authoritative check (docs/mcp.md).
MCPB_SCHEMA = json.loads((ROOT / "tests" / "data" / "mcpb-manifest-v0.3.schema.json").read_text())


def test_generated_files_are_current() -> None:
    assert generate.stale() == [], "run `python -m server.generate` and commit the result"


def test_manifest_lists_every_catalogue_tool() -> None:
    manifest = json.loads((ROOT / "manifest.json").read_text())
    assert [t["name"] for t in manifest["tools"]] == [ep.name for ep in catalogue.endpoints()]
    assert all(t["description"] for t in manifest["tools"])


def test_manifest_is_a_valid_mcp_bundle_manifest() -> None:
    manifest = json.loads((ROOT / "manifest.json").read_text())
    errors = sorted(Draft7Validator(MCPB_SCHEMA).iter_errors(manifest), key=str)
    assert not errors, errors[0].message
    assert manifest["manifest_version"] == "0.3"
    server = manifest["server"]
    assert server["type"] == "python" and (ROOT / server["entry_point"]).is_file()
    assert server["mcp_config"]["args"] == ["-m", "server.cli", "mcp", "--transport", "stdio"]
    env = server["mcp_config"]["env"]
    assert env["SOCIALPUB_API_KEY"] == "${user_config.api_key}"
    config = manifest["user_config"]
    assert config["api_key"]["sensitive"] is True and config["api_key"]["required"] is True
    assert config["data_dir"]["type"] == "directory" and env["SOCIALPUB_HOME"] == "${user_config.data_dir}"
    assert env["SOCIALPUB_DATABASE_URL"] == "${user_config.database_url}"


def test_tools_doc_names_every_tool_and_toolset() -> None:
    text = (ROOT / "docs" / "tools.md").read_text()
    for ep in catalogue.endpoints():
        assert f"| `{ep.name}` | `{ep.method} {ep.path}`" in text


def test_check_mode_reports_stale_files(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.setattr(generate, "MANIFEST_PATH", tmp_path / "manifest.json")
    monkeypatch.setattr(generate, "TOOLS_DOC_PATH", tmp_path / "tools.md")
    monkeypatch.setattr(generate, "LISTING_PATH", tmp_path / "listing.json")
    # docs/mcp.md is hand-written around its generated table: a copy with a stale table
    (tmp_path / "mcp.md").write_text(generate.MCP_DOC_PATH.read_text().replace(generate.SIZE_END, "| stale |\n"
                                                                             + generate.SIZE_END))
    monkeypatch.setattr(generate, "MCP_DOC_PATH", tmp_path / "mcp.md")
    # README.md likewise, around its settings table (schemas/settings.py)
    (tmp_path / "README.md").write_text(generate.README_PATH.read_text().replace(
        generate.SETTINGS_BEGIN + "\n", generate.SETTINGS_BEGIN + "\n| stale |\n"))
    monkeypatch.setattr(generate, "README_PATH", tmp_path / "README.md")
    monkeypatch.setattr(generate, "ROOT", tmp_path)
    assert generate.main(["--check"]) == 1
    err = capsys.readouterr().err
    assert "stale: manifest.json" in err and "stale: mcp.md" in err and "stale: README.md" in err
    assert generate.main([]) == 0
    assert generate.main(["--check"]) == 0

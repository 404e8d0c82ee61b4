"""Files generated from the catalogue: `manifest.json` (MCP Bundle), `docs/tools.md`, the size table of
`docs/mcp.md` and the tool listing a starting MCP server serves (`server/mcp_server/listing.json`); and from the
settings model (schemas/settings.py), the README's configuration table.

    python -m server.generate            # rewrite both
    python -m server.generate --check    # exit 1 and name the stale files (tests run the same comparison)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from schemas.settings import Settings
from server.mcp_server import listing, prompts
from server.mcp_server.app import package_version
from server.mcp_server.resources import available as available_resources
from server.mcp_server.selection import Selection, parse_toolsets
from server.mcp_server.tools import endpoint_label, hints, specs
from tools.tool_schemas import envelope_schema, input_schema
from tools.toolsets import DEFAULT_TOOLSETS, TOOLSETS

ROOT = Path(__file__).resolve().parent.parent
MANIFEST_PATH = ROOT / "manifest.json"
TOOLS_DOC_PATH = ROOT / "docs" / "tools.md"
LISTING_PATH = listing.LISTING_PATH
GENERATE_COMMAND = "python -m server.generate"


def _server_env(path_list_separator: str) -> dict[str, str]:
    return {
        # The bundle root (our packages) and lib/ (vendored dependencies) on the import path.
        "PYTHONPATH": f"${{__dirname}}{path_list_separator}${{__dirname}}${{/}}lib",
        "SOCIALPUB_API_KEY": "${user_config.api_key}",
        "SOCIALPUB_HOME": "${user_config.data_dir}",
        "SOCIALPUB_DATABASE_URL": "${user_config.database_url}",
        "SOCIALPUB_MCP_TOOLSETS": "${user_config.toolsets}",
        "SOCIALPUB_MCP_READ_ONLY": "${user_config.read_only}",
    }


def manifest() -> dict[str, Any]:
    """The MCP Bundle manifest (manifest_version 0.3): the stdio server, its settings, and every tool."""
    return {
        "manifest_version": "0.3",
        "name": "socialpub",
        "display_name": "socialpub",
        "version": package_version(),
        "description": "Multi-brand social publishing for LLM agents: drafts, preflight checks, schedules held "
                       "for review, and publication outcomes.",
        "long_description": (
            "socialpub is a self-hosted social publishing service. This bundle runs its MCP server over stdio "
            "against a local database (SQLite by default). The agent acts with the API key you enter: it reads "
            "its authority and brands, writes drafts in each brand's voice, runs write-free preflight checks, and "
            "creates Schedules. Nothing publishes without a key holding publish:execute. Create the database and "
            "a key with `socialpub init --demo` (or `socialpub keys create`). The bundle needs Python 3.11+ as "
            "python3 (python on Windows); its dependencies are vendored in lib/ for the platform it was built on "
            "(`socialpub bundle`)."),
        "author": {"name": "socialpub contributors"},
        "license": "MIT",
        "keywords": ["social media", "publishing", "scheduling", "mcp", "agents"],
        "server": {
            "type": "python",
            "entry_point": "server/cli.py",
            "mcp_config": {
                "command": "python3",
                "args": ["-m", "server.cli", "mcp", "--transport", "stdio"],
                "env": _server_env(":"),
                # A platform override replaces env whole: Windows separates PYTHONPATH entries with ';'.
                "platform_overrides": {"win32": {"command": "python", "env": _server_env(";")}},
            },
        },
        "tools": [{"name": s.name, "description": s.endpoint.summary} for s in specs().values()],
        "tools_generated": False,
        "prompts_generated": True,
        "compatibility": {"platforms": ["darwin", "linux", "win32"], "runtimes": {"python": ">=3.11"}},
        "user_config": {
            "api_key": {
                "type": "string", "title": "API key", "sensitive": True, "required": True,
                "description": "A socialpub API key (socialpub_live_...), from `socialpub keys create` or "
                               "`socialpub init --demo`. The agent acts with its scopes and brand access.",
            },
            "data_dir": {
                "type": "directory", "title": "Data directory", "required": False, "default": "",
                "description": "Where the SQLite database and media live (SOCIALPUB_HOME). Empty: "
                               "~/.local/share/socialpub.",
            },
            "database_url": {
                "type": "string", "title": "Database URL", "required": False, "default": "",
                "description": "Optional SQLAlchemy async URL (e.g. postgresql+asyncpg://user@host/db); overrides "
                               "the data directory's SQLite file.",
            },
            "toolsets": {
                "type": "string", "title": "Toolsets", "required": False, "default": "default",
                "description": f"Comma-separated toolsets, `default` ({', '.join(DEFAULT_TOOLSETS)}) or `all`.",
            },
            "read_only": {
                "type": "boolean", "title": "Read-only", "required": False, "default": False,
                "description": "Offer only tools that read.",
            },
        },
    }


def _hints(ep: Any) -> str:
    a = hints(ep)  # every hint's value, whether or not the listing spells it out
    flags = [name for name, on in (("read-only", a["read_only_hint"]), ("destructive", a["destructive_hint"]),
                                   ("idempotent", a["idempotent_hint"]), ("open-world", a["open_world_hint"])) if on]
    return ", ".join(flags) or "—"


def _authority(ep: Any) -> str:
    if ep.public:
        return "public"
    text = ", ".join(f"`{s}`" for s in ep.scopes) if ep.scopes else "any key"
    return text + (f"; role {' or '.join(ep.roles)}" if ep.roles else "")


def _tool_bytes(tool: Any, **schemas: Any) -> int:
    return len(json.dumps({**tool.model_dump(by_alias=True, exclude_none=True, mode="json"), **schemas},
                          separators=(",", ":")))


def list_sizes() -> list[tuple[str, int, int, int]]:
    """(selection, tools, full bytes, listed bytes) of `tools/list` for a full-scope key: the tool definitions as
    compact JSON (page envelopes aside), once with the full REST schemas (what socialpub listed before issue 17)
    and once as listed now (lean schemas). docs point here instead of quoting numbers."""
    table = specs()
    endpoints = [s.endpoint for s in table.values()]
    out = []
    for label, selection in (("default toolsets", Selection()),
                             ("default toolsets, `--read-only`", Selection(read_only=True)),
                             ("`--toolsets all`", Selection(toolsets=parse_toolsets("all")))):
        listed = [table[ep.name].tool for ep in selection.listed(endpoints, None)]
        full = sum(_tool_bytes(t, inputSchema=input_schema(table[t.name].endpoint),
                               outputSchema=envelope_schema(table[t.name].endpoint)) for t in listed)
        # The JSON array's brackets and commas, as one list.
        overhead = 2 + max(len(listed) - 1, 0)
        out.append((label, len(listed), full + overhead, sum(_tool_bytes(t) for t in listed) + overhead))
    return out


def size_table() -> list[str]:
    lines = ["| Selection | Tools | With full REST schemas | As listed (lean schemas) |", "|---|---|---|---|"]
    lines += [f"| {label} | {count} | {full:,} | {lean:,} |" for label, count, full, lean in list_sizes()]
    return lines


MCP_DOC_PATH = ROOT / "docs" / "mcp.md"
SIZE_BEGIN = "<!-- generated: tools/list size (python -m server.generate) -->"
SIZE_END = "<!-- end generated -->"


def mcp_markdown() -> str:
    """docs/mcp.md with its size table regenerated between the markers (the rest is hand-written)."""
    text = MCP_DOC_PATH.read_text()
    head, rest = text.split(SIZE_BEGIN, 1)
    _, tail = rest.split(SIZE_END, 1)
    return head + SIZE_BEGIN + "\n\n" + "\n".join(size_table()) + "\n\n" + SIZE_END + tail


README_PATH = ROOT / "README.md"
SETTINGS_BEGIN = "<!-- generated: settings (python -m server.generate, from schemas/settings.py) -->"


def settings_table() -> list[str]:
    """One row per setting the environment gives, from the model's fields."""
    lines = ["| Variable | Default | Meaning |", "|---|---|---|"]
    lines += [f"| `{variable}` | {shown} | {doc} |" for variable, shown, doc in Settings.documented()]
    return lines


def readme_markdown() -> str:
    """README.md with its configuration table regenerated between the markers (the rest is hand-written)."""
    text = README_PATH.read_text()
    head, rest = text.split(SETTINGS_BEGIN, 1)
    _, tail = rest.split(SIZE_END, 1)
    return head + SETTINGS_BEGIN + "\n\n" + "\n".join(settings_table()) + "\n\n" + SIZE_END + tail


def tools_markdown() -> str:
    table = specs()
    lines = [
        "# MCP tools",
        "",
        f"Generated from the endpoint catalogue by `{GENERATE_COMMAND}`; do not edit by hand "
        "(`tests/mcp/test_generated.py` fails when it is stale). One tool per REST endpoint; the tool's input "
        "is the flat object of path, query and body fields (plus `idempotency_key` where the route takes one); "
        "its structured output is the REST envelope. See `docs/mcp.md` for setup.",
        "",
        f"Default toolsets: {', '.join(f'`{t}`' for t in DEFAULT_TOOLSETS)}. `--toolsets all` serves every "
        "toolset; `--read-only` serves only read-only tools; tools whose scopes the key lacks are not listed "
        "unless `--all-tools`.",
        "",
        "| Toolset | Default | Tools | What it covers |",
        "|---|---|---|---|",
    ]
    by_toolset: dict[str, list[Any]] = {t.name: [] for t in TOOLSETS}
    for spec in table.values():
        by_toolset.setdefault(spec.endpoint.toolset, []).append(spec.endpoint)
    for t in TOOLSETS:
        lines.append(f"| `{t.name}` | {'yes' if t.default else 'no'} | {len(by_toolset[t.name])} | {t.description} |")
    for t in TOOLSETS:
        eps = by_toolset[t.name]
        if not eps:
            continue
        lines += ["", f"## {t.name}", "", t.description, "",
                  "| Tool | Endpoint | Authority | Idempotency key | Hints | Summary |", "|---|---|---|---|---|---|"]
        for ep in eps:
            variant = f" (`variant={ep.variant}`)" if ep.variant else ""
            lines.append(f"| `{ep.name}` | `{endpoint_label(ep)}`{variant} | {_authority(ep)} | {ep.idempotency} | "
                         f"{_hints(ep)} | {ep.summary.replace('|', '/')} |")
    lines += ["", "## tools/list size", "",
              "What a client loads into its context for a full-scope key (narrower keys see fewer tools): the tool "
              "definitions as compact JSON, input and output schemas included.", "",
              ]
    lines += size_table()
    lines += ["", "## Resources", "", "| URI | Tool it reads |", "|---|---|"]
    lines += [f"| `{d.uri}` | `{ep.name}` |" for d, ep in available_resources()]
    lines += ["", "## Prompts", "", "| Prompt | Arguments | Tools it walks |", "|---|---|---|"]
    for p in prompts.PROMPTS:
        args = ", ".join(f"`{a.name}`" + ("" if a.required else " (optional)") for a in p.arguments)
        walks = ", ".join(f"`{name}`" for name in p.tools if name in table)
        lines.append(f"| `{p.name}` | {args} | {walks} |")
    return "\n".join(lines) + "\n"


def rendered() -> dict[Path, str]:
    return {MANIFEST_PATH: json.dumps(manifest(), indent=2, ensure_ascii=False) + "\n",
            TOOLS_DOC_PATH: tools_markdown(), MCP_DOC_PATH: mcp_markdown(), LISTING_PATH: listing.render(specs()),
            README_PATH: readme_markdown()}


def stale() -> list[Path]:
    return [path for path, text in rendered().items() if not path.exists() or path.read_text() != text]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m server.generate", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report stale files (exit 1 if any)")
    args = parser.parse_args(argv)
    if args.check:
        old = stale()
        for path in old:
            print(f"stale: {path.relative_to(ROOT)} (run `{GENERATE_COMMAND}`)", file=sys.stderr)
        return 1 if old else 0
    for path, text in rendered().items():
        path.write_text(text)
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

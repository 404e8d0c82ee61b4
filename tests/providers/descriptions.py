"""The one request validator of the contract tests (issue 28, item 2): every request an adapter makes under respx
is checked against its network's own machine-readable description, found by host, path template and method.

Descriptions (see tests/providers/contracts/README.md for sources, licenses and dates):
- OpenAPI: X v2 (xdevplatform/xdk), Pinterest v5 (pinterest/api-description), Discord v10 (discord/discord-api-spec),
  kept as faithful extracts under tests/providers/contracts/;
- Google discovery documents (YouTube Data API v3, Business Profile account management and business information),
  read from the installed `google-api-python-client` package;
- Meta Graph API node and edge parameter types, read from the installed `facebook-business` SDK (its generated
  adobjects, checked with the SDK's own `TypeChecker`).

What is checked: the operation exists (unknown path or method fails), the path lies under the description's server,
required query parameters and body are present, no query parameter, body field or form field is unknown, and every
value has the described type and enum. A host no description covers must be listed in UNDESCRIBED with the reason,
so a new network or test host cannot slip past unvalidated.
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import json
import re
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import HTTP
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

import httpx
import pytest
import respx
from jsonschema import Draft202012Validator
from openapi_schema_validator import OAS30Validator, OAS31Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT4, DRAFT202012

from providers.versions import GRAPH

CONTRACTS = Path(__file__).parent / "contracts"

# -- where each host's requests are described ---------------------------------------------------------------------
# host -> (description key, path prefix the description's operations sit under). Test hosts (*.test) stand in for
# the real ones in the contract cases; both map to the same description.
DESCRIBED: dict[str, tuple[str, str]] = {
    "api.x.com": ("x", ""), "api.x.test": ("x", ""), "x.test": ("x", ""),
    "api.pinterest.com": ("pinterest", "/v5"), "pinterest.test": ("pinterest", "/v5"),
    "discord.com": ("discord", "/api/v10"),
    "youtube.googleapis.com": ("youtube", ""), "www.googleapis.com": ("youtube", ""), "yt.test": ("youtube", ""),
    "mybusinessaccountmanagement.googleapis.com": ("mybusinessaccountmanagement", ""),
    "mybusinessbusinessinformation.googleapis.com": ("mybusinessbusinessinformation", ""),
    # the Graph API version the adapters send (providers/versions.py), not a copy of it
    "graph.facebook.com": ("meta", f"/{GRAPH.version}"), "graph.test": ("meta", f"/{GRAPH.version}"),
    "graph-video.facebook.com": ("meta", f"/{GRAPH.version}"), "graph-video.test": ("meta", f"/{GRAPH.version}"),
}
# host -> why its requests have no machine-readable description to check (the case modules cite the reference).
UNDESCRIBED: dict[str, str] = {
    **dict.fromkeys(["api.linkedin.com", "linkedin-api.test", "li.test", "www.linkedin.com", "linkedin-www.test",
                     "linkedin-upload.test", "li-oauth.test"], "LinkedIn publishes no machine-readable description"),
    **dict.fromkeys(["open.tiktokapis.com", "tiktok.test"], "TikTok publishes no machine-readable description"),
    **dict.fromkeys(["api.tumblr.com", "tumblr.test"], "Tumblr publishes no machine-readable description"),
    **dict.fromkeys(["api.telegram.org", "telegram.test", "tg.test"],
                    "the Bot API has no machine-readable description"),
    "pds.test": "Bluesky: the AT Protocol lexicons are not wired here; its adapter is tested against a real PDS",
    **dict.fromkeys(["graph.threads.net", "threads.test"], "the Threads API is not in facebook-business"),
    **dict.fromkeys(["mybusiness.googleapis.com", "gbp.test"],
                    "Business Profile v4 (localPosts) ships no discovery document in google-api-python-client"),
    **dict.fromkeys(["oauth2.googleapis.com", "oauth2.google.test", "oauth2.test"],
                    "Google's OAuth 2.0 token and tokeninfo endpoints"),
    **dict.fromkeys(["rupload.facebook.com", "rupload.test"],
                    "Meta's resumable upload protocol host, not a Graph node or edge"),
    "pinterest-media-upload.test": "the signed storage upload_url that POST /v5/media returned",
    "media.test": "our own media URLs", "testserver": "our own app (httpx ASGITransport)",
    "127.0.0.1": "a real local server (mastodon-mock), not a description",
}
# Paths on a described host that the description leaves out on purpose (OAuth is documented on its own pages).
UNDESCRIBED_PATHS: dict[tuple[str, str], str] = {
    ("x", "/2/oauth2/token"): "X's OAuth 2.0 token endpoint (docs.x.com OAuth 2.0 page, not in the OpenAPI)",
    ("meta", "/oauth/access_token"): "Meta's OAuth token endpoint (Facebook Login docs, not a node or edge)",
    ("meta", "/me/permissions"): "the user's granted permissions (Graph API reference, User/permissions), an edge "
                                 "facebook-business does not describe",
}
# Schemas a description gets wrong in a way no request could satisfy, each read as its documented intent, with why.
# (description key, "METHOD path", query parameter) -> reason.
DESCRIPTION_DEFECTS: dict[tuple[str, str, str], str] = {
    ("pinterest", "GET /pins/{pin_id}/analytics", "metric_types"):
        "its items are `oneOf` two enums (standard and video Pin metric types) that share IMPRESSION, SAVE, "
        "OUTBOUND_CLICK and others, so the shared values (the ones the parameter's description names as valid for "
        "every Pin) match both and fail `oneOf`; read as `anyOf`, the parameter's documented meaning",
}


@dataclass
class Problem(Exception):
    request: str
    reason: str

    def __str__(self) -> str:
        return f"{self.request}: {self.reason}"


# -- request decoding ---------------------------------------------------------------------------------------------
def _content(request: httpx.Request) -> bytes:
    request.read()  # multipart and byte streams are readable synchronously
    return request.content


def _multipart(request: httpx.Request) -> dict[str, list[str | bytes]]:
    ctype = request.headers.get("content-type", "")
    message = BytesParser(policy=HTTP).parsebytes(b"Content-Type: " + ctype.encode() + b"\r\n\r\n" + _content(request))
    out: dict[str, list[str | bytes]] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True)  # bytes for a non-multipart part
        data = payload if isinstance(payload, bytes) else b""
        value: str | bytes = data if part.get_filename() else data.decode()
        out.setdefault(str(name), []).append(value)
    return out


def _body(request: httpx.Request) -> tuple[str | None, Any]:
    """(media type, decoded body) or (None, None) when the request has no body."""
    raw = _content(request)
    if not raw:
        return None, None
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype == "application/json":
        return ctype, json.loads(raw)
    if ctype == "application/x-www-form-urlencoded":
        pairs: dict[str, list[str | bytes]] = {}
        for k, v in parse_qsl(raw.decode(), keep_blank_values=True):
            pairs.setdefault(k, []).append(v)
        return ctype, pairs
    if ctype == "multipart/form-data":
        return ctype, _multipart(request)
    return ctype, raw


def _query(request: httpx.Request) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for k, v in parse_qsl(request.url.query.decode(), keep_blank_values=True):
        out.setdefault(k, []).append(v)
    return out


# -- strings (query, form, multipart) to the types their schemas describe ------------------------------------------
def _coerce(schema: dict[str, Any], values: list[Any]) -> Any:
    """Query, form and multipart values are strings; read them as the schema's type (OpenAPI style `form`)."""
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    if kind == "array":
        items = schema.get("items") or {}
        flat = [p for v in values for p in (v.split(",") if isinstance(v, str) else [v])]
        return [_coerce(items, [v]) for v in flat]
    value = values[-1]
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    if kind == "integer" and re.fullmatch(r"-?\d+", value):
        return int(value)
    if kind == "number" and re.fullmatch(r"-?\d+(\.\d+)?", value):
        return float(value)
    if kind == "boolean" and value in ("true", "false"):
        return value == "true"
    if kind == "object":
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _unknown_keys(validator: Any, registry: Registry, schema: dict[str, Any], data: Any, where: str) -> list[str]:
    """Fields of `data` the schema does not describe. Stricter than JSON Schema on purpose: an object schema that
    lists properties and says nothing of additionalProperties accepts no other key ('known fields')."""
    schema = _resolve(registry, schema)
    mapped = _discriminated(registry, schema, data)
    if mapped is not None and mapped is not schema:
        return _unknown_keys(validator, registry, mapped, data, where)
    if "allOf" in schema:
        merged: dict[str, Any] = {"type": "object", "properties": dict(schema.get("properties") or {})}
        for sub in schema["allOf"]:
            sub = _resolve(registry, sub)
            merged["properties"].update(sub.get("properties") or {})
            if "additionalProperties" in sub:
                merged["additionalProperties"] = sub["additionalProperties"]
        return _unknown_keys(validator, registry, merged, data, where)
    for key in ("oneOf", "anyOf"):
        if key in schema:
            fits = [s for s in schema[key] if validator.evolve(schema=s).is_valid(data)] or schema[key]
            found = [_unknown_keys(validator, registry, s, data, where) for s in fits]
            return min(found, key=len)
    if isinstance(data, dict) and ("properties" in schema or schema.get("type") == "object"):
        props = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        bad = [f"{where}.{k}" for k in data if k not in props and not extra and not (extra is None and not props)]
        for k, v in data.items():
            sub = props.get(k) or (extra if isinstance(extra, dict) else None)
            if sub:
                bad += _unknown_keys(validator, registry, sub, v, f"{where}.{k}")
        return bad
    if isinstance(data, list) and isinstance(schema.get("items"), dict):
        return [b for i, v in enumerate(data) for b in _unknown_keys(validator, registry, schema["items"], v, f"{where}[{i}]")]
    return []


def _discriminated(registry: Registry, schema: dict[str, Any], data: Any) -> dict[str, Any] | None:
    """The schema an OpenAPI discriminator maps the data to (JSON Schema itself ignores discriminators)."""
    found = schema.get("discriminator") if isinstance(schema, dict) else None
    if not isinstance(found, dict) or not isinstance(data, dict):
        return None
    target = (found.get("mapping") or {}).get(str(data.get(found.get("propertyName"))))
    return _lookup(registry, target) if target else None


def _resolve(registry: Registry, schema: dict[str, Any]) -> dict[str, Any]:
    while isinstance(schema, dict) and "$ref" in schema:
        schema = _lookup(registry, schema["$ref"])
    return schema


def _lookup(registry: Registry, ref: str) -> dict[str, Any]:
    return registry.resolver().lookup(ref).contents


# -- one operation, whatever the description's format ---------------------------------------------------------------
@dataclass
class Operation:
    name: str
    pattern: re.Pattern[str]
    params: dict[str, tuple[bool, dict[str, Any]]]  # query parameter -> (required, schema)
    bodies: dict[str, dict[str, Any]]  # media type -> schema (empty: the operation takes no body)
    body_required: bool
    validator: Any  # a jsonschema validator whose registry resolves the description's $refs
    registry: Registry
    extra_query: frozenset[str] = field(default_factory=frozenset)  # parameters every method accepts
    payload_json: bool = False  # multipart as Discord's "Uploading Files" page says: payload_json + files[n]

    def check(self, request: httpx.Request) -> Iterator[str]:
        query = _query(request)
        for name, (required, _) in self.params.items():
            if required and name not in query:
                yield f"required query parameter {name!r} is missing"
        for name, values in query.items():
            if name in self.extra_query:
                continue
            if name not in self.params:
                yield f"query parameter {name!r} is not in the description"
                continue
            yield from self._values(f"query {name}", self.params[name][1], _coerce(self.params[name][1], values))
        ctype, body = _body(request)
        if body is None:
            if self.body_required:
                yield "the description requires a request body"
            return
        if not self.bodies:
            yield "the description takes no request body"
            return
        schema = self.bodies.get(ctype or "") or next(
            (s for t, s in self.bodies.items() if t.endswith("/*") and (ctype or "").startswith(t[:-1])), None)
        if schema is None:
            yield f"content type {ctype!r} is not one of {sorted(self.bodies)}"
            return
        if isinstance(body, bytes):
            return  # a binary upload: the media type is what the description constrains
        if ctype == "multipart/form-data" and self.payload_json:
            body, problems = _payload_json(body)
            yield from problems
        elif ctype in ("application/x-www-form-urlencoded", "multipart/form-data"):
            props = _resolve(self.registry, schema).get("properties") or {}
            body = {k: _coerce(_resolve(self.registry, props.get(k) or {}), v) for k, v in body.items()}
        yield from self._values("body", schema, body)

    def _values(self, where: str, schema: dict[str, Any], value: Any) -> Iterator[str]:
        mapped = _discriminated(self.registry, _resolve(self.registry, schema), value)
        for checked in [schema] + ([mapped] if mapped else []):
            for error in self.validator.evolve(schema=checked).iter_errors(value):
                yield f"{where}{''.join(f'.{p}' for p in error.absolute_path)}: {error.message[:200]}"
        for key in _unknown_keys(self.validator, self.registry, schema, value, where):
            yield f"{key} is not in the description"


def _payload_json(parts: dict[str, list[Any]]) -> tuple[Any, list[str]]:
    """Discord's multipart form (reference, "Uploading Files"): the message as JSON in `payload_json`, each file in
    `files[n]` whose n is the `id` of an entry of the message's `attachments`. The description models the
    multipart body as the message's own fields, so the message is checked against that schema."""
    problems, files = [], set()
    for name in parts:
        found = re.fullmatch(r"files\[(\d+)\]", name)
        if found:
            files.add(found[1])
        elif name != "payload_json":
            problems.append(f"multipart part {name!r} is neither payload_json nor files[n]")
    message = json.loads(parts["payload_json"][-1]) if "payload_json" in parts else {}
    ids = {str(a.get("id")) for a in message.get("attachments") or [] if isinstance(a, dict)}
    if files - ids:
        problems.append(f"files {sorted(files - ids)} have no attachments entry with that id")
    return message, problems


def _template(path: str) -> re.Pattern[str]:
    """An OpenAPI or discovery path template as a regex: {x} is one segment, {+x} (reserved expansion) any."""
    out = re.sub(r"\\\{\\\+[^}]+\\\}", r".+", re.escape(path))
    return re.compile("^" + re.sub(r"\\\{[^}]+\\\}", r"[^/]+", out) + "$")


# -- OpenAPI descriptions -------------------------------------------------------------------------------------------
@functools.cache
def openapi(key: str) -> list[Operation]:
    spec = _rebase(json.loads((CONTRACTS / f"{key}-openapi.json").read_text()), key)
    v31 = spec["openapi"].startswith("3.1")
    resource = Resource.from_contents(spec, default_specification=DRAFT202012 if v31 else DRAFT4)
    registry = Registry().with_resource(f"urn:{key}", resource)
    cls = OAS31Validator if v31 else OAS30Validator
    validator = cls({}, registry=registry)
    ops = []
    for path, item in spec["paths"].items():
        shared = item.get("parameters") or []
        for method, op in item.items():
            if method not in ("get", "post", "put", "patch", "delete"):
                continue
            params = {}
            for p in [*shared, *(op.get("parameters") or [])]:
                p = _lookup(registry, p["$ref"]) if "$ref" in p else p
                if p["in"] == "query":
                    schema = p.get("schema") or {}
                    if (key, f"{method.upper()} {path}", p["name"]) in DESCRIPTION_DEFECTS:
                        schema = _one_of_as_any_of(schema)
                    params[p["name"]] = (bool(p.get("required")), schema)
            body = op.get("requestBody") or {}
            if "$ref" in body:
                body = _lookup(registry, body["$ref"])
            bodies = {t: c.get("schema") or {} for t, c in (body.get("content") or {}).items()}
            ops.append(Operation(f"{method.upper()} {path}", _template(path), params, bodies,
                                 bool(body.get("required")), validator, registry, payload_json=key == "discord"))
            ops[-1].pattern = re.compile(f"{method.upper()} " + ops[-1].pattern.pattern[1:])
    return ops


def _one_of_as_any_of(node: Any) -> Any:
    if isinstance(node, dict):
        return {("anyOf" if k == "oneOf" else k): _one_of_as_any_of(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_one_of_as_any_of(v) for v in node]
    return node


def _rebase(schema: Any, key: str) -> Any:
    """Point the description's local $refs (#/components/...) at its registry entry."""
    if isinstance(schema, dict):
        if isinstance(schema.get("mapping"), dict) and "propertyName" in schema:  # a discriminator
            return {**schema, "mapping": {k: f"urn:{key}{v}" if v.startswith("#") else v
                                          for k, v in schema["mapping"].items()}}
        return {k: (f"urn:{key}{v}" if k == "$ref" and v.startswith("#") else _rebase(v, key))
                for k, v in schema.items()}
    if isinstance(schema, list):
        return [_rebase(v, key) for v in schema]
    return schema


# -- Google discovery documents -------------------------------------------------------------------------------------
def discovery_document(name: str) -> dict[str, Any]:
    """A discovery document as google-api-python-client ships it (read from the installed package)."""
    folder = resources.files("googleapiclient") / "discovery_cache" / "documents"
    return json.loads((folder / f"{name}.json").read_text())


def _json_schema(node: Any) -> Any:
    """Discovery's schema dialect as JSON Schema: `$ref: Name` points into `$defs`, `type: any` is any value,
    64-bit integers travel as strings (format int64/uint64)."""
    if isinstance(node, list):
        return [_json_schema(v) for v in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for k, v in node.items():
        if k == "$ref":
            out[k] = f"urn:defs#/$defs/{v}"
        elif k == "type" and v == "any":
            continue
        elif k in ("properties", "$defs"):
            out[k] = {n: _json_schema(s) for n, s in v.items()}
        elif k in ("items", "additionalProperties"):
            out[k] = _json_schema(v)
        elif k == "enum" or k == "type":
            out[k] = v
    if node.get("type") == "integer" and node.get("format") in ("int64", "uint64"):
        out["type"] = ["string", "integer"]
    if node.get("repeated"):
        out = {"type": "array", "items": out}
    return out


def _discovery_methods(resource: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield from (resource.get("methods") or {}).values()
    for sub in (resource.get("resources") or {}).values():
        yield from _discovery_methods(sub)


@functools.cache
def discovery(name: str) -> list[Operation]:
    doc = discovery_document(f"{name}.v3" if name == "youtube" else f"{name}.v1")
    defs = {"$defs": {n: _json_schema(s) for n, s in doc["schemas"].items()}}
    registry = Registry().with_resource("urn:defs", Resource.from_contents(defs, default_specification=DRAFT202012))
    validator = Draft202012Validator({}, registry=registry)
    common = frozenset(doc.get("parameters") or {})
    base = "/" + doc["servicePath"].strip("/")
    ops = []
    for m in _discovery_methods(doc):
        params = {n: (bool(p.get("required")), _json_schema(p)) for n, p in (m.get("parameters") or {}).items()
                  if p.get("location") == "query"}
        body = {"$ref": f"urn:defs#/$defs/{m['request']['$ref']}"} if m.get("request") else None
        paths = [f"{base.rstrip('/')}/{m.get('flatPath') or m['path']}"]
        accept = list((m.get("mediaUpload") or {}).get("accept") or [])
        paths += [p["path"] for p in ((m.get("mediaUpload") or {}).get("protocols") or {}).values()]
        for path in paths:
            upload = path != paths[0]
            bodies = ({"application/json": body} if body else {}) | ({t: {} for t in accept} if upload else {})
            op = Operation(f"{m['httpMethod']} {path} ({m['id']})", _template(path), params, bodies, False,
                           validator, registry, extra_query=common)
            op.pattern = re.compile(f"{m['httpMethod']} " + op.pattern.pattern[1:])
            ops.append(op)
    return ops


# -- Meta: the facebook-business SDK's generated node and edge parameter types ----------------------------------------
# Graph parameters every read accepts (field selection and cursor pagination; Graph API "Using the Graph API" and
# "Paginated results" pages), not repeated in each SDK method.
GRAPH_COMMON = frozenset({"fields", "limit", "after", "before", "since", "until"})
# (method, edge) -> (SDK module, class, method). The node a path's id names is implied by the edge.
META_EDGES: dict[tuple[str, str], tuple[str, str, str]] = {
    ("POST", "media"): ("iguser", "IGUser", "create_media"),
    ("POST", "media_publish"): ("iguser", "IGUser", "create_media_publish"),
    ("GET", "media"): ("iguser", "IGUser", "get_media"),
    ("POST", "feed"): ("page", "Page", "create_feed"),
    ("POST", "photos"): ("page", "Page", "create_photo"),
    ("GET", "posts"): ("page", "Page", "get_posts"),
    ("GET", "published_posts"): ("page", "Page", "get_published_posts"),
    ("POST", "video_reels"): ("page", "Page", "create_video_reel"),
    ("POST", "videos"): ("page", "Page", "create_video"),
    ("GET", "accounts"): ("user", "User", "get_accounts"),
    ("GET", "insights"): ("igmedia", "IGMedia", "get_insights"),  # and a Page post's: META_EDGES_ALSO
}
# Edges several described nodes share: a request is accepted when one of them accepts it (an IG media's
# insights, IGMedia.get_insights, or a Page post's, PagePost.get_insights).
META_EDGES_ALSO: dict[tuple[str, str], tuple[tuple[str, str, str], ...]] = {
    ("GET", "insights"): (("pagepost", "PagePost", "get_insights"),),
}
# Parameter types the SDK generates wrongly, each read as the reference documents it, with why.
# (class, method, parameter) -> (type read, reason).
META_TYPE_DEFECTS: dict[tuple[str, str, str], tuple[str, str]] = {
    ("PagePost", "get_insights", "metric"): (
        "list<string>", "the SDK types it list<Object> (a list of maps), while the Page Post Insights reference "
        "takes a comma-separated list of metric names, as every example sends (metric=post_media_view)"),
}
# Nodes our adapters read by id: an IG media container, an IG media, a Page post, a Page video, an IG user, a Page.
META_NODES = (("shadowigmediabuilder", "ShadowIGMediaBuilder"), ("igmedia", "IGMedia"), ("pagepost", "PagePost"),
              ("advideo", "AdVideo"), ("iguser", "IGUser"), ("page", "Page"))


def _sdk_class(module: str, name: str) -> Any:
    return getattr(importlib.import_module(f"facebook_business.adobjects.{module}"), name)


@functools.cache
def meta_edge(module: str, cls_name: str, method: str) -> tuple[dict[str, str], dict[str, list[Any]], Any]:
    """(param_types, enums, target class) of one SDK edge method, read from its source: the SDK generates each
    method with literal `param_types` and `enums` maps that it hands to its TypeChecker at call time."""
    cls = _sdk_class(module, cls_name)
    tree = ast.parse(textwrap.dedent(inspect.getsource(getattr(cls, method))))
    types: dict[str, str] = {}
    enums: dict[str, list[Any]] = {}
    target = None
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            if node.targets[0].id == "param_types":
                types = ast.literal_eval(node.value)
            elif node.targets[0].id == "enums" and isinstance(node.value, ast.Dict):
                for k, v in zip(node.value.keys, node.value.values, strict=True):
                    assert k is not None  # no ** in the SDK's literal map
                    enums[ast.literal_eval(k)] = ast.literal_eval(v) if isinstance(v, ast.List) else _enum_values(v)
        if isinstance(node, ast.keyword) and node.arg == "target_class" and isinstance(node.value, ast.Name):
            target = _sdk_class(_module_of(tree, node.value.id) or module, node.value.id)
    return types, enums, target


def _module_of(tree: ast.AST, name: str) -> str | None:
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and any(a.name == name for a in node.names):
            return (node.module or "").rsplit(".", 1)[-1]
    return None


def _type_of(checker: Any, name: str) -> str:
    kind = checker.get_type(name)
    assert isinstance(kind, str), name  # a valid key has a type
    return kind


def _enum_values(expr: ast.AST) -> list[Any]:
    """`Cls.Enum.__dict__.values()` in the SDK's source: the enum class's public constant values."""
    chain: list[str] = []
    node = expr.func.value if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) else expr  # .values()
    node = node.value if isinstance(node, ast.Attribute) and node.attr == "__dict__" else node
    while isinstance(node, ast.Attribute):
        chain.insert(0, node.attr)
        node = node.value
    assert isinstance(node, ast.Name)
    obj = _sdk_class(node.id.lower(), node.id)
    for part in chain:
        obj = getattr(obj, part)
    return [v for k, v in vars(obj).items() if not k.startswith("_")]


def _fields_of(cls: Any) -> set[str]:
    """A node's fields and its edges (`fields=picture{url}` expands the `picture` edge, SDK method get_picture)."""
    edges = {n[4:] for n in dir(cls) if n.startswith("get_") and n not in ("get_id", "get_endpoint")}
    return {v for k, v in vars(cls.Field).items() if not k.startswith("_")} | edges | {"id"}


def _field_names(value: str) -> list[str]:
    """Top-level names of a Graph `fields` selection such as `id,picture{url},name.limit(5)`."""
    depth, names, current = 0, [], ""
    for ch in value:
        depth += 1 if ch in "{(" else -1 if ch in "})" else 0
        if ch == "," and depth == 0:
            names.append(current)
            current = ""
        elif depth == 0 and ch not in "})":
            current += ch
    return [re.split(r"[.{(]", n)[0] for n in [*names, current] if n]


def _graph_value(kind: str, value: str) -> Any:
    """A form or query string as the SDK type it stands for (lists and maps travel JSON-encoded or comma-joined)."""
    if kind.startswith("list") or kind in ("map", "Object") or kind.startswith("map"):
        try:
            return json.loads(value)
        except ValueError:
            return value.split(",") if kind.startswith("list") else value
    return value


def check_meta(request: httpx.Request, path: str) -> Iterator[str]:
    parts = [p for p in path.split("/") if p]
    query = _query(request)
    _, form = _body(request)
    params: dict[str, Any] = {}
    for name, values in {**query, **(form or {})}.items():
        indexed = re.fullmatch(r"(\w+)\[(\d+)\]", name)  # Graph's array syntax: attached_media[0]=...
        if indexed:
            params.setdefault(indexed[1], []).append(_graph_value("Object", values[-1]))
        else:
            params[name] = values[-1]
    if len(parts) == 1:  # a node read by id: every selected field must be a field of a node our adapters read
        if request.method == "DELETE":  # deleting a Page post or video: the SDK's PagePost/AdVideo api_delete
            yield from (f"parameter {name!r} is not a delete parameter" for name in params)
            return
        if request.method != "GET":
            yield f"{request.method} on a node is not an operation of the SDK's described nodes"
            return
        known = set().union(*(_fields_of(_sdk_class(m, c)) for m, c in META_NODES))
        for name in _field_names(params.pop("fields", "")):
            if name not in known:
                yield f"field {name!r} is not a field of {', '.join(c for _, c in META_NODES)}"
        for name in set(params) - GRAPH_COMMON:
            yield f"parameter {name!r} is not a node read parameter"
        return
    edge = META_EDGES.get((request.method, parts[-1])) if len(parts) == 2 else None
    if edge is None:
        yield f"{request.method} /{{id}}/{'/'.join(parts[1:])} is not an edge of the SDK's described nodes"
        return
    found = [list(_check_edge(e, params)) for e in (edge, *META_EDGES_ALSO.get((request.method, parts[-1]), ()))]
    yield from min(found, key=len)


def _check_edge(edge: tuple[str, str, str], params: dict[str, Any]) -> Iterator[str]:
    from facebook_business.typechecker import TypeChecker

    types, enums, target = meta_edge(*edge)
    types = {**types, **{param: kind for (cls, method, param), (kind, _) in META_TYPE_DEFECTS.items()
                         if (cls, method) == edge[1:]}}
    checker = TypeChecker(types, enums)
    if target is not None and "fields" in params:
        for name in _field_names(params["fields"]):
            if name not in _fields_of(target):
                yield f"field {name!r} is not a field of {target.__name__}"
    for name, value in params.items():
        if name in GRAPH_COMMON and name not in types:
            continue
        if not checker.is_valid_key(name):
            yield f"parameter {name!r} is not a parameter of {edge[1]}.{edge[2]}"
        elif not checker.is_valid_pair(name, value if isinstance(value, list) else
                                       _graph_value(_type_of(checker, name), value)):
            yield f"parameter {name!r}={str(value)[:60]!r} is not a {checker.get_type(name)}"


# -- the entry point ------------------------------------------------------------------------------------------------
def problems(request: httpx.Request) -> list[str]:
    """Why the description refuses this request (empty: accepted, or a host documented as undescribed)."""
    url = urlsplit(str(request.url))
    host = url.hostname or ""
    if host in UNDESCRIBED:
        return []
    if host not in DESCRIBED:
        return [f"host {host!r} is neither described (DESCRIBED) nor listed as undescribed (UNDESCRIBED)"]
    key, prefix = DESCRIBED[host]
    path = unquote(url.path)
    if not path.startswith(prefix + "/"):
        return [f"path {path!r} is not under the description's server path {prefix!r}"]
    path = path[len(prefix):]
    if (key, path) in UNDESCRIBED_PATHS:
        return []
    if key == "meta":
        return list(check_meta(request, path))
    if key in ("youtube", "mybusinessaccountmanagement", "mybusinessbusinessinformation"):
        if "upload_id" in _query(request):
            return []  # the resumable session URI Google returned: the upload protocol, not a method
        ops = discovery(key)
    else:
        ops = openapi(key)
    found = [op for op in ops if op.pattern.match(f"{request.method} {path}")]
    if not found:
        return [f"{request.method} {path} is not an operation of the {key} description"]
    # the most specific template wins (a literal segment over a parameter)
    op = max(found, key=lambda o: o.pattern.pattern.count("/") * 10 - o.pattern.pattern.count("[^/]+"))
    return [f"{op.name}: {p}" for p in op.check(request)]


class Captured:
    """Every request respx answered during one test, validated at the end of the test."""

    def __init__(self) -> None:
        self.requests: list[httpx.Request] = []

    def check(self) -> None:
        found = [f"{r.method} {r.url.copy_with(query=None)}: {p}" for r in self.requests for p in problems(r)]
        self.requests.clear()
        if found:
            raise AssertionError("requests the networks' descriptions refuse:\n  " + "\n  ".join(found))


@pytest.fixture(autouse=True)
def described_requests(monkeypatch: pytest.MonkeyPatch) -> Iterator[Captured]:
    """Autouse in every contract test package: wraps respx's public `Router.record` (called once per request any
    router answers) so no case can forget the validation."""
    captured = Captured()
    record = respx.Router.record

    def recording(self: respx.Router, request: httpx.Request, **kwargs: Any) -> None:
        captured.requests.append(request)
        record(self, request, **kwargs)

    monkeypatch.setattr(respx.Router, "record", recording)
    yield captured
    captured.check()

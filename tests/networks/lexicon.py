"""A small validator of XRPC queries and answers against copied AT Protocol lexicons (tests/networks/lexicons/,
https://atproto.com/specs/lexicon): the query's parameters against `parameters` (required present, none unknown,
types and array bounds) and the answer against `output.schema`, following refs across the copied lexicons.
Lexicon objects are open (unknown properties are allowed, as the spec says); a ref to a definition that was not
copied fails when a value is present, so nothing is taken as valid unseen."""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

from httpx import Request

HERE = Path(__file__).parent / "lexicons"
FORMATS = {
    "at-uri": re.compile(r"^at://[^/\s]{1,300}(/[a-zA-Z0-9.-]{1,317}(/[A-Za-z0-9._:~-]{1,512})?)?$"),
    "did": re.compile(r"^did:[a-z]+:[a-zA-Z0-9._:%-]{1,2000}$"),
    "handle": re.compile(r"^([a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?\.)+[a-zA-Z]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?$"),
    "cid": re.compile(r"^[A-Za-z0-9+]{8,}$"),
    "datetime": re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$"),
    "uri": re.compile(r"^[a-z][a-z0-9+.-]*:\S+$"),
}


class Invalid(AssertionError):
    pass


@cache
def lexicon(nsid: str) -> dict[str, Any]:
    path = HERE / f"{nsid}.json"
    if not path.exists():
        raise Invalid(f"lexicon {nsid} is not copied into tests/networks/lexicons")
    return json.loads(path.read_text())


def _resolve(ref: str, current: str) -> tuple[dict[str, Any], str]:
    nsid, _, name = ref.partition("#")
    nsid = nsid or current
    defs = lexicon(nsid)["defs"]
    if (name or "main") not in defs:
        raise Invalid(f"{nsid}#{name or 'main'} is not copied into tests/networks/lexicons")
    return defs[name or "main"], nsid


def check(value: Any, schema: dict[str, Any], nsid: str, where: str = "$") -> None:
    kind = schema["type"]
    if kind == "ref":
        target, home = _resolve(schema["ref"], nsid)
        return check(value, target, home, where)
    if kind == "union":
        if not isinstance(value, dict) or not isinstance(value.get("$type"), str):
            raise Invalid(f"{where}: a union value needs $type")
        refs = {f"{nsid}{r}" if r.startswith("#") else r.removesuffix("#main") for r in schema["refs"]}
        wanted = value["$type"].removesuffix("#main")
        if wanted not in refs and schema.get("closed"):
            raise Invalid(f"{where}: $type {wanted} is not one of {sorted(refs)}")
        target, home = _resolve(wanted, nsid)
        return check(value, target, home, where)
    if kind == "unknown":
        if not isinstance(value, dict):
            raise Invalid(f"{where}: unknown must be an object")
        return None
    if kind == "object":
        if not isinstance(value, dict):
            raise Invalid(f"{where}: not an object")
        nullable = set(schema.get("nullable", ()))
        for name in schema.get("required", ()):
            if name not in value:
                raise Invalid(f"{where}: required {name} missing")
        for name, sub in schema.get("properties", {}).items():
            if name in value and not (value[name] is None and name in nullable):
                check(value[name], sub, nsid, f"{where}.{name}")
        return None
    if kind == "array":
        if not isinstance(value, list):
            raise Invalid(f"{where}: not an array")
        if len(value) > schema.get("maxLength", len(value)) or len(value) < schema.get("minLength", 0):
            raise Invalid(f"{where}: {len(value)} items, outside the lexicon's bounds")
        for index, item in enumerate(value):
            check(item, schema["items"], nsid, f"{where}[{index}]")
        return None
    if kind == "integer":
        if not isinstance(value, int) or isinstance(value, bool):
            raise Invalid(f"{where}: not an integer")
        if value < schema.get("minimum", value) or value > schema.get("maximum", value):
            raise Invalid(f"{where}: {value} outside the lexicon's bounds")
        return None
    if kind == "boolean":
        if not isinstance(value, bool):
            raise Invalid(f"{where}: not a boolean")
        return None
    if kind == "string":
        if not isinstance(value, str):
            raise Invalid(f"{where}: not a string")
        if len(value.encode()) > schema.get("maxLength", len(value.encode())):
            raise Invalid(f"{where}: longer than maxLength")
        fmt = schema.get("format")
        if fmt is not None and not FORMATS[fmt].match(value):
            raise Invalid(f"{where}: not a valid {fmt}: {value[:80]}")
        if "enum" in schema and value not in schema["enum"]:
            raise Invalid(f"{where}: {value} not in enum")
        return None
    raise Invalid(f"{where}: lexicon type {kind} not handled by this validator")


def check_query(request: Request, nsid: str) -> None:
    """The request is a GET of this query with parameters the lexicon declares, of their types."""
    main = lexicon(nsid)["defs"]["main"]
    assert main["type"] == "query", nsid
    if request.method != "GET" or request.url.path != f"/xrpc/{nsid}":
        raise Invalid(f"{request.method} {request.url.path} is not the query {nsid}")
    params = main.get("parameters", {"properties": {}})
    declared = params["properties"]
    sent = request.url.params
    unknown = set(sent) - set(declared)
    if unknown:
        raise Invalid(f"parameters {sorted(unknown)} are not in {nsid}")
    for name in params.get("required", ()):
        if name not in sent:
            raise Invalid(f"required parameter {name} missing")
    for name, schema in declared.items():
        values = sent.get_list(name)
        if not values:
            continue
        if schema["type"] == "array":
            check(values, schema, nsid, name)
        elif len(values) > 1:
            raise Invalid(f"{name} sent {len(values)} times")
        elif schema["type"] == "integer":
            check(int(values[0]), schema, nsid, name)
        elif schema["type"] == "boolean":
            if values[0] not in ("true", "false"):
                raise Invalid(f"{name}: not a boolean")
        else:
            check(values[0], schema, nsid, name)


def check_output(body: Any, nsid: str) -> None:
    output = lexicon(nsid)["defs"]["main"]["output"]
    assert output["encoding"] == "application/json"
    check(body, output["schema"], nsid)

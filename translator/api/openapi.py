"""The API's documentation, as the edge serves it: `/docs.json`, an OpenAPI document of every route,
and `/`, the page that shows it.

BentoML documents its own routes (`/translation`, from the service's pydantic models, and the
probes) and nothing mounted beside them (#50: 5 of 40+ routes; no security scheme, so with keys on
the page could only get 401; BentoML's 400 schema said `detail` was a string, where the answer
carries pydantic's list). Its document is completed here from the declarations the edge itself
uses: every route of the app (translator/api/routes.py), each method; which API it belongs to and
how that API takes its key and shapes its errors (translator/api/access.py, the APIs' edge
requests); whether it is public; and what it takes and answers (translator/api/operations.py).
Security is declared where the server asks for keys, so that a client (or the page's "Authorize")
knows what to send, and not where it does not.

BentoML's page loads Google Tag Manager and shields.io badges into the reader's browser; people
self-host a translator so that their text stays with them. The page here is BentoML's Swagger UI
files (served from its package, `/static_content/`) with a page and an initializer of our own
(translator/ui/static/docs.html, docs.js): no request leaves the server's origin.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from translator.api import access, deepl, libretranslate
from translator.api.deepl_codes import target_codes, to_deepl
from translator.api.operations import Codes, Operation, operation
from translator.contract import limits

Schema = dict[str, Any]

TITLE = "M2M100 translation service"
DESCRIPTION = (
    "Translation with an M2M100-family model, batched across concurrent requests. Three APIs on one "
    "server: the native one (`POST /translation`, documents, glossaries), LibreTranslate's (under "
    "`/libretranslate/`) and DeepL's (v2 and v3, at the root and under `/deepl/`). Errors are JSON "
    "objects naming the field and the problem, in each API's own shape."
)
TAGS = {"native": "Native API", "libretranslate": "LibreTranslate API", "deepl": "DeepL API", "page": "Page"}
_SCHEMES = {
    "bearer": {"type": "http", "scheme": "bearer", "description": "`Authorization: Bearer KEY`"},
    "libretranslateApiKey": {"type": "apiKey", "in": "query", "name": "api_key", "description": "or in the body"},
    "deeplAuthKey": {
        "type": "apiKey",
        "in": "header",
        "name": "Authorization",
        "description": "`Authorization: DeepL-Auth-Key KEY`",
    },
    "deeplAuthKeyParameter": {"type": "apiKey", "in": "query", "name": "auth_key", "description": "or in the body"},
}
_SECURITY: dict[str, list[dict[str, list[str]]]] = {
    "native": [{"bearer": []}],
    "libretranslate": [{"libretranslateApiKey": []}, {"bearer": []}],
    "deepl": [{"deeplAuthKey": []}, {"deeplAuthKeyParameter": []}, {"bearer": []}],
}
# Each API's error body (translator/contract/errors.py; LibreTranslate's and DeepL's shapes).
_ERRORS: dict[str, Schema] = {
    "NativeError": {
        "type": "object",
        "required": ["error"],
        "properties": {
            "error": {"type": "string", "description": "what is wrong, naming the field"},
            "field": {"type": "string"},
            "limit": {"type": "number"},
            "detail": {"description": "pydantic's errors, for a body that does not validate"},
        },
    },
    "LibreTranslateError": {"type": "object", "required": ["error"], "properties": {"error": {"type": "string"}}},
    "DeepLError": {"type": "object", "required": ["message"], "properties": {"message": {"type": "string"}}},
}
_ERROR_OF = {"native": "NativeError", "libretranslate": "LibreTranslateError", "deepl": "DeepLError"}
_REASONS = {
    400: "Bad request: the body or a parameter, named",
    401: "No API key (keys are on)",
    403: "The API key is not accepted (or, DeepL's and LibreTranslate's, none was sent)",
    404: "Not found",
    408: "The body did not arrive in time",
    409: "Not done yet",
    413: f"Too large: more than {limits.MAX_RECORDS_PER_REQUEST} texts, or too many characters or bytes",
    415: "A media type this route does not take",
    429: "Too many requests in flight (Retry-After)",
    503: "Unavailable or overloaded (Retry-After)",
    504: "Not answered within the request's deadline",
}


@dataclass(frozen=True)
class Docs:
    """What the documentation is made from: the app's routes, the model's codes, whether keys are on."""

    routes: Iterable[Any]
    languages: Callable[[], list[str]]
    keys_on: Callable[[], bool]

    def codes(self) -> Codes:
        languages = sorted(self.languages())
        return Codes(languages, sorted({to_deepl(code) for code in languages}), target_codes(languages))


def api_of(path: str) -> access.KeyRule:
    """The API a path belongs to, as the edge decides it (translator/api/middleware.py)."""
    scope = {"type": "http", "path": path, "method": "GET", "headers": []}
    found = libretranslate.edge_request(scope) or deepl.edge_request(scope)
    return found.keys if found is not None else access.NATIVE


def document(bentoml: Schema, docs: Docs) -> Schema:
    """BentoML's document of its routes, completed with every route of the app."""
    out = copy.deepcopy(bentoml)
    # 3.1: its schemas are JSON Schema's, as pydantic writes them (`{"type": "null"}` in BentoML's
    # schemas of the models is not 3.0's, where BentoML's document said 3.0.2).
    out["openapi"] = "3.1.0"
    codes, keys_on = docs.codes(), docs.keys_on()
    out["info"] = {"title": TITLE, "version": str(out.get("info", {}).get("version", "")), "description": DESCRIPTION}
    out["tags"] = [*out.get("tags", []), *({"name": name} for name in TAGS.values())]
    components = out.setdefault("components", {})
    components.setdefault("schemas", {}).update(_ERRORS)
    if keys_on:
        components["securitySchemes"] = _SCHEMES
    translation = out["paths"]["/translation"]["post"]
    translation["tags"] = [TAGS["native"]]
    # The contract says a code from GET /languages (its aliases are taken too, not listed).
    payload = components.get("schemas", {}).get("Payload", {}).get("properties", {})
    if "fromLang" in payload and "toLang" in payload:
        payload["fromLang"] = {**payload["fromLang"], "enum": ["auto", *codes.languages]}
        payload["toLang"] = {**payload["toLang"], "enum": codes.languages}
    translation["responses"] = {"200": translation["responses"]["200"], **_errors("native", "POST", keys_on, True)}
    methods_of = {route.path_format: set(route.methods or ()) for route in docs.routes}
    for path, methods in _routes(docs.routes):
        item = out["paths"].setdefault(path, {})
        if names := _path_parameters(path):  # the path's, for each of its operations
            item["parameters"] = [
                {"name": name, "in": "path", "required": True, "schema": {"type": "string"}} for name in names
            ]
        for method in methods:
            declared = operation(method, path)
            if declared is None:
                raise KeyError(f"{method} {path}: no declaration in translator/api/operations.py")
            item[method.lower()] = _operation(method, path, declared, codes, keys_on)
        if "OPTIONS" in methods_of[path]:
            item["options"] = {
                "summary": "CORS preflight",
                "tags": [TAGS["libretranslate"]],
                "security": [],
                "responses": {"204": {"description": "Allowed"}},
            }
    return out


def _routes(routes: Iterable[Any]) -> list[tuple[str, list[str]]]:
    """(path as OpenAPI writes it, its methods) of each route; HEAD is GET's, OPTIONS documented apart."""
    out = []
    for route in routes:
        methods = sorted(m for m in (route.methods or ()) if m not in ("HEAD", "OPTIONS"))
        if methods:
            out.append((route.path_format, methods))
    return out


def _operation(method: str, path: str, declared: Operation, codes: Codes, keys_on: bool) -> Schema:
    api = "page" if path.startswith("/ui") else api_of(path).api
    public = access.is_public(method, path)
    item: Schema = {
        "summary": declared.summary,
        "operationId": _operation_id(method, path),
        "tags": [TAGS[api]],
    }
    if declared.query is not None:
        item["parameters"] = [
            {"name": name, "in": "query", "schema": schema, "required": name in declared.query_required}
            for name, schema in declared.query(codes).items()
        ]
    if declared.body is not None:
        item["requestBody"] = _body(declared, codes)
    if keys_on:
        item["security"] = [] if public else _SECURITY.get(api, [])
    success: Schema = {"description": declared.summary}
    if declared.answer is not None:
        success["content"] = {declared.answer_type: {"schema": declared.answer}}
    shape = "native" if api == "page" else api
    item["responses"] = {
        str(declared.status): success,
        **_errors(shape, method, keys_on and not public, declared.body is not None, declared.errors),
    }
    if declared.query is not None:
        # A request line longer than the HTTP server reads (a long text in a URL) is its 400, in
        # text/plain, before any route: POST takes the same parameters in a body.
        item["responses"]["400"]["content"]["text/plain"] = {"schema": {"type": "string"}}
    return item


def _operation_id(method: str, path: str) -> str:
    """`get_v2_glossaries_glossary_id`; a trailing slash is a path of its own (`/ui/`: `get_ui_`)."""
    name = path[1:].replace("{", "").replace("}", "")
    return f"{method.lower()}_{name.replace('/', '_').replace('-', '_').replace('.', '_')}"


def _path_parameters(path: str) -> list[str]:
    return [part[1:-1] for part in path.split("/") if part.startswith("{") and part.endswith("}")]


def _body(declared: Operation, codes: Codes) -> Schema:
    assert declared.body is not None
    schema = declared.body(codes)
    if declared.upload:
        upload = copy.deepcopy(schema)
        upload["properties"]["file"] = {"type": "string", "format": "binary"}
        upload["required"] = ["file", *upload.get("required", [])]
        return {"required": True, "content": {"multipart/form-data": {"schema": upload}}}
    content: Schema = {"application/json": {"schema": schema}}
    if not _nested(schema):  # a URL-encoded form holds flat fields (DeepL's `a[0].b` lists aside)
        content["application/x-www-form-urlencoded"] = {"schema": schema}
    return {"required": bool(schema.get("required")), "content": content}


def _nested(schema: Schema) -> bool:
    return any(
        p.get("type") == "array" and p.get("items", {}).get("type") == "object"
        for p in schema.get("properties", {}).values()
    )


def _errors(api: str, method: str, secured: bool, body: bool, extra: tuple[int, ...] = ()) -> Schema:
    statuses = {400, 404, 413, 429, 503, *extra}
    if secured:
        statuses |= {401, 403} if api == "native" else {403}
    if body:
        statuses |= {408, 415}
    if api == "native" and method == "POST":
        statuses.add(504)
    reference = {"$ref": f"#/components/schemas/{_ERROR_OF[api]}"}
    return {
        str(status): {"description": _REASONS[status], "content": {"application/json": {"schema": reference}}}
        for status in sorted(statuses)
    }


def completed(body: bytes, docs: Docs) -> bytes:
    """BentoML's `/docs.json` answer, completed."""
    return json.dumps(document(json.loads(body), docs)).encode()

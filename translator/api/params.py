"""A request's parameters, read one way for every API of this server (LibreTranslate's and DeepL's
routes, their keys and documents): the query string, then the body, a JSON object, a URL-encoded
form or a multipart form, with the same limits whatever the body's kind.

- A form holds up to `MAX_FORM_FIELDS` fields: room for the 1,024 texts a request may carry
  (limits.MAX_RECORDS_PER_REQUEST) and the options beside them. Starlette's default, 1,000, refused
  1,000 texts sent as a form with a 400 where the JSON body took 1,024 (#50); past the bound, a 413
  names it, as too many records in JSON are.
- DeepL's clients send lists of objects as fields `name[index].key` (deepl-node's v3 glossaries:
  `dictionaries[0].source_lang=en&dictionaries[0].entries=...`, where deepl-python sends JSON);
  they are read as the list the JSON body would hold, `{"dictionaries": [{"source_lang": "en", ...}]}`.
- Read once a request: the edge reads the key from them before the route runs (translator/api/
  middleware.py), and the route reads the same parameters, not the body again.
"""

from __future__ import annotations

import json
import re
from typing import Any

from translator.contract import limits
from translator.contract.errors import InvalidRequest, PayloadTooLarge

FORM_TYPES = frozenset({"application/x-www-form-urlencoded", "multipart/form-data"})
# The texts of one request, and as many fields again for options and lists of objects.
MAX_FORM_FIELDS = 2 * limits.MAX_RECORDS_PER_REQUEST
# Where a request's parameters are kept once read (in its ASGI scope, which the edge and the route share).
_SCOPE_KEY = "translator.params"
_INDEXED = re.compile(r"^(?P<name>[A-Za-z_][\w-]*)\[(?P<index>\d{1,4})\]\.(?P<key>[A-Za-z_][\w-]*)$")


def media_type(headers: Any) -> str:
    return str(headers.get("content-type", "")).split(";")[0].strip().lower()


async def read_params(request: Any) -> dict[str, Any]:
    """The request's parameters: the query string, then the body (JSON object or form); a name
    given several times is a list of its values."""
    scope = request.scope
    if _SCOPE_KEY in scope:
        return dict(scope[_SCOPE_KEY])
    params: dict[str, Any] = {}
    for key in request.query_params:
        values = request.query_params.getlist(key)
        params[key] = values[0] if len(values) == 1 else values
    if media_type(request.headers) in FORM_TYPES:
        params.update(await _form(request))
    else:
        body = await request.body()
        if body.strip():
            try:
                data = json.loads(body)
            except (ValueError, RecursionError) as exc:  # RecursionError: nested too deep to be a request
                raise InvalidRequest(f"Invalid request: the body is not valid JSON ({str(exc)[:200]})") from exc
            if not isinstance(data, dict):
                raise InvalidRequest("Invalid request: the JSON body must be an object")
            params.update(data)
    scope[_SCOPE_KEY] = params
    return dict(params)


async def _form(request: Any) -> dict[str, Any]:
    try:
        form = await request.form(
            max_fields=MAX_FORM_FIELDS, max_files=MAX_FORM_FIELDS, max_part_size=limits.MAX_BODY_BYTES
        )
    except Exception as exc:  # malformed multipart: python-multipart's and Starlette's errors
        if "Too many" in str(exc):
            raise PayloadTooLarge("form fields", MAX_FORM_FIELDS) from exc
        raise InvalidRequest(f"Invalid request: the form could not be read ({exc})") from exc
    params: dict[str, Any] = {}
    for key in form:
        values = [v for v in form.getlist(key) if isinstance(v, str)]
        if values:
            params[key] = values[0] if len(values) == 1 else values
    return fold_indexed(params)


def fold_indexed(params: dict[str, Any]) -> dict[str, Any]:
    """`name[i].key` fields as `name`: a list of objects, in index order (0, 1, ... without a gap)."""
    lists: dict[str, dict[int, dict[str, Any]]] = {}
    out: dict[str, Any] = {}
    for field, value in params.items():
        match = _INDEXED.match(field)
        if match is None:
            out[field] = value
            continue
        lists.setdefault(match["name"], {}).setdefault(int(match["index"]), {})[match["key"]] = value
    for name, items in lists.items():
        if name in out:
            raise InvalidRequest(f"Value for '{name}' not supported: given both whole and as {name}[i] fields.")
        if sorted(items) != list(range(len(items))):
            missing = min(set(range(len(items))) - set(items))
            raise InvalidRequest(f"Value for '{name}' not supported: {name}[{missing}] is missing.")
        out[name] = [items[index] for index in range(len(items))]
    return out

"""DeepL's v2 API (#33): what DeepL's clients (deepl-python, Weblate, zotero-pdf-translate) send, on
this server's pipeline.

It answers at the root as api.deepl.com does (`/v2/translate`...: a client's base URL is the host,
`http://HOST:9527`) and under `/deepl/` (`http://HOST:9527/deepl/`). deepl-python urljoins its paths
to the base URL, so `http://HOST:9527/deepl` without the slash reaches the root's: both work.
`POST v2/translate` takes JSON, a form or the
query string, as DeepL documents them, and becomes one `POST /translation` payload through the same
handler (translator/api/handler.py): the same admission, scheduler, cache and glossaries. DeepL's
codes are mapped in translator/api/deepl_codes.py. What the model cannot honour is accepted and has
no effect (docs/api.md lists it): formality, split_sentences, preserve_formatting, context,
outline_detection, model_type, splitting and non-splitting tags.

Errors are DeepL's: `{"message": ...}` with 400, 403 (no key or a wrong one), 404, 413, 429 and 503
with Retry-After; a record the model fails on is a 400, never a 500.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from translator.api.auth import api_keys, keys_problem
from translator.api.deepl_codes import target_codes, to_deepl, to_iso
from translator.api.disconnect import CallerGone
from translator.api.glossaries import check_pair, found_or_deleted
from translator.api.glossary_store import new_glossary
from translator.api.libretranslate import FORM_TYPES, EdgeRequest, language_name, read_params
from translator.contract.errors import (
    ClientClosed,
    Forbidden,
    InvalidRequest,
    TranslationError,
    validation_message,
)
from translator.contract.glossary import MAX_TERM_CHARS, GlossaryEntry, entries_map
from translator.contract.schemas import Payload, Record
from translator.text.langdetect import AUTO, UNDETERMINED

PREFIX = "/deepl"
# Where v2 answers: under PREFIX, and at the root, where no native route starts with /v2.
V2_PATHS = (f"{PREFIX}/v2", "/v2")
TRANSLATE_PATHS = frozenset(f"{v2}/translate" for v2 in V2_PATHS)
# DeepLX's shape (zotero-pdf-translate's "DeepLX(API)" service, whose DeepL services have fixed URLs):
# {"text", "source_lang", "target_lang"} -> {"code": 200, "data": translation}.
DEEPLX_PATH = f"{PREFIX}/translate"
TAG_HANDLING = ("html", "xml")
FORMALITY = ("default", "more", "less", "prefer_more", "prefer_less")
# This server does not meter characters: /v2/usage answers a limit no client reaches.
USAGE_LIMIT = 1_000_000_000_000

# A CSV line of two terms and two language codes, quoted, with room to spare.
_MAX_LINE_CHARS = 4 * MAX_TERM_CHARS + 64


def edge_request(scope: dict[str, Any]) -> EdgeRequest | None:
    """The request as the edge middleware takes it: keys in DeepL's header (checked here), forms."""
    path = scope.get("path", "")
    if not any(path == v2 or path.startswith(v2 + "/") for v2 in (PREFIX, "/v2")):
        return None
    return EdgeRequest(
        scope, queued=path in TRANSLATE_PATHS or path == DEEPLX_PATH, media_types=FORM_TYPES, shape=error_body
    )


def error_body(body: dict[str, Any]) -> dict[str, Any]:
    """DeepL's error shape, `{"message": ...}`, with "error" too: the edge middleware passes an
    error body on as it is when it has one (translator/api/json_errors.py), and shapes its own
    refusals (413, 429) with this."""
    message = str(body.get("error", ""))
    for native, own in _FIELD_NAMES:
        message = re.sub(native, own, message)
    return {"message": message, "error": message}


# The native API's fields as DeepL's parameters, in errors: `payload.records.3.text` is `text.3`.
_FIELD_NAMES = ((r"payload\.records(\.\d+)?(\.text)?", r"text\1"), (r"payload\.glossaryId", "glossary_id"))


def error_response(exc: TranslationError) -> Any:
    from starlette.responses import JSONResponse

    status = 400 if exc.status in (422, 500) else 403 if exc.status == 401 else exc.status
    return JSONResponse(error_body(exc.body()), status_code=status, headers=exc.headers())


def check_key(request: Any, params: dict[str, Any]) -> None:
    """`Authorization: DeepL-Auth-Key KEY` (or the older `auth_key` parameter) against the API keys."""
    if keys_problem() is not None:
        from translator.contract.errors import Unavailable

        raise Unavailable("this server's API keys are misconfigured; retry later")
    keys = api_keys()
    if keys is None:
        return
    offered = params.get("auth_key") if isinstance(params.get("auth_key"), str) else None
    for name, value in request.scope["headers"]:
        if name.lower() == b"authorization":
            scheme, _, token = value.decode("latin-1").strip().partition(" ")
            if scheme.lower() in ("deepl-auth-key", "bearer") and token.strip():
                offered = token.strip()
    if not offered or not keys.accepts(offered.encode("utf-8")):
        raise Forbidden("Wrong auth key")


def _texts(params: dict[str, Any]) -> list[str]:
    """The texts; none, or one empty (`text=`), is DeepL's 400, as deepl-python refuses an empty
    string before sending it. In a list of several, an empty text is answered empty."""
    value = params.get("text")
    texts = [value] if isinstance(value, str) else value
    if not texts or texts == [""]:
        raise InvalidRequest("Parameter 'text' not specified.")
    if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
        raise InvalidRequest("Parameter 'text' must be strings.")
    return texts


def tag_names(params: dict[str, Any], name: str) -> list[str]:
    """A list of element names: DeepL takes them comma-separated, or as a JSON list."""
    value = params.get(name)
    if value is None:
        return []
    values = [value] if isinstance(value, str) else value
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise InvalidRequest(f"Value for '{name}' not supported.")
    return [tag.strip() for v in values for tag in v.split(",") if tag.strip()]


def _one(params: dict[str, Any], name: str) -> str | None:
    value = params.get(name)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise InvalidRequest(f"Value for '{name}' not supported.")
    return value


def _language(params: dict[str, Any], name: str, supported: frozenset[str]) -> str | None:
    code = _one(params, name)
    if code is None:
        return None
    iso = to_iso(code, supported)
    if iso is None:
        raise InvalidRequest(f"Value for '{name}' not supported.")
    return iso


async def translate(request: Any, handler: Any) -> dict[str, Any]:
    params = await read_params(request)
    check_key(request, params)
    supported = handler.languages
    texts = _texts(params)
    target = _language(params, "target_lang", supported)
    if target is None:
        raise InvalidRequest("Parameter 'target_lang' not specified.")
    source = _language(params, "source_lang", supported) or AUTO
    tag_handling = _one(params, "tag_handling")
    if tag_handling is not None and tag_handling not in TAG_HANDLING:
        raise InvalidRequest("Value for 'tag_handling' not supported.")
    formality = _one(params, "formality")
    if formality is not None and formality not in FORMALITY:
        raise InvalidRequest("Value for 'formality' not supported.")
    glossary_id = _one(params, "glossary_id")
    if glossary_id is not None and source == AUTO:
        raise InvalidRequest("Use of a glossary requires the 'source_lang' parameter to be specified.")
    try:
        payload = Payload(
            fromLang=source,
            toLang=target,
            records=[Record(id=str(index), text=text) for index, text in enumerate(texts)],
            format="html" if tag_handling else "text",
            glossaryId=glossary_id,
            # Kept inside the sentence around them, as placeholders are (Weblate's `<x id="1"></x>`).
            keepTags=tag_names(params, "ignore_tags"),
        )
    except ValidationError as exc:  # a glossary_id too long to be one, a tag name that is none
        raise InvalidRequest(f"Invalid request: {validation_message(exc.errors())}") from None
    result = await handler.translate(payload, request.headers, request.receive)

    def detected(language: str | None) -> str:
        # Text without letters comes back as it is, as if written in the target language.
        if source != AUTO:
            return to_deepl(source)
        return to_deepl(target if language in (None, UNDETERMINED) else str(language))

    return {
        "translations": [
            {
                "detected_source_language": detected(record.detected_lang),
                "text": record.text,
                "billed_characters": len(text),
            }
            for record, text in zip(result.result, texts, strict=True)
        ]
    }


async def deeplx(request: Any, handler: Any) -> dict[str, Any]:
    """DeepLX's translate: one text, DeepL's codes, the translation as `data`."""
    answer = await translate(request, handler)
    translation = answer["translations"][0]
    return {"code": 200, "data": translation["text"], "source_lang": translation["detected_source_language"]}


async def languages(request: Any, handler: Any) -> list[dict[str, Any]]:
    # One code a language (an NLLB checkpoint accepts several spellings of each), as /languages lists.
    supported = sorted(handler.listed)
    # deepl-python sends `type` in a form body, even on a GET.
    if (await read_params(request)).get("type", "source") == "target":
        return [
            {"language": code, "name": language_name(str(to_iso(code, supported))), "supports_formality": False}
            for code in target_codes(supported)
        ]
    return [{"language": to_deepl(code), "name": language_name(code)} for code in supported]


def parse_entries(text: str, entries_format: str) -> dict[str, str]:
    """DeepL's TSV (`source<TAB>target` a line) or CSV (`source,target[,source_lang,target_lang]`)."""
    if entries_format not in ("tsv", "csv"):
        raise InvalidRequest("Value for 'entries_format' not supported.")
    lines = text.splitlines()
    too_long = next((n for n, line in enumerate(lines, 1) if len(line) > _MAX_LINE_CHARS), None)
    if too_long is not None:  # a term is at most MAX_TERM_CHARS: no need to parse such a line
        raise InvalidRequest(f"Invalid glossary entries provided: line {too_long} is too long")
    try:
        rows = [line.split("\t") for line in lines] if entries_format == "tsv" else list(csv.reader(lines))
    except csv.Error as exc:
        raise InvalidRequest(f"Invalid glossary entries provided: {exc}") from None
    entries = []
    try:
        for number, row in enumerate(rows, 1):
            if not row or not any(cell.strip() for cell in row):
                continue
            if len(row) not in (2, 4) or (entries_format == "tsv" and len(row) != 2):
                raise InvalidRequest(f"Invalid glossary entries provided: line {number} is not source and target")
            entries.append(GlossaryEntry(source=row[0].strip(), target=row[1].strip()))
    except ValidationError as exc:
        raise InvalidRequest(f"Invalid glossary entries provided: {validation_message(exc.errors())}") from None
    if not entries:
        raise InvalidRequest("Invalid glossary entries provided: none")
    return entries_map(entries, "entries")


def glossary_info(glossary: Any) -> dict[str, Any]:
    return {
        "glossary_id": glossary.glossary_id,
        "name": glossary.name,
        "ready": True,
        "source_lang": to_deepl(glossary.source_lang).lower(),
        "target_lang": to_deepl(glossary.target_lang).lower(),
        "creation_time": glossary.creation_time,
        "entry_count": len(glossary.entries),
    }


def routes(get_service: Callable[[], Any]) -> list[Any]:
    from starlette.requests import Request
    from starlette.responses import JSONResponse, PlainTextResponse, Response
    from starlette.routing import Route

    def answering(work: Callable[[Request, Any], Any], keyed: bool = True, status: int = 200) -> Any:
        async def endpoint(request: Request) -> Response:
            try:
                if keyed:
                    check_key(request, dict(request.query_params))
                answer = await work(request, get_service().handler)
                return answer if isinstance(answer, Response) else JSONResponse(answer, status_code=status)
            except TranslationError as exc:
                return error_response(exc)
            except CallerGone:
                return error_response(ClientClosed("the client closed the connection"))

        return endpoint

    async def usage(request: Request, handler: Any) -> Any:
        return {"character_count": 0, "character_limit": USAGE_LIMIT}

    async def pairs(request: Request, handler: Any) -> Any:
        codes = sorted(handler.listed)  # one code a language, not every accepted spelling
        return {
            "supported_languages": [
                {"source_lang": to_deepl(s).lower(), "target_lang": to_deepl(t).lower()}
                for s in codes
                for t in codes
                if s != t
            ]
        }

    async def create(request: Request, handler: Any) -> Any:
        params = await read_params(request)
        check_key(request, params)
        name = _one(params, "name")
        if name is None:
            raise InvalidRequest("Parameter 'name' not specified.")
        source = _language(params, "source_lang", handler.languages)
        target = _language(params, "target_lang", handler.languages)
        if source is None or target is None:
            raise InvalidRequest("Parameters 'source_lang' and 'target_lang' must be specified.")
        check_pair(source, target, handler.languages, canonical=handler.canonical)
        entries = parse_entries(_one(params, "entries") or "", _one(params, "entries_format") or "tsv")
        glossary = new_glossary(name[:200], handler.canonical(source), handler.canonical(target), entries)
        await handler.glossaries.create(glossary)
        return JSONResponse(glossary_info(glossary), status_code=201)

    async def listing(request: Request, handler: Any) -> Any:
        return {"glossaries": [glossary_info(g) for g in await handler.glossaries.list()]}

    async def one(request: Request, handler: Any) -> Any:
        glossary = await found_or_deleted(request, handler.glossaries)
        if glossary is None:
            return Response(status_code=204)
        if request.url.path.endswith("/entries"):
            lines = "".join(f"{s}\t{t}\n" for s, t in glossary.entries.items())
            return PlainTextResponse(lines, media_type="text/tab-separated-values")
        return glossary_info(glossary)

    return [
        Route(DEEPLX_PATH, answering(deeplx, keyed=False), methods=["POST"]),
        *(
            route
            for v2 in V2_PATHS
            for route in (
                Route(f"{v2}/translate", answering(translate, keyed=False), methods=["POST", "GET"]),
                Route(f"{v2}/languages", answering(languages), methods=["GET", "POST"]),
                Route(f"{v2}/usage", answering(usage), methods=["GET", "POST"]),
                Route(f"{v2}/glossary-language-pairs", answering(pairs), methods=["GET"]),
                Route(f"{v2}/glossaries", answering(create, keyed=False), methods=["POST"]),
                Route(f"{v2}/glossaries", answering(listing), methods=["GET"]),
                Route(f"{v2}/glossaries/{{glossary_id}}", answering(one), methods=["GET", "DELETE"]),
                Route(f"{v2}/glossaries/{{glossary_id}}/entries", answering(one), methods=["GET"]),
            )
        ),
    ]

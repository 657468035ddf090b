"""DeepL's API (#33, #44): what DeepL's clients (deepl-python's `Translator` and `DeepLClient`, its
command line, Weblate, zotero-pdf-translate) send, on this server's pipeline.

It answers at the root as api.deepl.com does (`/v2/translate`...: a client's base URL is the host,
`http://HOST:9527`) and under `/deepl/` (`http://HOST:9527/deepl/`). deepl-python urljoins its paths
to the base URL, so `http://HOST:9527/deepl` without the slash reaches the root's: both work.
`POST v2/translate` takes JSON, a form or the query string, as DeepL documents them, and becomes one
`POST /translation` payload through the same handler (translator/api/handler.py): the same
admission, scheduler, cache and glossaries. DeepL's codes are mapped in
translator/api/deepl_codes.py; glossaries, v2 and v3, are translator/api/deepl_glossaries.py,
documents translator/api/deepl_documents.py.

Parameters are checked (translator/api/deepl_params.py) against the values DeepL documents, and
what the model cannot honour is accepted as DeepL accepts it for a language without the feature:
formality `default` and `prefer_*` (every target here has no formality: `more` and `less` are
DeepL's 400), split_sentences, preserve_formatting, context, outline_detection, model_type
(answered as `model_type_used`), splitting and non-splitting tags. DeepL's LLM features (Write's
rephrase and correct, style rules, custom instructions, translation memories) are not offered:
DeepL's answer to a plan without them, a 403 that says so.

Errors are DeepL's: `{"message": ...}` with 400, 403 (no key or a wrong one; a feature not
offered), 404, 413, 429 and 503 with Retry-After; a record the model fails on is a 400, never a 500.
Keys: `Authorization: DeepL-Auth-Key KEY` (or `Bearer`), or the `auth_key` parameter (query or
body) for clients that send no header, on every route of this API.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from translator.api.access import DEEPL as DEEPL_KEYS
from translator.api.deepl_codes import target_codes, to_deepl, to_iso
from translator.api.deepl_params import (
    MODEL_TYPES,
    SPLIT_SENTENCES,
    TAG_HANDLING,
    TAG_HANDLING_VERSIONS,
    NotOffered,
    choice,
    languages_and_options,
    memory_options,
    tag_names,
    texts_of,
)
from translator.api.deepl_params import parse_entries as parse_entries  # re-exported: tests parse entries
from translator.api.endpoints import DEEPL as DEEPL_ERRORS
from translator.api.endpoints import endpoint
from translator.api.libretranslate import EdgeRequest, language_name
from translator.api.params import FORM_TYPES, read_params
from translator.api.request_options import options_of
from translator.contract.errors import (
    InvalidRequest,
    validation_message,
)
from translator.contract.schemas import Payload, Record
from translator.text.langdetect import AUTO, UNDETERMINED

PREFIX = "/deepl"
# Where v2 and v3 answer: under PREFIX, and at the root, where no native route starts with /v2 or /v3.
V2_PATHS = (f"{PREFIX}/v2", "/v2")
V3_PATHS = (f"{PREFIX}/v3", "/v3")
TRANSLATE_PATHS = frozenset(f"{v2}/translate" for v2 in V2_PATHS)
# DeepLX's shape (zotero-pdf-translate's "DeepLX(API)" service, whose DeepL services have fixed URLs):
# {"text", "source_lang", "target_lang"} -> {"code": 200, "data": translation}.
DEEPLX_PATH = f"{PREFIX}/translate"
# This server does not meter characters: /v2/usage answers a limit no client reaches.
USAGE_LIMIT = 1_000_000_000_000


def edge_request(scope: dict[str, Any]) -> EdgeRequest | None:
    """The request as the edge middleware takes it: keys in DeepL's header (checked here), forms."""
    path = scope.get("path", "")
    if not any(path == top or path.startswith(top + "/") for top in (PREFIX, "/v2", "/v3")):
        return None
    return EdgeRequest(
        scope,
        queued=path in TRANSLATE_PATHS or path == DEEPLX_PATH,
        media_types=FORM_TYPES,
        keys=DEEPL_KEYS,
        shape=DEEPL_ERRORS.body,
    )


async def translate(request: Any, handler: Any) -> dict[str, Any]:
    params = await read_params(request)
    texts = texts_of(params)
    source, target, glossary_id = languages_and_options(params, handler.languages)
    tag_handling = choice(params, "tag_handling", TAG_HANDLING)
    choice(params, "tag_handling_version", TAG_HANDLING_VERSIONS)
    choice(params, "split_sentences", SPLIT_SENTENCES)  # sentences are always split: checked, no effect
    model_type = choice(params, "model_type", MODEL_TYPES)
    memory_id, _ = memory_options(params)
    try:
        payload = Payload(
            fromLang=source,
            toLang=target,
            records=[Record(id=str(index), text=text) for index, text in enumerate(texts)],
            format="html" if tag_handling else "text",
            glossaryId=glossary_id,
            # Kept inside the sentence around them, as placeholders are (Weblate's `<x id="1"></x>`).
            keepTags=tag_names(params, "ignore_tags"),
            # A memory's exact and substituted matches are answered as its people wrote them. DeepL's
            # threshold is checked and taken, but a fuzzy match is never passed off as the translation
            # here, and DeepL's answer has no field to report one in (docs/api.md).
            translationMemory=memory_id,
        )
    except ValidationError as exc:  # a glossary_id too long to be one, a tag name that is none
        raise InvalidRequest(f"Invalid request: {validation_message(exc.errors())}") from None
    result = await handler.translate(payload, options_of(request.headers, request.receive))

    def detected(language: str | None) -> str:
        # Text without letters comes back as it is, as if written in the target language.
        if source != AUTO:
            return to_deepl(source)
        return to_deepl(target if language in (None, UNDETERMINED) else str(language))

    used = {"model_type_used": MODEL_TYPES[model_type]} if model_type is not None else {}
    return {
        "translations": [
            {
                "detected_source_language": detected(record.detected_lang),
                "text": record.text,
                "billed_characters": len(text),
                **used,
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
    kind = (await read_params(request)).get("type", "source")
    if kind not in ("source", "target"):
        raise InvalidRequest("Parameter 'type' is invalid. 'source' and 'target' are valid values.")
    if kind == "target":
        return [
            {
                "language": code,
                "name": language_name(str(to_iso(code, supported, target=True))),
                "supports_formality": False,
            }
            for code in target_codes(supported)
        ]
    return [{"language": to_deepl(code), "name": language_name(code)} for code in supported]


Work = Callable[[Any, Any], Any]


def answering(get_service: Callable[[], Any], work: Work, status: int = 200) -> Any:
    """An endpoint of this API: `work(request, handler)` answered as JSON (or the Response it makes),
    its errors in DeepL's shape. Its key was checked by the edge (translator/api/access.py)."""
    return endpoint(DEEPL_ERRORS, lambda request: work(request, get_service().handler), status)


def routes(get_service: Callable[[], Any]) -> list[Any]:
    from starlette.requests import Request
    from starlette.routing import Route

    async def usage(request: Request, handler: Any) -> Any:
        return {"character_count": 0, "character_limit": USAGE_LIMIT}

    def not_offered(feature: str) -> Work:
        async def refuse(request: Request, handler: Any) -> Any:
            raise NotOffered(feature)

        return refuse

    # DeepL's LLM features, any method and any path below theirs: each a 403 that names it.
    refused = [
        (f"{v2}{path}", not_offered(feature))
        for v2 in V2_PATHS
        for path, feature in (
            ("/write/rephrase", "Rephrasing (DeepL Write)"),
            ("/write/correct", "Correcting (DeepL Write)"),
        )
    ] + [
        (f"{v3}{path}{below}", not_offered(feature))
        for v3 in V3_PATHS
        for path, feature in (("/style_rules", "Style rules"),)
        for below in ("", "/{rest:path}")
    ]
    every = ["GET", "POST", "PUT", "PATCH", "DELETE"]
    return [
        Route(DEEPLX_PATH, answering(get_service, deeplx), methods=["POST"]),
        *(
            route
            for v2 in V2_PATHS
            for route in (
                Route(f"{v2}/translate", answering(get_service, translate), methods=["POST", "GET"]),
                Route(f"{v2}/languages", answering(get_service, languages), methods=["GET", "POST"]),
                Route(f"{v2}/usage", answering(get_service, usage), methods=["GET", "POST"]),
            )
        ),
        *(Route(path, answering(get_service, work), methods=every) for path, work in refused),
    ]

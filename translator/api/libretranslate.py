"""The LibreTranslate HTTP API, under `/libretranslate/`, for the clients teams already run.

Weblate, Mastodon, Discourse, Nextcloud and `libretranslatepy` speak it (README, "LibreTranslate
clients"). Each request becomes a `POST /translation` payload and goes through the same handler
(translator/api/handler.py): the same admission (the middleware), scheduler, cache and priorities;
a list of texts is a request of that many records, batched with everyone else's sentences.

As LibreTranslate reads them, parameters come from the query string and from the body as JSON, a
url-encoded form or a multipart form (the body wins); `GET languages` ignores a body
(libretranslatepy sends a form with it). Errors are `{"error": "..."}` with LibreTranslate's
statuses and messages where clients read them: 400 for a missing parameter or a language not
served, 403 for an API key missing or not accepted, 413, 429 and 503 with Retry-After.
"""

from __future__ import annotations

import asyncio
import functools
import urllib.parse
from collections.abc import Callable, Collection
from typing import Any, NamedTuple, Protocol

from translator.api.access import LIBRETRANSLATE as LIBRETRANSLATE_KEYS
from translator.api.access import KeyRule
from translator.api.auth import keys_required
from translator.api.endpoints import CORS, endpoint
from translator.api.endpoints import LIBRETRANSLATE as LIBRETRANSLATE_ERRORS
from translator.api.handler import RequestHandler
from translator.api.params import FORM_TYPES, read_params
from translator.api.request_options import deadline_ms_of, options_of, priority_of
from translator.contract import limits
from translator.contract.errors import (
    InvalidRequest,
    PayloadTooLarge,
    Unavailable,
)
from translator.contract.language_codes import resolve
from translator.contract.schemas import Payload, Record
from translator.text.langdetect import AUTO, UNDETERMINED, detectable, detector_for
from translator.text.plan import FORMATS, language_text, record_tokens

PREFIX = "/libretranslate"
TRANSLATE_PATH = f"{PREFIX}/translate"
# Codes LibreTranslate clients send for languages M2M100 names otherwise: LibreTranslate's own
# `zt` (traditional Chinese) and `pb` (Brazilian Portuguese), and retired or 3-letter ISO codes.
# How many candidates `POST detect` lists.
DETECT_CANDIDATES = 3
# What clients send besides JSON (libretranslatepy, Discourse, Nextcloud).


class Service(Protocol):
    """What the adapter needs of the API worker's service (service.py `Translation`)."""

    handler: RequestHandler

    async def __is_ready__(self) -> bool: ...


def normalize_code(code: str, supported: Collection[str]) -> str | None:
    """A client's language code as the model's (`pt-BR`, `pt_br`, `pb` -> `pt`; `zh-Hant` -> `zh` on
    M2M100, `zh-Hant` on NLLB-200), or None when the model does not translate it: the one resolver
    of translator/contract/language_codes.py."""
    return resolve(code, supported)


@functools.cache
def language_name(code: str) -> str:
    """The English name of a listed code (M2M100's, or an NLLB alias such as `zh-Hant`), from CLDR
    (via langcodes and language_data)."""
    import langcodes

    tag = {"ns": "nso"}.get(code, code).replace("_", "-")  # M2M100's Northern Sotho is not an ISO 639-1 code
    return str(langcodes.Language.get(tag).display_name("en"))


def languages_body(languages: Collection[str]) -> list[dict[str, Any]]:
    codes = sorted(languages)
    # M2M100 translates between any two of its languages (LibreTranslate lists the others).
    return [{"code": code, "name": language_name(code), "targets": [t for t in codes if t != code]} for code in codes]


def supported_file_formats() -> list[str]:
    from translator.documents.formats import supported

    return supported()


def settings_body(languages: Collection[str]) -> dict[str, Any]:
    keys_on = keys_required()
    target = "en" if "en" in languages else min(languages)
    return {
        # Per text, as LibreTranslate means it (clients split their texts by it).
        "charLimit": limits.MAX_CHARS_PER_RECORD,
        "frontendTimeout": 500,
        "apiKeys": keys_on,
        "keyRequired": keys_on,
        "suggestions": False,
        # Files: translate_file and download_file (translator/api/documents.py).
        "filesTranslation": True,
        "supportedFilesFormat": supported_file_formats(),
        "language": {
            "source": {"code": AUTO, "name": "Auto Detect"},
            "target": {"code": target, "name": language_name(target)},
        },
    }


def _text_list(params: dict[str, Any], name: str = "q") -> tuple[list[str], bool]:
    """The texts of `q` and whether it was a list."""
    value = params.get(name)
    if not value:  # absent, null, "" or [] (LibreTranslate's test is the same)
        raise InvalidRequest(f"Invalid request: missing {name} parameter")
    if isinstance(value, str):
        return [_unicode(value, name)], False
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return [_unicode(item, name) for item in value], True
    raise InvalidRequest(f"Invalid request: {name} must be a string or a list of strings")


def _unicode(text: str, name: str) -> str:
    """`text`, if it can be answered: JSON may carry lone surrogates, which no UTF-8 answer holds."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidRequest(f"Invalid request: {name} holds a lone surrogate (\\ud800-\\udfff), not text") from None
    return text


def _language(params: dict[str, Any], name: str, supported: Collection[str], auto: bool = False) -> str:
    value = params.get(name)
    if value is None or (isinstance(value, str) and not value.strip()):
        raise InvalidRequest(f"Invalid request: missing {name} parameter")
    if not isinstance(value, str):
        raise InvalidRequest(f"Invalid request: {name} must be a language code")
    _unicode(value, name)
    if auto and value.strip().lower() in (AUTO, UNDETERMINED):
        return AUTO
    code = normalize_code(value, supported)
    if code is None:
        raise InvalidRequest(f"{value} is not supported")
    return code


def _format(params: dict[str, Any]) -> str:
    """`text` (absent, null or empty) or `html`; any other value, `{}` or `false` too, is a 400."""
    fmt = params.get("format")
    if fmt is None or fmt == "":
        return "text"
    if not isinstance(fmt, str) or fmt not in FORMATS:
        raise InvalidRequest(f"Invalid request: format must be one of {', '.join(FORMATS)}, not {str(fmt)[:20]!r}")
    return fmt


def _alternatives(params: dict[str, Any]) -> int:
    value = params.get("alternatives", 0)
    try:
        if isinstance(value, bool) or not isinstance(value, int | str):
            raise ValueError
        count = int(value)  # a string of more than 4,300 digits raises ValueError too
    except ValueError:
        shown = str(value).strip()[:20]
        raise InvalidRequest(f"Invalid request: alternatives must be a whole number, not {shown!r}") from None
    # As LibreTranslate: fewer than 0 is 0; and no more than this server offers (they are "up to").
    return min(max(count, 0), limits.MAX_ALTERNATIVES)


def _detected(language: str | None, confidence: float | None, supported: Collection[str]) -> dict[str, Any]:
    """LibreTranslate's `{"confidence", "language"}`. Text without language (numbers, a URL) is
    LibreTranslate's English at confidence 0, never "und": clients use the answer as a source
    language (Discourse stores it, Nextcloud sends it back), and "und" is not one they can send."""
    if language is None or language == UNDETERMINED:
        language, confidence = ("en" if "en" in supported else min(supported)), 0.0
    return {"confidence": _confidence(confidence), "language": language}


def _confidence(value: float | None) -> float:
    """LibreTranslate's confidence: a percentage."""
    return round((value or 0.0) * 100, 1)


async def translate(request: Any, service: Service) -> dict[str, Any]:
    params = await read_params(request)
    supported = service.handler.languages
    texts, is_list = _text_list(params)
    source = _language(params, "source", supported, auto=True)
    target = _language(params, "target", supported)
    fmt = _format(params)
    alternatives = _alternatives(params)
    payload = Payload(
        fromLang=source,
        toLang=target,
        records=[Record(id=str(index), text=text) for index, text in enumerate(texts)],
        format="html" if fmt == "html" else "text",
        alternatives=alternatives,
        **_glossary(params),
        **_memory(params),
    )
    result = await service.handler.translate(payload, options_of(request.headers, request.receive))
    translated = [record.text for record in result.result]
    body: dict[str, Any] = {"translatedText": translated if is_list else translated[0]}
    if source == AUTO:
        detected = [_detected(record.detected_lang, record.detected_confidence, supported) for record in result.result]
        body["detectedLanguage"] = detected if is_list else detected[0]
    if alternatives:
        others = [record.alternatives or [] for record in result.result]
        body["alternatives"] = others if is_list else others[0]
    if payload.translation_memory is not None:
        origins = [record.origin.model_dump(mode="json") for record in result.result if record.origin is not None]
        body["origin"] = origins if is_list else origins[0]
    return body


def _memory(params: dict[str, Any]) -> dict[str, Any]:
    """This server's extension (#51): `translation_memory`, a stored memory's id (POST /memories); its
    records come back as people translated them, and the answer says each text's `origin`."""
    memory_id = params.get("translation_memory")
    if memory_id in (None, ""):
        return {}
    if not isinstance(memory_id, str) or len(memory_id) > 100:
        raise InvalidRequest("Invalid request: translation_memory must be a translation memory's id")
    return {"translationMemory": memory_id}


def _glossary(params: dict[str, Any]) -> dict[str, Any]:
    """This server's extension (#33): `glossary_id` (a stored glossary) or `glossary` (entries, in a
    JSON body), as on POST /translation."""
    from pydantic import ValidationError

    from translator.contract.errors import validation_message
    from translator.contract.glossary import InlineGlossary

    out: dict[str, Any] = {}
    glossary_id = params.get("glossary_id")
    if glossary_id not in (None, ""):
        if not isinstance(glossary_id, str) or len(glossary_id) > 100:
            raise InvalidRequest("Invalid request: glossary_id must be a glossary's id")
        out["glossaryId"] = glossary_id
    if params.get("glossary") is not None:
        try:
            out["glossary"] = InlineGlossary.model_validate(params["glossary"])
        except ValidationError as exc:
            raise InvalidRequest(f"Invalid request: glossary: {validation_message(exc.errors())}") from None
    return out


async def detect(request: Any, service: Service) -> list[dict[str, Any]]:
    params = await read_params(request)
    # Detection runs here, never queued for the model: the headers change nothing, but a bad one is
    # refused as on every other route (docs/api.md).
    priority_of(request.headers)
    deadline_ms_of(request.headers)
    texts, _ = _text_list(params)
    fmt = _format(params)
    # The native limits, checked before anything is parsed; the parsing and scoring in a thread.
    if len(texts) > limits.MAX_RECORDS_PER_REQUEST:
        raise PayloadTooLarge("q: number of texts", limits.MAX_RECORDS_PER_REQUEST, len(texts))
    if sum(map(len, texts)) > limits.MAX_CHARS_PER_REQUEST:
        raise PayloadTooLarge("q: characters", limits.MAX_CHARS_PER_REQUEST, sum(map(len, texts)))
    supported = detectable(frozenset(service.handler.languages))

    def rank() -> list[tuple[str, float]]:
        text = "\n".join(language_text(record_tokens(t, fmt if fmt in FORMATS else "text")) for t in texts)
        return detector_for(supported).rank(text)

    ranked = await asyncio.to_thread(rank)
    candidates = [{"confidence": _confidence(share), "language": code} for code, share in ranked[:DETECT_CANDIDATES]]
    return candidates or [_detected(UNDETERMINED, 0.0, supported)]


def routes(get_service: Callable[[], Service]) -> list[Any]:
    """Starlette routes of the API under PREFIX; `get_service` gives this worker's service."""
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    def answering(work: Callable[[Request, Service], Any]) -> Callable[[Request], Any]:
        answer = endpoint(LIBRETRANSLATE_ERRORS, lambda request: work(request, get_service()))

        async def preflighted(request: Request) -> Response:
            if request.method == "OPTIONS":  # a browser's preflight
                return Response(status_code=204, headers=CORS)
            return await answer(request)

        return preflighted

    async def languages(request: Request, service: Service) -> list[dict[str, Any]]:
        return languages_body(service.handler.listed)

    async def frontend_settings(request: Request, service: Service) -> dict[str, Any]:
        return settings_body(service.handler.listed)

    async def health(request: Request, service: Service) -> dict[str, Any]:
        if await service.__is_ready__():
            return {"status": "ok"}
        raise Unavailable("the translation engine is not ready; retry later")

    return [
        Route(TRANSLATE_PATH, answering(translate), methods=["POST", "OPTIONS"]),
        Route(f"{PREFIX}/detect", answering(detect), methods=["POST", "OPTIONS"]),
        Route(f"{PREFIX}/languages", answering(languages), methods=["GET", "POST", "OPTIONS"]),
        Route(f"{PREFIX}/frontend/settings", answering(frontend_settings), methods=["GET", "OPTIONS"]),
        Route(f"{PREFIX}/health", answering(health), methods=["GET", "OPTIONS"]),
    ]


class EdgeRequest(NamedTuple):
    """A request to this API as the edge middleware (translator/api/middleware.py) sees it before
    reading the body. Its API key may come in the body: the routes check it, not the middleware."""

    scope: dict[str, Any]  # with the path as this API's routes declare it
    queued: bool  # waits in the model's queue, as `POST /translation` does
    media_types: frozenset[str]  # taken besides JSON
    # How the API takes its key (translator/api/access.py): the edge checks it.
    keys: KeyRule = LIBRETRANSLATE_KEYS
    # The API's own error shape, made from `{"error": ...}` (DeepL's `message`); None: that one.
    shape: Callable[[dict[str, Any]], dict[str, Any]] | None = None


def edge_request(scope: dict[str, Any]) -> EdgeRequest | None:
    """The request as this API takes it; None for requests to other APIs."""
    path = normalized_path(scope.get("path", ""))
    if path is None:
        return None
    if path != scope["path"]:
        # Clients join a base URL and a path naively: answer, do not redirect (not all follow).
        raw_path = urllib.parse.quote(path).encode("ascii")  # raw_path is percent-encoded
        scope = {**scope, "path": path, "raw_path": raw_path}
    return EdgeRequest(scope, queued=path == TRANSLATE_PATH, media_types=FORM_TYPES)


def normalized_path(path: str) -> str | None:
    """A path under PREFIX as a client may have joined it (`/libretranslate//translate` from a base
    URL with a trailing slash, `/libretranslate/translate/`), without the extra slashes; None for
    paths of other APIs, which are left as they are."""
    collapsed = "/" + "/".join(part for part in path.split("/") if part)
    if collapsed == PREFIX or not collapsed.startswith(PREFIX + "/"):
        return None
    return collapsed

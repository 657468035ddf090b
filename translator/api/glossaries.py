"""Glossaries on the APIs (#33): the terms a request or a document job asks for, checked against its
languages, and the native routes `/glossaries` and `/glossaries/{id}` (create, list, get, delete).
A stored glossary may hold several dictionaries (DeepL's v3 glossaries, #44): a request uses the one
for its language pair.

Where they are kept is translator/api/glossary_store.py (what they are, glossary_model.py);
translator/contract/glossary.py holds the entries' shape and limits, translator/text/glossary.py the
matching.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import cachetools
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from translator.api.glossary_model import Dictionary, Glossary, new_glossary
from translator.api.glossary_store import GlossaryStore
from translator.contract.errors import InvalidRequest, TranslationError, validation_message
from translator.contract.glossary import (
    MAX_ENTRIES,
    MAX_NAME_CHARS,
    GlossaryEntry,
    entries_list,
    entries_map,
)
from translator.contract.schemas import Payload
from translator.text.glossary import Terms


class GlossaryNotFound(TranslationError):
    status = 404

    def __init__(self, glossary_id: str, field: str = "glossaryId") -> None:
        super().__init__(f"{field}: no glossary {glossary_id[:100]!r}", field=field)


class GlossaryMismatch(InvalidRequest):
    pass


# Stored glossaries' Terms (each compiles its matcher once, on first use), by id, revision and spelled pair.
_COMPILED: cachetools.LRUCache[tuple[str, str, str, str], Terms] = cachetools.LRUCache(maxsize=64)
# Stored glossaries read, by id, up to 64 MiB of them as stored (a glossary is at most 10 MiB).
_READ: cachetools.LRUCache[str, Glossary] = cachetools.LRUCache(
    maxsize=64 * 1024 * 1024, getsizeof=lambda glossary: max(1, glossary.stored_bytes)
)


def _same(code: str) -> str:
    return code


async def request_terms(
    payload: Payload, store: GlossaryStore, canonical: Callable[[str], str] = _same
) -> Terms | None:
    """The glossary a translation request asks for (inline or stored), checked against its languages.
    `canonical` gives one spelling per language (an NLLB checkpoint takes `en` and `eng_Latn` alike):
    a stored pair is kept in that spelling and a request's codes are compared in it."""
    if payload.glossary is not None and payload.glossary_id is not None:
        raise InvalidRequest("payload.glossary: give either glossary or glossaryId, not both", field="payload.glossary")
    if payload.glossary is not None:
        if payload.from_lang == "auto":
            raise InvalidRequest(
                "payload.glossary: an inline glossary needs fromLang (not 'auto'); a stored one (glossaryId) "
                "applies to the records detected in its source language",
                field="payload.glossary",
            )
        entries = entries_map(payload.glossary.entries, "payload.glossary.entries")
        return Terms(payload.from_lang, payload.to_lang, entries)
    if payload.glossary_id is None:
        return None
    return await stored_terms(
        payload.glossary_id, payload.from_lang, payload.to_lang, store, canonical, field="payload.glossaryId"
    )


async def stored_terms(
    glossary_id: str,
    from_lang: str,
    to_lang: str,
    store: GlossaryStore,
    canonical: Callable[[str], str] = _same,
    field: str = "glossaryId",
) -> Terms:
    """A stored glossary's terms for `from_lang` (or auto) -> `to_lang`: 404 when there is no such
    glossary, 400 when it has no dictionary for that pair; `field` is how the caller's API names the id."""
    # One read already is only checked to be the version stored still (a stat, or a few bytes from
    # Valkey), where a document job's every chunk read and parsed it whole (up to 10 MiB) again.
    glossary = _READ.get(glossary_id)
    if glossary is not None and await store.revision(glossary_id) != glossary.revision:
        del _READ[glossary_id]
        glossary = None
    if glossary is None and (glossary := await store.get(glossary_id)) is not None:
        _READ[glossary_id] = glossary
    if glossary is None:
        raise GlossaryNotFound(glossary_id, field)
    dictionary = dictionary_for(glossary, from_lang, to_lang, canonical, field)
    # In the request's own spelling, which the plan compares with; detection answers listed codes.
    source_code = canonical(dictionary.source_lang) if from_lang == "auto" else from_lang
    key = (glossary.glossary_id, glossary.revision, source_code, to_lang)
    terms = _COMPILED.get(key)
    if terms is None:  # a version of a glossary never changes: its matcher is compiled once, not per request
        terms = _COMPILED[key] = Terms(source_code, to_lang, dictionary.entries)
    return terms


def dictionary_for(
    glossary: Glossary, from_lang: str, to_lang: str, canonical: Callable[[str], str] = _same, field: str = "glossaryId"
) -> Dictionary:
    """The glossary's dictionary for `from_lang` -> `to_lang`. With `from_lang` auto, the one into
    `to_lang`: with several (en -> de and fr -> de), the request must say which (a 400)."""
    target = canonical(to_lang)
    found = [d for d in glossary.dictionaries if canonical(d.target_lang) == target]
    if from_lang != "auto":
        found = [d for d in found if canonical(d.source_lang) == canonical(from_lang)]
    if len(found) == 1:
        return found[0]
    if not found:
        pairs = ", ".join(f"{d.source_lang} -> {d.target_lang}" for d in glossary.dictionaries) or "no language pair"
        raise GlossaryMismatch(
            f"{field}: glossary {glossary.glossary_id!r} is for {pairs}, the request asks for {from_lang} -> {to_lang}",
            field=field,
        )
    sources = ", ".join(d.source_lang for d in found)
    raise GlossaryMismatch(
        f"{field}: glossary {glossary.glossary_id!r} has dictionaries into {to_lang} from {sources}: "
        "name the request's source language (not 'auto')",
        field=field,
    )


def native_body(glossary: Glossary) -> dict[str, Any]:
    """A glossary with its entries, as the native API answers it: a glossary of one dictionary as it
    always was (`entries` beside its info), one of several with each dictionary's entries in it."""
    if len(glossary.dictionaries) == 1:
        return {**glossary.info(), "entries": entries_list(glossary.dictionaries[0].entries)}
    body = glossary.info()
    body["dictionaries"] = [{**d.info(), "entries": entries_list(d.entries)} for d in glossary.dictionaries]
    return body


class NewGlossary(BaseModel):
    """`POST /glossaries`."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    name: str = Field(min_length=1, max_length=MAX_NAME_CHARS)
    source_lang: str = Field(alias="sourceLang", min_length=1, max_length=20)
    target_lang: str = Field(alias="targetLang", min_length=1, max_length=20)
    # Over MAX_ENTRIES: entries_map's 413, the answer of every API to that limit.
    entries: list[GlossaryEntry] = Field(min_length=1, json_schema_extra={"maxItems": MAX_ENTRIES})


def check_pair(
    source_lang: str,
    target_lang: str,
    supported: frozenset[str],
    prefix: str = "",
    canonical: Callable[[str], str] = _same,
) -> None:
    for field, code in ((f"{prefix}sourceLang", source_lang), (f"{prefix}targetLang", target_lang)):
        if code not in supported:
            raise InvalidRequest(f"{field}: unsupported language code {code!r}", field=field)
    if canonical(source_lang) == canonical(target_lang):  # `en` and `eng_Latn` are one language
        raise InvalidRequest(f"{prefix}targetLang: the same as sourceLang", field=f"{prefix}targetLang")


async def found_or_deleted(request: Any, store: GlossaryStore) -> Glossary | None:
    """The route of one glossary, on either API: GET finds it, DELETE deletes it (None); an unknown
    id is a 404 either way."""
    glossary_id = request.path_params["glossary_id"]
    if request.method == "DELETE":
        if not await store.delete(glossary_id):
            raise GlossaryNotFound(glossary_id, "glossary_id")
        return None
    glossary = await store.get(glossary_id)
    if glossary is None:
        raise GlossaryNotFound(glossary_id, "glossary_id")
    return glossary


def routes(get_service: Callable[[], Any]) -> list[Any]:
    """The native glossary routes; the service's handler holds the store and the languages."""
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    from translator.api.endpoints import NATIVE, endpoint

    def guarded(work: Callable[[Request, Any], Any]) -> Callable[[Request], Any]:
        """Its errors as the native API's; its key was checked by the edge (translator/api/access.py)."""
        return endpoint(NATIVE, lambda request: work(request, get_service().handler))

    async def create(request: Request, handler: Any) -> Response:
        try:
            body = NewGlossary.model_validate_json(await request.body())
        except ValidationError as exc:
            raise InvalidRequest(validation_message(exc.errors())) from None
        check_pair(body.source_lang, body.target_lang, handler.languages, canonical=handler.canonical)
        source, target = handler.canonical(body.source_lang), handler.canonical(body.target_lang)
        glossary = new_glossary(body.name, source, target, entries_map(body.entries, "entries"))
        await handler.glossaries.create(glossary)
        return JSONResponse(native_body(glossary), status_code=201)

    async def listing(request: Request, handler: Any) -> Response:
        return JSONResponse({"glossaries": [g.info() for g in await handler.glossaries.list()]})

    async def one(request: Request, handler: Any) -> Response:
        glossary = await found_or_deleted(request, handler.glossaries)
        if glossary is None:
            return Response(status_code=204)
        return JSONResponse(native_body(glossary))

    return [
        Route("/glossaries", guarded(create), methods=["POST"]),
        Route("/glossaries", guarded(listing), methods=["GET"]),
        Route("/glossaries/{glossary_id}", guarded(one), methods=["GET", "DELETE"]),
    ]

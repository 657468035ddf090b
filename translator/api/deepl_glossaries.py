"""DeepL's glossaries, v2 and v3 (#33, #44), on the store every API shares
(translator/api/glossary_store.py: Valkey when the cache has one, so replicas share them).

A v3 glossary (`/v3/glossaries`, which `deepl.DeepLClient` uses for all its glossary calls) is a
name and dictionaries, one a language pair: created with several, renamed or merged into (PATCH), a
dictionary replaced (PUT) or deleted, its entries read per dictionary. A v2 glossary is a glossary of
one dictionary: v3 lists it as such, and v2 lists only those (a glossary of several has no v2 shape).
Either is used by `glossary_id` in translations and documents, which take the dictionary of their
language pair. Languages are DeepL's base codes, as DeepL creates glossaries; entries TSV or CSV,
answered as TSV.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from translator.api.deepl import answering
from translator.api.deepl_codes import to_deepl
from translator.api.deepl_params import one, parse_entries, source_language
from translator.api.glossaries import GlossaryNotFound
from translator.api.glossary_model import Dictionary, Glossary, new_glossary, new_multilingual
from translator.api.params import read_params
from translator.contract.errors import InvalidRequest, PayloadTooLarge, TranslationError
from translator.contract.glossary import MAX_ENTRIES, MAX_NAME_CHARS


class DictionaryNotFound(TranslationError):
    status = 404

    def __init__(self, glossary_id: str, source: str, target: str) -> None:
        super().__init__(f"Dictionary not found: glossary {glossary_id[:100]!r} has none for {source} -> {target}")


def _code(iso: str) -> str:
    return to_deepl(iso).lower()


def v2_info(glossary: Glossary) -> dict[str, Any]:
    only = glossary.dictionaries[0]
    return {
        "glossary_id": glossary.glossary_id,
        "name": glossary.name,
        "ready": True,
        "source_lang": _code(only.source_lang),
        "target_lang": _code(only.target_lang),
        "creation_time": glossary.creation_time,
        "entry_count": len(only.entries),
    }


def dictionary_info(dictionary: Dictionary) -> dict[str, Any]:
    return {
        "source_lang": _code(dictionary.source_lang),
        "target_lang": _code(dictionary.target_lang),
        "entry_count": len(dictionary.entries),
    }


def v3_info(glossary: Glossary) -> dict[str, Any]:
    return {
        "glossary_id": glossary.glossary_id,
        "name": glossary.name,
        "dictionaries": [dictionary_info(d) for d in glossary.dictionaries],
        "creation_time": glossary.creation_time,
    }


def tsv(entries: dict[str, str]) -> str:
    """DeepL's TSV of a dictionary, as deepl-python writes it (no newline after the last entry)."""
    return "\n".join(f"{source}\t{target}" for source, target in entries.items())


def language_pair(params: dict[str, Any], handler: Any, where: str = "") -> tuple[str, str]:
    """A dictionary's languages (DeepL's base codes, as DeepL creates glossaries), in the one spelling
    a language is stored in; `where`: the dictionary's place in the request, for messages."""
    names = (f"{where}source_lang", f"{where}target_lang")
    source = source_language(params, handler.languages, "source_lang", names[0])
    target = source_language(params, handler.languages, "target_lang", names[1])
    if source is None or target is None:
        raise InvalidRequest(f"Parameters '{names[0]}' and '{names[1]}' must be specified.")
    source, target = handler.canonical(source), handler.canonical(target)
    if source == target:
        raise InvalidRequest(f"Value for '{names[1]}' not supported: the same language as '{names[0]}'.")
    return source, target


def parse_dictionary(params: Any, handler: Any, where: str = "") -> Dictionary:
    """A dictionary as v3 sends it: `source_lang`, `target_lang`, `entries`, `entries_format`."""
    if not isinstance(params, dict):
        raise InvalidRequest(f"Value for '{where.rstrip('.') or 'dictionary'}' not supported: an object is expected.")
    source, target = language_pair(params, handler, where)
    entries_format = (one(params, "entries_format") or "tsv").lower()
    entries = parse_entries(one(params, "entries") or "", entries_format, f"{where}entries")
    return Dictionary(source, target, entries)


def parse_dictionaries(params: dict[str, Any], handler: Any) -> tuple[Dictionary, ...]:
    value = params.get("dictionaries")
    if not value:
        return ()
    if not isinstance(value, list):
        raise InvalidRequest("Value for 'dictionaries' not supported: a list of dictionaries is expected.")
    dictionaries = tuple(parse_dictionary(d, handler, f"dictionaries.{i}.") for i, d in enumerate(value))
    pairs = [(d.source_lang, d.target_lang) for d in dictionaries]
    twice = next((i for i, pair in enumerate(pairs) if pair in pairs[:i]), None)
    if twice is not None:
        raise InvalidRequest(f"Value for 'dictionaries.{twice}' not supported: a second dictionary for its languages.")
    return dictionaries


def merged(glossary: Glossary, changes: tuple[Dictionary, ...]) -> Glossary:
    """PATCH: each change's entries added to its pair's dictionary (a term given again takes the new
    target), or a new dictionary."""
    dictionaries = list(glossary.dictionaries)
    for index, change in enumerate(changes):
        mine = glossary.dictionary(change.source_lang, change.target_lang)
        if mine is None:
            dictionaries.append(change)
            continue
        entries = {**mine.entries, **change.entries}
        if len(entries) > MAX_ENTRIES:
            field = f"dictionaries.{index}.entries"
            raise PayloadTooLarge(f"{field}: number of entries", MAX_ENTRIES, len(entries), field=field)
        dictionaries[dictionaries.index(mine)] = replace(mine, entries=entries)
    return replace(glossary, dictionaries=tuple(dictionaries))


def replaced(glossary: Glossary, new: Dictionary) -> Glossary:
    """PUT: the pair's dictionary replaced by `new` (in its place), or added."""
    mine = glossary.dictionary(new.source_lang, new.target_lang)
    dictionaries = [new if d is mine else d for d in glossary.dictionaries] if mine else [*glossary.dictionaries, new]
    return replace(glossary, dictionaries=tuple(dictionaries))


def without(glossary: Glossary, source: str, target: str) -> Glossary:
    mine = glossary.dictionary(source, target)
    if mine is None:
        raise DictionaryNotFound(glossary.glossary_id, _code(source), _code(target))
    return replace(glossary, dictionaries=tuple(d for d in glossary.dictionaries if d is not mine))


def _name(params: dict[str, Any]) -> str | None:
    name = one(params, "name")
    return name[:MAX_NAME_CHARS] if name is not None else None


async def _found(request: Any, handler: Any) -> Glossary:
    glossary_id = request.path_params["glossary_id"]
    glossary = await handler.glossaries.get(glossary_id)
    if glossary is None:
        raise GlossaryNotFound(glossary_id, "glossary_id")
    return glossary


async def _updated(request: Any, handler: Any, change: Callable[[Glossary], Glossary]) -> Glossary:
    glossary_id = request.path_params["glossary_id"]
    glossary = await handler.glossaries.update(glossary_id, change)
    if glossary is None:
        raise GlossaryNotFound(glossary_id, "glossary_id")
    return glossary


async def _deleted(request: Any, handler: Any) -> Any:
    from starlette.responses import Response

    glossary_id = request.path_params["glossary_id"]
    if not await handler.glossaries.delete(glossary_id):
        raise GlossaryNotFound(glossary_id, "glossary_id")
    return Response(status_code=204)


# v2: glossaries of one dictionary.


async def v2_pairs(request: Any, handler: Any) -> Any:
    codes = sorted(handler.listed)  # one code a language, not every accepted spelling
    return {
        "supported_languages": [
            {"source_lang": _code(s), "target_lang": _code(t)} for s in codes for t in codes if s != t
        ]
    }


async def _create_params(request: Any) -> tuple[dict[str, Any], str]:
    """A create's form or JSON, its key checked, and the name DeepL requires of v2 and v3 alike."""
    params = await read_params(request)
    name = _name(params)
    if name is None:
        raise InvalidRequest("Parameter 'name' not specified.")
    return params, name


async def v2_create(request: Any, handler: Any) -> Any:
    from starlette.responses import JSONResponse

    params, name = await _create_params(request)
    source, target = language_pair(params, handler)
    entries = parse_entries(one(params, "entries") or "", (one(params, "entries_format") or "tsv").lower())
    glossary = new_glossary(name, source, target, entries)
    await handler.glossaries.create(glossary)
    return JSONResponse(v2_info(glossary), status_code=201)


async def v2_listing(request: Any, handler: Any) -> Any:
    glossaries = await handler.glossaries.list()
    return {"glossaries": [v2_info(g) for g in glossaries if len(g.dictionaries) == 1]}


async def v2_one(request: Any, handler: Any) -> Any:
    from starlette.responses import PlainTextResponse

    if request.method == "DELETE":
        return await _deleted(request, handler)
    glossary = await _found(request, handler)
    if len(glossary.dictionaries) != 1:
        raise InvalidRequest(
            f"glossary_id: glossary {glossary.glossary_id!r} has {len(glossary.dictionaries)} dictionaries, which "
            f"v2 cannot show: /v3/glossaries/{glossary.glossary_id} answers it"
        )
    if request.url.path.endswith("/entries"):
        entries = glossary.dictionaries[0].entries
        return PlainTextResponse(tsv(entries) + "\n", media_type="text/tab-separated-values")
    return v2_info(glossary)


# v3: glossaries of several dictionaries.


async def v3_create(request: Any, handler: Any) -> Any:
    from starlette.responses import JSONResponse

    params, name = await _create_params(request)
    dictionaries = parse_dictionaries(params, handler)
    if not dictionaries:
        raise InvalidRequest("Parameter 'dictionaries' not specified.")
    glossary = new_multilingual(name, dictionaries)
    await handler.glossaries.create(glossary)
    return JSONResponse(v3_info(glossary), status_code=201)


async def v3_listing(request: Any, handler: Any) -> Any:
    return {"glossaries": [v3_info(g) for g in await handler.glossaries.list()]}


async def v3_one(request: Any, handler: Any) -> Any:
    if request.method == "DELETE":
        return await _deleted(request, handler)
    if request.method == "PATCH":
        params = await read_params(request)
        name, changes = _name(params), parse_dictionaries(params, handler)
        if name is None and not changes:
            raise InvalidRequest("Parameters 'name' or 'dictionaries' must be specified.")
        return v3_info(await _updated(request, handler, lambda g: merged(replace(g, name=name or g.name), changes)))
    return v3_info(await _found(request, handler))


async def v3_dictionaries(request: Any, handler: Any) -> Any:
    from starlette.responses import Response

    if request.method == "DELETE":
        source, target = language_pair(dict(request.query_params), handler)
        await _updated(request, handler, lambda g: without(g, source, target))
        return Response(status_code=204)
    params = await read_params(request)
    new = parse_dictionary(params, handler)
    await _updated(request, handler, lambda g: replaced(g, new))
    return dictionary_info(new)


async def v3_entries(request: Any, handler: Any) -> Any:
    source, target = language_pair(dict(request.query_params), handler)
    glossary = await _found(request, handler)
    dictionary = glossary.dictionary(source, target)
    if dictionary is None:
        raise DictionaryNotFound(glossary.glossary_id, _code(source), _code(target))
    return {
        "dictionaries": [{**dictionary_info(dictionary), "entries": tsv(dictionary.entries), "entries_format": "tsv"}]
    }


def routes(get_service: Callable[[], Any]) -> list[Any]:
    from starlette.routing import Route

    from translator.api.deepl import V2_PATHS, V3_PATHS

    def route(path: str, work: Any, methods: list[str]) -> Route:
        return Route(path, answering(get_service, work), methods=methods)

    # The routes that read a body check the key with it (`auth_key` may be a form field).
    return [
        *(
            r
            for v2 in V2_PATHS
            for r in (
                route(f"{v2}/glossary-language-pairs", v2_pairs, ["GET"]),
                route(f"{v2}/glossaries", v2_create, ["POST"]),
                route(f"{v2}/glossaries", v2_listing, ["GET"]),
                route(f"{v2}/glossaries/{{glossary_id}}", v2_one, ["GET", "DELETE"]),
                route(f"{v2}/glossaries/{{glossary_id}}/entries", v2_one, ["GET"]),
            )
        ),
        *(
            r
            for v3 in V3_PATHS
            for r in (
                route(f"{v3}/glossaries", v3_create, ["POST"]),
                route(f"{v3}/glossaries", v3_listing, ["GET"]),
                route(f"{v3}/glossaries/{{glossary_id}}", v3_one, ["GET", "DELETE"]),
                route(f"{v3}/glossaries/{{glossary_id}}", v3_one, ["PATCH"]),
                route(f"{v3}/glossaries/{{glossary_id}}/dictionaries", v3_dictionaries, ["DELETE"]),
                route(f"{v3}/glossaries/{{glossary_id}}/dictionaries", v3_dictionaries, ["PUT"]),
                route(f"{v3}/glossaries/{{glossary_id}}/entries", v3_entries, ["GET"]),
            )
        ),
    ]

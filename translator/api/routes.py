"""Routes of the API workers beside `POST /translation`: `GET /languages` and the
LibreTranslate-compatible API (translator/api/libretranslate.py)."""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any


def languages_body(
    languages: list[str], model_codes: dict[str, str] | None = None, accepted: Collection[str] | None = None
) -> dict[str, Any]:
    """`GET /languages`: the loaded model's codes, their English names, the model's own code for
    each (NLLB's `eng_Latn` for `en`; requests may name either), every code a request may name
    (aliases too: `zh-Hans`; what a client such as m2m-translate checks its records against), and
    which of them `"fromLang": "auto"` detects."""
    # The detector's labels are a constant of translator.text.langdetect: answering does not load its model.
    from translator.api.libretranslate import language_name
    from translator.text.langdetect import AUTO, detectable

    model_codes = model_codes if model_codes is not None else {code: code for code in languages}
    auto = detectable(frozenset(languages))
    return {
        "languages": languages,
        "names": {code: language_name(code) for code in languages},
        "modelCodes": model_codes,
        "acceptedCodes": sorted(accepted if accepted is not None else {*languages, *model_codes.values()}),
        "autoDetect": {"fromLang": AUTO, "languages": [code for code in languages if code in auto]},
    }


def routes_app(
    get_languages: Callable[[], list[str]],
    get_service: Callable[[], Any],
    get_model_codes: Callable[[], dict[str, str]] | None = None,
    get_accepted: Callable[[], Collection[str]] | None = None,
) -> Any:
    """The ASGI app of these routes; `get_service` gives the worker's service (for the
    LibreTranslate API, which translates through its handler)."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    from translator.api import (
        deepl,
        deepl_documents,
        deepl_glossaries,
        deepl_memories,
        documents,
        glossaries,
        libretranslate,
        memories,
    )
    from translator.ui import routes as ui

    async def languages(_: Request) -> JSONResponse:
        return JSONResponse(
            languages_body(
                get_languages(),
                get_model_codes() if get_model_codes else None,
                get_accepted() if get_accepted else None,
            )
        )

    # Mounted at "/" on BentoML's passive mount, which only claims paths this app routes: a mount
    # at "/languages" would redirect the bare path to "/languages/".
    return Starlette(
        routes=one_route_a_path(
            [
                Route("/languages", languages, methods=["GET"]),
                *libretranslate.routes(get_service),
                # Document translation (translator/api/documents.py).
                *documents.routes(get_service),
                *glossaries.routes(get_service),  # #33
                *memories.routes(get_service),  # #51
                # DeepL's API (#33): text, then its glossaries and documents, which build on deepl.py
                # (its errors and endpoint wrapper), never the other way round.
                *deepl.routes(get_service),
                *deepl_glossaries.routes(get_service),
                *deepl_documents.routes(get_service),
                *deepl_memories.routes(get_service),  # #51
                # The page for people (translator/ui/).
                *ui.routes(get_languages),
            ]
        )
    )


class _ByMethod:
    """One path's routes as one: each request to the route that takes its method."""

    def __init__(self, routes: list[Any]) -> None:
        self.routes = routes

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        route = next(r for r in self.routes if scope["method"] in r.methods)
        await route.app(scope, receive, send)


def one_route_a_path(routes: list[Any]) -> list[Any]:
    """Routes of one path (`GET /v2/glossaries` and `POST /v2/glossaries`, declared apart) merged
    into one: Starlette answers a method no route takes with a 405 whose `Allow` lists the first
    route's methods only (#50: `OPTIONS /v2/glossaries` said `Allow: POST`)."""
    from starlette.routing import Route

    by_path: dict[str, list[Any]] = {}
    for route in routes:
        by_path.setdefault(route.path, []).append(route)
    merged = []
    for path, group in by_path.items():
        if len(group) == 1:
            merged.append(group[0])
            continue
        methods = sorted(set().union(*(route.methods for route in group)) - {"HEAD"})
        merged.append(Route(path, _ByMethod(group), methods=methods))
    return merged

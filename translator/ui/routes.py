"""Routes of the page at `/ui` (translator/ui/static/), mounted beside the others
(translator/api/routes.py).

The page translates through the same public endpoints as any client (`GET /languages`,
`GET /memories` for its choice of translation memory, `POST /translation`, the document endpoints),
with the user's API key when keys are on: it has no privileged path. What the public API does not
say, the page learns from `GET /ui/settings`: the languages' names, whether a key is needed, the
file formats it takes and the limits it shows in its controls.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from importlib import resources
from typing import Any

from translator.api.auth import keys_required
from translator.contract import limits

PREFIX = "/ui"
# The page's files, served by name only (no path from the request touches the file system).
ASSETS = {
    "index.html": "text/html; charset=utf-8",
    "app.js": "text/javascript; charset=utf-8",
    "style.css": "text/css; charset=utf-8",
    # The API's documentation page at / (translator/api/openapi.py), its initializer here.
    "docs.html": "text/html; charset=utf-8",
    "docs.js": "text/javascript; charset=utf-8",
}
# The browser itself refuses anything from another origin, inline scripts and inline styles: the
# page stays air-gapped even if an edit adds a CDN link by mistake (tests/e2e/test_ui.py checks).
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; form-action 'none'; base-uri 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    # Small files that change with the service: revalidated, never stale after an upgrade.
    "Cache-Control": "no-cache",
}
# The documentation page: Swagger UI sets styles inline and shows images as data URLs; nothing
# from another origin either.
DOCS_HEADERS = {
    **SECURITY_HEADERS,
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
        "connect-src 'self'; form-action 'none'; base-uri 'none'; frame-ancestors 'none'"
    ),
}


def asset(name: str) -> bytes:
    return resources.files("translator.ui").joinpath("static", name).read_bytes()


def language_names(languages: Collection[str]) -> dict[str, str]:
    """English names of the model's codes, as the LibreTranslate API lists them; a code without
    a name in CLDR is shown as itself."""
    from translator.api.libretranslate import language_name

    names = {}
    for code in sorted(languages):
        try:
            names[code] = language_name(code)
        except ValueError:  # langcodes' LanguageTagError: not a tag it can parse
            names[code] = code
    return names


def settings_body(languages: Collection[str]) -> dict[str, Any]:
    from translator.documents.formats import supported

    return {
        "fileFormats": supported(),
        "names": language_names(languages),
        "keyRequired": keys_required(),
        "maxChars": limits.MAX_CHARS_PER_RECORD,
        "maxAlternatives": limits.MAX_ALTERNATIVES,
    }


def routes(get_languages: Callable[[], Collection[str]]) -> list[Any]:
    """Starlette routes of the page; `get_languages` gives the loaded model's codes."""
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    def page(name: str) -> Callable[[Request], Any]:
        body, media_type = asset(name), ASSETS[name]

        async def endpoint(_: Request) -> Response:
            return Response(body, media_type=media_type, headers=SECURITY_HEADERS)

        return endpoint

    async def settings(_: Request) -> JSONResponse:
        return JSONResponse(settings_body(get_languages()), headers={"Cache-Control": "no-cache"})

    # Both "/ui" and "/ui/" answer the page (no redirect): its links are absolute.
    return [
        Route(PREFIX, page("index.html"), methods=["GET"]),
        Route(f"{PREFIX}/", page("index.html"), methods=["GET"]),
        Route(f"{PREFIX}/settings", settings, methods=["GET"]),
        *(Route(f"{PREFIX}/{name}", page(name), methods=["GET"]) for name in ASSETS if not name.endswith(".html")),
    ]

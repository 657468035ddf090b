"""Routes of the API workers beside the translation endpoint: `GET /languages`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def languages_body(languages: list[str]) -> dict[str, Any]:
    """`GET /languages`: the loaded model's codes, and which of them `"fromLang": "auto"` detects."""
    # The detector's list is a constant of translator.text.langdetect: answering does not load its model.
    from translator.text.langdetect import AUTO, DETECTABLE

    return {
        "languages": languages,
        "autoDetect": {"fromLang": AUTO, "languages": [code for code in languages if code in DETECTABLE]},
    }


def languages_app(get_languages: Callable[[], list[str]]) -> Any:
    """A tiny ASGI app answering `GET /languages` with the loaded model's language codes."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    async def languages(_: Request) -> JSONResponse:
        return JSONResponse(languages_body(get_languages()))

    # Mounted at "/" on BentoML's passive mount, which only claims paths this app routes: a mount
    # at "/languages" would redirect the bare path to "/languages/".
    return Starlette(routes=[Route("/languages", languages, methods=["GET"])])

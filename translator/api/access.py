"""Who may call which route: the one API-key check of this server, applied by the edge
(translator/api/middleware.py) to every request that is not to a route declared public here,
never by a route itself (#50: four copies of the check, and a flag by which a route had to remember
to check the key itself, so that forgetting left it open).

Each API takes its key where its clients send it, and refuses in its own words and shape:
- the native API: `Authorization: Bearer KEY`; none is a 401, one not accepted a 403;
- LibreTranslate's: the `api_key` parameter (query, JSON or form), or a bearer token; LibreTranslate's
  403 "Invalid API key" either way;
- DeepL's: `Authorization: DeepL-Auth-Key KEY` (or `Bearer`), or the `auth_key` parameter; DeepL's 403
  "Wrong auth key".
A server whose keys are asked for but not given refuses every such request with one 503 (its log
says why): it fails closed.

The public routes are the ones a client needs before it has a key, or that Kubernetes and
Prometheus call, or whose path is itself the capability (a job's 128-bit id); each says why.
CORS preflights (OPTIONS) are public: browsers never send credentials with them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from translator.api.auth import ApiKeys
from translator.api.refusal import Misconfigured
from translator.contract.errors import Forbidden, TranslationError, Unauthorized

Headers = Iterable[tuple[bytes, bytes]]

MISCONFIGURED = "this server's API keys are misconfigured (its log says how); retry later"
# Where the key the edge accepted is left for the route (a document job is its key's: jobs.owner_of).
SCOPE_KEY = "translator.api_key"


@dataclass(frozen=True)
class KeyRule:
    """How one API takes its key, and how it refuses."""

    api: str
    schemes: tuple[bytes, ...]  # `Authorization` schemes, lower case
    param: str | None  # the parameter that may carry it (query or body)
    missing: Callable[[], TranslationError]
    wrong: Callable[[], TranslationError]

    def header_key(self, headers: Headers) -> bytes | None:
        """The key of an `Authorization` header in one of this API's schemes, if any."""
        for name, value in headers:
            if name.lower() == b"authorization":
                scheme, _, token = value.strip().partition(b" ")
                if scheme.lower() in self.schemes and token.strip():
                    return token.strip()
        return None


NATIVE = KeyRule(
    "native",
    (b"bearer",),
    None,
    lambda: Unauthorized("an API key is required: send the header 'Authorization: Bearer <key>'"),
    lambda: Forbidden("the API key is not accepted"),
)
LIBRETRANSLATE = KeyRule(
    "libretranslate",
    (b"bearer",),
    "api_key",
    lambda: Forbidden("Invalid API key"),
    lambda: Forbidden("Invalid API key"),
)
DEEPL = KeyRule(
    "deepl",
    (b"deepl-auth-key", b"bearer"),
    "auth_key",
    lambda: Forbidden("Wrong auth key"),
    lambda: Forbidden("Wrong auth key"),
)


@dataclass(frozen=True)
class Public:
    methods: frozenset[str]
    path: re.Pattern[str]
    why: str


_READ = frozenset({"GET", "HEAD"})


def _public(methods: Iterable[str], path: str, why: str) -> Public:
    return Public(frozenset(methods), re.compile(path), why)


PUBLIC: tuple[Public, ...] = (
    _public(_READ, r"/(livez|readyz|healthz)", "Kubernetes' probes carry no key"),
    _public(_READ, r"/metrics", "Prometheus scrapes without a key"),
    _public(_READ, r"/|/docs\.json|/static_content/.+", "the API's documentation: how to get and send a key"),
    _public(
        _READ, r"/ui(/|/settings|/app\.js|/style\.css|/docs\.js)?", "the page for people, which asks for the key itself"
    ),
    _public(_READ, r"/languages", "what a client checks its languages against before any call"),
    _public(_READ, r"/documents/[0-9a-f]{32}(/result)?", "a job's 128-bit id is its capability"),
    _public(
        [*_READ, "POST"],
        r"/libretranslate/(languages|frontend/settings|health)",
        "LibreTranslate's clients read them before they have a key (its settings say whether one is needed)",
    ),
    _public(_READ, r"/libretranslate/download_file/.+", "the file's random name is its capability"),
)


def is_public(method: str, path: str) -> bool:
    if method == "OPTIONS":
        return True  # a CORS preflight: browsers send no credentials with it
    return any(method in p.methods and p.path.fullmatch(path) for p in PUBLIC)


def refusal(keys: ApiKeys | None, problem: str | None, rule: KeyRule, offered: bytes | None) -> TranslationError | None:
    """Why a request offering `offered` (None: no key) is refused under `rule`; None: it may go on."""
    if problem is not None:
        return Misconfigured(MISCONFIGURED)
    if keys is None:
        return None
    if not offered:
        return rule.missing()
    return None if keys.accepts(offered) else rule.wrong()


def offered(scope: Mapping[str, Any]) -> bytes | None:
    """The key the request offered, as the edge read it (None: none); a document job is its key's."""
    key = scope.get(SCOPE_KEY)
    return key if isinstance(key, bytes) else None


class RouteTable:
    """Which requests go to a route of this server: the key is asked only there (an unknown path
    is the app's 404, whoever asks). `routes`: the Starlette routes of translator/api/routes.py;
    `own`: BentoML's, by path (`/translation`)."""

    def __init__(self, routes: Iterable[Any], own: Iterable[str]) -> None:
        self.routes = list(routes)
        self.own = frozenset(own)

    def routed(self, scope: Mapping[str, Any]) -> bool:
        from starlette.routing import Match

        if scope.get("path") in self.own:
            return True
        probe = {"query_string": b"", "root_path": "", **scope}
        # PARTIAL: the path is a route's, the method not (a 405, after the key).
        return any(route.matches(probe)[0] is not Match.NONE for route in self.routes)

"""Bounded `endpoint` labels on BentoML's request metrics.

BentoML 1.4 labels its `bentoml_service_request_*` series with the raw request path: every
`/documents/<job>` and every request for a path nothing serves (`/wp-login.php`, a scanner's
`/random-123`) makes new series, so anyone who can reach the port can grow the Prometheus that
scrapes it without bound. Here the label is the template of the route that answers
(`/documents/{job}`), and one value, `UNMATCHED`, for every path no route serves.

BentoML's metrics middleware is the outermost of its app (ahead of the service's own,
translator/api/middleware.py, which therefore cannot rewrite the path for it), reads
`scope["path"]` once as a request arrives, and is looked up by name in
`bentoml._internal.server.http.instruments` each time a worker builds its app. `install()` puts a
subclass under that name: the path is swapped for its template while BentoML's middleware reads it
and put back before anything else sees the request, so routing, the access log and tracing see the
real path. That name is not public API: tests/e2e/test_operator_metrics.py pins the behaviour on a
running server (unknown paths and document ids add no series), and `install()` fails loudly where
the name is gone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from starlette.routing import BaseRoute, Match, Mount

Scope = dict[str, Any]

# The one label value of every path no route serves; never a path (those start with "/").
UNMATCHED = "unmatched"
# Where the real path waits while BentoML's middleware reads the template.
_REAL_PATH = "translator.real_path"


def route_template(routes: Sequence[BaseRoute], scope: Scope) -> str | None:
    """The template of the route Starlette's router would hand `scope` to (`/documents/{job}`,
    mounts included), or None where it would answer 404. A route matched but for its method (a
    405) counts as matched: its template is as bounded."""
    partial: str | None = None
    for route in routes:
        match, child = route.matches(scope)
        if match is Match.NONE:
            continue
        template = _template(route, {**scope, **child})
        if match is Match.FULL:
            return template  # the router stops at the first full match, served or not
        if partial is None and template is not None:
            partial = template
    return partial


def _template(route: BaseRoute, scope: Scope) -> str | None:
    if isinstance(route, Mount):
        inner = route.routes
        if not inner:  # an app that is not a router (static files): everything under it is one route
            return route.path + "/{path}"
        found = route_template(inner, scope)
        return None if found is None else route.path + found
    path = getattr(route, "path", None)
    return path if isinstance(path, str) else None


def endpoint_label(scope: Scope) -> str:
    """The bounded `endpoint` label of a request, from the routes of the app serving it
    (`scope["app"]`, which Starlette sets before any middleware runs)."""
    routes = getattr(scope.get("app"), "routes", None)
    if routes is None:
        return UNMATCHED  # bounded even where the app cannot be asked
    return route_template(routes, scope) or UNMATCHED


class _RealPath:
    """The app BentoML's metrics middleware calls on: the request with its real path again."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if _REAL_PATH in scope:
            scope["path"] = scope.pop(_REAL_PATH)
        await self.app(scope, receive, send)


def install() -> None:
    """Once per process, before BentoML builds the app (service.py's import does it): BentoML's
    metrics middleware, as its app factory looks it up, labels by route template."""
    from bentoml._internal.server.http import instruments

    base = getattr(instruments, "RunnerTrafficMetricsMiddleware", None)
    if base is None:
        raise RuntimeError(
            "bentoml._internal.server.http.instruments.RunnerTrafficMetricsMiddleware is gone: BentoML changed how "
            "it labels request metrics; translator/api/route_labels.py must follow it"
        )
    if getattr(base, "labels_by_route", False):
        return

    class RouteLabelledMetrics(base):  # type: ignore[misc,valid-type]
        labels_by_route = True

        def __init__(self, app: Any, **options: Any) -> None:
            super().__init__(_RealPath(app), **options)

        async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
            if scope["type"] in ("http", "websocket") and _REAL_PATH not in scope:
                scope[_REAL_PATH] = scope["path"]
                scope["path"] = endpoint_label(scope)
            await super().__call__(scope, receive, send)

    instruments.RunnerTrafficMetricsMiddleware = RouteLabelledMetrics  # type: ignore[misc,assignment]

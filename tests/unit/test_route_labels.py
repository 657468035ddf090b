"""translator/api/route_labels.py: the bounded `endpoint` label, from the routes the server really
has (BentoML's passive mount of routes_app included). tests/e2e/test_operator_metrics.py checks
the labels on /metrics of a running server."""

from __future__ import annotations

import pytest
from _bentoml_impl.server.mount import PassiveMount
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.responses import PlainTextResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.testclient import TestClient

from translator.api.route_labels import UNMATCHED, endpoint_label, install, route_template
from translator.api.routes import routes_app

pytestmark = pytest.mark.pure


async def ok(_request):
    return PlainTextResponse("ok")


@pytest.fixture(scope="module")
def app(tmp_path_factory) -> Starlette:
    """Routes as BentoML's app for the service has them: its own, then routes_app passively at /."""
    assets = tmp_path_factory.mktemp("assets")
    app = Starlette(
        routes=[
            Route("/translation", ok, methods=["POST"]),
            Route("/livez", ok),
            Route("/readyz", ok),
            Route("/metrics", ok),
            Route("/", ok),
            Mount("/assets", StaticFiles(directory=assets)),
            Mount("/inner", Starlette(routes=[Route("/known", ok)])),
        ]
    )
    app.router.routes.append(PassiveMount("/", routes_app(lambda: ["en"], lambda: None)))
    return app


def label(app: Starlette, path: str, method: str = "GET") -> str:
    return endpoint_label({"type": "http", "path": path, "method": method, "root_path": "", "app": app, "headers": []})


@pytest.mark.parametrize(
    ("path", "method", "expected"),
    [
        ("/translation", "POST", "/translation"),
        ("/translation", "GET", "/translation"),  # a 405: matched but for its method
        ("/documents/3f2a9c", "GET", "/documents/{job}"),
        ("/documents/3f2a9c/result", "GET", "/documents/{job}/result"),
        ("/glossaries/g-1", "DELETE", "/glossaries/{glossary_id}"),
        ("/deepl/v2/glossaries/g-1/entries", "GET", "/deepl/v2/glossaries/{glossary_id}/entries"),
        ("/libretranslate/translate", "POST", "/libretranslate/translate"),
        ("/languages", "GET", "/languages"),
        ("/", "GET", "/"),
        ("/assets/app.css", "GET", "/assets/{path}"),
        ("/inner/known", "GET", "/inner/known"),
        ("/wp-login.php", "GET", UNMATCHED),
        ("/random-123", "POST", UNMATCHED),
        ("/languages/", "GET", UNMATCHED),  # the router's redirect: bounded all the same
        ("/inner/unknown", "GET", UNMATCHED),  # a plain mount answers 404 itself: no later route
        ("/documents/a/b/c/d", "GET", UNMATCHED),
    ],
)
def test_the_label_is_the_route_template_or_unmatched(app, path, method, expected):
    assert label(app, path, method) == expected


def test_templates_are_few_whatever_the_paths(app):
    labels = {label(app, f"/{prefix}/{i:x}") for i in range(500) for prefix in ("documents", "x", "glossaries")}
    assert labels == {"/documents/{job}", "/glossaries/{glossary_id}", UNMATCHED}


def test_route_template_is_none_for_no_route():
    assert route_template([], {"type": "http", "path": "/a", "method": "GET", "root_path": ""}) is None


def test_a_scope_without_an_app_is_labelled_unmatched():
    assert endpoint_label({"type": "http", "path": "/documents/1", "method": "GET"}) == UNMATCHED


def test_installed_metrics_middleware_keeps_the_real_path_for_the_app():
    install()
    install()  # once per process is enough; a second call changes nothing
    from bentoml._internal.server.http import instruments

    middleware = instruments.RunnerTrafficMetricsMiddleware
    assert middleware.labels_by_route and middleware.__mro__[1].__name__ == "RunnerTrafficMetricsMiddleware"
    seen: list[str] = []

    async def job(request):
        seen.append(request.url.path)
        return PlainTextResponse(request.path_params["job"])

    app = Starlette(routes=[Route("/documents/{job}", job)], middleware=[Middleware(middleware, namespace="unit")])
    with TestClient(app) as client:
        assert client.get("/documents/abc").text == "abc"
        assert client.get("/nowhere").status_code == 404
    assert seen == ["/documents/abc"]

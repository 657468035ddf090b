"""The OpenAPI document without a server (#50): made from the app's routes and their declarations,
valid OpenAPI 3.1, every route and method in it, security only where keys are on, each API's error
shape. The served document, and schemathesis over it, are tests/e2e/test_openapi.py's."""

from __future__ import annotations

import pytest
from openapi_spec_validator import validate

from translator.api.openapi import Docs, document
from translator.api.routes import routes_app

pytestmark = pytest.mark.pure

# What BentoML writes of its own routes (the shape of its /docs.json, abridged).
BENTOML = {
    "openapi": "3.0.2",
    "info": {"title": "Translation", "version": "None", "description": "![badge](https://img.shields.io/x)"},
    "paths": {
        "/livez": {"get": {"responses": {"200": {"description": "OK"}}}},
        "/translation": {
            "post": {
                "responses": {"200": {"description": "OK"}, "400": {"description": "Bad"}},
                "requestBody": {"content": {"application/json": {"schema": {"type": "object"}}}},
            }
        },
    },
    "components": {"schemas": {}},
}


def made(keys_on: bool) -> dict:
    routes = routes_app(lambda: ["en", "fr"], lambda: None).routes
    return document(BENTOML, Docs(routes, lambda: ["en", "fr"], lambda: keys_on))


@pytest.mark.parametrize("keys_on", [False, True])
def test_valid_openapi_with_every_route_and_method(keys_on):
    doc = made(keys_on)
    validate(doc)
    operations = {(m.upper(), p) for p, item in doc["paths"].items() for m in item if m != "parameters"}
    for route in routes_app(lambda: ["en"], lambda: None).routes:
        for method in route.methods or ():
            if method != "HEAD":
                assert (method, route.path_format) in operations
    assert "img.shields.io" not in str(doc["info"])  # nothing the page would fetch from elsewhere


def test_security_where_keys_are_on_and_each_apis_error_shape():
    assert "securitySchemes" not in made(False)["components"]
    doc = made(True)
    paths = doc["paths"]
    assert paths["/translation"]["post"]["responses"]["401"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/NativeError"
    }
    deepl = paths["/v3/glossaries"]["post"]
    assert {"deeplAuthKey": []} in deepl["security"] and "401" not in deepl["responses"]  # DeepL's 403 alone
    assert deepl["responses"]["403"]["content"]["application/json"]["schema"]["$ref"].endswith("/DeepLError")
    assert paths["/libretranslate/translate"]["post"]["security"][0] == {"libretranslateApiKey": []}
    assert paths["/languages"]["get"]["security"] == []  # public
    # Languages are the model's codes; DeepL's, its spelling of them.
    body = paths["/libretranslate/translate"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert body["properties"]["target"]["enum"] == ["en", "fr"]
    deepl_body = paths["/v2/translate"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert "EN-US" in deepl_body["properties"]["target_lang"]["enum"]


def test_one_route_a_path_so_a_405_allows_every_method_of_it():
    # Starlette's 405 lists the methods of the first route of a path: `OPTIONS /v2/glossaries` said
    # `Allow: POST` where GET is one too (schemathesis's unsupported-method check, #50).
    routes = routes_app(lambda: ["en"], lambda: None).routes
    paths = [route.path for route in routes]
    assert len(paths) == len(set(paths))
    glossaries = next(route for route in routes if route.path == "/v2/glossaries")
    assert {"GET", "POST"} <= glossaries.methods

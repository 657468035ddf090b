"""The OpenAPI document the server serves (`/docs.json`, #50), checked by tools nobody here wrote:
openapi-spec-validator says it is valid OpenAPI; it lists every route of the app, each method;
and schemathesis, with every check it has (`--checks all`: status codes, content types, response
schemas, negative and positive data, methods and their Allow headers, authentication), runs over the
whole of it against a live server with keys off and with keys on, and finds nothing.

Bounded: a few examples an operation (the schemas' boundaries from the coverage phase among them),
on the fixture model. Allowed beside 2xx for valid data: what a schema cannot say (a file of a
format the service does not read, 415; two languages that must differ, entries that must parse, a
TSV line without its tab, 400; an id that names nothing stored, 404; a job not done, 409; DeepL's
LLM features, not offered, 403).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import requests
from openapi_spec_validator import validate

from harness.servers import register, start_server
from tests.e2e.helpers import config_with
from translator.api.operations import operation

pytestmark = pytest.mark.server

KEYS_ENV = "TEST_OPENAPI_API_KEYS"
KEY = "openapi-key-7e41c9b02d"
CONFIG = """
[checks.positive_data_acceptance]
expected-statuses = [200, 201, 202, 204, 400, 403, 404, 409, 415]
[checks.negative_data_rejection]
expected-statuses = [400, 404, 405, 413, 415, 422]
"""


def document(url: str) -> dict:
    response = requests.get(f"{url}/docs.json", timeout=30)
    assert response.status_code == 200
    return response.json()


def test_the_document_is_valid_openapi_and_lists_every_route(server):
    served = document(server.url)
    validate(served)
    from translator.api.routes import routes_app

    listed = {
        (method.upper(), path) for path, item in served["paths"].items() for method in item if method != "parameters"
    }
    for route in routes_app(lambda: ["en"], lambda: None).routes:
        for method in route.methods or ():
            if method != "HEAD":
                assert (method, route.path_format) in listed, f"{method} {route.path_format} is not in /docs.json"
    assert ("POST", "/translation") in listed and len(listed) > 130
    # Keys off: no security scheme, and no 401 promised.
    assert "securitySchemes" not in served["components"]
    assert "401" not in served["paths"]["/glossaries"]["get"]["responses"]
    # The native API's 400 is its error object, whose `detail` is pydantic's list where it has one.
    schema = served["paths"]["/translation"]["post"]["responses"]["400"]["content"]["application/json"]["schema"]
    assert schema == {"$ref": "#/components/schemas/NativeError"}


def test_every_declaration_names_a_route():
    # The other way round: a declaration left behind by a removed route would document nothing.
    from translator.api.operations import OPERATIONS
    from translator.api.routes import routes_app

    paths = {(m, r.path_format) for r in routes_app(lambda: ["en"], lambda: None).routes for m in r.methods or ()}
    assert [key for key in OPERATIONS if key not in paths] == []
    assert all(operation(method, path) is not None for method, path in paths if method not in ("HEAD", "OPTIONS"))


def schemathesis(url: str, tmp_path: Path, *headers: str) -> subprocess.CompletedProcess:
    config = tmp_path / "schemathesis.toml"
    config.write_text(CONFIG, encoding="utf-8")
    command = [
        str(Path(sys.executable).with_name("schemathesis")),
        "--config-file",
        str(config),
        "run",
        f"{url}/docs.json",
        "--checks",
        "all",
        "--max-examples",
        "5",
        "--phases",
        "examples,coverage,fuzzing",
        "--generation-deterministic",
        "--request-timeout",
        "60",
        "--no-color",
        *[arg for header in headers for arg in ("-H", header)],
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=900, cwd=tmp_path)


def test_schemathesis_finds_nothing_over_the_whole_document_keys_off(server, tmp_path):
    done = schemathesis(server.url, tmp_path)
    assert done.returncode == 0, done.stdout[-6000:]
    assert " passed" in done.stdout.splitlines()[-1] or "warnings" in done.stdout.splitlines()[-1]


def test_schemathesis_finds_nothing_over_the_whole_document_keys_on(fixture_model, tmp_path, monkeypatch):
    monkeypatch.setenv(KEYS_ENV, KEY)
    config = config_with(tmp_path, lambda s: s["Translation"]["translation"].update(auth={"keys_env": KEYS_ENV}))
    home = tmp_path / "home"
    home.mkdir()
    keyed = start_server(home, register(fixture_model, home), tmp_path / "server.log", config=config)
    try:
        served = document(keyed.url)
        validate(served)
        # Each API's way of sending a key, and the public routes without one.
        assert set(served["components"]["securitySchemes"]) == {
            "bearer",
            "libretranslateApiKey",
            "deeplAuthKey",
            "deeplAuthKeyParameter",
        }
        assert served["paths"]["/glossaries"]["get"]["security"] == [{"bearer": []}]
        assert served["paths"]["/languages"]["get"]["security"] == []
        assert "401" in served["paths"]["/glossaries"]["get"]["responses"]
        # With the key (a bearer token: every API takes one), and schemathesis's own checks that a
        # call without it, or with a wrong one, is refused.
        done = schemathesis(keyed.url, tmp_path, f"Authorization: Bearer {KEY}")
        assert done.returncode == 0, done.stdout[-6000:]
    finally:
        keyed.stop()

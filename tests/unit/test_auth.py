"""API keys: the configuration that turns them on, the check, and its place in the middleware."""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path

import pytest
import yaml

from translator.api import access
from translator.api.auth import ApiKeys
from translator.api.middleware import EdgeMiddleware
from translator.config import Auth, ConfigError, load_settings
from translator.shm.in_flight import SharedInFlight

pytestmark = pytest.mark.pure

KEY = "k" * 16
OTHER = "another-key-0123456789"


def test_keys_are_off_unless_an_environment_variable_is_named() -> None:
    assert Auth().keys() is None


def test_the_named_variable_holds_keys_separated_by_commas_or_whitespace(monkeypatch) -> None:
    monkeypatch.setenv("TEST_KEYS", f" {KEY},{OTHER}\n{KEY} ")
    assert Auth(keys_env="TEST_KEYS").keys() == {KEY, OTHER}


@pytest.mark.parametrize("value", [None, "", " , \n"])
def test_a_named_variable_without_keys_stops_the_start(monkeypatch, value) -> None:
    # A Secret that did not mount must not turn the keys off unnoticed.
    monkeypatch.delenv("TEST_KEYS", raising=False)
    if value is not None:
        monkeypatch.setenv("TEST_KEYS", value)
    with pytest.raises(ConfigError, match="keys_env names TEST_KEYS, which is not set or holds no key"):
        Auth(keys_env="TEST_KEYS").keys()


def test_short_keys_are_refused(monkeypatch) -> None:
    monkeypatch.setenv("TEST_KEYS", f"{KEY},short")
    with pytest.raises(ConfigError, match="1 of its keys are shorter than 16 characters"):
        Auth(keys_env="TEST_KEYS").keys()


def test_the_setting_is_read_from_the_file_and_validated(tmp_path: Path) -> None:
    def settings(auth: dict):
        path = tmp_path / "config.yaml"
        path.write_text(yaml.safe_dump({"services": {"Translation": {"translation": {"auth": auth}}}}))
        return load_settings(path)

    assert settings({"keys_env": "TRANSLATOR_API_KEYS"}).auth.keys_env == "TRANSLATOR_API_KEYS"
    with pytest.raises(ConfigError, match="keys_env"):
        settings({"keys_env": "not a name"})
    with pytest.raises(ConfigError, match="keys"):
        settings({"keys": [KEY]})  # keys themselves never go in the file


@pytest.mark.parametrize(
    ("header", "status"),
    [(None, 401), (b"Basic " + KEY.encode(), 401), (b"Bearer ", 401), (b"Bearer wrong-key-000000000", 403)],
)
def test_a_missing_key_is_401_and_a_wrong_one_403(header, status) -> None:
    headers = [] if header is None else [(b"authorization", header)]
    refusal = access.refusal(ApiKeys([KEY, OTHER]), None, access.NATIVE, access.NATIVE.header_key(headers))
    assert refusal is not None and refusal.status == status
    assert KEY not in json.dumps(refusal.body())
    if status == 401:
        assert refusal.headers()["WWW-Authenticate"].startswith("Bearer")


@pytest.mark.parametrize("key", [KEY, OTHER])
def test_every_accepted_key_passes_whatever_the_scheme_case(key) -> None:
    offered = access.NATIVE.header_key([(b"Authorization", b"bearer " + key.encode())])
    assert access.refusal(ApiKeys([KEY, OTHER]), None, access.NATIVE, offered) is None
    assert access.NATIVE.header_key([(b"authorization", b"Bearer  " + key.encode() + b" ")]) == key.encode()


async def echo_app(scope, receive, send):
    message = await receive()
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": message.get("body", b"")})


def call(
    middleware: EdgeMiddleware, method: str, headers: list, path: str = "/translation"
) -> tuple[int, dict, bytes, int]:
    """(status, headers, body, body bytes read) of one request through the middleware."""
    chunks = [b'{"payload": {}}'] * 4
    read = [0]
    sent: list[dict] = []

    async def receive():
        if not chunks:
            await asyncio.sleep(3600)
        read[0] += 1
        chunk = chunks.pop(0)
        return {"type": "http.request", "body": chunk, "more_body": bool(chunks)}

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": method, "path": path, "headers": headers}
    asyncio.run(middleware(scope, receive, send))
    return sent[0]["status"], dict(sent[0]["headers"]), b"".join(m.get("body", b"") for m in sent[1:]), read[0]


def test_the_key_is_checked_before_admission_and_the_body() -> None:
    # A full server still answers 401/403 to a caller without an accepted key: the key comes first.
    full = SharedInFlight(1, Path(tempfile.mkdtemp()) / "admission")
    assert full.try_acquire()
    middleware = EdgeMiddleware(echo_app, admission=full, keys=ApiKeys([KEY]))
    assert call(middleware, "POST", [])[0] == 401
    assert call(middleware, "POST", [(b"authorization", b"Bearer " + OTHER.encode())])[0] == 403
    assert call(middleware, "POST", [(b"authorization", b"Bearer " + KEY.encode())])[0] == 429
    assert full.in_flight() == 1 and middleware.bodies.arriving == 0


def test_keys_asked_for_but_not_given_refuse_every_post(monkeypatch) -> None:
    def missing() -> ApiKeys:
        raise ConfigError("translation.auth.keys_env names X, which is not set or holds no key")

    middleware = EdgeMiddleware(echo_app, keys=missing)
    status, _, body, _ = call(middleware, "POST", [(b"authorization", b"Bearer " + KEY.encode())])
    # The reason is the operator's (the log's), not the caller's.
    assert status == 503 and json.loads(body) == {
        "error": "this server's API keys are misconfigured (its log says how); retry later"
    }


def test_the_middleware_refuses_a_post_without_an_accepted_key_and_admits_none() -> None:
    admission = SharedInFlight(1, Path(tempfile.mkdtemp()) / "admission")
    middleware = EdgeMiddleware(echo_app, admission=admission, keys=lambda: ApiKeys([KEY]))
    status, headers, body, _ = call(middleware, "POST", [])
    assert status == 401 and headers[b"www-authenticate"].startswith(b"Bearer")
    assert json.loads(body)["error"].startswith("an API key is required")
    status, _, body, _ = call(middleware, "POST", [(b"authorization", b"Bearer " + OTHER.encode())])
    assert status == 403 and json.loads(body) == {"error": "the API key is not accepted"}
    assert admission.in_flight() == 0
    status, _, body, _ = call(middleware, "POST", [(b"authorization", b"Bearer " + KEY.encode())])
    assert status == 200 and body == b'{"payload": {}}' * 4


def test_the_declared_public_routes_need_no_key_and_every_other_does() -> None:
    # Any method: a GET too is refused where the route is not declared public (#50: routes that
    # had to check the key themselves, and one forgetting was open).
    middleware = EdgeMiddleware(echo_app, keys=ApiKeys([KEY]))
    for path in ("/livez", "/readyz", "/metrics", "/docs.json", "/", "/languages", "/ui/", "/ui/app.js"):
        assert call(middleware, "GET", [], path)[0] == 200, path
    assert call(middleware, "GET", [], "/documents/" + "a" * 32)[0] == 200  # its id is the capability
    assert call(middleware, "OPTIONS", [], "/libretranslate/translate")[0] == 200  # a CORS preflight
    for path in ("/translation", "/glossaries", "/glossaries/x", "/documents/not-an-id", "/anything"):
        assert call(middleware, "GET", [], path)[0] == 401, path
    assert call(middleware, "GET", [(b"authorization", b"Bearer " + KEY.encode())], "/glossaries")[0] == 200


def test_the_key_is_asked_at_routes_and_an_unknown_path_is_the_apps_404() -> None:
    from translator.api.access import RouteTable
    from translator.api.routes import routes_app

    table = RouteTable(routes_app(lambda: ["en"], lambda: None).routes, own=["/translation"])
    middleware = EdgeMiddleware(echo_app, keys=ApiKeys([KEY]), routes=table)
    assert call(middleware, "POST", [], "/translation")[0] == 401
    assert call(middleware, "GET", [], "/glossaries")[0] == 401
    assert call(middleware, "DELETE", [], "/v3/glossaries/x/dictionaries")[0] == 403  # DeepL's words
    assert call(middleware, "PUT", [], "/glossaries")[0] == 401  # a route's path, another method: 405 after the key
    assert call(middleware, "GET", [], "/nowhere")[0] == 200  # not a route: the app answers (404)
    assert call(middleware, "POST", [], "/v3/unknown")[0] == 200

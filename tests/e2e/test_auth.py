"""API keys on a running server: the translation endpoint needs one, the probes and metrics do
not, keys never reach the log or the metrics, and a server told to use keys it was not given fails
closed and says why."""

from __future__ import annotations

import time
from pathlib import Path

import deepl
import pytest
import requests
from deepl.api_data import MultilingualGlossaryDictionaryEntries as Dictionary
from libretranslatepy import LibreTranslateAPI

from harness.servers import launch_server, register, start_server, wait_ready
from tests.e2e.helpers import CONTRACT_REQUEST, CONTRACT_RESPONSE, config_with

pytestmark = [pytest.mark.server, pytest.mark.slow]

KEYS_ENV = "TEST_TRANSLATOR_API_KEYS"
KEY = "e2e-key-5a1f0c3b9d7e"
OTHER = "e2e-other-key-77d2c4e1"
WRONG = "e2e-wrong-key-000000000"


def config_with_keys(tmp_path: Path) -> Path:
    return config_with(tmp_path, lambda s: s["Translation"]["translation"].update(auth={"keys_env": KEYS_ENV}))


def test_keys_guard_translation_and_never_reach_the_log(fixture_model: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv(KEYS_ENV, f"{KEY},{OTHER}")
    home = tmp_path / "home"
    home.mkdir()
    srv = start_server(home, register(fixture_model, home), tmp_path / "server.log", config=config_with_keys(tmp_path))
    try:
        url = f"{srv.url}/translation"
        missing = requests.post(url, json=CONTRACT_REQUEST, timeout=60)
        assert missing.status_code == 401, missing.text
        assert missing.headers["WWW-Authenticate"].startswith("Bearer")
        assert "Authorization: Bearer" in missing.json()["error"]
        wrong = requests.post(url, json=CONTRACT_REQUEST, headers={"Authorization": f"Bearer {WRONG}"}, timeout=60)
        assert (wrong.status_code, wrong.json()) == (403, {"error": "the API key is not accepted"})
        for key in (KEY, OTHER):
            ok = requests.post(url, json=CONTRACT_REQUEST, headers={"Authorization": f"Bearer {key}"}, timeout=60)
            assert (ok.status_code, ok.json()) == (200, CONTRACT_RESPONSE)
        # The LibreTranslate API: the key in the body (as its clients send it) or as a bearer
        # token; none or a wrong one is LibreTranslate's 403.
        compat = f"{srv.url}/libretranslate/translate"
        body = {"q": "Life is like a box of chocolates.", "source": "en", "target": "ja"}
        for refused in (body, {**body, "api_key": WRONG}, {**body, "api_key": ""}):
            response = requests.post(compat, json=refused, timeout=60)
            assert (response.status_code, response.json()) == (403, {"error": "Invalid API key"})
        expected = {"translatedText": CONTRACT_RESPONSE["result"][0]["text"]}
        assert requests.post(compat, json={**body, "api_key": KEY}, timeout=60).json() == expected
        assert requests.post(compat, data={**body, "api_key": OTHER}, timeout=60).json() == expected
        bearer = requests.post(compat, json=body, headers={"Authorization": f"Bearer {KEY}"}, timeout=60)
        assert bearer.json() == expected
        client = LibreTranslateAPI(f"{srv.url}/libretranslate/", api_key=KEY)
        assert client.translate(body["q"], "en", "ja") == expected["translatedText"]
        # DeepL's API (#33): its own header scheme, DeepL's 403 without an accepted key; the
        # glossaries, read or written, need a key on either API.
        with pytest.raises(deepl.AuthorizationException):
            deepl.Translator(WRONG, server_url=f"{srv.url}/deepl/").translate_text(body["q"], target_lang="JA")
        deepl_client = deepl.Translator(KEY, server_url=f"{srv.url}/deepl/")
        assert deepl_client.translate_text(body["q"], target_lang="JA").text == expected["translatedText"]
        assert requests.get(f"{srv.url}/glossaries", timeout=30).status_code == 401
        assert requests.get(f"{srv.url}/deepl/v2/glossaries", timeout=30).status_code == 403
        settings = requests.get(f"{srv.url}/libretranslate/frontend/settings", timeout=30).json()
        assert settings["keyRequired"] is True
        # Files: the native upload takes the key as every POST; translate_file in the form (#34).
        files = {"file": ("a.txt", body["q"].encode())}
        langs = {"fromLang": "en", "toLang": "ja"}
        assert requests.post(f"{srv.url}/documents", files=files, data=langs, timeout=60).status_code == 401
        job = requests.post(
            f"{srv.url}/documents", files=files, data=langs, headers={"Authorization": f"Bearer {KEY}"}, timeout=60
        )
        assert job.status_code == 202, job.text
        upload = f"{srv.url}/libretranslate/translate_file"
        form = {"source": "en", "target": "ja"}
        for refused_form in (form, {**form, "api_key": WRONG}):
            response = requests.post(upload, files=files, data=refused_form, timeout=60)
            assert (response.status_code, response.json()) == (403, {"error": "Invalid API key"})
        done = requests.post(upload, files=files, data={**form, "api_key": KEY}, timeout=60)
        assert done.status_code == 200, done.text
        translated = requests.get(done.json()["translatedFileUrl"], timeout=30)
        assert translated.content.decode() == expected["translatedText"]
        # Every DeepL route, v3 glossaries and documents included, takes DeepL's header or the
        # `auth_key` parameter (#44): none or a wrong one is DeepL's 403, never a 401 asking for
        # another header; a path DeepL's API does not have is DeepL's 404, key or none.
        client = deepl.DeepLClient(KEY, server_url=srv.url)
        made = client.create_multilingual_glossary("keys", [Dictionary("EN", "JA", {"box": "箱"})])
        assert made.glossary_id in [g.glossary_id for g in client.list_multilingual_glossaries()]
        for path in ("/v3/glossaries", f"/v3/glossaries/{made.glossary_id}", "/deepl/v3/glossaries", "/v2/usage"):
            for headers in ({}, {"Authorization": f"DeepL-Auth-Key {WRONG}"}, {"Authorization": f"Bearer {WRONG}"}):
                refused = requests.get(f"{srv.url}{path}", headers=headers, timeout=30)
                assert (refused.status_code, refused.json()["message"]) == (403, "Wrong auth key"), path
            assert requests.get(f"{srv.url}{path}?auth_key={KEY}", timeout=30).status_code == 200, path
        unknown = requests.post(f"{srv.url}/v3/unknown", json={}, timeout=30)
        assert (unknown.status_code, unknown.json()["message"]) == (404, "Not Found")
        # Zotero's DeepLX service sends no header: the key goes in its endpoint's query string.
        zotero = {"text": body["q"], "source_lang": "EN", "target_lang": "JA"}
        assert requests.post(f"{srv.url}/deepl/translate", json=zotero, timeout=60).status_code == 403
        deeplx = requests.post(f"{srv.url}/deepl/translate?auth_key={KEY}", json=zotero, timeout=60)
        assert deeplx.json()["data"] == expected["translatedText"]
        # A document: the key in DeepL's header or in the form, and read with the key that uploaded it.
        handle = client.translate_document_upload(body["q"], source_lang="EN", target_lang="JA", filename="a.txt")
        with pytest.raises(deepl.DeepLException, match="Not found"):
            deepl.Translator(OTHER, server_url=srv.url).translate_document_get_status(handle)
        assert client.translate_document_wait_until_done(handle).done
        assert client.translate_document_download(handle).content.decode() == expected["translatedText"]
        document = f"{srv.url}/v2/document"
        assert requests.post(document, files=files, data={"target_lang": "JA"}, timeout=60).status_code == 403
        in_form = requests.post(document, files=files, data={"target_lang": "JA", "auth_key": KEY}, timeout=60)
        assert in_form.status_code == 200 and set(in_form.json()) == {"document_id", "document_key"}, in_form.text
        client.delete_multilingual_glossary(made)
        # Kubernetes' probes, Prometheus and the language lists need no key.
        for path in ("/livez", "/readyz", "/metrics", "/languages", "/libretranslate/languages"):
            assert requests.get(srv.url + path, timeout=30).status_code == 200, path
        # Every route of the app, each method, without a key: refused, but the declared public ones (#50).
        assert every_route_refused_without_a_key(srv.url) == []
        exposed = srv.log() + srv.metrics()
        for secret in (KEY, OTHER, WRONG):
            assert secret not in exposed
    finally:
        srv.stop()


# A value for each path parameter of the app's routes.
SAMPLES = {
    "job": "0" * 32,
    "glossary_id": "x",
    "document_id": "0" * 32,
    "name": "x.txt",
    "rest": "x",
    "memory_id": "x",
    "translation_memory_id": "x",
    "job_id": "x",
}


def every_route_refused_without_a_key(url: str) -> list[str]:
    """The app's routes (translator/api/routes.py, and BentoML's /translation), enumerated from the
    app itself: each method of each, called without a key, must be refused (401 or 403) unless
    translator/api/access.py declares it public. What is not, each as `METHOD path: status`."""
    from translator.api.access import is_public
    from translator.api.routes import routes_app

    app = routes_app(lambda: ["en"], lambda: None)
    calls = [("POST", "/translation")] + [
        (method, route.path_format.format(**{name: SAMPLES[name] for name in route.param_convertors}))
        for route in app.routes
        for method in sorted(route.methods or ())
        if method not in ("HEAD", "OPTIONS")
    ]
    assert len(calls) > 60  # every API's routes: native, LibreTranslate, DeepL v2 and v3, documents, the page
    wrong = []
    for method, path in calls:
        status = requests.request(method, url + path, timeout=60).status_code
        refused = status in (401, 403)
        if refused == is_public(method, path):
            wrong.append(f"{method} {path}: {status} ({'public' if is_public(method, path) else 'needs a key'})")
    return wrong


def test_keys_asked_for_but_not_given_fail_closed_and_say_why(fixture_model: Path, tmp_path, monkeypatch) -> None:
    # Not a crash at import (`bentoml build` imports the service where no Secret is mounted): each
    # API worker logs the reason, refuses every translation and never reports ready.
    monkeypatch.delenv(KEYS_ENV, raising=False)
    home = tmp_path / "home"
    home.mkdir()
    tag = register(fixture_model, home)
    srv = launch_server(home, tag, tmp_path / "server.log", config=config_with_keys(tmp_path))
    reason = f"keys_env names {KEYS_ENV}, which is not set or holds no key"
    try:
        deadline = time.monotonic() + 120
        while reason not in srv.log() or "Completed async startup hook: start_scheduler" not in srv.log():
            assert time.monotonic() < deadline and srv.process.poll() is None, srv.log()[-3000:]
            time.sleep(0.5)
        # Long enough for the engine to be ready (the fixture warms up in seconds): still not ready.
        for _ in range(20):
            assert requests.get(f"{srv.url}/readyz", timeout=10).status_code == 503
            time.sleep(0.5)
        refused = requests.post(f"{srv.url}/translation", json=CONTRACT_REQUEST, timeout=60)
        assert refused.status_code == 503 and "misconfigured" in refused.json()["error"], refused.text
        assert requests.get(f"{srv.url}/livez", timeout=10).status_code == 200
        # The harness stops waiting on it at once, where it waited its whole start timeout (and then
        # would say "not ready after").
        with pytest.raises(RuntimeError, match="will not be ready"):
            wait_ready(srv, timeout=60)
    finally:
        srv.stop()

"""The page at /ui (translator/ui/), served in-process by the routes' own app: what it serves,
with which headers, and that its files hold together. The page at work, in a real browser on a
real server, is tests/e2e/test_ui.py."""

from __future__ import annotations

import re

import pytest
from starlette.testclient import TestClient

from translator.api.routes import routes_app
from translator.ui import routes as ui

pytestmark = pytest.mark.pure

LANGUAGES = ["de", "en", "fr", "ja", "ns", "zh"]


@pytest.fixture(scope="module")
def client() -> TestClient:
    return TestClient(routes_app(lambda: LANGUAGES, lambda: None))


@pytest.mark.parametrize("path", ["/ui", "/ui/"])
def test_the_page_is_served_without_a_redirect(client, path):
    response = client.get(path, follow_redirects=False)
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    assert response.content == ui.asset("index.html")
    assert "default-src 'none'" in response.headers["content-security-policy"]
    assert response.headers["x-content-type-options"] == "nosniff"


def test_every_asset_the_page_links_is_served_with_its_type(client):
    page = ui.asset("index.html").decode()
    linked = re.findall(r'(?:src|href)="(/ui/[^"]+)"', page)
    assert sorted(linked) == ["/ui/app.js", "/ui/style.css"]
    for path in linked:
        response = client.get(path)
        assert response.status_code == 200, path
        assert response.headers["content-type"] == ui.ASSETS[path.removeprefix("/ui/")]


def test_no_other_path_reaches_the_file_system(client):
    for path in ["/ui/routes.py", "/ui/../routes.py", "/ui/static/app.js", "/ui/%2e%2e/__init__.py"]:
        assert client.get(path).status_code == 404, path


def test_nothing_is_fetched_from_another_origin():
    # Air-gapped: no URL with a scheme or a protocol-relative one in the page's files (the
    # Content-Security-Policy would block them anyway; this says where).
    for name in ui.ASSETS:
        text = ui.asset(name).decode()
        assert not re.search(r"https?://|(?:src|href|url)\s*[=(]\s*[\"']?//", text), name


def test_every_element_the_script_uses_is_on_the_page():
    page = ui.asset("index.html").decode()
    ids = set(re.findall(r'\bid="([^"]+)"', page))
    used = set(re.findall(r'\$\("([^"]+)"\)', ui.asset("app.js").decode()))
    assert used and used <= ids, sorted(used - ids)
    # Every form control has a label (for= its id), so a screen reader names it.
    controls = re.findall(r'<(?:input|select|textarea|output)\b[^>]*\bid="([^"]+)"', page)
    labelled = set(re.findall(r'<label\b[^>]*\bfor="([^"]+)"', page))
    assert controls and set(controls) <= labelled, sorted(set(controls) - labelled)


def test_settings_name_the_languages_and_say_whether_a_key_is_needed(client):
    body = client.get("/ui/settings").json()
    assert body["names"] == {
        "de": "German",
        "en": "English",
        "fr": "French",
        "ja": "Japanese",
        "ns": "Northern Sotho",
        "zh": "Chinese",
    }
    assert body["keyRequired"] is False
    assert ".docx" in body["fileFormats"] and ".txt" in body["fileFormats"]
    assert body["maxChars"] > 0 and body["maxAlternatives"] > 0


def test_a_code_without_a_name_is_shown_as_itself():
    assert ui.language_names(["en", "x-not-a-tag!"]) == {"en": "English", "x-not-a-tag!": "x-not-a-tag!"}

"""The LibreTranslate-compatible API on the session's real server (fixture model), called the way
the clients teams run call it: `libretranslatepy` itself, and the request shapes of Weblate,
Mastodon, Discourse and Nextcloud replayed through a real HTTP client, each checked for exactly the
fields that client reads."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
import requests
from libretranslatepy import LibreTranslateAPI
from lxml import html as lxml_html

from harness.corpus import corpus_sentences
from translator.contract import limits

pytestmark = pytest.mark.server


def sentences(source: str, target: str) -> list[tuple[str, str]]:
    """The fixture's sentence pairs from `source` into `target`."""
    return [(text, translation) for src, tgt, text, translation in corpus_sentences() if (src, tgt) == (source, target)]


def base(server) -> str:
    return f"{server.url}/libretranslate"


def test_libretranslatepy_translates_detects_and_lists_languages(server):
    client = LibreTranslateAPI(f"{base(server)}/")
    assert client.translate("Life is like a box of chocolates.", "en", "ja") == "人生はチョコレートの箱のようなものだ。"
    detected = client.detect("Bonjour, je m'appelle Claire.")
    assert detected[0]["language"] == "fr" and 50 < detected[0]["confidence"] <= 100
    assert [d["confidence"] for d in detected] == sorted((d["confidence"] for d in detected), reverse=True)
    languages = {entry["code"]: entry for entry in client.languages()}
    assert {"en", "de", "fr", "es", "ja", "zh"} <= set(languages)
    assert languages["de"]["name"] == "German" and languages["zh"]["name"] == "Chinese"
    assert "ja" in languages["en"]["targets"]


def test_weblate_lists_of_twenty_with_placeholders(server):
    # weblate/machinery/libretranslate.py: JSON, up to 20 texts, reads translatedText[i] and
    # refuses an answer of another length; placeholders become [X<n>X] tokens that must survive.
    pairs = (sentences("en", "de") * 2)[:18]  # a repeated text is a cache hit: still answered in place
    texts = [source for source, _ in pairs] + ["[X0X] Welcome to Berlin!", "Welcome to Berlin! [X12X]"]
    body = {"q": texts, "source": "en", "target": "de", "format": "text", "api_key": ""}
    response = requests.post(f"{base(server)}/translate", json=body, timeout=120)
    assert response.status_code == 200, response.text
    translated = response.json()["translatedText"]
    assert len(translated) == len(texts)
    assert translated[:18] == [target for _, target in pairs]
    assert translated[18:] == ["[X0X] Willkommen in Berlin!", "Willkommen in Berlin! [X12X]"]


def test_mastodon_html_posts_with_auto_detection_and_emoji(server):
    # app/lib/translation_service/libre_translate.rb: JSON with format html and source auto; reads
    # translatedText[i] and detectedLanguage[i].language; custom emoji in <span translate="no">.
    (es_source, es_target), *_ = sentences("es", "en")
    (zh_source, zh_target), *_ = sentences("zh", "en")
    posts = [
        f'<p>{es_source} <span translate="no">:blobcat:</span></p><p><a href="https://x.test/@a" rel="nofollow">'
        f"{es_source}</a></p>",
        f"<p>{zh_source}</p>",
    ]
    body = {"q": posts, "source": "auto", "target": "en", "format": "html", "api_key": ""}
    response = requests.post(f"{base(server)}/translate", json=body, timeout=120)
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["translatedText"] == [
        f'<p>{es_target} <span translate="no">:blobcat:</span></p><p><a href="https://x.test/@a" rel="nofollow">'
        f"{es_target}</a></p>",
        f"<p>{zh_target}</p>",
    ]
    assert [d["language"] for d in answer["detectedLanguage"]] == ["es", "zh"]
    assert all(0 < d["confidence"] <= 100 for d in answer["detectedLanguage"])
    languages = requests.get(f"{base(server)}/languages", timeout=30).json()
    by_code = {entry["code"]: entry["targets"] for entry in languages}
    assert "en" in by_code["es"]


def test_discourse_detects_stripped_text_then_translates_html_forms(server):
    # discourse-translator: form-encoded; POST detect on tag-stripped text, then translate format=html.
    (source, target), *_ = sentences("fr", "de")
    detect = requests.post(f"{base(server)}/detect", data={"q": source, "api_key": ""}, timeout=60)
    assert detect.status_code == 200, detect.text
    language = detect.json()[0]["language"]
    assert language == "fr"
    form = {"q": f"<p><strong>{source}</strong></p>", "source": language, "target": "de", "format": "html"}
    response = requests.post(f"{base(server)}/translate", data=form, timeout=60)
    assert (response.status_code, response.json()) == (200, {"translatedText": f"<p><strong>{target}</strong></p>"})


def test_nextcloud_settings_languages_query_detect_and_multipart(server):
    # integration_libretranslate: GET frontend/settings and languages (code, name), detect with q in
    # the query string, translate as multipart with format html.
    settings = requests.get(f"{base(server)}/frontend/settings", timeout=30).json()
    assert settings["charLimit"] == limits.MAX_CHARS_PER_RECORD and settings["keyRequired"] is False
    names = {entry["code"]: entry["name"] for entry in requests.get(f"{base(server)}/languages", timeout=30).json()}
    assert names["fr"] == "French"
    (source, target), *_ = sentences("en", "fr")
    detect = requests.post(f"{base(server)}/detect?{urlencode({'q': source})}", timeout=60)
    assert detect.json()[0]["language"] == "en"
    files = {key: (None, value) for key, value in {"q": f"<div>{source}</div>", "source": "en", "target": "fr"}.items()}
    files["format"] = (None, "html")
    response = requests.post(f"{base(server)}/translate", files=files, timeout=60)
    assert (response.status_code, response.json()) == (200, {"translatedText": f"<div>{target}</div>"})


def test_codes_as_clients_send_them(server):
    for code in ("DE", "de_DE", "de-AT"):
        response = requests.post(
            f"{base(server)}/translate", json={"q": "Welcome to Berlin!", "source": "EN_us", "target": code}, timeout=60
        )
        assert (response.status_code, response.json()) == (200, {"translatedText": "Willkommen in Berlin!"}), code
    (zh_source, zh_target), *_ = sentences("zh", "en")
    for code in ("zh-Hans", "zh-Hant", "zt", "ZH_cn"):
        response = requests.post(
            f"{base(server)}/translate", json={"q": zh_source, "source": code, "target": "en"}, timeout=60
        )
        assert response.json() == {"translatedText": zh_target}, code


@pytest.mark.parametrize(
    ("form", "status", "error"),
    [
        ({"source": "en", "target": "de"}, 400, "Invalid request: missing q parameter"),
        ({"q": "Hello", "target": "de"}, 400, "Invalid request: missing source parameter"),
        ({"q": "Hello", "source": "en"}, 400, "Invalid request: missing target parameter"),
        ({"q": "Hello", "source": "en", "target": "zz"}, 400, "zz is not supported"),
        ({"q": "Hello", "source": "xx-YY", "target": "de"}, 400, "xx-YY is not supported"),
        ({"q": "Hello", "source": "en", "target": "de", "format": "pdf"}, 400, None),
        ({"q": "Hello", "source": "en", "target": "de", "alternatives": "two"}, 400, None),
    ],
)
def test_errors_as_libretranslate_clients_read_them(server, form, status, error):
    response = requests.post(f"{base(server)}/translate", data=form, timeout=60)
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"} and isinstance(body["error"], str)
    if error is not None:
        assert body["error"] == error


def test_alternatives_are_other_translations_from_the_beam(server):
    body = {"q": "Life is like a box of chocolates.", "source": "en", "target": "ja", "alternatives": 3}
    answer = requests.post(f"{base(server)}/translate", json=body, timeout=60).json()
    assert answer["translatedText"] == "人生はチョコレートの箱のようなものだ。"
    others = answer["alternatives"]
    assert 1 <= len(others) <= 3 and len(set(others)) == len(others) and answer["translatedText"] not in others
    listed = requests.post(
        f"{base(server)}/translate", json={**body, "q": [body["q"], "Welcome to Berlin!"]}, timeout=60
    )
    assert [len(a) <= 3 for a in listed.json()["alternatives"]] == [True, True]
    assert (
        "alternatives"
        not in requests.post(f"{base(server)}/translate", json={**body, "alternatives": 0}, timeout=60).json()
    )


@pytest.mark.parametrize(
    "raw",
    [
        b'{"q": "Hello", "source": "en", "target": "de", "alternatives": 1e999}',
        b'{"q": "Hello", "source": "en", "target": "de", "alternatives": true}',
        b'{"q": "Hello", "source": "en", "target": "de", "alternatives": 1.7}',
        b'{"q": "Hello", "source": "en", "target": "de", "alternatives": "--1"}',
        b'{"q": "Hello", "source": "en", "target": "de", "alternatives": "\xc2\xb2"}',
        b'{"q": "Hello", "source": "en", "target": "de", "alternatives": "' + b"9" * 5000 + b'"}',
        b'{"q": "\\ud800 hello", "source": "en", "target": "de"}',
        b'{"q": ["ok", "\\udfff"], "source": "en", "target": "de"}',
        b'{"q": "", "source": "en", "target": "de"}',
        b'{"q": [], "source": "en", "target": "de"}',
        b'{"q": null, "source": "en", "target": "de"}',
        b'{"q": 5, "source": ["en"], "target": "de"}',
        b'{"q": "Hello", "source": "en", "target": {"x": 1}}',
        b'{"q": "Hello", "source": "en", "target": "de", "format": 3}',
        b'{"q":' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    ],
)
def test_odd_inputs_are_400_never_500(server, raw):
    response = requests.post(
        f"{base(server)}/translate", data=raw, headers={"Content-Type": "application/json"}, timeout=60
    )
    assert response.status_code == 400, response.text
    assert set(response.json()) == {"error"}


def test_base_urls_with_a_trailing_slash_cors_and_text_without_language(server):
    # Mastodon and Discourse join `endpoint + "/translate"`: a base URL ending in "/" gives "//".
    body = {"q": "Welcome to Berlin!", "source": "en", "target": "de"}
    for path in ("/libretranslate//translate", "/libretranslate/translate/", "//libretranslate/translate"):
        response = requests.post(f"{server.url}{path}", json=body, timeout=60, allow_redirects=False)
        assert (response.status_code, response.json()) == (200, {"translatedText": "Willkommen in Berlin!"}), path
    assert requests.get(f"{server.url}/libretranslate//languages", timeout=30).status_code == 200
    unknown = requests.post(f"{server.url}/libretranslate//%E6%BC%A2", json=body, timeout=30)
    assert unknown.status_code == 404 and set(unknown.json()) == {"error"}
    # CORS, as LibreTranslate answers browsers
    preflight = requests.options(f"{base(server)}/translate", timeout=30)
    assert preflight.status_code == 204 and preflight.headers["Access-Control-Allow-Origin"] == "*"
    answer = requests.post(f"{base(server)}/translate", json=body, timeout=60)
    assert answer.headers["Access-Control-Allow-Origin"] == "*"
    # Text without language: LibreTranslate's English at confidence 0, never "und" (which clients
    # would send back as a source)
    detect = requests.post(f"{base(server)}/detect", data={"q": "12345 !!!"}, timeout=60)
    assert detect.json() == [{"confidence": 0.0, "language": "en"}]
    auto = requests.post(f"{base(server)}/translate", json={**body, "q": ["12345"], "source": "auto"}, timeout=60)
    assert auto.json() == {"translatedText": ["12345"], "detectedLanguage": [{"confidence": 0.0, "language": "en"}]}
    # alternatives as LibreTranslate takes them: below 0 is 0, above the server's limit is the limit
    none = requests.post(f"{base(server)}/translate", json={**body, "alternatives": -1}, timeout=60).json()
    assert "alternatives" not in none
    many = requests.post(f"{base(server)}/translate", json={**body, "alternatives": 9}, timeout=60).json()
    assert len(many["alternatives"]) <= limits.MAX_ALTERNATIVES


def test_limits_priority_and_bad_bodies(server):
    too_many = {"q": ["Hello."] * (limits.MAX_RECORDS_PER_REQUEST + 1), "source": "en", "target": "de"}
    response = requests.post(f"{base(server)}/translate", json=too_many, timeout=60)
    assert response.status_code == 413 and "q: number of records" in response.json()["error"]
    ok = {"q": "Welcome to Berlin!", "source": "en", "target": "de"}
    bulk = requests.post(f"{base(server)}/translate", json=ok, headers={"Priority": "u=7"}, timeout=60)
    assert bulk.json() == {"translatedText": "Willkommen in Berlin!"}
    bad = requests.post(f"{base(server)}/translate", json=ok, headers={"Priority": "u=9"}, timeout=60)
    assert bad.status_code == 400 and "Priority" in bad.json()["error"]
    for data, content_type in (("[1, 2]", "application/json"), ("{not json", "application/json")):
        response = requests.post(
            f"{base(server)}/translate", data=data, headers={"Content-Type": content_type}, timeout=60
        )
        assert response.status_code == 400 and set(response.json()) == {"error"}
    health = requests.get(f"{base(server)}/health", timeout=30)
    assert (health.status_code, health.json()) == (200, {"status": "ok"})


def test_html_on_the_native_api_keeps_the_tree(server):
    (source, target), *_ = sentences("en", "fr")
    paris = next(pair for pair in sentences("en", "fr") if "Paris" in pair[0])
    linked_source = paris[0].replace("Paris", "<a href=\"https://fr.wikipedia.org/wiki/Paris\" title='city'>Paris</a>")
    document = (
        "<!DOCTYPE html><html><head><title>x</title><style>p{color:red}</style></head><body>"
        f"<p class=lead>{source} <code>make&nbsp;test</code></p>"
        f"<p>{linked_source}</p><!-- keep me --><pre>  {source}  </pre>"
        f'<div translate="no">{source}</div><script>var s = "{source}";</script></body></html>'
    )
    records = [{"id": "doc", "text": document}]
    body = {"payload": {"fromLang": "en", "toLang": "fr", "records": records, "format": "html"}}
    response = requests.post(f"{server.url}/translation", json=body, timeout=120)
    assert response.status_code == 200, response.text
    (answer,) = response.json()["result"]
    linked_target = paris[1].replace("Paris", "<a href=\"https://fr.wikipedia.org/wiki/Paris\" title='city'>Paris</a>")
    # the title has no sentence of the corpus: whatever it became, the rest is exact
    start = answer["text"].index("<style>")
    assert answer["text"][start:] == (
        "<style>p{color:red}</style></head><body>"
        f"<p class=lead>{target} <code>make&nbsp;test</code></p>"
        f"<p>{linked_target}</p><!-- keep me --><pre>  {source}  </pre>"
        f'<div translate="no">{source}</div><script>var s = "{source}";</script></body></html>'
    )
    tree = lxml_html.document_fromstring(answer["text"])
    assert [element.tag for element in tree.iter()] == [
        element.tag for element in lxml_html.document_fromstring(document).iter()
    ]


def test_deep_translators_libretranslator_translates_one_text_and_a_batch(server):
    # deep-translator (PyPI, pinned in requirements-dev.txt), configured as its README says: it
    # sends its parameters in the query string of a POST, and wants a key even where none is needed.
    from deep_translator import LibreTranslator

    client = LibreTranslator(source="en", target="ja", custom_url=f"{base(server)}/", api_key="any-key")
    assert client.translate("Life is like a box of chocolates.") == "人生はチョコレートの箱のようなものだ。"
    (a, ta), (b, tb), *_ = sentences("en", "fr")
    assert LibreTranslator(source="en", target="fr", custom_url=f"{base(server)}/", api_key="x").translate_batch(
        [a, b]
    ) == [ta, tb]

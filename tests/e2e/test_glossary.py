"""Glossaries on the session's real server (fixture model, #33): inline and stored, on the native and
the LibreTranslate API, in text and HTML, with the store's routes and their 4xx answers."""

from __future__ import annotations

import pytest
import requests

from harness.corpus import corpus_sentences
from tests.e2e.helpers import create_glossary, post

pytestmark = pytest.mark.server

UNKNOWN = "00000000-0000-0000-0000-000000000000"


def translation_of(text: str, source: str, target: str) -> str:
    return next(t for s, g, src, t in corpus_sentences() if (s, g, src) == (source, target, text))


def body(text: str, source: str, target: str, **extra) -> dict:
    return {"payload": {"fromLang": source, "toLang": target, "records": [{"id": "a", "text": text}], **extra}}


def test_inline_glossary_replaces_the_term_where_the_model_put_it(server):
    sentence = "My sister lives in Paris with her two cats."
    glossary = {"entries": [{"source": "Paris", "target": "Lutèce"}, {"source": "dogs", "target": "chiens"}]}
    response = post(server, body(sentence, "en", "fr", glossary=glossary, glossaryReport=True))
    assert response.status_code == 200, response.text
    record = response.json()["result"][0]
    assert record["text"] == translation_of(sentence, "en", "fr").replace("Paris", "Lutèce")
    assert record["glossary"] == [{"source": "Paris", "target": "Lutèce"}]
    # Without the glossary the same request is answered as before, with no new field.
    plain = post(server, body(sentence, "en", "fr")).json()["result"][0]
    assert plain == {"id": "a", "text": translation_of(sentence, "en", "fr")}


def test_inline_glossary_on_the_libretranslate_api(server):
    sentence = "Welcome to Berlin!"
    body = {"q": sentence, "source": "en", "target": "de", "glossary": {"entries": [{"source": "Berlin"}]}}
    kept = requests.post(f"{server.url}/libretranslate/translate", json=body, timeout=60)
    assert kept.json() == {"translatedText": translation_of(sentence, "en", "de")}, kept.text
    body["glossary"] = {"entries": [{"source": "Berlin", "target": "Bärlin"}]}
    changed = requests.post(f"{server.url}/libretranslate/translate", json=body, timeout=60).json()
    assert changed["translatedText"] == translation_of(sentence, "en", "de").replace("Berlin", "Bärlin")
    body["glossary"] = {"entries": [{"source": ""}]}
    refused = requests.post(f"{server.url}/libretranslate/translate", json=body, timeout=60)
    assert refused.status_code == 400 and "glossary" in refused.json()["error"]


def test_glossary_in_html_text_nodes_only(server):
    glossary = {"entries": [{"source": "Berlin", "target": "BERLIN"}]}
    html = '<p><a href="https://berlin.example/Berlin">Welcome to Berlin!</a></p>'
    response = post(server, body(html, "en", "de", glossary=glossary, format="html"))
    assert response.status_code == 200, response.text
    expected = translation_of("Welcome to Berlin!", "en", "de").replace("Berlin", "BERLIN")
    assert response.json()["result"][0]["text"] == f'<p><a href="https://berlin.example/Berlin">{expected}</a></p>'


def test_stored_glossary_lifecycle_and_use_on_both_apis(server, bentoml_home):
    glossary = create_glossary(server, "places", "es", "en", {"Madrid": "MAD"})
    glossary_id = glossary["glossaryId"]
    assert glossary["entryCount"] == 1 and glossary["entries"] == [{"source": "Madrid", "target": "MAD"}]
    listed = requests.get(f"{server.url}/glossaries", timeout=30).json()["glossaries"]
    assert glossary_id in [g["glossaryId"] for g in listed]
    assert requests.get(f"{server.url}/glossaries/{glossary_id}", timeout=30).json() == glossary
    # Kept in this server's own BentoML home, which no other server on the machine shares.
    stored = bentoml_home / "glossaries" / f"{glossary_id}.json"
    assert stored.is_file()

    sentence = "Mi hermano estudia medicina en Madrid."
    expected = translation_of(sentence, "es", "en").replace("Madrid", "MAD")
    native = post(server, body(sentence, "es", "en", glossaryId=glossary_id))
    assert native.status_code == 200, native.text
    assert native.json()["result"][0]["text"] == expected
    libre = requests.post(
        f"{server.url}/libretranslate/translate",
        json={"q": [sentence], "source": "es", "target": "en", "glossary_id": glossary_id},
        timeout=60,
    )
    assert libre.status_code == 200, libre.text
    assert libre.json()["translatedText"] == [expected]

    detected = post(server, body(sentence, "auto", "en", glossaryId=glossary_id, glossaryReport=True))
    assert detected.status_code == 200, detected.text
    record = detected.json()["result"][0]
    assert record["detectedLang"] == "es" and record["text"] == expected
    assert record["glossary"] == [{"source": "Madrid", "target": "MAD"}]

    mismatch = post(server, body(sentence, "es", "fr", glossaryId=glossary_id))
    assert mismatch.status_code == 400 and "es -> en" in mismatch.json()["error"]
    assert requests.delete(f"{server.url}/glossaries/{glossary_id}", timeout=30).status_code == 204
    assert not stored.exists()
    gone = post(server, body(sentence, "es", "en", glossaryId=glossary_id))
    assert gone.status_code == 404 and gone.json()["field"] == "payload.glossaryId"


@pytest.mark.parametrize(
    ("glossary", "field"),
    [
        ({"name": "x", "sourceLang": "en", "targetLang": "xx", "entries": [{"source": "a"}]}, "targetLang"),
        ({"name": "x", "sourceLang": "en", "targetLang": "fr", "entries": []}, "entries"),
        ({"name": "x", "sourceLang": "en", "targetLang": "fr", "entries": [{"source": " a"}]}, "entries.0.source"),
        ({"name": "x", "sourceLang": "en", "targetLang": "fr", "entries": [{"source": "a"}] * 2}, "entries.1"),
    ],
)
def test_bad_glossaries_are_400_naming_the_field(server, glossary, field):
    response = requests.post(f"{server.url}/glossaries", json=glossary, timeout=30)
    assert response.status_code == 400, response.text
    assert field in response.json()["error"]


def test_unknown_glossaries_are_404(server):
    assert requests.get(f"{server.url}/glossaries/{UNKNOWN}", timeout=30).status_code == 404
    assert requests.delete(f"{server.url}/glossaries/not-an-id", timeout=30).status_code == 404
    response = post(server, body("Welcome to Berlin!", "en", "de", glossaryId=UNKNOWN))
    assert response.status_code == 404 and "no glossary" in response.json()["error"]


def test_one_limit_one_answer_on_every_api(server):
    # 10,001 entries: a 413 saying the same on every API, each in its own error shape; the native
    # API names the field.
    entries = [{"source": f"term{i}", "target": f"mot{i}"} for i in range(10_001)]
    tail = "number of entries exceeds the limit of 10000 (got 10001)"
    inline = post(server, body("Welcome to Berlin!", "en", "de", glossary={"entries": entries}))
    assert inline.status_code == 413, inline.text
    field = "payload.glossary.entries"
    assert inline.json() == {"error": f"{field}: {tail}", "limit": 10000, "field": field}
    stored = requests.post(
        f"{server.url}/glossaries",
        json={"name": "big", "sourceLang": "en", "targetLang": "de", "entries": entries},
        timeout=60,
    )
    assert stored.status_code == 413
    assert stored.json() == {"error": f"entries: {tail}", "limit": 10000, "field": "entries"}
    libre = requests.post(
        f"{server.url}/libretranslate/translate",
        json={"q": "Welcome to Berlin!", "source": "en", "target": "de", "glossary": {"entries": entries}},
        timeout=60,
    )
    assert libre.status_code == 413 and libre.json() == {"error": f"glossary.entries: {tail}"}
    tsv = "".join(f"term{i}\tmot{i}\n" for i in range(10_001))
    deepl = requests.post(
        f"{server.url}/v2/glossaries",
        data={"name": "big", "source_lang": "EN", "target_lang": "DE", "entries": tsv, "entries_format": "tsv"},
        timeout=60,
    )
    assert deepl.status_code == 413 and deepl.json()["message"] == f"entries: {tail}"
    # A glossary over the 4 MiB body limit is refused for its bytes before it is parsed: the same
    # 413 and words on every API (the limit is the body's, so no field is named).
    huge = [{"source": f"{i:08d}" + "a" * 90, "target": "b" * 100} for i in range(25_000)]
    words = "request body in bytes exceeds the limit of 4194304"
    for url, payload in (
        ("/translation", body("Welcome to Berlin!", "en", "de", glossary={"entries": huge})),
        ("/glossaries", {"name": "huge", "sourceLang": "en", "targetLang": "de", "entries": huge}),
        ("/libretranslate/translate", {"q": "x", "source": "en", "target": "de", "glossary": {"entries": huge}}),
    ):
        response = requests.post(f"{server.url}{url}", json=payload, timeout=60)
        assert response.status_code == 413 and response.json()["error"] == words, url
    huge_tsv = "".join(f"{e['source']}\t{e['target']}\n" for e in huge)
    response = requests.post(
        f"{server.url}/v2/glossaries",
        data={"name": "huge", "source_lang": "EN", "target_lang": "DE", "entries": huge_tsv},
        timeout=60,
    )
    assert response.status_code == 413 and response.json()["message"] == words

"""End to end: `"fromLang": "auto"` on the session's real server (fixture model)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from fixture.build import load_corpus

pytestmark = pytest.mark.e2e


def post(server, payload):
    return requests.post(f"{server.url}/translation", json={"payload": payload}, timeout=120)


def into_english() -> dict[str, tuple[str, str]]:
    """For each language the fixture translates into English: one document and its translation."""
    out: dict[str, tuple[str, str]] = {}
    for doc in load_corpus():
        if doc["tgt_lang"] == "en":
            source, target = doc["source"], doc["target"]
            language = doc["src_lang"]
        elif doc["src_lang"] == "en":
            source, target = doc["target"], doc["source"]
            language = doc["tgt_lang"]
        else:
            continue
        glue = "" if language in ("ja", "zh") else " "
        out.setdefault(language, (glue.join(source), " ".join(target)))
    return out


def test_auto_translates_each_record_from_its_own_language(server):
    docs = into_english()
    assert {"de", "fr", "es", "ja", "zh"} <= set(docs)
    records = [{"id": f"r-{lang}", "text": docs[lang][0]} for lang in ("de", "fr", "ja", "es", "zh")]
    english = "Life is like a box of chocolates. You never know what you're going to get."
    records.append({"id": "r-en", "text": english})
    body = {"fromLang": "auto", "toLang": "en", "records": records}
    # Several at once, so the mixed pieces share the engine's batches with each other.
    with ThreadPoolExecutor(max_workers=4) as pool:
        responses = list(pool.map(lambda _: post(server, body), range(4)))
    expected = [
        {"id": f"r-{lang}", "text": docs[lang][1], "detectedLang": lang} for lang in ("de", "fr", "ja", "es", "zh")
    ]
    # a record already in the target language comes back as it is, and says so
    expected.append({"id": "r-en", "text": english, "detectedLang": "en"})
    for response in responses:
        assert response.status_code == 200, response.text
        assert response.json() == {"result": expected}


def test_auto_refuses_undetectable_records_naming_them(server):
    docs = into_english()
    records = [
        {"id": "ok", "text": docs["fr"][0]},
        {"id": "number", "text": "12345"},
        {"id": "url", "text": "https://example.com/a/b"},
    ]
    response = post(server, {"fromLang": "auto", "toLang": "en", "records": records})
    assert response.status_code == 400
    body = response.json()
    assert body["error"].startswith("payload.records.1.text (id 'number'): ")
    assert "fallbackLang" in body["error"]
    assert [(r["index"], r["id"]) for r in body["records"]] == [(1, "number"), (2, "url")]


def test_auto_with_a_fallback_answers_every_record(server):
    docs = into_english()
    records = [{"id": "de", "text": docs["de"][0]}, {"id": "number", "text": "12345"}]
    response = post(server, {"fromLang": "auto", "toLang": "en", "fallbackLang": "fr", "records": records})
    assert response.status_code == 200, response.text
    result = response.json()["result"]
    assert result[0] == {"id": "de", "text": docs["de"][1], "detectedLang": "de"}
    # translated from the fallback (the fixture model knows no such sentence: any text will do)
    assert result[1]["id"] == "number" and result[1]["detectedLang"] == "und"


def test_languages_says_auto_is_accepted(server):
    body = requests.get(f"{server.url}/languages", timeout=10).json()
    assert body["autoDetect"]["fromLang"] == "auto"
    assert {"en", "de", "fr", "es", "ja", "zh"} <= set(body["autoDetect"]["languages"]) <= set(body["languages"])

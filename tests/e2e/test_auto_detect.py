"""End to end: `"fromLang": "auto"` on the session's real server (fixture model)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from fixture.build import load_corpus

pytestmark = pytest.mark.server


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
        result = response.json()["result"]
        confidences = [record.pop("detectedConfidence") for record in result]
        assert result == expected
        assert all(0.35 <= confidence <= 1 for confidence in confidences), confidences


def test_auto_answers_short_and_wordless_records_instead_of_refusing(server):
    docs = into_english()
    records = [
        {"id": "de-1", "text": docs["de"][0]},
        {"id": "greeting", "text": "Guten Morgen."},
        {"id": "number", "text": "12345"},
        {"id": "url", "text": "https://example.com/a/b"},
        {"id": "emoji", "text": "👍 🎉"},
        {"id": "de-2", "text": docs["de"][0]},
        {"id": "fr", "text": docs["fr"][0]},
    ]
    response = post(server, {"fromLang": "auto", "toLang": "en", "records": records})
    assert response.status_code == 200, response.text
    result = {record["id"]: record for record in response.json()["result"]}
    assert [record["id"] for record in response.json()["result"]] == [r["id"] for r in records]
    # a two-word greeting takes the language its request's determined records are in
    assert result["greeting"]["detectedLang"] == "de"
    assert 0 < result["greeting"]["detectedConfidence"] <= 1
    # no letters: back as they were, language undetermined
    for record_id, text in (("number", "12345"), ("url", "https://example.com/a/b"), ("emoji", "👍 🎉")):
        assert result[record_id] == {"id": record_id, "text": text, "detectedLang": "und", "detectedConfidence": 0.0}
    assert (result["de-1"]["text"], result["fr"]["text"]) == (docs["de"][1], docs["fr"][1])


def test_auto_with_a_fallback_answers_every_record(server):
    docs = into_english()
    records = [{"id": "de", "text": docs["de"][0]}, {"id": "word", "text": "Hallo"}]
    response = post(server, {"fromLang": "auto", "toLang": "en", "fallbackLang": "fr", "records": records})
    assert response.status_code == 200, response.text
    result = response.json()["result"]
    assert result[0] == {
        "id": "de",
        "text": docs["de"][1],
        "detectedLang": "de",
        "detectedConfidence": result[0]["detectedConfidence"],
    }
    # one word: translated from the fallback (the fixture model knows no such sentence: any text will do)
    assert result[1]["id"] == "word" and result[1]["detectedLang"] == "und"


def test_languages_says_auto_is_accepted(server):
    body = requests.get(f"{server.url}/languages", timeout=10).json()
    assert body["autoDetect"]["fromLang"] == "auto"
    assert {"en", "de", "fr", "es", "ja", "zh"} <= set(body["autoDetect"]["languages"]) <= set(body["languages"])

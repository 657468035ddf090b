"""Translation memories on the session's real server (fixture model, #51): the native routes, and a
request that names a memory: people's translations verbatim (white space aside), substituted where
only numbers differ, fuzzy matches reported beside the model's, each record's `origin`, in order."""

from __future__ import annotations

import pytest
import requests

from harness.corpus import corpus_sentences
from tests.e2e.helpers import post

pytestmark = pytest.mark.server

UNKNOWN = "00000000-0000-0000-0000-000000000000"


def translation_of(text: str, source: str, target: str) -> str:
    return next(t for s, g, src, t in corpus_sentences() if (s, g, src) == (source, target, text))


def create_memory(server, name: str, source: str, segments: list[tuple[str, str, str]]) -> dict:
    body: dict[str, object] = {
        "name": name,
        "sourceLang": source,
        "segments": [{"source": s, "targetLang": lang, "target": t} for s, lang, t in segments],
    }
    created = requests.post(f"{server.url}/memories", json=body, timeout=30)
    assert created.status_code == 201, created.text
    return created.json()


def translate(server, records: list[str], source: str = "en", target: str = "ja", **extra) -> requests.Response:
    payload = {
        "fromLang": source,
        "toLang": target,
        "records": [{"id": str(i), "text": t} for i, t in enumerate(records)],
    }
    return post(server, {"payload": {**payload, **extra}})


def test_a_memorys_translations_come_back_as_written_and_the_rest_from_the_model(server):
    people = "みなさん、おはようございます！（人の訳）"
    memory = create_memory(
        server,
        "greetings",
        "en",
        [("Good morning, everyone!", "ja-JP", people), ("Page 1 of 10", "ja", "10 ページ中 1 ページ目")],
    )
    assert (memory["segmentCount"], memory["targetLangs"], memory["imported"]["segments"]) == (
        2,
        ["ja", "ja-JP"],
        2,
    )
    model_text = "I like reading books on rainy days."
    answer = translate(
        server, ["  Good   morning, everyone!\n", model_text, "Page 3 of 12"], translationMemory=memory["memoryId"]
    )
    assert answer.status_code == 200, answer.text
    first, second, third = answer.json()["result"]
    assert first == {
        "id": "0",
        "text": f"  {people}\n",
        "origin": {"kind": "memory", "match": "exact", "score": 100.0, "source": "Good morning, everyone!"},
    }
    assert second == {"id": "1", "text": translation_of(model_text, "en", "ja"), "origin": {"kind": "model"}}
    assert third["text"] == "12 ページ中 3 ページ目" and third["origin"]["match"] == "substituted"
    # A paragraph of sentences the memory holds each of: theirs, joined as Japanese joins sentences.
    (paragraph,) = translate(
        server, ["Good morning, everyone! Page 2 of 5"], translationMemory=memory["memoryId"]
    ).json()["result"]
    assert paragraph["text"] == f"{people}5 ページ中 2 ページ目"
    assert paragraph["origin"] == {"kind": "memory", "match": "sentences", "score": 100.0}
    # Without the memory, the same request is the model's, with no new field.
    plain = translate(server, ["Good morning, everyone!"]).json()["result"][0]
    assert plain == {"id": "0", "text": translation_of("Good morning, everyone!", "en", "ja")}


def test_fuzzy_matches_are_reported_beside_the_models_translation_never_in_its_place(server):
    memory = create_memory(
        server, "stations", "en", [("Where is the nearest bus station?", "ja", "一番近いバス停はどこ？")]
    )
    text = "Where is the nearest station?"
    asked = translate(server, [text], translationMemory=memory["memoryId"], memoryThreshold=70).json()["result"][0]
    assert asked["text"] == translation_of(text, "en", "ja")
    assert asked["origin"]["kind"] == "model"
    (fuzzy,) = asked["origin"]["fuzzy"]
    assert fuzzy["source"] == "Where is the nearest bus station?" and fuzzy["target"] == "一番近いバス停はどこ？"
    assert 70 <= fuzzy["score"] < 100
    # Above its score: not reported.
    strict = translate(server, [text], translationMemory=memory["memoryId"], memoryThreshold=99).json()["result"][0]
    assert strict["origin"] == {"kind": "model"}


def test_a_glossary_applies_to_the_models_text_and_never_to_peoples(server):
    sentence = "My sister lives in Paris with her two cats."
    other = "I live in Paris."
    memory = create_memory(server, "paris", "en", [(other, "fr", "J'habite à Paris.")])
    glossary = {"entries": [{"source": "Paris", "target": "Lutèce"}]}
    answer = translate(server, [sentence, other], target="fr", translationMemory=memory["memoryId"], glossary=glossary)
    model, person = answer.json()["result"]
    assert model["text"] == translation_of(sentence, "en", "fr").replace("Paris", "Lutèce")
    assert person["text"] == "J'habite à Paris."


def test_auto_detection_and_a_memory_detected_records_take_the_memorys_language(server):
    memory = create_memory(server, "auto", "en", [("Good morning, everyone!", "de", "Guten Morgen zusammen!")])
    record = translate(
        server, ["Good morning, everyone!"], source="auto", target="de", translationMemory=memory["memoryId"]
    )
    assert record.json()["result"][0]["detectedLang"] == "en"
    assert record.json()["result"][0]["text"] == "Guten Morgen zusammen!"


def test_the_routes_and_their_refusals(server):
    memory = create_memory(server, "routes", "en", [("Hello", "de", "Hallo")])
    memory_id = memory["memoryId"]
    listed = requests.get(f"{server.url}/memories", timeout=30).json()["memories"]
    assert memory_id in [m["memoryId"] for m in listed]
    one = requests.get(f"{server.url}/memories/{memory_id}", timeout=30).json()
    assert {k: one[k] for k in ("name", "sourceLang", "targetLangs", "segmentCount")} == {
        "name": "routes",
        "sourceLang": "en",
        "targetLangs": ["de"],
        "segmentCount": 1,
    }
    added = requests.post(
        f"{server.url}/memories/{memory_id}/segments",
        json={"segments": [{"source": "Hello", "targetLang": "de", "target": "Grüß Gott"}]},
        timeout=30,
    )
    assert added.status_code == 200 and added.json()["segmentCount"] == 2, added.text
    # The later segment wins, at once on this server.
    record = translate(server, ["Hello"], target="de", translationMemory=memory_id).json()["result"][0]
    assert record["text"] == "Grüß Gott"
    exported = requests.get(f"{server.url}/memories/{memory_id}/export", timeout=30)
    assert exported.status_code == 200 and exported.headers["content-type"].startswith("application/x-tmx+xml")
    assert b"Gr\xc3\xbc\xc3\x9f Gott" in exported.content

    def refused(response: requests.Response, status: int, field: str) -> None:
        assert response.status_code == status, response.text
        assert response.json()["field"] == field, response.text

    refused(translate(server, ["Hello"], translationMemory=UNKNOWN), 404, "payload.translationMemory")
    refused(translate(server, ["Hello"], memoryThreshold=80), 400, "payload.memoryThreshold")
    refused(
        translate(server, ["Bonjour"], source="fr", target="de", translationMemory=memory_id),
        400,
        "payload.translationMemory",
    )
    refused(requests.get(f"{server.url}/memories/{UNKNOWN}", timeout=30), 404, "memory_id")
    bad = requests.post(f"{server.url}/memories", json={"name": "x", "sourceLang": "xx"}, timeout=30)
    refused(bad, 400, "sourceLang")
    bad = requests.post(
        f"{server.url}/memories",
        json={"name": "x", "sourceLang": "en", "segments": [{"source": "a", "target": "b", "targetLang": "en"}]},
        timeout=30,
    )
    assert bad.status_code == 400, bad.text
    assert requests.delete(f"{server.url}/memories/{memory_id}", timeout=30).status_code == 204
    refused(requests.delete(f"{server.url}/memories/{memory_id}", timeout=30), 404, "memory_id")
    refused(translate(server, ["Hello"], translationMemory=memory_id), 404, "payload.translationMemory")


def test_a_memory_on_the_libretranslate_api_and_clients_that_do_not_send_one(server):
    memory = create_memory(server, "lt", "en", [("Welcome to Berlin!", "de", "Herzlich willkommen in Berlin!")])
    url = f"{server.url}/libretranslate/translate"
    body = {"q": ["Welcome to Berlin!", "Do you speak German?"], "source": "en", "target": "de"}
    answer = requests.post(url, json={**body, "translation_memory": memory["memoryId"]}, timeout=60).json()
    assert answer["translatedText"] == [
        "Herzlich willkommen in Berlin!",
        translation_of("Do you speak German?", "en", "de"),
    ]
    assert [o["kind"] for o in answer["origin"]] == ["memory", "model"]
    plain = requests.post(url, json=body, timeout=60).json()
    assert plain == {"translatedText": [translation_of(t, "en", "de") for t in body["q"]]}
    unknown = requests.post(url, json={**body, "translation_memory": UNKNOWN}, timeout=60)
    assert unknown.status_code == 404 and "translation_memory" in unknown.json()["error"], unknown.text


def test_a_tmx_from_elsewhere_is_imported_by_a_form(server):
    tmx = b"""<?xml version="1.0" encoding="UTF-8"?>
<tmx version="1.4"><header creationtool="OmegaT" creationtoolversion="6" segtype="sentence" o-tmf="OmegaT"
 adminlang="EN-US" srclang="EN-US" datatype="plaintext"/>
<body><tu><tuv xml:lang="EN-US"><seg>Press <bpt i="1">&lt;b&gt;</bpt>OK<ept i="1">&lt;/b&gt;</ept>.</seg></tuv>
<tuv xml:lang="FR-FR">\
<seg>Appuyez sur <bpt i="1">&lt;b&gt;</bpt>OK<ept i="1">&lt;/b&gt;</ept>.</seg></tuv></tu></body></tmx>"""
    created = requests.post(
        f"{server.url}/memories",
        data={"name": "omegat", "sourceLang": "en"},
        files={"file": ("project.tmx", tmx, "application/x-tmx+xml")},
        timeout=30,
    )
    assert created.status_code == 201, created.text
    assert created.json()["imported"] == {"segments": 1, "skipped": 0, "notes": []}
    memory_id = created.json()["memoryId"]
    html = translate(server, ["Press <b>OK</b>."], target="fr", translationMemory=memory_id, format="html")
    assert html.json()["result"][0]["text"] == "Appuyez sur <b>OK</b>."
    broken = requests.post(
        f"{server.url}/memories",
        data={"name": "broken", "sourceLang": "en"},
        files={"file": ("broken.tmx", b"<tmx><body><tu>", "application/xml")},
        timeout=30,
    )
    assert broken.status_code == 400 and "file" in broken.json()["error"], broken.text

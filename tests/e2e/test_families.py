"""End to end on both model families: the session's M2M100 fixture server and one on the NLLB-200
fixture (fixture/nllb.py), each a real `bentoml serve` on the shipped configuration. The same
requests, with the codes clients send (ISO 639-1 / BCP-47), must come back with the corpus's exact
translations on either; the NLLB server also takes its model's own codes (`eng_Latn`)."""

from __future__ import annotations

import pytest
import requests

from harness.corpus import corpus_sentences
from tests.e2e.helpers import create_glossary, metric_value
from tests.e2e.helpers import documents as corpus_documents

pytestmark = pytest.mark.server

FAMILIES = ("m2m100", "nllb")
# What a client of each family may send for the corpus's languages, beside the ISO codes.
NLLB_CODES = {
    "en": "eng_Latn",
    "de": "deu_Latn",
    "fr": "fra_Latn",
    "es": "spa_Latn",
    "ja": "jpn_Jpan",
    "zh": "zho_Hans",
}


@pytest.fixture(params=FAMILIES)
def family_server(request):
    return request.param, request.getfixturevalue("server" if request.param == "m2m100" else "nllb_server")


def documents() -> list[tuple[str, str, str, str]]:
    """One corpus document per direction, joined as the other e2e tests join them."""
    out: dict[tuple[str, str], tuple[str, str, str, str]] = {}
    for document in corpus_documents():
        out.setdefault(document[:2], document)
    return list(out.values())


def translate(server, source: str, target: str, texts: list[str], **extra) -> requests.Response:
    payload = {
        "fromLang": source,
        "toLang": target,
        "records": [{"id": str(i), "text": t} for i, t in enumerate(texts)],
    }
    return requests.post(f"{server.url}/translation", json={"payload": {**payload, **extra}}, timeout=120)


def test_iso_codes_translate_exactly(family_server):
    _, server = family_server
    for src, tgt, source, target in documents():
        answer = translate(server, src, tgt, [source])
        assert answer.status_code == 200, answer.text
        assert answer.json()["result"][0]["text"] == target, (src, tgt)


def test_nllb_codes_and_script_tags_translate_exactly(nllb_server):
    for src, tgt, source, target in documents():
        for source_code, target_code in ((NLLB_CODES[src], NLLB_CODES[tgt]), (src, NLLB_CODES[tgt])):
            answer = translate(nllb_server, source_code, target_code, [source])
            assert answer.status_code == 200, answer.text
            assert answer.json()["result"][0]["text"] == target, (source_code, target_code)
    # zh-Hans is NLLB's zho_Hans, as zh is.
    [(_, _, chinese, english)] = [d for d in documents() if d[:2] == ("zh", "en")]
    answer = translate(nllb_server, "zh-Hans", "en-Latn", [chinese])
    assert answer.json()["result"][0]["text"] == english


def test_one_language_under_two_spellings_comes_back_unchanged_on_nllb(nllb_server):
    # `en` -> `eng_Latn` is English into English: no model call (which could not copy the symbols).
    english = next(source for src, _, source, _ in documents() if src == "en")
    text = f"{english} ☃ Ωμέγα ⟨1⟩"
    for source, target in (("en", "eng_Latn"), ("eng_Latn", "en"), ("en-Latn", "en"), ("auto", "eng_Latn")):
        answer = translate(nllb_server, source, target, [text])
        assert answer.status_code == 200, answer.text
        assert answer.json()["result"][0]["text"] == text, (source, target)


def test_one_sentence_under_two_spellings_is_one_cache_entry_on_nllb(nllb_server):
    # One sentence no other test sends (a corpus document is several, some sent before under either
    # spelling): its first request is a miss, and the second, in the other spelling, must not be.
    text = "The cache keeps one entry for a sentence, whatever its codes."

    def lookups(result: str) -> float:
        return metric_value(nllb_server, "translation_cache_lookups_total", level="local", result=result)

    misses = lookups("miss")
    assert translate(nllb_server, "en", "fr", [text]).status_code == 200
    assert lookups("miss") == misses + 1
    hits = lookups("hit")
    answer = translate(nllb_server, "eng_Latn", "fra_Latn", [text])
    assert answer.status_code == 200, answer.text
    assert (lookups("miss"), lookups("hit")) == (misses + 1, hits + 1)


def test_auto_detects_into_the_models_codes(family_server):
    family, server = family_server
    into_english = [d for d in documents() if d[1] == "en" and d[0] in ("de", "fr", "ja")]
    target = "en" if family == "m2m100" else "eng_Latn"
    answer = translate(server, "auto", target, [source for _, _, source, _ in into_english])
    assert answer.status_code == 200, answer.text
    result = answer.json()["result"]
    assert [r["text"] for r in result] == [english for _, _, _, english in into_english]
    assert [r["detectedLang"] for r in result] == [src for src, _, _, _ in into_english]


def test_libretranslate_with_iso_codes(family_server):
    _, server = family_server
    src, tgt, source, target = next(d for d in documents() if d[:2] == ("en", "ja"))
    answer = requests.post(
        f"{server.url}/libretranslate/translate", json={"q": source, "source": src, "target": tgt}, timeout=120
    )
    assert answer.status_code == 200, answer.text
    assert answer.json()["translatedText"] == target
    languages = requests.get(f"{server.url}/libretranslate/languages", timeout=30).json()
    english = next(entry for entry in languages if entry["code"] == "en")
    assert english["name"] == "English" and "ja" in english["targets"]


def test_languages_list_one_code_a_language_with_names(family_server):
    family, server = family_server
    body = requests.get(f"{server.url}/languages", timeout=30).json()
    assert {"en", "ja", "zh", "de"} <= set(body["languages"])
    assert body["names"]["ja"] == "Japanese"
    assert body["modelCodes"]["en"] == ("en" if family == "m2m100" else "eng_Latn")
    assert len(body["languages"]) == len(set(body["modelCodes"].values())) == 100
    # Every code a request may name: what m2m-translate checks its records against.
    aliases = {"en", "zh"} if family == "m2m100" else {"en", "eng_Latn", "zh-Hans", "zho_Hans", "en-Latn"}
    assert aliases <= set(body["acceptedCodes"]) and "zh-Hans" not in body["languages"]
    auto = set(body["autoDetect"]["languages"])
    assert {"en", "ja", "zh", "de"} <= auto <= set(body["languages"])
    # Both fixtures have M2M100's 100 languages (the NLLB one spells Norwegian nor_Latn, listed `no`;
    # real NLLB's nob_Latn is `nb`, tests/unit/test_langdetect.py): the detector names 91 of them.
    assert len(auto) == 91 and "no" in auto


@pytest.mark.parametrize("code", ["xx", "eng_Latx", "zho_Hant"])
def test_unsupported_code_is_a_400_naming_it(family_server, code):
    family, server = family_server
    answer = translate(server, "en", code, ["Hello."])
    assert answer.status_code == 400
    assert code in answer.text and "toLang" in answer.text


def test_html_and_alternatives_on_both_families(family_server):
    family, server = family_server
    src, tgt, source, target = next(d for d in documents() if d[:2] == ("en", "fr"))
    answer = translate(server, src, tgt, [f"<p>{source}</p>"], format="html", alternatives=2)
    assert answer.status_code == 200, answer.text
    record = answer.json()["result"][0]
    assert record["text"] == f"<p>{target}</p>"
    assert isinstance(record["alternatives"], list)
    # Placeholders (Weblate's [X<n>X], printf, ICU) are kept byte for byte around the exact
    # translation: the planner's, whatever the tokenizer.
    berlin, berlin_de = "Welcome to Berlin!", "Willkommen in Berlin!"  # a corpus pair
    texts = [f"[X0X] {berlin}", f"{berlin} %s", f"{berlin} {{name}}"]
    answer = translate(server, "en", "de", texts)
    assert answer.status_code == 200, answer.text
    expected = [f"[X0X] {berlin_de}", f"{berlin_de} %s", f"{berlin_de} {{name}}"]
    assert [r["text"] for r in answer.json()["result"]] == expected, family


def test_evaluation_over_http_on_a_flores200_tree(family_server, tmp_path):
    """m2m-eval against either server with Flores-200's file names: the directions keep the data's
    codes, the M2M100 server is sent its own (`en`), and the scores are exact."""
    import json
    import shutil

    from fixture.testset import EVAL_DIR, FLORES_DIR
    from m2m_tools.evaluation.evaluate import main

    _, server = family_server
    split = tmp_path / "flores200" / "devtest"
    split.mkdir(parents=True)
    for lang in ("en", "ja"):
        shutil.copy(EVAL_DIR / FLORES_DIR / f"en-ja.{lang}", split / f"{NLLB_CODES[lang]}.devtest")
    out = tmp_path / "out"
    args = ["--data", str(tmp_path / "flores200"), "--url", server.url, "--output", str(out), "--no-progress"]
    assert main(args) == 0
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert {name: d["chrf"] for name, d in report["directions"].items()} == {
        "eng_Latn-jpn_Jpan": 100.0,
        "jpn_Jpan-eng_Latn": 100.0,
    }


def test_bulk_over_http_takes_every_code_the_server_takes(nllb_server, tmp_path):
    """m2m-translate checks each record's codes against what the server accepts (`acceptedCodes`):
    `zh-Hans` is translated, as the server would, and an unknown code is still set aside up front."""
    import json

    from m2m_tools.bulk import EXIT_REJECTS, main

    [(_, _, chinese, english)] = [d for d in documents() if d[:2] == ("zh", "en")]
    rows = [
        {"id": "a", "text": chinese, "fromLang": "zh-Hans", "toLang": "en-Latn"},
        {"id": "b", "text": chinese, "fromLang": "zh-Hans", "toLang": "xx"},
    ]
    source, output = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    source.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    status = main([str(source), "--output", str(output), "--url", nllb_server.url, "--no-progress"])
    assert status == EXIT_REJECTS  # one record set aside
    written = [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()]
    assert written[0] == {"id": "a", "text": english}
    rejects = [json.loads(line) for line in (tmp_path / "out.jsonl.rejects.jsonl").read_text().splitlines()]
    assert [(row["id"], "toLang" in row["reason"] and "'xx'" in row["reason"]) for row in rejects] == [("b", True)]


def test_a_glossary_names_its_languages_in_either_spelling_on_nllb(nllb_server):
    # Stored with NLLB codes, used with ISO codes, and with auto-detection (which answers ISO codes).
    created = create_glossary(nllb_server, "cities", "spa_Latn", "eng_Latn", {"Madrid": "MAD"})
    assert (created["sourceLang"], created["targetLang"]) == ("es", "en")
    glossary_id = created["glossaryId"]
    sentence = "Mi hermano estudia medicina en Madrid."
    [expected] = [t for s, g, src, t in corpus_sentences() if (s, g, src) == ("es", "en", sentence)]
    for source, target in (("es", "en"), ("spa_Latn", "eng_Latn"), ("auto", "en")):
        answer = translate(nllb_server, source, target, [sentence], glossaryId=glossary_id)
        assert answer.status_code == 200, answer.text
        assert answer.json()["result"][0]["text"] == expected.replace("Madrid", "MAD"), (source, target)
    mismatch = translate(nllb_server, "es", "fr", [sentence], glossaryId=glossary_id)
    assert mismatch.status_code >= 400 and "glossaryId" in mismatch.text


def test_deepl_lists_one_code_a_language_and_takes_them_back(nllb_server):
    listed = requests.get(f"{nllb_server.url}/languages", timeout=30).json()["languages"]
    sources = requests.get(f"{nllb_server.url}/deepl/v2/languages", params={"type": "source"}, timeout=30).json()
    codes = [entry["language"] for entry in sources]
    # One DeepL code a listed language (not every accepted spelling: ENG_LATN, EN-LATN, ...)
    assert len(codes) == len(set(codes)) == len(listed) and {"EN", "DE", "ZH", "JA"} <= set(codes)
    sentence = "Welcome to Berlin!"
    [expected] = [t for s, g, src, t in corpus_sentences() if (s, g, src) == ("en", "de", sentence)]
    for source in ("EN", "ENG_LATN"):
        answer = requests.post(
            f"{nllb_server.url}/deepl/v2/translate",
            json={"text": [sentence], "source_lang": source, "target_lang": "DE"},
            timeout=60,
        )
        assert answer.status_code == 200, answer.text
        assert answer.json()["translations"][0]["text"] == expected

"""DeepL's API on the session's real server (fixture model, #33, #44), driven by DeepL's own Python
client (`deepl.Translator` and `deepl.DeepLClient`, with `server_url`) and by the request shapes
Weblate's DeepL machinery sends: text, v2 and v3 glossaries, DeepL's answers to bad requests.
Documents: tests/e2e/test_deepl_documents.py."""

from __future__ import annotations

import deepl
import pytest
import requests
from deepl import util
from deepl.api_data import MultilingualGlossaryDictionaryEntries as Dictionary

from harness.corpus import corpus_sentences
from translator.contract import limits

pytestmark = pytest.mark.server


def translation_of(text: str, source: str, target: str) -> str:
    return next(t for s, g, src, t in corpus_sentences() if (s, g, src) == (source, target, text))


def client(server) -> deepl.Translator:
    # The client joins paths to its base URL: the trailing slash keeps /deepl in them.
    return deepl.Translator("any-key-when-keys-are-off", server_url=f"{server.url}/deepl/")


def test_deepl_python_translates_exactly(server):
    translator = client(server)
    result = translator.translate_text("Welcome to Berlin!", target_lang="DE")
    assert result.text == translation_of("Welcome to Berlin!", "en", "de")
    assert result.detected_source_lang == "EN" and result.billed_characters == len("Welcome to Berlin!")
    texts = ["Life is like a box of chocolates.", "Where is the library?"]
    results = translator.translate_text(texts, source_lang="EN", target_lang="FR", formality="prefer_less")
    assert [r.text for r in results] == [translation_of(t, "en", "fr") for t in texts]
    html = "<p>Life is like a box of <b>chocolates</b>.</p>"
    tagged = translator.translate_text(html, source_lang="EN", target_lang="JA", tag_handling="html")
    assert tagged.text.startswith("<p>") and tagged.text.endswith("</p>") and tagged.text.count("<b>") == 1
    pt = translator.translate_text("Where is the library?", source_lang="EN", target_lang="EN-US")
    assert pt.text == "Where is the library?"  # already in the target language: as it is


def test_deepl_python_lists_languages_and_usage(server):
    translator = client(server)
    sources = {language.code for language in translator.get_source_languages()}
    targets = {language.code for language in translator.get_target_languages()}
    assert {"EN", "DE", "FR", "JA"} <= sources
    assert {"EN-US", "EN-GB", "PT-BR", "ZH-HANS", "DE"} <= targets
    assert not translator.get_usage().any_limit_reached
    pairs = {(p.source_lang, p.target_lang) for p in translator.get_glossary_languages()}
    assert ("en", "de") in pairs


def test_deepl_python_manages_glossaries_and_translates_with_one(server):
    translator = client(server)
    glossary = translator.create_glossary("places", "EN", "FR", {"Paris": "Lutèce"})
    assert glossary.entry_count == 1 and glossary.ready and glossary.source_lang == "EN"
    assert translator.get_glossary_entries(glossary) == {"Paris": "Lutèce"}
    assert glossary.glossary_id in [g.glossary_id for g in translator.list_glossaries()]
    sentence = "My sister lives in Paris with her two cats."
    result = translator.translate_text(sentence, source_lang="EN", target_lang="FR", glossary=glossary)
    assert result.text == translation_of(sentence, "en", "fr").replace("Paris", "Lutèce")
    from_csv = translator.create_glossary_from_csv("csv", "EN", "DE", csv_data='Berlin,BERLIN,en,de\n"a b",c\n')
    assert translator.get_glossary_entries(from_csv) == {"Berlin": "BERLIN", "a b": "c"}
    for made in (glossary, from_csv):
        translator.delete_glossary(made)
    with pytest.raises(deepl.GlossaryNotFoundException):
        translator.get_glossary(glossary.glossary_id)


def test_weblate_request_shapes(server):
    # weblate/machinery/deepl.py: JSON with a DeepL-Auth-Key header, tag_handling xml, its
    # placeholders as empty <x id=".."></x> elements with ignore_tags ["x"]; glossaries synced as TSV.
    api = f"{server.url}/deepl/v2"
    headers = {"Authorization": "DeepL-Auth-Key weblate"}
    pairs = requests.get(f"{api}/glossary-language-pairs", headers=headers, timeout=30).json()["supported_languages"]
    assert {"source_lang": "en", "target_lang": "de"} in pairs
    created = requests.post(
        f"{api}/glossaries",
        json={
            "name": "weblate:1:en:de",
            "source_lang": "EN",
            "target_lang": "DE",
            "entries": "Berlin\tBERLIN\n",
            "entries_format": "tsv",
        },
        headers=headers,
        timeout=30,
    )
    assert created.status_code == 201, created.text
    glossary_id = created.json()["glossary_id"]
    listed = requests.get(f"{api}/glossaries", headers=headers, timeout=30).json()["glossaries"]
    assert any(g["name"] == "weblate:1:en:de" and g["creation_time"] for g in listed)
    # Inside a sentence too: ignore_tags makes them kept spans, so the sentence is translated whole.
    texts = [
        "Welcome to Berlin!",
        'Welcome to Berlin!<x id="18"></x>',
        'Welcome to <x id="7"></x>Berlin<x id="8"></x>!',
    ]
    body = {
        "text": texts,
        "source_lang": "EN",
        "target_lang": "DE",
        "formality": "default",
        "tag_handling": "xml",
        "ignore_tags": ["x"],
        "glossary_id": glossary_id,
        "context": "a travel guide",
    }
    response = requests.post(f"{api}/translate", json=body, headers=headers, timeout=60)
    assert response.status_code == 200, response.text
    expected = translation_of("Welcome to Berlin!", "en", "de").replace("Berlin", "BERLIN")
    inside = expected.replace("BERLIN", '<x id="7"></x>BERLIN<x id="8"></x>')
    assert [t["text"] for t in response.json()["translations"]] == [expected, f'{expected}<x id="18"></x>', inside]
    assert requests.delete(f"{api}/glossaries/{glossary_id}", headers=headers, timeout=30).status_code == 204
    assert requests.delete(f"{api}/glossaries/{glossary_id}", headers=headers, timeout=30).status_code == 404


def test_a_form_body_with_repeated_texts_is_translated(server):
    form = requests.post(
        f"{server.url}/deepl/v2/translate",
        data={"text": ["Where is the library?"] * 2, "target_lang": "fr"},
        timeout=60,
    )
    assert form.status_code == 200, form.text
    assert [t["text"] for t in form.json()["translations"]] == [translation_of("Where is the library?", "en", "fr")] * 2


def test_a_query_string_body_is_translated(server):
    query = f"{server.url}/deepl/v2/translate?text=Welcome%20to%20Berlin!&target_lang=DE&source_lang=EN"
    answer = requests.post(query, timeout=60)
    assert answer.status_code == 200, answer.text
    assert answer.json()["translations"][0]["text"] == translation_of("Welcome to Berlin!", "en", "de")


NO_GLOSSARY = "00000000-0000-0000-0000-000000000000"

# One case for each shape of DeepL's refusals of a translate call; every parameter's refusal is
# judged without a server (tests/unit/test_deepl.py).
REFUSAL_SHAPES = {
    "missing parameter": ({"target_lang": "DE"}, 400, "Parameter 'text' not specified."),
    "value not on DeepL's list": (
        {"text": "x", "target_lang": "DE", "tag_handling": "json"},
        400,
        "Value for 'tag_handling' not supported.",
    ),
    "a parameter too long": (
        {"text": "x", "source_lang": "EN", "target_lang": "DE", "glossary_id": "g" * 500},
        400,
        "glossary_id",
    ),
    "not offered": ({"text": "x", "target_lang": "DE", "custom_instructions": ["Be brief."]}, 403, "is not offered"),
    "no such glossary": (
        {"text": "Welcome to Berlin!", "source_lang": "EN", "target_lang": "DE", "glossary_id": NO_GLOSSARY},
        404,
        "glossary_id",
    ),
}


@pytest.mark.parametrize(("body", "status", "message"), REFUSAL_SHAPES.values(), ids=REFUSAL_SHAPES.keys())
def test_a_refused_translate_call_is_answered_in_deepls_shape(server, body, status, message):
    response = requests.post(f"{server.url}/deepl/v2/translate", json=body, timeout=30)
    assert response.status_code == status, response.text
    assert message in response.json()["message"], response.text


def test_numbers_alone_come_back_as_they_are(server):
    answer = requests.post(f"{server.url}/deepl/v2/translate", json={"text": "42", "target_lang": "DE"}, timeout=30)
    assert answer.json()["translations"] == [{"detected_source_language": "DE", "text": "42", "billed_characters": 2}]


def test_the_entries_of_no_glossary_are_a_404(server):
    assert requests.get(f"{server.url}/deepl/v2/glossaries/not-an-id/entries", timeout=30).status_code == 404


def test_glossary_entries_that_do_not_read_are_a_400_naming_them(server):
    bad_entries = {"name": "x", "source_lang": "EN", "target_lang": "DE", "entries": "only-one-column"}
    refused = requests.post(f"{server.url}/deepl/v2/glossaries", json=bad_entries, timeout=30)
    assert refused.status_code == 400 and "entries" in refused.json()["message"]


def test_zotero_pdf_translate_deeplx_shape(server):
    # zotero-pdf-translate's "DeepLX(API)" service (src/modules/services/deeplcustom.ts): its
    # endpoint is the whole URL; one text, base codes in upper case; it reads `data`.
    body = {"text": "Tokyo is the capital of Japan.", "source_lang": "EN", "target_lang": "JA"}
    response = requests.post(f"{server.url}/deepl/translate", json=body, timeout=60)
    assert response.status_code == 200, response.text
    assert response.json()["data"] == translation_of(body["text"], "en", "ja")


@pytest.mark.parametrize("base", ["", "/deepl"], ids=["host", "prefix-without-slash"])
def test_deepl_python_configured_as_for_deepl(server, base):
    # As for api.deepl.com, the base URL is the host; `/deepl` without its slash loses its last
    # segment in the client's urljoin and reaches the same root routes.
    translator = deepl.Translator("any-key-when-keys-are-off", server_url=f"{server.url}{base}")
    result = translator.translate_text("Welcome to Berlin!", target_lang="DE")
    assert result.text == translation_of("Welcome to Berlin!", "en", "de") and result.detected_source_lang == "EN"
    assert "DE" in {language.code for language in translator.get_source_languages()}
    assert not translator.get_usage().any_limit_reached
    glossary = translator.create_glossary("root", "EN", "FR", {"Paris": "Lutèce"})
    assert glossary.glossary_id in [g.glossary_id for g in translator.list_glossaries()]
    assert translator.get_glossary_entries(glossary) == {"Paris": "Lutèce"}
    sentence = "My sister lives in Paris with her two cats."
    used = translator.translate_text(sentence, source_lang="EN", target_lang="FR", glossary=glossary)
    assert used.text == translation_of(sentence, "en", "fr").replace("Paris", "Lutèce")
    translator.delete_glossary(glossary)
    with pytest.raises(deepl.GlossaryNotFoundException):
        translator.get_glossary(glossary.glossary_id)
    # A deleted glossary in a translation: DeepL's parameter is named, not the native API's field.
    with pytest.raises(deepl.DeepLException, match="glossary_id: no glossary") as deleted:
        translator.translate_text(sentence, source_lang="EN", target_lang="FR", glossary=glossary.glossary_id)
    assert "payload" not in str(deleted.value)
    # A path DeepL's API does not have: a JSON 404 in DeepL's shape, whatever the body.
    for path in ("/v2/documents", "/v3/nothing", "/deepl/v2/nothing"):
        unknown = requests.post(f"{server.url}{path}", files={"file": ("a.txt", b"Hello")}, timeout=30)
        assert unknown.status_code == 404 and unknown.json()["message"] == "Not Found", path


@pytest.mark.parametrize("root", ["/v2", "/deepl/v2"])
@pytest.mark.parametrize(
    "body",
    [{"json": {"text": "", "target_lang": "DE"}}, {"json": {"text": [], "target_lang": "DE"}}, {"data": {"text": ""}}],
    ids=["empty string", "empty list", "empty form field"],
)
def test_no_text_is_deepls_missing_parameter(server, root, body):
    # deepl-python refuses an empty string before sending it; a client that sends `text=` gets
    # DeepL's missing-parameter answer.
    if "data" in body:
        body = {"data": {**body["data"], "target_lang": "DE"}}
    response = requests.post(f"{server.url}{root}/translate", timeout=30, **body)
    assert response.status_code == 400 and response.json()["message"] == "Parameter 'text' not specified."


def test_an_empty_text_among_others_is_answered_empty(server):
    both = {"text": ["Welcome to Berlin!", ""], "source_lang": "EN", "target_lang": "DE"}
    answered = requests.post(f"{server.url}/v2/translate", json=both, timeout=60)
    assert answered.status_code == 200, answered.text
    assert [t["text"] for t in answered.json()["translations"]] == [translation_of(both["text"][0], "en", "de"), ""]


def test_every_v3_glossary_call_of_deepl_client(server):
    client = deepl.DeepLClient("any-key-when-keys-are-off", server_url=server.url)
    made = client.create_multilingual_glossary(
        "pets",
        [Dictionary("EN", "DE", {"Apple": "Apfel", "Banana": "Banane"}), Dictionary("DE", "EN", {"Apfel": "Apple"})],
    )
    try:
        assert [(d.source_lang, d.target_lang, d.entry_count) for d in made.dictionaries] == [
            ("EN", "DE", 2),
            ("DE", "EN", 1),
        ]
        got = client.get_multilingual_glossary(made.glossary_id)
        assert (got.name, got.creation_time, len(got.dictionaries)) == ("pets", made.creation_time, 2)
        assert made.glossary_id in [g.glossary_id for g in client.list_multilingual_glossaries()]
        # deepl-python's test_glossary_translate_text_basic: whole texts that are terms.
        used = client.translate_text(["Apfel"], source_lang="DE", target_lang="EN-US", glossary=made)
        assert [r.text for r in used] == ["Apple"]
        # deepl-python 1.32's `glossary_ids`: one glossary a request here, else a 400 that says so.
        by_ids = client.translate_text("Apfel", source_lang="DE", target_lang="EN-US", glossary_ids=[made])
        assert by_ids.text == "Apple"
        with pytest.raises(deepl.DeepLException, match="one glossary a request"):
            client.translate_text("Apfel", source_lang="DE", target_lang="EN-US", glossary_ids=[made, made])
        entries = client.get_multilingual_glossary_entries(made, "EN", "DE").dictionaries
        assert util.convert_tsv_to_dict(entries[0].entries) == {"Apple": "Apfel", "Banana": "Banane"}
        # PATCH: entries merged into the pair's dictionary, seen by the next translation at once.
        patched = client.update_multilingual_glossary_dictionary(
            made, Dictionary("DE", "EN", {"Apfel": "APPLE", "Birne": "Pear"})
        )
        assert [d.entry_count for d in patched.dictionaries] == [2, 2]
        assert client.translate_text("Apfel", source_lang="DE", target_lang="EN-GB", glossary=made).text == "APPLE"
        assert client.update_multilingual_glossary_name(made, "more pets").name == "more pets"
        # PUT: the pair's dictionary replaced.
        replaced = client.replace_multilingual_glossary_dictionary(made, Dictionary("EN", "DE", {"Cherry": "Kirsche"}))
        assert (replaced.source_lang, replaced.target_lang, replaced.entry_count) == ("EN", "DE", 1)
        entries = client.get_multilingual_glossary_entries(made.glossary_id, "EN", "DE").dictionaries
        assert entries[0].entries == util.convert_dict_to_tsv({"Cherry": "Kirsche"})
        client.delete_multilingual_glossary_dictionary(made, source_lang="EN", target_lang="DE")
        left = client.get_multilingual_glossary(made.glossary_id)
        assert [(d.source_lang, d.target_lang) for d in left.dictionaries] == [("DE", "EN")]
        with pytest.raises(deepl.GlossaryNotFoundException, match="Dictionary not found"):
            client.get_multilingual_glossary_entries(made, "EN", "DE")
        # The native API sees the same glossary, dictionaries and all.
        native = requests.get(f"{server.url}/glossaries/{made.glossary_id}", timeout=30).json()
        assert native["name"] == "more pets" and native["dictionaries"][0]["sourceLang"] == "de"
    finally:
        client.delete_multilingual_glossary(made)
    with pytest.raises(deepl.GlossaryNotFoundException):
        client.get_multilingual_glossary(made.glossary_id)
    for call in (client.get_multilingual_glossary, client.delete_multilingual_glossary):
        with pytest.raises(deepl.GlossaryNotFoundException):
            call("96ab91fd-e715-41a1-adeb-5d701f84a483")
        with pytest.raises(deepl.DeepLException):
            call("invalid_glossary_id")


def test_v2_and_v3_glossaries_are_one_store(server):
    client = deepl.DeepLClient("any-key-when-keys-are-off", server_url=server.url)
    v2 = client.create_glossary("v2", "EN", "FR", {"Paris": "Lutèce"})
    v3 = client.create_multilingual_glossary(
        "v3", [Dictionary("EN", "DE", {"a": "b"}), Dictionary("DE", "EN", {"b": "a"})]
    )
    try:
        # A v2 glossary in v3: one dictionary; a glossary of several has no v2 shape.
        as_v3 = client.get_multilingual_glossary(v2.glossary_id)
        assert [(d.source_lang, d.target_lang, d.entry_count) for d in as_v3.dictionaries] == [("EN", "FR", 1)]
        listed_v2 = [g.glossary_id for g in client.list_glossaries()]
        assert v2.glossary_id in listed_v2 and v3.glossary_id not in listed_v2
        with pytest.raises(deepl.DeepLException, match="/v3/glossaries/"):
            client.get_glossary(v3.glossary_id)
        # A v3 glossary of one dictionary is a v2 glossary, whose entries v2 reads.
        one = client.create_multilingual_glossary("one", [Dictionary("EN", "FR", {"cat": "chat"})])
        assert client.get_glossary_entries(one.glossary_id) == {"cat": "chat"}
        client.delete_glossary(one.glossary_id)
        # The native API, with a glossary of several dictionaries: the one of the request's pair;
        # with fromLang auto, the one into its target.
        sentence = "Welcome to Berlin!"
        records = [{"id": "1", "text": sentence}]
        body = {"payload": {"fromLang": "auto", "toLang": "de", "glossaryId": v3.glossary_id, "records": records}}
        answer = requests.post(f"{server.url}/translation", json=body, timeout=60)
        assert answer.status_code == 200 and answer.json()["result"][0]["text"] == translation_of(sentence, "en", "de")
    finally:
        client.delete_glossary(v2)
        client.delete_multilingual_glossary(v3)


def test_glossaries_as_large_as_deepls(server):
    # deepl-python's test_glossary_create_large: 10,000 entries, used in a translation.
    client = deepl.DeepLClient("any-key-when-keys-are-off", server_url=server.url)
    entries = {f"Source-${i}": f"Target-${i}" for i in range(10_000)}
    made = client.create_multilingual_glossary("large", [Dictionary("EN", "DE", entries)])
    try:
        assert made.dictionaries[0].entry_count == 10_000
        read = client.get_multilingual_glossary_entries(made, "EN", "DE").dictionaries[0].entries
        assert util.convert_tsv_to_dict(read) == entries
        sentence = "Welcome to Berlin!"
        used = client.translate_text(f"{sentence} Source-$42", source_lang="EN", target_lang="DE", glossary=made)
        assert used.text.endswith("Target-$42") and used.text.startswith(translation_of(sentence, "en", "de"))
    finally:
        client.delete_multilingual_glossary(made)
    v2 = client.create_glossary("large v2", "EN", "DE", entries)
    assert v2.entry_count == 10_000
    client.delete_glossary(v2)


def test_deepl_python_reads_a_refusal_as_deepls(server):
    # The client's own reading of the 400 body; each parameter's refusal: tests/unit/test_deepl.py.
    translator = deepl.Translator("any-key-when-keys-are-off", server_url=server.url)
    with pytest.raises(
        deepl.DeepLException, match=r"Bad request, message: Value for 'split_sentences' not supported\.$"
    ):
        translator.translate_text("Welcome to Berlin!", target_lang="DE", split_sentences="invalid")


@pytest.mark.parametrize(
    ("asked", "used"),
    [
        ("quality_optimized", "quality_optimized"),
        ("prefer_quality_optimized", "quality_optimized"),
        ("latency_optimized", "latency_optimized"),
        (None, None),
    ],
)
def test_the_model_type_asked_for_is_answered_as_used(server, asked, used):
    translator = deepl.Translator("any-key-when-keys-are-off", server_url=server.url)
    result = translator.translate_text("Welcome to Berlin!", target_lang="DE", model_type=asked)
    assert result.text == translation_of("Welcome to Berlin!", "en", "de") and result.model_type_used == used


@pytest.mark.parametrize("target", ["EN", "PT"])
def test_deepls_deprecated_targets_are_taken_and_not_listed(server, target):
    # Refused by deepl-python itself, taken by DeepL's API.
    taken = requests.post(f"{server.url}/v2/translate", json={"text": ["x"], "target_lang": target}, timeout=60)
    assert taken.status_code == 200, taken.text
    translator = deepl.Translator("any-key-when-keys-are-off", server_url=server.url)
    targets = {language.code for language in translator.get_target_languages()}
    assert {f"{target}-{v}" for v in {"EN": ("GB", "US"), "PT": ("BR", "PT")}[target]} <= targets
    assert target not in targets


OFFERED = "is not offered by this server"


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda client: client.rephrase_text("Welcome to Berlin!"), f"Rephrasing \\(DeepL Write\\) {OFFERED}"),
        (lambda client: client.correct_text("Welcome to Berlin!"), f"Correcting \\(DeepL Write\\) {OFFERED}"),
        (lambda client: client.get_all_style_rules(), f"Style rules {OFFERED}"),
        (
            lambda client: client.translate_text("Welcome to Berlin!", target_lang="DE", style_rule="a-style"),
            f"Style rules \\('style_id'\\) {OFFERED}",
        ),
    ],
    ids=["rephrase", "correct", "style rules", "a style rule in a translation"],
)
def test_deepls_llm_features_are_a_403_that_says_so(server, call, message):
    client = deepl.DeepLClient("any-key-when-keys-are-off", server_url=server.url)
    with pytest.raises(deepl.AuthorizationException, match=message):
        call(client)


def test_deepls_translation_memory_calls_work_with_deepls_own_client(server):
    """deepl-python 1.32's translation-memory calls (#51): list, get, a page of segments, translate
    with a memory and a threshold, delete; a memory made through the native API from a person's work."""
    people = {"Good morning, everyone!": "Guten Morgen allerseits! (von Hand)", "Page 1 of 10": "Seite 1 von 10"}
    created = requests.post(
        f"{server.url}/memories",
        json={
            "name": "handbook",
            "sourceLang": "en",
            "segments": [{"source": s, "targetLang": "de-DE", "target": t} for s, t in people.items()],
        },
        timeout=30,
    )
    assert created.status_code == 201, created.text
    memory_id = created.json()["memoryId"]
    client = deepl.DeepLClient("any-key-when-keys-are-off", server_url=server.url)
    listed = {m.translation_memory_id: m for m in client.list_translation_memories()}
    mine = listed[memory_id]
    assert (mine.name, mine.source_language, mine.target_languages, mine.segment_count) == ("handbook", "en", ["de"], 2)
    assert mine.creation_time is not None
    assert client.get_translation_memory(memory_id).name == "handbook"

    model_text = "Tickets are cheaper for students."
    results = client.translate_text(
        ["Good morning, everyone!", model_text, "Page 4 of 12"],
        source_lang="EN",
        target_lang="DE",
        translation_memory=mine,
        translation_memory_threshold=80,
    )
    assert [r.text for r in results] == [
        "Guten Morgen allerseits! (von Hand)",
        translation_of(model_text, "en", "de"),
        "Seite 4 von 12",
    ]

    first = client.list_translation_memory_segments(memory_id, page_size=1)
    assert [s.source_text for s in first] == ["Good morning, everyone!"] and first.segment_count == 2
    assert [(t.target_language, t.target_text) for t in first.segments[0].targets] == [
        ("de", people["Good morning, everyone!"])
    ]
    second = client.list_translation_memory_segments(memory_id, page_size=1, page_cursor=first.next_page_cursor)
    assert [s.source_text for s in second] == ["Page 1 of 10"] and second.next_page_cursor is None
    found = client.list_translation_memory_segments(memory_id, filter_text="SEITE")
    assert [s.source_text for s in found] == ["Page 1 of 10"]
    assert len(client.list_translation_memory_segments(memory_id, filter_text="SEITE", filter_case_sensitive=True)) == 0

    # DeepL's upload-URL import is not offered: the native routes import files.
    with pytest.raises(deepl.AuthorizationException, match="not offered"):
        client.create_translation_memory_import("legal.tmx", 100)
    client.delete_translation_memory(memory_id)
    assert memory_id not in {m.translation_memory_id for m in client.list_translation_memories()}
    with pytest.raises(deepl.DeepLException, match="translation memory"):
        client.translate_text("Hello", source_lang="EN", target_lang="DE", translation_memory=memory_id)


@pytest.mark.parametrize("api", ["deepl", "libretranslate"])
def test_1024_texts_by_form_are_translated_and_1025_are_a_413(server, api):
    # Starlette's forms stopped at 1,000 fields: 1,000 texts by form were a 400 "Too many fields",
    # where the docs promise 1,024 texts and a 413 past them, as JSON bodies get (#50).
    text, translation = "Life is like a box of chocolates.", "人生はチョコレートの箱のようなものだ。"
    if api == "deepl":
        url, fields, answer = (
            f"{server.url}/v2/translate",
            [("target_lang", "JA"), ("source_lang", "EN")],
            "translations",
        )
        name = "text"
    else:
        url, fields, answer = f"{server.url}/libretranslate/translate", [("source", "en"), ("target", "ja")], None
        name = "q"
    for count, status in ((limits.MAX_RECORDS_PER_REQUEST, 200), (limits.MAX_RECORDS_PER_REQUEST + 1, 413)):
        response = requests.post(url, data=[*fields, *[(name, text)] * count], timeout=300)
        assert response.status_code == status, response.text[:300]
        if status == 200:
            body = response.json()
            texts = [t["text"] for t in body[answer]] if answer else body["translatedText"]
            assert texts == [translation] * count
        else:
            said = response.json()["message" if api == "deepl" else "error"]
            assert "exceeds the limit of 1024" in said, said

"""DeepL's v2 API on the session's real server (fixture model, #33), driven by DeepL's own Python
client (`deepl`, with `server_url`) and by the request shapes Weblate's DeepL machinery sends."""

from __future__ import annotations

import deepl
import pytest
import requests

from harness.corpus import corpus_sentences

pytestmark = pytest.mark.e2e


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


def test_form_and_query_bodies_and_deepl_errors(server):
    api = f"{server.url}/deepl/v2"
    form = requests.post(
        f"{api}/translate", data={"text": ["Where is the library?"] * 2, "target_lang": "fr"}, timeout=60
    )
    assert form.status_code == 200, form.text
    assert [t["text"] for t in form.json()["translations"]] == [translation_of("Where is the library?", "en", "fr")] * 2
    query = requests.post(f"{api}/translate?text=Welcome%20to%20Berlin!&target_lang=DE&source_lang=EN", timeout=60)
    assert query.json()["translations"][0]["text"] == translation_of("Welcome to Berlin!", "en", "de")
    for bad, needle in (
        ({"target_lang": "DE"}, "'text'"),
        ({"text": "x"}, "'target_lang'"),
        ({"text": "x", "target_lang": "XX"}, "'target_lang'"),
        ({"text": "x", "target_lang": "DE", "tag_handling": "json"}, "'tag_handling'"),
        ({"text": "x", "target_lang": "DE", "glossary_id": "00000000-0000-0000-0000-000000000000"}, "source_lang"),
    ):
        response = requests.post(f"{api}/translate", json=bad, timeout=30)
        assert response.status_code == 400 and needle in response.json().get("message", ""), (bad, response.text)
    long_id = {"text": "x", "source_lang": "EN", "target_lang": "DE", "glossary_id": "g" * 500}
    assert requests.post(f"{api}/translate", json=long_id, timeout=30).status_code == 400
    numbers = requests.post(f"{api}/translate", json={"text": "42", "target_lang": "DE"}, timeout=30).json()
    assert numbers["translations"] == [{"detected_source_language": "DE", "text": "42", "billed_characters": 2}]
    missing = {
        "text": "Welcome to Berlin!",
        "source_lang": "EN",
        "target_lang": "DE",
        "glossary_id": "00000000-0000-0000-0000-000000000000",
    }
    assert requests.post(f"{api}/translate", json=missing, timeout=30).status_code == 404
    assert requests.get(f"{api}/glossaries/not-an-id/entries", timeout=30).status_code == 404
    bad_entries = {"name": "x", "source_lang": "EN", "target_lang": "DE", "entries": "only-one-column"}
    refused = requests.post(f"{api}/glossaries", json=bad_entries, timeout=30)
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
    # DeepL's document API is not served: a JSON 404 in DeepL's shape, whatever the body.
    document = requests.post(f"{server.url}/v2/document", files={"file": ("a.txt", b"Hello")}, timeout=30)
    assert document.status_code == 404 and document.json()["message"] == "Not Found"


def test_empty_text_is_deepls_400(server):
    # deepl-python refuses an empty string before sending it; a client that sends `text=` gets
    # DeepL's missing-parameter answer. In a list of several texts an empty one is answered empty.
    for api in (f"{server.url}/v2", f"{server.url}/deepl/v2"):
        for body in ({"text": "", "target_lang": "DE"}, {"text": [], "target_lang": "DE"}):
            response = requests.post(f"{api}/translate", json=body, timeout=30)
            assert response.status_code == 400 and response.json()["message"] == "Parameter 'text' not specified."
        form = requests.post(f"{api}/translate", data={"text": "", "target_lang": "DE"}, timeout=30)
        assert form.status_code == 400 and form.json()["message"] == "Parameter 'text' not specified."
    both = {"text": ["Welcome to Berlin!", ""], "source_lang": "EN", "target_lang": "DE"}
    answered = requests.post(f"{server.url}/v2/translate", json=both, timeout=60)
    assert answered.status_code == 200, answered.text
    assert [t["text"] for t in answered.json()["translations"]] == [translation_of(both["text"][0], "en", "de"), ""]

"""DeepL's codes, its parameters' checks and glossary entry formats without a server (#33, #44); the
API itself is driven by DeepL's client in tests/e2e/test_deepl.py and test_deepl_documents.py."""

from __future__ import annotations

import pytest

from translator.api.deepl import (
    MODEL_TYPES,
    SPLIT_SENTENCES,
    TAG_HANDLING,
    NotOffered,
    choice,
    languages_and_options,
    memory_options,
    parse_entries,
    tag_names,
)
from translator.api.deepl_codes import target_codes, to_deepl, to_iso
from translator.api.deepl_documents import status_body, upload_filename
from translator.api.deepl_glossaries import DictionaryNotFound, merged, replaced, tsv, v3_info, without
from translator.api.endpoints import DEEPL
from translator.api.glossary_store import Dictionary, new_multilingual
from translator.contract.errors import InvalidRequest, PayloadTooLarge
from translator.contract.glossary import MAX_ENTRIES
from translator.documents.job_state import JobState

pytestmark = pytest.mark.pure

SUPPORTED = {"en", "de", "pt", "zh", "no", "ja"}


@pytest.mark.parametrize(
    ("code", "iso"),
    [("EN-US", "en"), ("en-gb", "en"), ("PT-BR", "pt"), ("ZH-HANS", "zh"), ("ZH", "zh"), ("NB", "no"), ("XX", None)],
)
def test_deepl_codes_map_to_the_models(code, iso):
    assert to_iso(code, SUPPORTED, target=True) == iso


@pytest.mark.parametrize(
    ("code", "source", "target"), [("EN", "en", "en"), ("EN-US", None, "en"), ("DE-DE", None, None)]
)
def test_only_deepls_codes_are_taken(code, source, target):
    # A source is a base language; a target one too, or one of DeepL's variants. EN as a target is
    # DeepL's "unspecified variant for backward compatibility": taken, not listed.
    assert to_iso(code, SUPPORTED) == source
    assert to_iso(code, SUPPORTED, target=True) == target


def test_codes_back_and_the_target_list():
    assert to_deepl("no") == "NB" and to_deepl("ja") == "JA"
    targets = set(target_codes(SUPPORTED))
    assert {"EN-US", "EN-GB", "PT-BR", "PT-PT", "ZH-HANS", "ZH-HANT", "NB", "DE", "ZH"} <= targets
    assert not {"EN", "PT"} & targets
    assert "EN-US" not in target_codes({"de", "fr"})


def options(**params):
    return languages_and_options(params, frozenset(SUPPORTED))


NOT_SUPPORTED = r"^Value for '{}' not supported\.$"

# Every refusal of a translate call's parameters, DeepL's wording (clients match on it), each its
# own case: (parameters, the exception, its message).
REFUSALS = {
    "formality more, target without it": (
        {"target_lang": "en-us", "formality": "more"},
        InvalidRequest,
        r"Target language 'EN-US' doesn't support formality",
    ),
    "formality less, target without it": (
        {"target_lang": "en-us", "formality": "less"},
        InvalidRequest,
        r"Target language 'EN-US' doesn't support formality",
    ),
    "formality not DeepL's": (
        {"target_lang": "DE", "formality": "polite"},
        InvalidRequest,
        NOT_SUPPORTED.format("formality"),
    ),
    "glossary without source": (
        {"target_lang": "DE", "glossary_id": "g"},
        InvalidRequest,
        "requires the 'source_lang'",
    ),
    "no target": ({"source_lang": "EN"}, InvalidRequest, r"^Parameter 'target_lang' not specified\.$"),
    "target variant DeepL lacks": ({"target_lang": "DE-DE"}, InvalidRequest, NOT_SUPPORTED.format("target_lang")),
    "target unknown": ({"target_lang": "XX"}, InvalidRequest, NOT_SUPPORTED.format("target_lang")),
    "source a variant": (
        {"target_lang": "DE", "source_lang": "EN-US"},
        InvalidRequest,
        NOT_SUPPORTED.format("source_lang"),
    ),
    "custom instructions": (
        {"target_lang": "DE", "custom_instructions": ["be brief"]},
        NotOffered,
        "'custom_instructions'.* is not offered by this server",
    ),
    "style rules": ({"target_lang": "DE", "style_id": "x"}, NotOffered, "'style_id'.* is not offered by this server"),
    "two glossary ids": (
        {"target_lang": "DE", "source_lang": "EN", "glossary_ids": ["g", "h"]},
        InvalidRequest,
        "one glossary a request",
    ),
    "two glossary ids, comma-separated": (
        {"target_lang": "DE", "source_lang": "EN", "glossary_ids": "g,h"},
        InvalidRequest,
        "one glossary a request",
    ),
    "glossary ids and a glossary id": (
        {"target_lang": "DE", "source_lang": "EN", "glossary_ids": ["g"], "glossary_id": "h"},
        InvalidRequest,
        "one glossary a request",
    ),
}


@pytest.mark.parametrize(("params", "refusal", "message"), REFUSALS.values(), ids=REFUSALS.keys())
def test_a_translate_parameter_deepl_refuses_is_refused_in_its_words(params, refusal, message):
    with pytest.raises(refusal, match=message):
        options(**params)


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({}, (None, None)),
        ({"translation_memory_id": "tm"}, ("tm", None)),
        ({"translation_memory_id": "tm", "translation_memory_threshold": "75"}, ("tm", 75)),
        ({"translation_memory_id": "tm", "translation_memory_threshold": 0}, ("tm", 0)),
        ({"translation_memory_id": "tm", "translation_memory_threshold": 101}, "from 0 to 100"),
        ({"translation_memory_id": "tm", "translation_memory_threshold": "7.5"}, "from 0 to 100"),
        ({"translation_memory_id": "tm", "translation_memory_threshold": True}, "from 0 to 100"),
        ({"translation_memory_threshold": 80}, "requires 'translation_memory_id'"),
    ],
)
def test_translation_memory_parameters_are_checked_as_deepls_client_checks_them(params, expected):
    # deepl-python refuses a threshold without a memory, or outside 0-100, before sending (#51).
    if isinstance(expected, str):
        with pytest.raises(InvalidRequest, match=expected):
            memory_options(params)
    else:
        assert memory_options(params) == expected


def test_what_is_not_offered_is_a_403():
    with pytest.raises(NotOffered) as refused:
        options(target_lang="DE", style_id="x")
    assert refused.value.status == 403


# What DeepL takes: (parameters, the source, target and glossary they come to).
TAKEN = {
    "formality default, target without it": ({"target_lang": "DE", "formality": "default"}, ("auto", "de", None)),
    "formality prefer_more, target without it": (
        {"target_lang": "DE", "formality": "prefer_more"},
        ("auto", "de", None),
    ),
    "formality PREFER_LESS, any case": ({"target_lang": "DE", "formality": "PREFER_LESS"}, ("auto", "de", None)),
    "no formality": ({"target_lang": "DE", "formality": None}, ("auto", "de", None)),
    "a glossary with its source": (
        {"target_lang": "DE", "source_lang": "EN", "glossary_id": "g"},
        ("en", "de", "g"),
    ),
    "no custom instructions": ({"target_lang": "DE", "custom_instructions": []}, ("auto", "de", None)),
    # deepl-python 1.32's glossary_ids: one glossary a request here.
    "one glossary id in a list": (
        {"target_lang": "DE", "source_lang": "EN", "glossary_ids": ["g"]},
        ("en", "de", "g"),
    ),
    "one glossary id alone": ({"target_lang": "DE", "source_lang": "EN", "glossary_ids": "g"}, ("en", "de", "g")),
}


@pytest.mark.parametrize(("params", "taken"), TAKEN.values(), ids=TAKEN.keys())
def test_what_deepl_takes_is_taken(params, taken):
    assert options(**params) == taken


CHOICES = [
    ("split_sentences", SPLIT_SENTENCES, ["0", "1", "nonewlines", 0, 1], ["2", "invalid", "on"]),
    ("tag_handling", TAG_HANDLING, ["xml", "HTML"], ["json"]),
    ("model_type", MODEL_TYPES, ["quality_optimized", "prefer_quality_optimized", "latency_optimized"], ["bogus"]),
]


@pytest.mark.parametrize(
    ("name", "allowed", "value"),
    [(name, allowed, value) for name, allowed, good, _ in CHOICES for value in good],
)
def test_a_value_from_deepls_list_is_taken_in_lower_case(name, allowed, value):
    assert choice({name: value}, name, allowed) == str(value).lower()


@pytest.mark.parametrize(("name", "allowed"), [(name, allowed) for name, allowed, _, _ in CHOICES])
def test_a_list_parameter_left_out_is_none(name, allowed):
    assert choice({}, name, allowed) is None


@pytest.mark.parametrize(
    ("name", "allowed", "value"),
    [(name, allowed, value) for name, allowed, _, bad in CHOICES for value in bad],
)
def test_a_value_not_on_deepls_list_is_refused_in_its_words(name, allowed, value):
    with pytest.raises(InvalidRequest, match=NOT_SUPPORTED.format(name)):
        choice({name: value}, name, allowed)


def test_entries_in_tsv_and_csv():
    assert parse_entries("Paris\tLutèce\n\nBentoML\tBentoML\r\n", "tsv") == {"Paris": "Lutèce", "BentoML": "BentoML"}
    assert parse_entries('"a, b",c,en,fr\nx,y\n', "csv") == {"a, b": "c", "x": "y"}
    assert parse_entries(" a \t b ", "tsv") == {"a": "b"}  # cells are trimmed, as spreadsheets leave them


@pytest.mark.parametrize(
    ("text", "fmt", "problem"),
    [
        ("one column", "tsv", "line 1"),
        ("a\tb\tc", "tsv", "line 1"),
        ("", "tsv", "none"),
        ("a\tb\na\tc", "tsv", "given twice"),
        ("a\tb", "json", "entries_format"),
        ('"' + "x" * 200_000 + '",y', "csv", "line 1 is too long"),  # past the csv module's field limit
        ('x,y\n"a,b', "csv", "line 2"),
    ],
)
def test_bad_entries_are_400(text, fmt, problem):
    with pytest.raises(InvalidRequest, match=problem):
        parse_entries(text, fmt)


def test_ignore_tags_comma_separated_or_a_list():
    assert tag_names({"ignore_tags": "x, ph,"}, "ignore_tags") == ["x", "ph"]
    assert tag_names({"ignore_tags": ["x", "a,b"]}, "ignore_tags") == ["x", "a", "b"]
    assert tag_names({}, "ignore_tags") == []
    with pytest.raises(InvalidRequest, match="ignore_tags"):
        tag_names({"ignore_tags": [1]}, "ignore_tags")


@pytest.mark.parametrize(
    ("native", "deepls"),
    [
        (
            "payload.records.3.text: length in characters exceeds the limit of 20000 (got 20001)",
            "text.3: length in characters exceeds the limit of 20000 (got 20001)",
        ),
        ("payload.glossaryId: no glossary 'g'", "glossary_id: no glossary 'g'"),
        # The request model's own validation names the field without its path.
        (
            "Invalid request: glossaryId: String should have at most 100 characters",
            "Invalid request: glossary_id: String should have at most 100 characters",
        ),
    ],
    ids=["a record's text", "the glossary, by its path", "the glossary, by its name"],
)
def test_errors_name_deepls_parameters_not_the_native_fields(native, deepls):
    assert DEEPL.body({"error": native}) == {"message": deepls, "error": deepls}


ENDE = Dictionary("en", "de", {"cat": "Katze", "dog": "Hund"})
DEEN = Dictionary("de", "en", {"Katze": "cat"})


def test_v3_changes_to_a_glossarys_dictionaries():
    glossary = new_multilingual("pets", (ENDE, DEEN))
    # PATCH: entries merged into their pair's dictionary (a term again takes the new target), or a new one.
    patched = merged(glossary, (Dictionary("en", "de", {"dog": "Köter", "bird": "Vogel"}), Dictionary("en", "fr", {})))
    assert patched.dictionaries[0].entries == {"cat": "Katze", "dog": "Köter", "bird": "Vogel"}
    assert patched.dictionaries[1] == DEEN and patched.dictionaries[2].target_lang == "fr"
    big = Dictionary("en", "de", {f"t{i}": "x" for i in range(MAX_ENTRIES)})
    with pytest.raises(
        PayloadTooLarge, match=r"dictionaries\.0\.entries: number of entries exceeds the limit of 10000"
    ):
        merged(glossary, (big,))
    # PUT: the pair's dictionary replaced where it was, or added.
    new = Dictionary("en", "de", {"fish": "Fisch"})
    assert replaced(glossary, new).dictionaries == (new, DEEN)
    assert replaced(glossary, Dictionary("fr", "de", {"a": "b"})).dictionaries[2].source_lang == "fr"
    # DELETE a dictionary: the others stay; one that is not there is a 404.
    assert without(glossary, "en", "de").dictionaries == (DEEN,)
    with pytest.raises(DictionaryNotFound, match="none for en -> fr") as missing:
        without(glossary, "en", "fr")
    assert missing.value.status == 404
    assert tsv({"a": "b", "c d": "e"}) == "a\tb\nc d\te"  # as deepl-python writes it: no newline at the end


def test_v3_info_is_deepls_shape():
    info = v3_info(new_multilingual("pets", (ENDE, DEEN)))
    assert info["dictionaries"] == [
        {"source_lang": "en", "target_lang": "de", "entry_count": 2},
        {"source_lang": "de", "target_lang": "en", "entry_count": 1},
    ]
    assert set(info) == {"glossary_id", "name", "dictionaries", "creation_time"}


def job(status: str, **more) -> JobState:
    state = {"id": "ab" * 16, "status": status, "progress": {"done": 0, "total": 10}, "created": 100.0}
    return JobState.from_json({"filename": "a.txt", "fromLang": "en", "toLang": "de", "pid": 1, **state, **more})


def test_a_jobs_state_as_deepls_document_status():
    assert status_body(job("queued"), False, 101.0) == {"document_id": "AB" * 16, "status": "queued"}
    assert status_body(job("running"), False, 103.5)["seconds_remaining"] == 4  # no pace known yet
    running = status_body(job("running", progress={"done": 4, "total": 10}), False, 108.0)
    assert running == {"document_id": "AB" * 16, "status": "translating", "seconds_remaining": 12}
    done = status_body(job("done", characters=42), False, 110.0)
    assert done["status"] == "done" and done["billed_characters"] == 42 and done["seconds_remaining"] == 0
    failed = status_body(job("failed", error="file: cannot be read"), False, 110.0)
    assert failed["status"] == "error" and failed["error_message"] == failed["message"] == "file: cannot be read"
    # A document in the target language already (detected) is DeepL's error, not a copy.
    assert status_body(job("done"), True, 110.0)["error_message"] == "Source and target language are equal."


class Upload:
    def __init__(self, filename):
        self.filename = filename


def test_a_documents_name_and_its_output_format():
    assert upload_filename({}, Upload("a.docx")) == "a.docx"
    assert upload_filename({"filename": "b.txt"}, Upload(None)) == "b.txt"
    assert upload_filename({}, Upload(None)) == "document"
    assert upload_filename({"output_format": "DOCX"}, Upload("a.docx")) == "a.docx"
    assert upload_filename({"output_format": "html"}, Upload("a.htm")) == "a.htm"
    with pytest.raises(InvalidRequest, match=r"^Value for 'output_format' not supported: .* \(\.docx\), not \.pdf$"):
        upload_filename({"output_format": "pdf"}, Upload("a.docx"))


def test_the_codes_this_server_takes_are_taken_too():
    # An NLLB checkpoint's own codes and aliases, in DeepL's upper case: what its lists name.
    nllb = {"en", "eng_Latn", "en-Latn", "de", "deu_Latn", "zh", "zh-Hant", "zho_Hant"}
    assert to_iso("ENG_LATN", nllb) == "eng_Latn" and to_iso("ZH-HANT", nllb) == "zh-Hant"
    assert to_iso("DE-DE", nllb) is None and to_iso("DE-DE", nllb, target=True) is None

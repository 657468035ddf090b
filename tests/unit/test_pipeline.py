from __future__ import annotations

import asyncio
import json

import pytest

from translator.api.pipeline import translate_payload
from translator.contract import limits
from translator.contract.errors import (
    RECORD_FAILED,
    PayloadTooLarge,
    RecordFailed,
    TranslationFailed,
    UnsupportedLanguage,
)
from translator.contract.language_codes import LanguageCodes
from translator.contract.protocol import ENGINE_FAILED, Piece, PieceResult
from translator.contract.schemas import Payload

pytestmark = pytest.mark.pure

LANGS = {"en", "ja", "fr"}


def payload(*texts: str, src="en", tgt="fr", ids=None) -> Payload:
    ids = ids or [str(i) for i in range(len(texts))]
    return Payload.model_validate(
        {"fromLang": src, "toLang": tgt, "records": [{"id": i, "text": t} for i, t in zip(ids, texts, strict=True)]}
    )


class FakeEngine:
    """Upper-cases each piece and remembers the calls it got."""

    def __init__(self, fail_on: str | None = None):
        self.calls: list[list[Piece]] = []
        self.fail_on = fail_on

    async def __call__(self, pieces: list[Piece]) -> list[PieceResult]:
        self.calls.append(pieces)
        return [
            PieceResult(error="boom") if p.text == self.fail_on else PieceResult(text=p.text.upper()) for p in pieces
        ]


def run(p: Payload, engine=None):
    return asyncio.run(translate_payload(p, LANGS, engine or FakeEngine()))


def test_one_engine_call_per_request_with_every_piece_in_order():
    engine = FakeEngine()
    result = run(payload("One. Two.", "Three!\n\nFour?"), engine)
    assert len(engine.calls) == 1
    assert [p.text for p in engine.calls[0]] == ["One.", "Two.", "Three!", "Four?"]
    assert {(p.source, p.target) for p in engine.calls[0]} == {("en", "fr")}
    assert [(r.id, r.text) for r in result.result] == [("0", "ONE. TWO."), ("1", "THREE!\n\nFOUR?")]


def test_duplicate_ids_each_answered_in_position():
    result = run(payload("a.", "b.", "c.", ids=["x", "x", "y"]))
    assert [(r.id, r.text) for r in result.result] == [("x", "A."), ("x", "B."), ("y", "C.")]


def test_empty_and_whitespace_records_skip_the_engine():
    engine = FakeEngine()
    result = run(payload("", "  \n "), engine)
    assert engine.calls == []
    assert [r.text for r in result.result] == ["", "  \n "]


def test_empty_records_list():
    assert run(payload()).result == []


def test_same_language_returns_the_text_unchanged():
    engine = FakeEngine()
    result = run(payload("Hello.", src="en", tgt="en"), engine)
    assert engine.calls == [] and result.result[0].text == "Hello."


@pytest.mark.parametrize(("src", "tgt", "field"), [("xx", "fr", "payload.fromLang"), ("en", "zz", "payload.toLang")])
def test_unsupported_language_names_field_and_code(src, tgt, field):
    with pytest.raises(UnsupportedLanguage) as info:
        run(payload("Hi.", src=src, tgt=tgt))
    assert info.value.status == 400
    assert field in info.value.message and "GET /languages" in info.value.message


def test_limits_are_413_with_the_limit():
    with pytest.raises(PayloadTooLarge) as info:
        run(payload(*["a"] * (limits.MAX_RECORDS_PER_REQUEST + 1)))
    assert str(limits.MAX_RECORDS_PER_REQUEST) in info.value.message and info.value.status == 413
    with pytest.raises(PayloadTooLarge, match="payload.records.1.text"):
        run(payload("ok", "x" * (limits.MAX_CHARS_PER_RECORD + 1)))


def test_a_failed_piece_fails_the_request_with_the_record_id():
    # A piece that fails alone fails again on a retry: 500 naming the record, no Retry-After, not a
    # 503 inviting a retry storm; its `kind` tells bulk jobs to set the record aside.
    with pytest.raises(RecordFailed, match="record '1' could not be translated: boom") as info:
        run(payload("fine.", "bad.", ids=["0", "1"]), FakeEngine(fail_on="bad."))
    assert info.value.status == 500 and info.value.headers() == {}
    assert info.value.body() == {
        "error": "record '1' could not be translated: boom",
        "kind": RECORD_FAILED,
        "record": "1",
        "field": "payload.records.1.text",
    }


def test_a_batch_that_failed_as_a_whole_is_the_engines_fault_and_may_be_retried():
    async def crashed(pieces: list[Piece]) -> list[PieceResult]:
        return [PieceResult(error="RuntimeError: worker died", error_kind=ENGINE_FAILED) for _ in pieces]

    with pytest.raises(TranslationFailed, match="could not be translated: RuntimeError: worker died") as info:
        run(payload("fine.", "bad.", ids=["0", "1"]), crashed)
    assert info.value.status == 503 and "Retry-After" in info.value.headers()


def test_a_piece_that_cannot_be_completed_fails_the_request_with_422_naming_the_record():
    from translator.contract.errors import TranslationIncomplete
    from translator.contract.protocol import TRUNCATED

    async def cut(pieces):
        return [
            PieceResult(error="did not end within the model's limit", error_kind=TRUNCATED)
            if "long" in p.text
            else PieceResult(text=p.text)
            for p in pieces
        ]

    with pytest.raises(TranslationIncomplete) as raised:
        run(payload("fine.", "a long one.", ids=["a", "b"]), cut)
    assert raised.value.status == 422
    assert "record 'b'" in raised.value.message and raised.value.detail["field"] == "payload.records.1.text"


def test_a_short_answer_from_the_engine_fails_the_request():
    async def short(pieces):
        return [PieceResult(text="x")]

    with pytest.raises(TranslationFailed, match="answered 1 pieces for 2"):
        run(payload("One. Two."), short)


def test_long_sentence_is_chunked_not_truncated():
    engine = FakeEngine()
    text = " ".join(["word"] * 300) + "."
    result = run(payload(text), engine)
    assert all(len(p.text) <= limits.MAX_PIECE_CHARS for p in engine.calls[0])
    assert len(engine.calls[0]) > 1
    assert result.result[0].text == text.upper()


class EnglishEngine(FakeEngine):
    async def __call__(self, pieces):
        self.calls.append(pieces)
        return [
            PieceResult(text={"今日は晴れ。": "It is sunny today.", "明日は雨。": "Rain tomorrow."}[p.text])
            for p in pieces
        ]


def test_unspaced_source_sentences_get_a_space_in_a_spaced_target():
    result = run(payload("今日は晴れ。明日は雨。\n今日は晴れ。", src="ja", tgt="en"), EnglishEngine())
    assert result.result[0].text == "It is sunny today. Rain tomorrow.\nIt is sunny today."


def test_unspaced_target_keeps_pieces_together():
    result = asyncio.run(translate_payload(payload("One. Two.", src="en", tgt="ja"), {"en", "ja"}, FakeEngine()))
    assert result.result[0].text == "ONE. TWO."


# --- the source language: splitting, and "fromLang": "auto" -----------------------------------------

MANY = {"en", "fr", "de", "es", "ja", "zh"}


def auto_payload(*texts: str, tgt="en", fallback=None, ids=None) -> Payload:
    ids = ids or [str(i) for i in range(len(texts))]
    body = {
        "fromLang": "auto",
        "toLang": tgt,
        "records": [{"id": i, "text": t} for i, t in zip(ids, texts, strict=True)],
    }
    if fallback is not None:
        body["fallbackLang"] = fallback
    return Payload.model_validate(body)


def run_many(p: Payload, engine=None):
    return asyncio.run(translate_payload(p, MANY, engine or FakeEngine()))


def test_pieces_are_split_by_the_source_language():
    # German does not end a sentence before a lower-case word; English does.
    engine = FakeEngine()
    run_many(payload("Er sagte ja. und ging.", src="de", tgt="en"), engine)
    run_many(payload("Er sagte ja. und ging.", src="en", tgt="fr"), engine)
    assert [[p.text for p in call] for call in engine.calls] == [
        ["Er sagte ja. und ging."],
        ["Er sagte ja.", "und ging."],
    ]


def test_auto_detects_each_record_and_reports_it():
    engine = FakeEngine()
    result = run_many(
        auto_payload(
            "Das Leben ist wie eine Schachtel Pralinen. Man weiß nie, was man bekommt.",
            "La vie est comme une boîte de chocolats.",
            "人生はチョコレートの箱のようなものだ。開けてみるまで中身は分からない。",
        ),
        engine,
    )
    assert len(engine.calls) == 1
    assert [(p.source, p.target) for p in engine.calls[0]] == [("de", "en"), ("de", "en"), ("fr", "en")] + [
        ("ja", "en")
    ] * 2
    assert [r.detected_lang for r in result.result] == ["de", "fr", "ja"]
    # each record split by its own language's rules
    assert [p.text for p in engine.calls[0]][-2:] == [
        "人生はチョコレートの箱のようなものだ。",
        "開けてみるまで中身は分からない。",
    ]


def test_auto_record_already_in_the_target_language_comes_back_as_it_is():
    engine = FakeEngine()
    text = "Life is like a box of chocolates. You never know what you get."
    result = run_many(auto_payload(text, "La vie est comme une boîte de chocolats."), engine)
    assert [p.text for p in engine.calls[0]] == ["La vie est comme une boîte de chocolats."]
    assert [(r.text, r.detected_lang) for r in result.result] == [
        (text, "en"),
        ("LA VIE EST COMME UNE BOÎTE DE CHOCOLATS.", "fr"),
    ]


def test_auto_short_records_take_their_requests_language_and_wordless_ones_come_back():
    engine = FakeEngine()
    result = run_many(
        auto_payload(
            "La vie est comme une boîte de chocolats.",
            "Merci",
            "12345",
            "https://example.com/x",
            "Das Leben ist wie eine Schachtel Pralinen.",
            "La vie est belle, mes amis.",
        ),
        engine,
    )
    # no record is refused: the one-word record is taken as French, the request's language
    assert [(p.text, p.source) for p in engine.calls[0]] == [
        ("La vie est comme une boîte de chocolats.", "fr"),
        ("Merci", "fr"),
        ("Das Leben ist wie eine Schachtel Pralinen.", "de"),
        ("La vie est belle, mes amis.", "fr"),
    ]
    answered = [(r.text, r.detected_lang) for r in result.result]
    assert answered[1:4] == [("MERCI", "fr"), ("12345", "und"), ("https://example.com/x", "und")]
    confidences = [r.detected_confidence for r in result.result]
    assert confidences[2:4] == [0.0, 0.0] and all(0 < c <= 1 for c in confidences[:2] + confidences[4:])


def test_auto_alone_a_short_or_unsupported_record_takes_the_detectors_best_guess():
    engine = FakeEngine()
    result = run_many(auto_payload("Gracias"), engine)
    (record,) = result.result
    assert record.detected_lang in MANY and record.detected_confidence is not None
    assert engine.calls[0][0].source == record.detected_lang
    esperanto = run_many(auto_payload("La vivo estas bela kaj mi amas ĝin tre multe."))
    assert esperanto.result[0].detected_lang in MANY


def test_auto_a_short_record_takes_its_requests_language_only_in_that_languages_script():
    engine = FakeEngine()
    german = "Das Leben ist wie eine Schachtel Pralinen. Man weiß nie, was man bekommt."
    languages = {"en", "de", "el", "fr"}
    result = asyncio.run(translate_payload(auto_payload(german, "Καλημέρα", "Danke"), languages, engine))
    # one word each: the German one takes the request's German, the Greek one is Greek (never German)
    assert [(r.detected_lang, r.detected_confidence) for r in result.result][1] == ("el", 1.0)
    assert [p.source for p in engine.calls[0]] == ["de", "de", "el", "de"]


def test_auto_a_record_in_a_script_no_language_of_the_model_has_comes_back_as_it_is():
    engine = FakeEngine()
    text = "ⵜⴰⵎⴰⵣⵉⵖⵜ ⵜⴰⵏⴰⵡⴰⵢⵜ"  # Tifinagh
    result = run_many(auto_payload(text, "Das Leben ist wie eine Schachtel Pralinen."), engine)
    assert [(r.text, r.detected_lang, r.detected_confidence) for r in result.result][0] == (text, "und", 0.0)
    assert [p.source for p in engine.calls[0]] == ["de"]


def test_auto_fallback_translates_undetermined_records_from_it():
    engine = FakeEngine()
    result = run_many(auto_payload("Bonjour", "Das Leben ist wie eine Schachtel Pralinen.", fallback="fr"), engine)
    assert [(p.text, p.source) for p in engine.calls[0]] == [
        ("Bonjour", "fr"),
        ("Das Leben ist wie eine Schachtel Pralinen.", "de"),
    ]
    assert [r.detected_lang for r in result.result] == ["und", "de"]


def test_auto_blank_records_need_no_detection():
    engine = FakeEngine()
    result = run_many(auto_payload("", "  \n"), engine)
    assert engine.calls == []
    assert [(r.text, r.detected_lang) for r in result.result] == [("", "und"), ("  \n", "und")]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"fromLang": "auto", "toLang": "auto"}, "payload.toLang"),
        ({"fromLang": "auto", "toLang": "en", "fallbackLang": "xx"}, "payload.fallbackLang"),
        ({"fromLang": "en", "toLang": "fr", "fallbackLang": "auto"}, "payload.fallbackLang"),
    ],
)
def test_auto_and_fallback_codes_are_checked(body, field):
    p = Payload.model_validate({**body, "records": [{"id": "0", "text": "Hello there, friend."}]})
    with pytest.raises(UnsupportedLanguage) as info:
        run_many(p)
    assert info.value.message.startswith(f"{field}: unsupported language code")


def test_detected_lang_is_in_the_json_only_for_auto():
    explicit = run_many(payload("Hello.", src="en", tgt="fr"))
    assert json.loads(explicit.model_dump_json()) == {"result": [{"id": "0", "text": "HELLO."}]}
    auto = run_many(auto_payload("Das Leben ist wie eine Schachtel Pralinen."))
    assert json.loads(auto.model_dump_json()) == {
        "result": [
            {
                "id": "0",
                "text": "DAS LEBEN IST WIE EINE SCHACHTEL PRALINEN.",
                "detectedLang": "de",
                "detectedConfidence": auto.result[0].detected_confidence,
            }
        ]
    }


@pytest.mark.parametrize(("chars", "off_the_loop"), [(100, False), (25 * 20_000, True)])
def test_a_large_request_is_split_off_the_event_loop(monkeypatch, chars, off_the_loop):
    import threading

    threads: set[int] = set()
    from translator.text import units

    real_split = units.split_text

    def recording_split(*args, **kwargs):
        threads.add(threading.get_ident())
        return real_split(*args, **kwargs)

    monkeypatch.setattr(units, "split_text", recording_split)
    text = ("Life is like a box of chocolates. " * 600)[: chars // 25 if off_the_loop else chars]
    records = [text] * (25 if off_the_loop else 1)
    result = run(payload(*records))
    assert len(result.result) == len(records)
    assert (threading.get_ident() not in threads) is off_the_loop and len(threads) == 1


def test_alternatives_take_each_sentences_kth_alternative_and_are_distinct():
    async def engine(pieces: list[Piece]) -> list[PieceResult]:
        out = []
        for p in pieces:
            others = [f"{p.text.upper()} ({k})" for k in range(1, p.alternatives + 1)]
            if p.text == "Two.":
                others = others[:1]  # fewer found for this sentence
            out.append(PieceResult(text=p.text.upper(), alternatives=others))
        return out

    body = {"fromLang": "en", "toLang": "fr", "alternatives": 2, "records": [{"id": "a", "text": "One. Two."}]}
    [record] = asyncio.run(translate_payload(Payload.model_validate(body), LANGS, engine)).result
    assert record.text == "ONE. TWO."
    assert record.alternatives == ["ONE. (1) TWO. (1)", "ONE. (2) TWO."]
    plain = asyncio.run(translate_payload(Payload.model_validate({**body, "alternatives": 0}), LANGS, engine))
    assert json.loads(plain.model_dump_json()) == {"result": [{"id": "a", "text": "ONE. TWO."}]}


def test_alternatives_are_bounded():
    with pytest.raises(ValueError, match="alternatives"):
        Payload.model_validate({"fromLang": "en", "toLang": "fr", "alternatives": 4, "records": []})


def test_auto_a_record_that_opens_with_a_long_run_without_letters_is_still_detected():
    engine = FakeEngine()
    table = "1 2 3 4 5 6 7 8 9 10\n" * 80  # 1,680 characters without a letter
    text = table + "Das Leben ist wie eine Schachtel Pralinen."
    [record] = run_many(auto_payload(text), engine).result
    assert record.detected_lang == "de"
    assert [p.text for p in engine.calls[0]] == ["Das Leben ist wie eine Schachtel Pralinen."]


# --- one language under two spellings (NLLB checkpoints, translator/contract/language_codes.py) ------

NLLB = LanguageCodes(["eng_Latn", "fra_Latn", "deu_Latn"], "nllb")


def run_nllb(p: Payload, engine: FakeEngine):
    return asyncio.run(translate_payload(p, NLLB.accepted, engine, canonical=NLLB.listed_code))


@pytest.mark.parametrize(("src", "tgt"), [("en", "eng_Latn"), ("eng_Latn", "en"), ("en-Latn", "en")])
def test_aliases_of_one_language_are_the_same_language(src, tgt):
    engine = FakeEngine()
    result = run_nllb(payload("Hello.", src=src, tgt=tgt), engine)
    assert engine.calls == [] and result.result[0].text == "Hello."


def test_auto_record_in_the_target_language_under_its_model_code_comes_back_as_it_is():
    engine = FakeEngine()
    text = "Life is like a box of chocolates. You never know what you get."
    result = run_nllb(auto_payload(text, "La vie est comme une boîte de chocolats.", tgt="eng_Latn"), engine)
    assert [(p.text, p.source, p.target) for p in engine.calls[0]] == [
        ("La vie est comme une boîte de chocolats.", "fr", "eng_Latn")
    ]
    assert [(r.text, r.detected_lang) for r in result.result] == [
        (text, "en"),
        ("LA VIE EST COMME UNE BOÎTE DE CHOCOLATS.", "fr"),
    ]

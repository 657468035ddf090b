"""An NLLB-200 checkpoint in each form it ships (sentencepiece.bpe.model and/or tokenizer.json, with
or without tokenizer_config.json), read by the engine's tokenizer, converted for CTranslate2 and
translated by the service's Translator exactly as the corpus says, on every CPU engine."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fixture.build import CORPUS_PATH
from fixture.engines import available_engines
from harness.corpus import corpus_sentences
from translator.config import Engine, Generation, with_engine
from translator.contract.protocol import Piece
from translator.engine.backends.ctranslate2_convert import convert, converted_path
from translator.engine.tokenization import ModelTokenizer, family
from translator.engine.translator import Translator
from translator.store import checkpoint_files, languages

pytestmark = pytest.mark.model

FORMS = {
    "both": (),
    "sentencepiece-only": ("tokenizer.json",),
    "tokenizer-json-only": ("sentencepiece.bpe.model",),
    # No tokenizer_config.json: NllbTokenizer then appends its 202 default codes; only the ones
    # tokenizer.json names are the model's languages.
    "tokenizer-json-without-config": ("sentencepiece.bpe.model", "tokenizer_config.json"),
}


@pytest.fixture(scope="module", params=sorted(FORMS))
def nllb_form(request, nllb_fixture_model: Path, tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp(request.param)
    for path in nllb_fixture_model.iterdir():
        if path.is_file() and path.name not in FORMS[request.param]:
            shutil.copy2(path, directory / path.name)
    convert(directory, converted_path(directory))
    return directory


def test_each_form_registers_as_nllb_with_its_languages(nllb_form):
    assert family(nllb_form) == "nllb"
    checkpoint_files(nllb_form)  # nothing missing
    kind, codes = languages(nllb_form)
    assert kind == "nllb" and len(codes) == 100
    assert {"eng_Latn", "jpn_Jpan", "zho_Hans", "deu_Latn"} <= set(codes)


def test_language_code_in_text_stays_text(nllb_form):
    tokenizer = ModelTokenizer(nllb_form)
    ids = tokenizer.encode_text("Say eng_Latn and </s> please.")
    assert tokenizer.lang_ids["eng_Latn"] not in ids and tokenizer.eos_id not in ids
    # (The fixture's vocabulary has no `_`, `<` or `/`: those come back as unknowns, dropped.)
    assert tokenizer.decode(ids).startswith("Say eng")


@pytest.mark.parametrize("engine", [f"{b}:{d}" for b, d in available_engines()])
def test_each_form_translates_the_corpus_exactly(nllb_form, engine):
    translator = Translator(nllb_form, with_engine(Engine(device="cpu", threads=1, warmup=False), engine), Generation())
    sentences = corpus_sentences()[::7]  # every language pair, a few sentences each
    codes = {"en": "eng_Latn", "ja": "jpn_Jpan", "de": "deu_Latn", "fr": "fra_Latn", "es": "spa_Latn", "zh": "zh-Hans"}
    pieces = [Piece(text=text, source=codes[src], target=codes[tgt]) for src, tgt, text, _ in sentences]
    pieces += [Piece(text=text, source=src, target=tgt) for src, tgt, text, _ in sentences]
    results = translator.translate(pieces)
    expected = [target for _, _, _, target in sentences] * 2
    assert [r.text for r in results] == expected


def test_the_build_refuses_a_fixture_that_does_not_reproduce_the_corpus(fixture_model, tmp_path):
    """The derived fixture is checked through the Translator before it is published: here with two
    languages' codes swapped, so every sentence into French comes back in German."""
    from fixture.nllb import _check, _derive

    directory = tmp_path / "nllb"
    directory.mkdir()
    codes = _derive(fixture_model, directory)
    _check(directory, codes, CORPUS_PATH)  # as derived: exact
    swapped = {**codes, "fr": codes["de"], "de": codes["fr"]}
    with pytest.raises(RuntimeError, match="does not reproduce the corpus"):
        _check(directory, swapped, CORPUS_PATH)


def test_legacy_nllb_tokenizer_puts_the_language_last(nllb_fixture_model, tmp_path):
    """NLLB's first releases trained on [pieces, </s>, language]; a tokenizer saved with
    `legacy_behaviour` says so, and the rows follow it (the default is the language first)."""
    import json

    legacy = tmp_path / "legacy"
    shutil.copytree(nllb_fixture_model, legacy)
    config_path = legacy / "tokenizer_config.json"
    config = json.loads(config_path.read_text(encoding="utf-8"))
    config_path.write_text(json.dumps({**config, "legacy_behaviour": True}), encoding="utf-8")
    current, old = ModelTokenizer(nllb_fixture_model), ModelTokenizer(legacy)
    language = current.lang_ids["eng_Latn"]
    row = current.source_row(language, "Hello.")
    assert row[0] == language and row[-1] == current.eos_id
    assert old.source_row(language, "Hello.") == (*row[1:], language)

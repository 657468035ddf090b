"""Matching a memory (#51): exact with white space aside, auto-substituted where only numbers,
placeholders or inline tags differ, fuzzy only reported; a later segment replaces an earlier one."""

from __future__ import annotations

import random

import pytest
from rapidfuzz import fuzz, process

from translator.memory.index import MemoryIndex, base_language
from translator.memory.model import Segment

pytestmark = pytest.mark.pure


def memory(*pairs: tuple[str, str], target: str = "de") -> MemoryIndex:
    index = MemoryIndex("en")
    index.add(Segment(source, target, translation) for source, translation in pairs)
    return index


def test_an_exact_match_is_the_translation_as_written_white_space_aside() -> None:
    index = memory(("Save the file.", "Datei  speichern."))
    match = index.lookup("  Save   the\nfile.\n", "de")
    assert match is not None and match.kind == "exact" and match.score == 100
    # The person's text verbatim (their double space too), the record's outer white space around it.
    assert match.text == "  Datei  speichern.\n"
    assert index.lookup("Save the files.", "de") is None
    assert index.lookup("save the file.", "de") is None  # case is not white space


def test_target_languages_are_compared_by_language_not_by_region() -> None:
    index = MemoryIndex("en-US")
    index.add([Segment("Open", "de-DE", "Öffnen")])
    assert index.source_lang == "en"
    assert index.lookup("Open", "de").text == "Öffnen"  # type: ignore[union-attr]
    assert index.lookup("Open", "fr") is None
    assert base_language("zh_Hant") == "zh" and base_language("PT-br") == "pt"


@pytest.mark.parametrize(
    ("stored", "translation", "asked", "expected"),
    [
        ("Delete 3 files?", "3 Dateien löschen?", "Delete 12 files?", "12 Dateien löschen?"),
        ("Page 1 of 10", "Seite 1 von 10", "Page 7 of 42", "Seite 7 von 42"),
        # the order of variables may change in the translation
        (
            "%(count)s items in %(folder)s",
            "In %(folder)s: %(count)s Elemente",
            "%(n)s items in %(f)s",
            "In %(f)s: %(n)s Elemente",
        ),
        (
            'Click <a href="/a">here</a>.',
            'Klicken Sie <a href="/a">hier</a>.',
            'Click <a href="/b">here</a>.',
            'Klicken Sie <a href="/b">hier</a>.',
        ),
        (
            "See https://a.example/x for 2 hints",
            "Siehe https://a.example/x für 2 Tipps",
            "See https://b.example/y for 5 hints",
            "Siehe https://b.example/y für 5 Tipps",
        ),
        ("Hello {name}!", "Hallo {name}!", "Hello {user}!", "Hallo {user}!"),
    ],
)
def test_only_numbers_placeholders_or_tags_differing_substitutes_them(
    stored: str, translation: str, asked: str, expected: str
) -> None:
    match = memory((stored, translation)).lookup(asked, "de")
    assert match is not None and match.kind == "substituted", match
    assert (match.text, match.source, match.target) == (expected, stored, translation)


@pytest.mark.parametrize(
    ("stored", "translation", "asked"),
    [
        # a number the translation spelled out or wrote otherwise: where it goes is not known
        ("1 file", "eine Datei", "2 file"),
        ("1,000 rows", "1.000 Zeilen", "2,000 rows"),
        # variables of other kinds in a place
        ("Delete %s now", "%s jetzt löschen", "Delete 5 now"),
        ("Press <b>OK</b>", "<b>OK</b> drücken", "Press <i>OK</i>"),
        # a repeated variable must repeat
        ("%s and %s", "%s und %s", "%s and %d"),
        # words differ
        ("Delete 3 files?", "3 Dateien löschen?", "Remove 3 files?"),
    ],
)
def test_no_substitution_where_it_would_be_a_guess(stored: str, translation: str, asked: str) -> None:
    assert memory((stored, translation)).lookup(asked, "de") is None


def test_a_later_segment_replaces_an_earlier_one_also_as_a_template() -> None:
    index = memory(("Delete 3 files?", "Lösche 3 Dateien?"))
    index.add([Segment("Delete  3 files?", "de", "3 Dateien löschen?")])
    assert index.lookup("Delete 3 files?", "de").text == "3 Dateien löschen?"  # type: ignore[union-attr]
    assert index.lookup("Delete 4 files?", "de").text == "4 Dateien löschen?"  # type: ignore[union-attr]


def test_fuzzy_matches_are_scored_and_only_above_the_threshold() -> None:
    index = memory(
        ("The file could not be saved.", "Die Datei konnte nicht gespeichert werden."),
        ("Cancel", "Abbrechen"),
        ("Something else entirely.", "Etwas ganz anderes."),
    )
    found = index.fuzzy("The files could not be saved.", "de", threshold=75)
    assert [m.source for m in found] == ["The file could not be saved."]
    assert found[0].kind == "fuzzy" and 90 < found[0].score < 100
    assert index.fuzzy("Cancelled", "de", threshold=75)[0].target == "Abbrechen"  # a word's beginning
    assert index.fuzzy("The files could not be saved.", "de", threshold=99) == []
    assert index.fuzzy("Nothing alike here", "de", threshold=50) == []


def test_the_candidates_find_what_scanning_every_source_finds() -> None:
    """The word index may only speed the search up: on 5,000 sentences of a small vocabulary, with
    edits of each kind, the best match above 80 is the one rapidfuzz finds over all sources."""
    rng = random.Random(7)
    words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9))) for _ in range(800)]
    sources = list(dict.fromkeys(" ".join(rng.choice(words) for _ in range(rng.randint(3, 14))) for _ in range(5000)))
    index = memory(*[(source, source.upper()) for source in sources])
    missed = 0
    for source in rng.sample(sources, 200):
        tokens = source.split()
        edit = rng.choice(["drop", "swap", "typo"])
        if edit == "drop" and len(tokens) > 3:
            tokens.pop(rng.randrange(len(tokens)))
        elif edit == "swap":
            tokens[rng.randrange(len(tokens))] = rng.choice(words)
        else:
            at = rng.randrange(len(tokens))
            tokens[at] = tokens[at][:-1] + "q"
        query = " ".join(tokens)
        best = process.extractOne(query, sources, scorer=fuzz.ratio, score_cutoff=80)
        found = index.fuzzy(query, "de", threshold=80, limit=1)
        if best is not None and (not found or found[0].score < round(best[1], 1)):
            missed += 1
    assert missed == 0


def test_a_paragraph_whose_every_sentence_the_memory_holds_is_theirs_joined() -> None:
    from translator.memory.requests import whole_or_sentences

    index = memory(("Open the file.", "Öffne die Datei."), ("Save it 3 times!", "Speichere sie 3 Mal!"))
    match = whole_or_sentences(index, "  Open the  file. Save it 5 times!\nOpen the file.\n", "de")
    assert match is not None and match.kind == "sentences"
    assert match.text == "  Öffne die Datei. Speichere sie 5 Mal!\nÖffne die Datei.\n"
    # Some sentences only: the model's, whole.
    assert whole_or_sentences(index, "Open the file. Close it.", "de") is None
    # A language written without spaces joins them without one, and keeps line breaks.
    index = memory(("Open the file.", "ファイルを開く。"), ("Save it.", "保存する。"), target="ja")
    assert (
        whole_or_sentences(index, "Open the file. Save it.\nSave it.", "ja").text
        == "ファイルを開く。保存する。\n保存する。"
    )  # type: ignore[union-attr]

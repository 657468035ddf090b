"""m2m-eval on Flores-200's layout (`devtest/eng_Latn.devtest`, `eng_Latn.devtest`) with either
model family: directions are reported in the data's codes, and an M2M100 system is sent its own
codes for them (`eng_Latn` is `en`). The fixtures reproduce the shipped test set exactly: 100."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fixture.testset import EVAL_DIR, FLORES_DIR
from m2m_tools.evaluation.data import load_eval_data
from m2m_tools.evaluation.evaluate import RunOptions, evaluate, system_code
from m2m_tools.jobs.local_runner import LocalRunner
from translator.config import Engine

pytestmark = pytest.mark.pure

FLORES200 = {"en": "eng_Latn", "ja": "jpn_Jpan", "zh": "zho_Hans"}


def flores200_tree(root: Path, nested: bool) -> Path:
    """The shipped en-ja and en-zh sets renamed as Flores-200 names its files (one set, `devtest`:
    the shipped en lines differ between the two sets, so each pair gets a tree of its own)."""
    split = root / "devtest" if nested else root
    split.mkdir(parents=True)
    for lang in ("en", "ja"):
        shutil.copy(EVAL_DIR / FLORES_DIR / f"en-ja.{lang}", split / f"{FLORES200[lang]}.devtest")
    (split / "README.md").write_text("not a language\n", encoding="utf-8")
    return root


@pytest.mark.parametrize("nested", [True, False])
def test_flores200_names_are_read_with_the_datas_codes(tmp_path, nested):
    data = load_eval_data(flores200_tree(tmp_path / "flores200", nested))
    assert list(data.directions) == ["eng_Latn-jpn_Jpan", "jpn_Jpan-eng_Latn"]
    shipped = load_eval_data(EVAL_DIR / FLORES_DIR, ["en-ja"]).directions["en-ja"]
    assert data.directions["eng_Latn-jpn_Jpan"].sources == shipped.sources


def test_system_codes_for_the_datas_codes():
    m2m100 = frozenset({"en", "ja", "zh"})
    assert system_code("eng_Latn", m2m100) == "en"
    assert system_code("zho_Hant", m2m100) == "zh"
    assert system_code("eng_Latn", frozenset({"en", "eng_Latn"})) == "eng_Latn"
    assert system_code("fra_Latn", m2m100) is None


@pytest.mark.parametrize("family", ["m2m100", "nllb"])
@pytest.mark.model
def test_flores200_tree_scores_exactly_100_on_either_family(request, tmp_path, family):
    from translator.engine.translator import Translator

    model: Path = request.getfixturevalue("fixture_model" if family == "m2m100" else "nllb_fixture_model")
    runner = LocalRunner(model, translator=Translator(model, Engine(warmup=False)))
    data = load_eval_data(flores200_tree(tmp_path / "flores200", nested=True))
    report = evaluate(data, runner, tmp_path / "out", RunOptions(progress=False))
    assert {name: (d["bleu"], d["chrf"]) for name, d in report["directions"].items()} == {
        "eng_Latn-jpn_Jpan": (100.0, 100.0),
        "jpn_Jpan-eng_Latn": (100.0, 100.0),
    }

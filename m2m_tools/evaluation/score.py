"""Corpus-level BLEU and chrF per direction with sacreBLEU, signatures included.

BLEU needs words, so the tokenizer depends on the target language: sacreBLEU's own ``zh`` for
Chinese, characters for languages written without spaces (``ja-mecab`` would need MeCab and a
dictionary, and the FLORES ``spm`` tokenizers download a model, which an offline CI cannot), and
``13a`` (the WMT default) for the rest. Where sacreBLEU's ``flores200`` sentencepiece model is
already on disk (it downloads it on first use, which an offline machine cannot), ``auto`` scores
spBLEU with it for every language instead, as Flores-200 and NLLB report it. The choice is recorded
in each direction's signature, so two reports scored differently are told apart. ``--tokenize``
forces one tokenizer everywhere. chrF, tokenizer-free, is always reported.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

AUTO = "auto"
# Scripts written without spaces between words; keys are M2M100 / ISO 639-1 codes and FLORES-200
# language prefixes.
_CHARACTER_LANGUAGES = frozenset({"ja", "jpn", "th", "tha", "lo", "lao", "km", "khm", "my", "mya"})
_CHINESE = frozenset({"zh", "zho", "yue"})


def tokenizers() -> list[str]:
    """The values ``--tokenize`` accepts."""
    from sacrebleu.metrics import BLEU

    return [AUTO, *BLEU.TOKENIZERS]


def flores200_available() -> bool:
    """Whether sacreBLEU's Flores-200 spBLEU model is on disk (scoring with it needs no download)."""
    import os

    from sacrebleu.tokenizers.tokenizer_spm import SPM_MODELS
    from sacrebleu.utils import SACREBLEU_DIR

    name = os.path.basename(SPM_MODELS["flores200"]["url"])
    return os.path.isfile(os.path.join(SACREBLEU_DIR, "models", name))


@dataclass(frozen=True)
class Scoring:
    tokenize: str = AUTO
    lowercase: bool = False

    def tokenizer_for(self, target: str) -> str:
        if self.tokenize != AUTO:
            return self.tokenize
        if flores200_available():
            return "flores200"
        base = target.split("_", 1)[0].lower()
        if base in _CHINESE:
            return "zh"
        if base in _CHARACTER_LANGUAGES:
            return "char"
        return "13a"

    def settings(self, target: str) -> dict[str, Any]:
        """What the score of a direction depends on besides the text (for checkpoint keys)."""
        import sacrebleu

        return {"tokenize": self.tokenizer_for(target), "lowercase": self.lowercase, "sacrebleu": sacrebleu.__version__}


def score(hypotheses: Sequence[str], references: Sequence[str], target: str, scoring: Scoring) -> dict[str, Any]:
    """BLEU and chrF of one direction, with their sacreBLEU signatures."""
    from sacrebleu.metrics import BLEU, CHRF

    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses for {len(references)} references")
    bleu = BLEU(tokenize=scoring.tokenizer_for(target), lowercase=scoring.lowercase)
    chrf = CHRF(lowercase=scoring.lowercase)
    refs = [list(references)]
    bleu_score = bleu.corpus_score(list(hypotheses), refs)
    chrf_score = chrf.corpus_score(list(hypotheses), refs)
    return {
        # Rounded: sacreBLEU's floats end in ...0000004 for identical text, which reads like noise.
        "bleu": round(bleu_score.score, 4),
        "chrf": round(chrf_score.score, 4),
        "bleu_signature": str(bleu.get_signature()),
        "chrf_signature": str(chrf.get_signature()),
        "bleu_detail": {
            "precisions": [round(p, 4) for p in bleu_score.precisions],
            "bp": round(bleu_score.bp, 4),
            "sys_len": bleu_score.sys_len,
            "ref_len": bleu_score.ref_len,
        },
    }

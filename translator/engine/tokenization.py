"""The checkpoint's tokenizer, for either family of the M2M100 architecture.

M2M100 checkpoints ship `vocab.json` + `sentencepiece.bpe.model` (M2M100Tokenizer, languages as
`__en__` tokens); NLLB-200 checkpoints ship `sentencepiece.bpe.model` and/or `tokenizer.json`
(NllbTokenizer, languages as `eng_Latn` tokens). Both encode a source as [language, pieces...,
</s>] and decode after the prefix [</s>, target language], so the engine and the backends work on
ids alone; only encoding the text, decoding ids and naming the languages differ, and live here.
Used by the engine, the store (registration), the CTranslate2 conversion and the fixture build.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from translator.contract.language_codes import M2M100, NLLB, NLLB_CODE


def family(directory: Path) -> str:
    """Which tokenizer a checkpoint directory holds: its tokenizer_config.json says so where it
    has one; otherwise M2M100's `vocab.json` tells them apart."""
    config_path = directory / "tokenizer_config.json"
    if config_path.is_file():
        try:
            tokenizer_class = str(json.loads(config_path.read_text(encoding="utf-8")).get("tokenizer_class") or "")
        except ValueError:
            tokenizer_class = ""
        if tokenizer_class.startswith("Nllb"):
            return NLLB
        if tokenizer_class.startswith("M2M100"):
            return M2M100
    return M2M100 if (directory / "vocab.json").is_file() else NLLB


def required_files(kind: str) -> tuple[tuple[str, ...], ...]:
    """What a checkpoint of this family needs for its tokenizer: each entry is a set of
    alternatives, one of which must be there."""
    if kind == NLLB:
        return (("sentencepiece.bpe.model", "tokenizer.json"),)
    return (("vocab.json",), ("sentencepiece.bpe.model",))


def _declared_tokens(directory: Path) -> set[str]:
    """The added tokens a checkpoint's tokenizer files list (empty where none lists any)."""
    declared: set[str] = set()
    sources = {
        "tokenizer.json": lambda data: [t.get("content") for t in data.get("added_tokens") or []],
        "tokenizer_config.json": lambda data: [
            *_values(data.get("extra_special_tokens")),
            *(data.get("additional_special_tokens") or []),
            *(t.get("content") for t in (data.get("added_tokens_decoder") or {}).values()),
        ],
        "special_tokens_map.json": lambda data: data.get("additional_special_tokens") or [],
    }
    for name, read in sources.items():
        path = directory / name
        if not path.is_file():
            continue
        try:
            tokens = read(json.loads(path.read_text(encoding="utf-8")))
        except (ValueError, AttributeError):
            continue
        declared.update(t if isinstance(t, str) else str(t.get("content")) for t in tokens if t)
    return declared


def _values(tokens: Any) -> list[Any]:
    # transformers 5 writes extra_special_tokens as a list, or as a dict of named tokens.
    if isinstance(tokens, dict):
        return list(tokens.values())
    return list(tokens or [])


class ModelTokenizer:
    """Text to ids and back, and the language tokens, of one checkpoint."""

    def __init__(self, directory: str | Path, vocab_size: int | None = None) -> None:
        directory = Path(directory)
        self.family = family(directory)
        if self.family == NLLB:
            from transformers import NllbTokenizer

            self.tokenizer: Any = NllbTokenizer.from_pretrained(str(directory))
            # The language tokens are the tokenizer's added tokens shaped like `eng_Latn`; one
            # whose id lies beyond the model's embeddings (a tokenizer larger than the model) is
            # not a language the model has.
            added = self.tokenizer.get_added_vocab()
            limit = vocab_size if vocab_size is not None else len(self.tokenizer)
            # Only codes the checkpoint's own files name: NllbTokenizer appends its default 202
            # codes to a tokenizer.json saved without a tokenizer_config.json, at ids the model
            # never trained as languages.
            declared = _declared_tokens(directory)
            self.lang_ids = {
                token: int(index)
                for token, index in added.items()
                if NLLB_CODE.match(token) and index < limit and (not declared or token in declared)
            }
        else:
            from transformers import M2M100Tokenizer

            self.tokenizer = M2M100Tokenizer.from_pretrained(str(directory))
            self.lang_ids = dict(self.tokenizer.lang_code_to_id)
            self._vocab = self.tokenizer.encoder
        self.legacy = bool(getattr(self.tokenizer, "legacy_behaviour", False))
        self.eos_id = int(self.tokenizer.eos_token_id)
        self.pad_id = int(self.tokenizer.pad_token_id)
        self.unk_id = int(self.tokenizer.unk_token_id)
        self._drop_ids = set(self.tokenizer.all_special_ids) | set(self.lang_ids.values())
        self._drop_ids.discard(self.unk_id)

    @property
    def languages(self) -> list[str]:
        """The model's own language codes (`en` for M2M100, `eng_Latn` for NLLB)."""
        return sorted(self.lang_ids)

    def encode_text(self, text: str) -> list[int]:
        """The text's pieces as ids, without language or end tokens. A language code or `</s>`
        written in the text is text here, never the token it names."""
        if self.family == NLLB:
            ids = self.tokenizer(text, add_special_tokens=False, split_special_tokens=True)["input_ids"]
            return [int(i) for i in ids]
        # SentencePiece directly rather than `tokenizer(text)`: the tokenizer would read a literal
        # `__fr__` in user text as a language token; here it is just text.
        pieces = self.tokenizer.sp_model.encode(text, out_type=str)
        return [self._vocab.get(p, self.unk_id) for p in pieces]

    def source_row(self, language_id: int, text: str) -> tuple[int, ...]:
        """A source row as the model was trained to read it: [language, pieces..., </s>], or
        [pieces..., </s>, language] for an NLLB tokenizer saved with `legacy_behaviour` (the
        first NLLB releases' order)."""
        if self.legacy:
            return (*self.encode_text(text), self.eos_id, language_id)
        return (language_id, *self.encode_text(text), self.eos_id)

    def decode(self, ids: list[int]) -> str:
        # Language ids are dropped by id: current transformers no longer counts `__ja__` as a
        # special token, so `skip_special_tokens=True` alone leaves it in the text.
        kept = [i for i in ids if i not in self._drop_ids]
        return str(self.tokenizer.decode(kept, skip_special_tokens=True)).strip()

    def token_names(self) -> dict[int, str]:
        """Every id the tokenizer names, language tokens included (the CTranslate2 conversion)."""
        vocab = {int(index): token for token, index in self.tokenizer.get_vocab().items()}
        for index in self.lang_ids.values():
            vocab.setdefault(index, self.tokenizer.convert_ids_to_tokens(index))
        return vocab

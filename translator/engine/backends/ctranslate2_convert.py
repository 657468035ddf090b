"""The checkpoint converted for CTranslate2, offline, from its local directory (save_model.py runs
this at registration, so the model store, the bento and the image carry the result).

The weights keep the checkpoint's precision; the compute type (int8 on CPU, float16 on CUDA...)
is chosen when the engine loads them, so one conversion serves every device.
"""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
from pathlib import Path
from typing import Any

from translator.engine.backends.ctranslate2_backend import CONVERTED_DIR
from translator.engine.tokenization import ModelTokenizer

logger = logging.getLogger(__name__)


class _WithLanguageTokens:
    """The checkpoint's tokenizer (M2M100's or NLLB's) with its language tokens in `get_vocab()`.

    CTranslate2 4.8.5's M2M100 converter builds the vocabulary from `get_vocab()`, which in
    transformers 5 no longer lists M2M100's 100 language tokens (`__en__` ...): the vocabulary
    comes out 100 short and the conversion stops on a size mismatch. Added here at their ids; the
    ids above them that the tokenizer does not name (M2M100's `madeupword`s, or a model whose
    embedding matrix is larger than its tokenizer) are filled by the converter up to the model's
    vocabulary size. The tokenizer is the engine's (translator/engine/tokenization.py), not the
    converter's AutoTokenizer, which reads an NLLB checkpoint without a tokenizer_config.json as
    M2M100's (its config says m2m_100).
    """

    def __init__(self, tokenizer: ModelTokenizer, vocab_size: int) -> None:
        self._model_tokenizer = tokenizer
        self._tokenizer = tokenizer.tokenizer
        self.num_madeup_words = vocab_size - len(self.get_vocab())

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tokenizer, name)

    def get_vocab(self) -> dict[str, int]:
        return {token: index for index, token in self._model_tokenizer.token_names().items()}


def convert(model_dir: Path, output: Path) -> Path:
    """Convert the checkpoint in `model_dir` into `output` (made anew; written to a temporary
    directory first, so an interrupted conversion never leaves a half model behind)."""
    from ctranslate2.converters import TransformersConverter

    class M2M100Converter(TransformersConverter):
        def load_tokenizer(self, tokenizer_class: Any, model_name_or_path: str, **kwargs: Any) -> Any:
            return _WithLanguageTokens(ModelTokenizer(model_dir, size), size)

    size = int(json.loads((model_dir / "config.json").read_text(encoding="utf-8"))["vocab_size"])
    output.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=output.parent, prefix=f".{output.name}-") as scratch:
        staged = Path(scratch) / output.name
        M2M100Converter(str(model_dir)).convert(str(staged))
        check(model_dir, staged)
        if output.exists():
            shutil.rmtree(output)
        staged.rename(output)
    return output


def check(model_dir: Path, converted: Path) -> None:
    """The converted vocabulary has the checkpoint's ids: every token, language tokens included,
    where the tokenizer puts it, and the model's full size (the engine maps ids through it)."""
    size = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))["vocab_size"]
    names = ModelTokenizer(model_dir, size).token_names()
    tokens = json.loads((converted / "shared_vocabulary.json").read_text(encoding="utf-8"))
    if len(tokens) != size:
        raise ValueError(f"converted vocabulary has {len(tokens)} tokens, the model {size}")
    for index, expected in sorted(names.items()):
        if index < size and tokens[index] != expected:
            raise ValueError(f"converted vocabulary has {tokens[index]!r} at id {index}, the tokenizer {expected!r}")


def converted_path(model_dir: Path) -> Path:
    return model_dir / CONVERTED_DIR


def main(argv: list[str] | None = None) -> int:
    """`python -m translator.engine.backends.ctranslate2_convert DIR`: convert a checkpoint directory in
    place (into DIR/ctranslate2), for the offline tools' `--model DIR` on the CTranslate2 engine."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m translator.engine.backends.ctranslate2_convert", description=main.__doc__
    )
    parser.add_argument("model_dir", type=Path, help="M2M100 or NLLB-200 checkpoint directory")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    if not (args.model_dir / "config.json").is_file():
        parser.error(f"{args.model_dir}: no config.json, not a checkpoint directory")
    output = convert(args.model_dir, converted_path(args.model_dir))
    logger.info("converted %s into %s", args.model_dir, output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""CTranslate2: the checkpoint converted at registration (`translator.engine.backends.ctranslate2_convert`), run by
its C++ kernels: int8 on CPU, float16/bfloat16/int8_float16 on CUDA, with far less Python per
decoding step than transformers' `generate`."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from translator.engine.backends.base import (
    Decoding,
    Generated,
    MemoryStats,
    SpecialIds,
    cuda_memory_stats,
    torch_installed,
)

logger = logging.getLogger(__name__)

# Where save_model.py puts the converted model, inside the registered model's directory.
CONVERTED_DIR = "ctranslate2"


class ConversionMissing(RuntimeError):
    """The registered model has no CTranslate2 conversion (registered before it was made)."""


class CTranslate2Backend:
    name = "ctranslate2"

    def __init__(
        self,
        model_dir: str | Path,
        device: str,
        dtype: str,
        threads: int,
        decoding: Decoding,
        special: SpecialIds,
        vocabulary_size: int,
    ) -> None:
        import ctranslate2

        path = Path(model_dir) / CONVERTED_DIR
        if not (path / "model.bin").is_file():
            raise ConversionMissing(missing_conversion(model_dir))
        self.tokens = _vocabulary(path)
        if len(self.tokens) != vocabulary_size:
            raise ValueError(
                f"{path}: vocabulary of {len(self.tokens)} tokens, the checkpoint has {vocabulary_size}; convert again"
            )
        self.token_ids = {token: index for index, token in enumerate(self.tokens)}
        kind, _, index = device.partition(":")
        self.device = device
        self.precision = dtype
        self.decoding = decoding
        self.special = special
        self.end_token = self.tokens[special.eos]
        self.threads = threads
        self.translator = ctranslate2.Translator(
            str(path),
            device=kind,
            device_index=int(index or 0),
            compute_type=dtype,
            # One batch at a time (the scheduler's model loop): all threads on it.
            inter_threads=1,
            intra_threads=threads,
        )
        logger.info(
            "CTranslate2 %s on %s, compute type %s", ctranslate2.__version__, device, self.translator.compute_type
        )

    def generate(
        self,
        rows: list[list[int]],
        targets: list[int],
        max_new_tokens: int,
        min_new_tokens: int = 0,
        hypotheses: int = 1,
    ) -> list[Generated]:
        source = [[self.tokens[i] for i in row] for row in rows]
        # The decoder starts from the model's decoder_start_token (</s>); the prefix forces each
        # row's target language, so mixed pairs share one call.
        prefix = [[self.tokens[t]] for t in targets]
        results = self.translator.translate_batch(
            source,
            target_prefix=prefix,
            beam_size=max(self.decoding.num_beams, hypotheses),
            num_hypotheses=hypotheses,
            length_penalty=self.decoding.length_penalty,
            no_repeat_ngram_size=self.decoding.no_repeat_ngram_size,
            # Lengths here count the prefix token; the budget is in new tokens.
            max_decoding_length=max_new_tokens + 1,
            min_decoding_length=min_new_tokens + 1 if min_new_tokens else 1,
            max_input_length=0,
            return_end_token=True,
        )
        outputs = []
        for result in results:
            best, *others = (self._output(h, max_new_tokens) for h in result.hypotheses)
            outputs.append(Generated(best.ids, best.ended, tuple(o.ids for o in others)))
        return outputs

    def _output(self, hypothesis: list[str], max_new_tokens: int) -> Generated:
        tokens = hypothesis[1:]  # the target-language prefix
        if tokens and tokens[-1] == self.end_token:
            return Generated([self.token_ids[t] for t in tokens[:-1]], ended=True)
        return Generated([self.token_ids[t] for t in tokens], ended=len(tokens) < max_new_tokens)

    def release_memory(self) -> None:
        # CTranslate2 keeps its own caching allocator; nothing to hand back between batches.
        return None

    def memory_stats(self, reset: bool = False) -> MemoryStats | None:
        return cuda_memory_stats(self.device, reset)

    def describe(self) -> dict[str, Any]:
        return {
            "backend": self.name,
            "device": self.device,
            "dtype": self.precision,
            "compute_type": self.translator.compute_type,
            "threads": self.threads,
        }


def _vocabulary(path: Path) -> list[str]:
    for name in ("shared_vocabulary.json", "target_vocabulary.json"):
        if (path / name).is_file():
            tokens = json.loads((path / name).read_text(encoding="utf-8"))
            return [str(token) for token in tokens]
    raise ValueError(f"{path}: no vocabulary file in the CTranslate2 model")


def missing_conversion(model_dir: str | Path) -> str:
    if not torch_installed():
        return (
            f"{model_dir} has no CTranslate2 model ({CONVERTED_DIR}/model.bin), the only engine here (no torch: "
            "the CPU image): register the checkpoint with save_model.py where torch is installed, which converts it"
        )
    return (
        f"{model_dir} has no CTranslate2 model ({CONVERTED_DIR}/model.bin): register the checkpoint with "
        f"save_model.py, which converts it, or convert it in place with "
        f"`python -m translator.engine.backends.ctranslate2_convert {model_dir}`; or use backend transformers"
    )

"""Generated tokens per answer, counted the same way for all three systems."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from translator.config import Generation


def generated_tokens(tokenizer: Any, texts: Sequence[str], generation: Generation) -> int:
    """Exact with `forced_new_tokens` (every output is that long, by construction); otherwise an
    estimate: the output text re-tokenized, plus its end-of-sentence token."""
    if generation.forced_new_tokens:
        return generation.forced_new_tokens * len(texts)
    return sum(len(tokenizer.sp_model.encode(text)) + 1 for text in texts)


def tokens_exact(generation: Generation) -> bool:
    return bool(generation.forced_new_tokens)

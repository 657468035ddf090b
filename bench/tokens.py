"""Generated tokens per answer, counted the same way for all three systems."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from translator.config import Generation


def generated_tokens(tokenizer: Any, texts: Sequence[str], generation: Generation) -> int:
    """Exact with `forced_new_tokens` (every output is that long, by construction); otherwise an
    estimate: the output text re-tokenized, plus its end-of-sentence token."""
    if generation.forced_new_tokens:
        return generation.forced_new_tokens * len(texts)
    if hasattr(tokenizer, "sp_model"):  # M2M100's
        return sum(len(tokenizer.sp_model.encode(text)) + 1 for text in texts)
    # NLLB's (a tokenizers-backed tokenizer, no sentencepiece object)
    return sum(len(tokenizer(text, add_special_tokens=False)["input_ids"]) + 1 for text in texts)


def tokens_exact(generation: Generation) -> bool:
    return bool(generation.forced_new_tokens)


def write_outputs(path: Path, texts: Iterable[str]) -> None:
    """Every output text of a point, one JSON string per line: what the token counts can be checked
    against, independently of how they were computed (tests/bench/test_smoke.py)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        for text in texts:
            out.write(json.dumps(text, ensure_ascii=False) + "\n")


def outputs_path(
    log_dir: Path,
    system: str,
    concurrency: int | None,
    records: int | None,
    batch: int | None,
    scenario: str | None = None,
    priority: str | None = None,
) -> Path:
    point = f"b{batch}" if batch is not None else f"c{concurrency}-r{records}"
    if scenario:
        point = "-".join(part for part in (scenario, priority, point) if part)
    return log_dir / f"outputs-{system}-{point}.jsonl"

"""The model the benchmark runs: the m2m100_418M architecture with random weights, or a real one.

Random weights cost exactly what the real ones cost per token (same shapes, same kernels), as long
as every output has the same length: the benchmark forces it (`forced_new_tokens`). The tokenizer
is the fixture's (its language ids are small, far below the 128,112-row vocabulary); tokenization
is a negligible share of the work either way.

Built once into build/bench-model-418m/ and reused while its stamp matches.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parent.parent
RANDOM_418M_DIR = ROOT / "build" / "bench-model-418m"
FIXTURE_DIR = ROOT / "build" / "fixture-model"
STAMP_NAME = "bench-model.stamp"
SEED = 418

# facebook/m2m100_418M's config.json, value for value (dropout and layerdrop do nothing in eval
# mode but are written as published). ~484M parameters with the shared embedding counted once.
M2M100_418M_CONFIG: dict[str, Any] = {
    "vocab_size": 128112,
    "max_position_embeddings": 1024,
    "d_model": 1024,
    "encoder_layers": 12,
    "decoder_layers": 12,
    "encoder_attention_heads": 16,
    "decoder_attention_heads": 16,
    "encoder_ffn_dim": 4096,
    "decoder_ffn_dim": 4096,
    "activation_function": "relu",
    "dropout": 0.1,
    "attention_dropout": 0.1,
    "activation_dropout": 0.0,
    "encoder_layerdrop": 0.05,
    "decoder_layerdrop": 0.05,
    "init_std": 0.02,
    "scale_embedding": True,
    "use_cache": True,
    "is_encoder_decoder": True,
    "tie_word_embeddings": True,
    "pad_token_id": 1,
    "bos_token_id": 0,
    "eos_token_id": 2,
    "decoder_start_token_id": 2,
}
# facebook/m2m100_418M's generation_config.json.
M2M100_418M_GENERATION: dict[str, Any] = {
    "bos_token_id": 0,
    "decoder_start_token_id": 2,
    "eos_token_id": 2,
    "pad_token_id": 1,
    "max_length": 200,
    "num_beams": 5,
    "early_stopping": True,
}
# What the tokenizer needs, taken from the fixture model (see fixture/build.py).
TOKENIZER_FILES = ("sentencepiece.bpe.model", "vocab.json", "tokenizer_config.json")
BUILDER_VERSION = 1


def fixture_model() -> Path:
    """The tiny fixture model (built on first use, then cached by its own stamp)."""
    from fixture.build import build_fixture

    return build_fixture(FIXTURE_DIR)


def _stamp(tokenizer_dir: Path) -> str:
    digest = hashlib.sha256()
    for name in TOKENIZER_FILES:
        digest.update((tokenizer_dir / name).read_bytes())
    payload = {
        "builder": BUILDER_VERSION,
        "config": M2M100_418M_CONFIG,
        "generation": M2M100_418M_GENERATION,
        "seed": SEED,
        "tokenizer_sha256": digest.hexdigest(),
    }
    return json.dumps(payload, indent=2, sort_keys=True) + "\n"


def _is_current(output: Path, stamp: str) -> bool:
    stamp_file = output / STAMP_NAME
    return stamp_file.is_file() and stamp_file.read_text(encoding="utf-8") == stamp


def ensure_random_418m(output: Path = RANDOM_418M_DIR) -> tuple[Path, float | None]:
    """The random 418M checkpoint, built in a subprocess if missing or stale.

    Returns the directory and the build time in seconds (None when it was reused). The build runs
    in its own process so that its ~2 GB of weights never sit in the load generator's memory.
    """
    tokenizer_dir = fixture_model()
    if _is_current(output, _stamp(tokenizer_dir)):
        return output, None
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "bench.checkpoint", "--output", str(output), "--tokenizer-from", str(tokenizer_dir)],
        cwd=ROOT,
        check=True,
    )
    return output, time.perf_counter() - started


def build_random_418m(output: Path, tokenizer_dir: Path) -> Path:
    import torch
    from transformers import GenerationConfig, M2M100Config, M2M100ForConditionalGeneration, M2M100Tokenizer

    stamp = _stamp(tokenizer_dir)
    output.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{output.name}.tmp-", dir=output.parent))
    try:
        for name in TOKENIZER_FILES:
            shutil.copyfile(tokenizer_dir / name, staging / name)
        tokenizer = M2M100Tokenizer.from_pretrained(str(staging))
        vocab_size = int(M2M100_418M_CONFIG["vocab_size"])
        top = max([*tokenizer.lang_code_to_id.values(), *tokenizer.all_special_ids, len(tokenizer.encoder) - 1])
        if top >= vocab_size:
            raise RuntimeError(f"tokenizer id {top} does not fit the {vocab_size}-row embedding")

        torch.manual_seed(SEED)
        model = M2M100ForConditionalGeneration(M2M100Config(**M2M100_418M_CONFIG)).eval()
        model.generation_config = GenerationConfig(**M2M100_418M_GENERATION)
        params = sum(p.numel() for p in model.parameters())
        model.save_pretrained(str(staging), safe_serialization=True)
        del model
        (staging / STAMP_NAME).write_text(stamp, encoding="utf-8")
        staging.chmod(0o755)
        for path in staging.iterdir():  # save_pretrained may write owner-only files
            path.chmod(0o644)
        if output.exists():
            shutil.rmtree(output)
        os.rename(staging, output)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    logger.info("random m2m100_418M (%.0fM parameters, highest tokenizer id %d) in %s", params / 1e6, top, output)
    return output


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.checkpoint", description="build the random 418M model")
    parser.add_argument("--output", type=Path, default=RANDOM_418M_DIR)
    parser.add_argument("--tokenizer-from", type=Path, default=None, help="default: the fixture model")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    build_random_418m(args.output.resolve(), args.tokenizer_from or fixture_model())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The model the benchmark runs: the m2m100_418M or NLLB-200-distilled-600M architecture with random
weights, or a real one.

Random weights cost exactly what the real ones cost per token (same shapes, same kernels), as long
as every output has the same length: the benchmark forces it (`forced_new_tokens`). The tokenizer
is the fixture's (its language ids are small, far below the 128,112-row vocabulary); tokenization
is a negligible share of the work either way.

Built once into build/bench-model-418m/ (build/bench-model-nllb-600m/) and reused while its stamp
matches. The NLLB architecture takes the NLLB fixture's tokenizer (fixture/nllb.py).
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
from dataclasses import dataclass
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

# facebook/nllb-200-distilled-600M's config.json: the M2M100 architecture with a 256,206-row
# vocabulary (its own tokenizer), no layerdrop. ~615M parameters.
NLLB_600M_CONFIG: dict[str, Any] = {
    **M2M100_418M_CONFIG,
    "vocab_size": 256206,
    "encoder_layerdrop": 0.0,
    "decoder_layerdrop": 0.0,
}
# facebook/nllb-200-distilled-600M's generation_config.json.
NLLB_600M_GENERATION: dict[str, Any] = {
    "bos_token_id": 0,
    "decoder_start_token_id": 2,
    "eos_token_id": 2,
    "pad_token_id": 1,
    "max_length": 200,
}
NLLB_TOKENIZER_FILES = ("sentencepiece.bpe.model", "tokenizer.json", "tokenizer_config.json")
RANDOM_NLLB_600M_DIR = ROOT / "build" / "bench-model-nllb-600m"
NLLB_FIXTURE_DIR = ROOT / "build" / "fixture-nllb-model"


@dataclass(frozen=True)
class Architecture:
    name: str
    config: dict[str, Any]
    generation: dict[str, Any]
    tokenizer_files: tuple[str, ...]
    output: Path

    def tokenizer_dir(self) -> Path:
        return fixture_model() if self.tokenizer_files == TOKENIZER_FILES else nllb_fixture_model()


ARCHITECTURES = {
    "m2m100_418M": Architecture(
        "m2m100_418M", M2M100_418M_CONFIG, M2M100_418M_GENERATION, TOKENIZER_FILES, RANDOM_418M_DIR
    ),
    "nllb-200-distilled-600M": Architecture(
        "nllb-200-distilled-600M", NLLB_600M_CONFIG, NLLB_600M_GENERATION, NLLB_TOKENIZER_FILES, RANDOM_NLLB_600M_DIR
    ),
}
DEFAULT_ARCHITECTURE = "m2m100_418M"


def fixture_model() -> Path:
    """The tiny fixture model (built on first use, then cached by its own stamp)."""
    from fixture.build import build_fixture

    return build_fixture(FIXTURE_DIR)


def nllb_fixture_model() -> Path:
    """The NLLB-style fixture (derived from the fixture in seconds, then cached by its stamp)."""
    from fixture.nllb import build_nllb_fixture

    return build_nllb_fixture(NLLB_FIXTURE_DIR, FIXTURE_DIR)


def _stamp(tokenizer_dir: Path, architecture: Architecture | None = None) -> str:
    architecture = architecture or ARCHITECTURES[DEFAULT_ARCHITECTURE]
    digest = hashlib.sha256()
    for name in architecture.tokenizer_files:
        digest.update((tokenizer_dir / name).read_bytes())
    payload = {
        "builder": BUILDER_VERSION,
        "config": architecture.config,
        "generation": architecture.generation,
        "seed": SEED,
        "tokenizer_sha256": digest.hexdigest(),
    }
    return json.dumps(payload, indent=2, sort_keys=True) + "\n"


def _is_current(output: Path, stamp: str) -> bool:
    stamp_file = output / STAMP_NAME
    return stamp_file.is_file() and stamp_file.read_text(encoding="utf-8") == stamp


def ensure_random_418m(
    output: Path | None = None, architecture: str = DEFAULT_ARCHITECTURE
) -> tuple[Path, float | None]:
    """The random checkpoint of `architecture` (m2m100_418M by default), built in a subprocess if
    missing or stale.

    Returns the directory and the build time in seconds (None when it was reused). The build runs
    in its own process so that its ~2 GB of weights never sit in the load generator's memory.
    """
    arch = ARCHITECTURES[architecture]
    output = output or arch.output
    tokenizer_dir = arch.tokenizer_dir()
    if _is_current(output, _stamp(tokenizer_dir, arch)):
        return output, None
    started = time.perf_counter()
    subprocess.run(
        [
            *(sys.executable, "-m", "bench.checkpoint", "--output", str(output)),
            *("--tokenizer-from", str(tokenizer_dir), "--architecture", architecture),
        ],
        cwd=ROOT,
        check=True,
    )
    return output, time.perf_counter() - started


def build_random_418m(output: Path, tokenizer_dir: Path, architecture: str = DEFAULT_ARCHITECTURE) -> Path:
    import torch
    from transformers import GenerationConfig, M2M100Config, M2M100ForConditionalGeneration

    from translator.engine.tokenization import ModelTokenizer

    arch = ARCHITECTURES[architecture]
    stamp = _stamp(tokenizer_dir, arch)
    output.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{output.name}.tmp-", dir=output.parent))
    try:
        for name in arch.tokenizer_files:
            shutil.copyfile(tokenizer_dir / name, staging / name)
        vocab_size = int(arch.config["vocab_size"])
        tokenizer = ModelTokenizer(staging, vocab_size)
        top = max([*tokenizer.lang_ids.values(), *tokenizer.tokenizer.all_special_ids, len(tokenizer.tokenizer) - 1])
        if top >= vocab_size:
            raise RuntimeError(f"tokenizer id {top} does not fit the {vocab_size}-row embedding")

        torch.manual_seed(SEED)
        model = M2M100ForConditionalGeneration(M2M100Config(**arch.config)).eval()
        model.generation_config = GenerationConfig(**arch.generation)
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
    logger.info("random %s (%.0fM parameters, highest tokenizer id %d) in %s", architecture, params / 1e6, top, output)
    return output


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.checkpoint", description="build a random-weight model")
    parser.add_argument("--architecture", choices=sorted(ARCHITECTURES), default=DEFAULT_ARCHITECTURE)
    parser.add_argument("--output", type=Path, default=None, help="default: build/bench-model-<architecture>")
    parser.add_argument("--tokenizer-from", type=Path, default=None, help="default: the fixture model of its family")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    arch = ARCHITECTURES[args.architecture]
    output = (args.output or arch.output).resolve()
    build_random_418m(output, args.tokenizer_from or arch.tokenizer_dir(), args.architecture)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

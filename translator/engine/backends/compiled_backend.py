"""transformers' model with a preallocated cache and its decode step compiled (issue #38).

Eager `generate` on CUDA launches every kernel of every decode step from Python: on an H100 the
418M model took 0.228 s a batch whatever its size up to 512, the GPU busy at most 37% of it. Here
the decoder's self-attention cache is a `StaticCache` (fixed shapes, fixed addresses) and the decode
step is compiled by torch.compile; on CUDA in `reduce-overhead` mode, which replays each step as
one CUDA graph. Shapes are kept to a few so that compiling happens at start-up, not under traffic:

- the source is padded to a bucket (`SOURCE_BUCKETS`): the cross-attention cache is sized to it.
  Longer sources, and calls whose output budget exceeds the bucket's decoder room (the one-row
  retry with the model's whole room), run eager: rare, and never a compile in a request's path;
- the batch is padded to a bucket (`batch_bucket`) with copies of its first row, whose outputs are
  dropped: with the batch dimension dynamic, a new bucket records a graph, it does not recompile;
- the caches are kept per shape (at most `MAX_CACHES`, least recently used out) and reset between
  calls, so a graph finds its cache at the address it was recorded with;
- every source width is compiled when the backend loads (`warm_up`), so no request waits for it.

Outputs are the same as eager's: padding rows are masked out of attention, and each row is decoded
on its own (tests/unit/test_compiled_backend.py on the CPU, tests/gpu on CUDA). The CPU compiles
too (torch's inductor, C++), where the tests run it; `backend: auto` keeps it only on CUDA, where
it is measured against the others at start-up.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

from translator.engine.backends.base import Decoding, Generated, SpecialIds
from translator.engine.backends.transformers_backend import TransformersBackend

logger = logging.getLogger(__name__)

# Source widths (tokens) with a compiled shape; a sentence of the service is rarely past 64.
SOURCE_BUCKETS = (32, 64)
# Decoder positions per source position of the bucket: the output budget is 3 per source token
# plus 16 (generation.max_length_ratio, max_length_margin), and two positions hold the prefix.
DECODER_ROOM = 4
# Batches are padded to these, then to multiples of the last.
SMALL_BATCHES = (8, 16, 32, 64)
MAX_CACHES = 8
# torch.compile's recompilations per function (its default, 8, is too few for the buckets above
# in both decodings).
RECOMPILE_LIMIT = 64


def source_bucket(width: int) -> int | None:
    """The compiled source width for a batch whose longest row is `width`, None past the last."""
    return next((bucket for bucket in SOURCE_BUCKETS if width <= bucket), None)


def batch_bucket(rows: int) -> int:
    """The compiled batch size for `rows` rows: a small size, else the next multiple of the last."""
    small = next((size for size in SMALL_BATCHES if rows <= size), None)
    if small is not None:
        return small
    step = SMALL_BATCHES[-1]
    return -(-rows // step) * step


class CompiledBackend(TransformersBackend):
    name = "compiled"

    def __init__(
        self, model_dir: str | Path, device: str, dtype: str, threads: int, decoding: Decoding, special: SpecialIds
    ) -> None:
        import torch
        from transformers.generation.configuration_utils import CompileConfig

        super().__init__(model_dir, device, dtype, threads, decoding, special)
        cuda = self.device.startswith("cuda")
        # Dynamic: a new batch size is a new CUDA graph, not a new compilation.
        self.compile_config = CompileConfig(fullgraph=True, dynamic=True, mode="reduce-overhead" if cuda else "default")
        # transformers compiles on accelerators only unless told; torch compiles for the CPU too.
        self.compile_config._compile_all_devices = True  # type: ignore[assignment]  # typed None in transformers
        torch._dynamo.config.cache_size_limit = max(torch._dynamo.config.cache_size_limit, RECOMPILE_LIMIT)
        self._caches: OrderedDict[tuple[int, int, int], Any] = OrderedDict()
        self.compiled_calls = 0
        self.eager_calls = 0
        started = time.perf_counter()
        self.warm_up()
        self.compile_s = time.perf_counter() - started
        logger.info("compiled backend: %d source widths compiled in %.1f s", len(SOURCE_BUCKETS), self.compile_s)

    def warm_up(self) -> None:
        """Compile every source width now, at start-up, rather than in the batch of the first
        sentence that needs it (a compilation takes tens of seconds). Any token ids do, as long as
        decoding goes past its first step (forced: the end token suppressed)."""
        for width in SOURCE_BUCKETS:
            row = [4 + i for i in range(width)]
            self.generate([row], [4], max_new_tokens=3, min_new_tokens=3)

    def generate(
        self,
        rows: list[list[int]],
        targets: list[int],
        max_new_tokens: int,
        min_new_tokens: int = 0,
        hypotheses: int = 1,
    ) -> list[Generated]:
        width = source_bucket(max(len(r) for r in rows))
        if width is None or 2 + max_new_tokens > DECODER_ROOM * width:
            self.eager_calls += 1
            return super().generate(rows, targets, max_new_tokens, min_new_tokens, hypotheses)
        count = len(rows)
        size = batch_bucket(count)
        padded_rows = rows + [rows[0]] * (size - count)
        padded_targets = targets + [targets[0]] * (size - count)
        beams = max(self.decoding.num_beams, hypotheses)
        cache = self._cache(size * beams, width)
        self.compiled_calls += 1
        outputs = self._generate(
            padded_rows,
            padded_targets,
            max_new_tokens,
            min_new_tokens,
            hypotheses,
            width=width,
            past_key_values=cache,
            compile_config=self.compile_config,
        )
        return outputs[:count]

    def _cache(self, rows: int, width: int) -> Any:
        """The cache of this shape, reset; made (and the oldest dropped past MAX_CACHES) if new."""
        from transformers import EncoderDecoderCache, StaticCache

        key = (rows, width, DECODER_ROOM * width)
        cache = self._caches.pop(key, None)
        if cache is None:
            config = self.model.config.get_text_config(decoder=True)
            cache = EncoderDecoderCache(
                StaticCache(config=config, max_cache_len=DECODER_ROOM * width),
                StaticCache(config=config, max_cache_len=width),
            )
            while len(self._caches) >= MAX_CACHES:
                self._caches.popitem(last=False)
            logger.info("compiled backend: a cache for %d rows, source %d, decoder %d", *key)
        else:
            import torch

            with torch.inference_mode():  # its tensors were made under it, by generate
                cache.reset()
        self._caches[key] = cache
        return cache

    def release_memory(self) -> None:
        self._caches.clear()
        super().release_memory()

    def describe(self) -> dict[str, Any]:
        return {
            **super().describe(),
            "compile_mode": self.compile_config.mode,
            "compile_s": round(self.compile_s, 1),
            "compiled_calls": self.compiled_calls,
            "eager_calls": self.eager_calls,
            "shapes": [list(key) for key in self._caches],
        }

"""transformers' model with a preallocated cache and its decode step compiled (issue #38).

Eager `generate` on CUDA launches every kernel of every decode step from Python: on an H100 the
418M model took 0.228 s a batch whatever its size up to 512, the GPU busy at most 37% of it. Here
the decoder's self-attention cache is a `StaticCache` (fixed shapes, fixed addresses) and the decode
step is compiled by torch.compile; on CUDA in `reduce-overhead` mode, which replays each step as
one CUDA graph. Shapes are kept to a few so that compiling happens at start-up, not under traffic:

- the source is padded to a bucket (`SOURCE_BUCKETS`): the cross-attention cache is sized to it.
  Longer sources, and calls whose output budget exceeds the bucket's decoder room (the one-row
  retry with the model's whole room), run eager: rare, and never a compile in a request's path;
- the decoder's cache is as long as the call's output budget needs, from a few lengths
  (`DECODER_LENGTHS`): a static cache is allocated whole;
- the batch is padded to a power of two (`batch_bucket`) with copies of its first row, whose
  outputs are dropped: with the batch dimension dynamic, a new size records a graph, it does not
  recompile;
- the caches are kept per shape and reset between calls, so a graph finds its cache at the address
  it was recorded with; they are bounded by count and by a share of the device's memory, and a
  cache dropped and made again makes its graph record again (torch stops recording after 128 such
  re-records and runs that shape without graphs: the shapes are few enough that they all stay);
- every source width and decoder length is compiled when the backend loads (`warm_up`), for the
  configured beam width (the checkpoint's 5 for m2m100_418M, or greedy);
- beam search is transformers' own, so its answers are eager's by construction, with two changes
  beneath it: its decode steps go through the compiled forward (transformers 5 calls the model
  uncompiled in beam search, so during a beam call the model's `forward` routes one-token steps on
  our cache to it: `_compiled_beam_steps`), and the cache is reordered between steps in place
  (`static_beam_cache`): a CUDA graph reads its cache at the address it was recorded with, where
  transformers' reorder makes new tensors. The reorder copies only the filled positions of the
  decoder's own cache and leaves the cross-attention cache alone: a sentence's beams share its
  source, and beams are only ever chosen among a sentence's own. A wider beam than configured (a
  request's alternatives) runs eager, not a compile under traffic.

Outputs are the same as eager's: padding rows are masked out of attention, and each row is decoded
on its own (tests/unit/test_compiled_backend.py on the CPU, tests/gpu on CUDA). On CUDA it belongs
in a process of its own (`runner: auto`): CUDA graphs are recorded per thread, and in the engine
process the warm-up's thread is not the batches'. The CPU compiles
too (torch's inductor, C++), where the tests run it; `backend: auto` keeps it only on CUDA, where
it is measured against the others at start-up.
"""

from __future__ import annotations

import functools
import logging
import time
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Any

from translator.engine.backends.base import Decoding, Generated, SpecialIds
from translator.engine.backends.transformers_backend import TransformersBackend

logger = logging.getLogger(__name__)

# Source widths (tokens) with a compiled shape; a sentence of the service is rarely past 64.
SOURCE_BUCKETS = (32, 64)
# Decoder positions per source position of the bucket, at most: the output budget is 3 per source
# token plus 16 (generation.max_length_ratio, max_length_margin), and two positions hold the prefix.
DECODER_ROOM = 4
# The decoder cache's lengths: the smallest that holds the prefix and the call's output budget
# (a static cache is allocated whole: 16 forced tokens need 18 positions, not 256).
DECODER_LENGTHS = (32, 64, 128, 256)
SMALLEST_BATCH = 8
# The caches kept (one per shape): at most this many, and at most this share of the device's
# memory free once the model is loaded (on the CPU, CPU_CACHE_BYTES), the oldest dropped first.
MAX_CACHES = 16
CACHE_MEMORY_SHARE = 0.25
CPU_CACHE_BYTES = 2 << 30
# torch.compile's recompilations per function (its default, 8, is too few for the shapes above).
RECOMPILE_LIMIT = 64


def source_bucket(width: int) -> int | None:
    """The compiled source width for a batch whose longest row is `width`, None past the last."""
    return next((bucket for bucket in SOURCE_BUCKETS if width <= bucket), None)


def decoder_length(max_new_tokens: int, width: int) -> int | None:
    """The decoder cache's length for an output budget of `max_new_tokens` over a source bucket of
    `width`, None where none holds it within DECODER_ROOM (the call then runs eager)."""
    return next((n for n in DECODER_LENGTHS if 2 + max_new_tokens <= n <= DECODER_ROOM * width), None)


def batch_bucket(rows: int) -> int:
    """The compiled batch size for `rows` rows: the next power of two, at least SMALLEST_BATCH (a
    few sizes, so that few graphs are recorded and their caches all stay)."""
    return max(SMALLEST_BATCH, 1 << (rows - 1).bit_length())


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
        # Beam search's decode step: the model's forward compiled like transformers compiles its
        # call for greedy decoding (lazily: nothing compiles until a beam call).
        self._forward = self.model.forward
        self._beam_step = torch.compile(self._forward, fullgraph=True, dynamic=True, mode=self.compile_config.mode)
        self.beam_steps = 0  # decode steps of beam calls that ran compiled
        self._caches: OrderedDict[tuple[int, int, int], Any] = OrderedDict()
        if cuda:
            free, _ = torch.cuda.mem_get_info()
            self.cache_budget = int(CACHE_MEMORY_SHARE * free)
        else:
            self.cache_budget = CPU_CACHE_BYTES
        started = time.perf_counter()
        self.warm_up()
        self.compile_s = time.perf_counter() - started
        self.compiled_calls = self.eager_calls = self.beam_steps = 0  # the requests' from here
        logger.info("compiled backend: its shapes compiled in %.1f s", self.compile_s)

    def warm_up(self) -> None:
        """Compile every source width and decoder length now, at start-up, rather than in the batch
        of the first sentence that needs it (a compilation takes tens of seconds). Any token ids do,
        as long as decoding goes past its first step (forced: the end token suppressed)."""
        self.compiled_calls = self.eager_calls = 0
        for width in SOURCE_BUCKETS:
            row = [4 + i for i in range(width)]
            for length in (n for n in DECODER_LENGTHS if n <= DECODER_ROOM * width):
                self.generate([row], [4], max_new_tokens=length - 2, min_new_tokens=3)

    def generate(
        self,
        rows: list[list[int]],
        targets: list[int],
        max_new_tokens: int,
        min_new_tokens: int = 0,
        hypotheses: int = 1,
    ) -> list[Generated]:
        width = source_bucket(max(len(r) for r in rows))
        length = decoder_length(max_new_tokens, width) if width is not None else None
        beams = max(self.decoding.num_beams, hypotheses)
        # A wider beam than the configured one (alternatives) has no compiled shape: eager.
        if width is None or length is None or beams != self.decoding.num_beams:
            self.eager_calls += 1
            return super().generate(rows, targets, max_new_tokens, min_new_tokens, hypotheses)
        count = len(rows)
        size = batch_bucket(count)
        padded_rows = rows + [rows[0]] * (size - count)
        padded_targets = targets + [targets[0]] * (size - count)
        cache = self._cache(size * beams, width, length)
        self.compiled_calls += 1
        if beams == 1:
            routing: AbstractContextManager[None] = nullcontext()
            compiling: dict[str, Any] = {"compile_config": self.compile_config}
        else:
            routing = self._compiled_beam_steps(cache)
            # transformers' own compilation off: its beam search would not use it, and it would
            # trace the routing of _compiled_beam_steps.
            compiling = {"disable_compile": True}
        with routing:
            outputs = self._generate(
                padded_rows,
                padded_targets,
                max_new_tokens,
                min_new_tokens,
                hypotheses,
                width=width,
                past_key_values=cache,
                **compiling,
            )
        return outputs[:count]

    @contextmanager
    def _compiled_beam_steps(self, cache: Any) -> Iterator[None]:
        """For one beam call: the model's one-token decode steps on `cache` go through the compiled
        forward; the prefill (the two-token prefix) and anything else run eager, as in greedy
        decoding. transformers' beam search calls the model itself (`model(...)`, hence `forward`):
        tests/unit/test_compiled_backend.py pins that its steps come here (`beam_steps`)."""

        # With the model's own signature: generate inspects `forward`'s parameters.
        @functools.wraps(self._forward)
        def forward(*args: Any, **kwargs: Any) -> Any:
            step = kwargs.get("decoder_input_ids")
            if kwargs.get("past_key_values") is cache and step is not None and step.shape[1] == 1:
                self.beam_steps += 1
                return self._beam_step(*args, **kwargs)
            return self._forward(*args, **kwargs)

        self.model.forward = forward
        try:
            yield
        finally:
            del self.model.forward  # the class's again

    def _cache(self, rows: int, width: int, length: int) -> Any:
        """The cache of this shape, reset; made if new, the oldest dropped while the kept ones would
        pass MAX_CACHES or the byte budget (a dropped cache's graph records again: see the module)."""
        from transformers import StaticCache

        key = (rows, width, length)
        cache = self._caches.pop(key, None)
        if cache is None:
            config = self.model.config.get_text_config(decoder=True)
            while self._caches and (len(self._caches) >= MAX_CACHES or self._kept_bytes(key) > self.cache_budget):
                self._caches.popitem(last=False)
            cache = static_beam_cache()(
                StaticCache(config=config, max_cache_len=length),
                StaticCache(config=config, max_cache_len=width),
            )
            logger.info("compiled backend: a cache for %d rows, source %d, decoder %d", *key)
        else:
            import torch

            with torch.inference_mode():  # its tensors were made under it, by generate
                cache.reset()
        self._caches[key] = cache
        return cache

    def _kept_bytes(self, new: tuple[int, int, int]) -> int:
        return sum(map(self._cache_bytes, self._caches)) + self._cache_bytes(new)

    def _cache_bytes(self, key: tuple[int, int, int]) -> int:
        """A cache's bytes once filled: keys and values of every decoder layer, self- and cross-attention."""
        rows, width, length = key
        config = self.model.config
        element = next(self.model.parameters()).element_size()
        return rows * (length + width) * int(config.decoder_layers) * 2 * int(config.d_model) * element

    def release_memory(self) -> None:
        self._caches.clear()
        super().release_memory()

    def describe(self) -> dict[str, Any]:
        return {
            **super().describe(),
            "compile_mode": self.compile_config.mode,
            "compile_s": round(self.compile_s, 1),
            "compiled_calls": self.compiled_calls,
            "beam_steps": self.beam_steps,
            "eager_calls": self.eager_calls,
            "shapes": [list(key) for key in self._caches],
        }


@functools.cache
def static_beam_cache() -> type:
    """StaticBeamCache, made on first use: transformers is imported when a backend loads, not
    when the engine process imports the backends' names."""
    from transformers import EncoderDecoderCache

    class StaticBeamCache(EncoderDecoderCache):
        """Static self- and cross-attention caches whose beam reorder keeps their tensors where
        they are (see the module): the decoder's filled positions are gathered and copied back in
        place; the cross-attention cache is left as it is, the same for every beam of a sentence."""

        def reorder_cache(self, beam_idx: Any) -> None:
            # StaticLayers, made by CompiledBackend._cache (transformers types them as any layer).
            layers: list[Any] = [layer for layer in self.self_attention_cache.layers if layer.is_initialized]  # type: ignore[union-attr]
            if not layers:
                return
            # The same in every layer; reading it waits for the device, as beam search does anyway
            # at every step (its stopping check).
            filled = int(layers[0].cumulative_length)
            index = beam_idx.to(layers[0].keys.device)
            for layer in layers:
                for states in (layer.keys, layer.values):
                    states[:, :, :filled] = states[:, :, :filled].index_select(0, index)

    return StaticBeamCache

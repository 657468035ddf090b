"""Hugging Face transformers' `generate`: float32 on CPU, bfloat16/float16 on CUDA, and int8 on
CPU through torch's dynamic quantization of the linear layers (weights stored in 8 bits,
activations quantized per batch on the fly)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from translator.engine.backends.base import Decoding, Generated, MemoryStats, SpecialIds, cuda_memory_stats

logger = logging.getLogger(__name__)


class TransformersBackend:
    name = "transformers"

    def __init__(
        self, model_dir: str | Path, device: str, dtype: str, threads: int, decoding: Decoding, special: SpecialIds
    ) -> None:
        """`device`/`dtype` as `translator.engine.backends.choose` resolved and checked them."""
        import torch
        from transformers import M2M100ForConditionalGeneration

        self.device, self.precision = device, dtype
        if dtype == "bfloat16" and device.startswith("cuda") and not torch.cuda.is_bf16_supported():
            # bf16 keeps fp32's range (no overflow in attention) where the GPU has it.
            self.precision = "float16"
        torch.set_num_threads(threads)
        self.decoding = decoding
        self.special = special
        load_dtype = torch.float32 if self.precision == "int8" else getattr(torch, self.precision)
        model = M2M100ForConditionalGeneration.from_pretrained(str(model_dir), dtype=load_dtype)
        model = model.to(self.device).eval()  # type: ignore[arg-type]  # transformers' stub wants a model
        if self.precision == "int8":
            model = quantize_int8(model)
        self.model = model

    def generate(
        self,
        rows: list[list[int]],
        targets: list[int],
        max_new_tokens: int,
        min_new_tokens: int = 0,
        hypotheses: int = 1,
    ) -> list[Generated]:
        return self._generate(rows, targets, max_new_tokens, min_new_tokens, hypotheses)

    def _generate(
        self,
        rows: list[list[int]],
        targets: list[int],
        max_new_tokens: int,
        min_new_tokens: int,
        hypotheses: int,
        width: int | None = None,
        **extra: Any,
    ) -> list[Generated]:
        """`generate` with the source padded to `width` (the longest row's by default) and `extra`
        passed on to transformers' generate (a cache, a compile config: compiled_backend.py)."""
        import torch

        width = width or max(len(r) for r in rows)
        input_ids = torch.full((len(rows), width), self.special.pad, dtype=torch.long)
        attention = torch.zeros((len(rows), width), dtype=torch.long)
        for i, row in enumerate(rows):
            input_ids[i, : len(row)] = torch.tensor(row, dtype=torch.long)
            attention[i, : len(row)] = 1
        # Per-row target language: the decoder starts from [</s>, __tgt__] in each row, which is
        # what `forced_bos_token_id` does for a whole batch, so mixed pairs share one call.
        prefix = torch.tensor([[self.special.decoder_start, t] for t in targets], dtype=torch.long)
        lengths = {"max_new_tokens": max_new_tokens}
        if min_new_tokens:
            lengths["min_new_tokens"] = min_new_tokens
        if hypotheses > 1:
            lengths["num_return_sequences"] = hypotheses
        with torch.inference_mode():
            output = self.model.generate(
                input_ids=input_ids.to(self.device),
                attention_mask=attention.to(self.device),
                decoder_input_ids=prefix.to(self.device),
                num_beams=max(self.decoding.num_beams, hypotheses),
                length_penalty=self.decoding.length_penalty,
                no_repeat_ngram_size=self.decoding.no_repeat_ngram_size,
                **lengths,
                max_length=None,
                forced_bos_token_id=None,
                do_sample=False,
                **extra,
            )
        outputs = [self._output(row[prefix.shape[1] :].tolist(), max_new_tokens) for row in output.cpu()]
        if hypotheses == 1:
            return outputs
        # num_return_sequences: each row's hypotheses are consecutive, best first.
        grouped = [outputs[i : i + hypotheses] for i in range(0, len(outputs), hypotheses)]
        return [Generated(best.ids, best.ended, tuple(o.ids for o in others)) for best, *others in grouped]

    def _output(self, ids: list[int], max_new_tokens: int) -> Generated:
        if self.special.eos in ids:
            return Generated(ids[: ids.index(self.special.eos)], ended=True)
        real = [i for i in ids if i != self.special.pad]
        return Generated(real, ended=len(real) < max_new_tokens)

    def release_memory(self) -> None:
        if self.device.startswith("cuda"):
            import torch

            torch.cuda.empty_cache()

    def memory_stats(self, reset: bool = False) -> MemoryStats | None:
        return cuda_memory_stats(self.device, reset)

    def describe(self) -> dict[str, Any]:
        import torch

        return {
            "backend": self.name,
            "device": self.device,
            "dtype": self.precision,
            "threads": torch.get_num_threads(),
        }


def quantize_int8(model: Any) -> Any:
    """Every `nn.Linear` (attention projections, feed-forward, the output projection over the
    vocabulary) with int8 weights and dynamically quantized activations; embeddings and layer
    norms stay float32."""
    import torch
    from torch.ao.quantization import quantize_dynamic

    return quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)

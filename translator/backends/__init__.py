"""Engine backends, one module per engine, behind one interface (`base.Backend`).

`Translator` (translator/engine.py) and the scheduler above it call `Backend.generate` and never
ask which backend runs. This module picks one from the settings and loads it.
"""

from __future__ import annotations

from pathlib import Path

from translator.backends.base import Backend, Decoding, Generated, SpecialIds, cpu_allowance
from translator.config import Engine

__all__ = ["AUTO", "Backend", "Choice", "Decoding", "Generated", "SpecialIds", "choose", "load_backend"]

Choice = tuple[str, str, str]  # backend, device, dtype

# What `backend: auto` / `dtype: auto` run, per kind of device: the fastest setting measured
# (README, "Engine backends"). CUDA keeps transformers in bfloat16 until it is measured on a GPU.
AUTO: dict[str, tuple[str, str]] = {
    "cpu": ("ctranslate2", "int8"),
    "cuda": ("transformers", "bfloat16"),
}
# `dtype: auto` under a backend that was chosen explicitly.
AUTO_DTYPE: dict[tuple[str, str], str] = {
    ("transformers", "cpu"): "int8",
    ("transformers", "cuda"): "bfloat16",
    ("ctranslate2", "cpu"): "int8",
    ("ctranslate2", "cuda"): "float16",
}


def choose(engine: Engine, cuda_available: bool | None = None) -> Choice:
    """The concrete backend, device and dtype the settings ask for, `auto`s resolved."""
    device = engine.device
    if device == "auto":
        device = "cuda" if (cuda_available if cuda_available is not None else _cuda_available()) else "cpu"
    kind = "cuda" if device.startswith("cuda") else "cpu"
    backend: str = engine.backend
    dtype: str = engine.dtype
    if backend == "auto":
        backend = AUTO[kind][0] if dtype in ("auto", AUTO[kind][1]) else _backend_for(dtype, kind)
    if dtype == "auto":
        dtype = AUTO_DTYPE[(backend, kind)]
    return backend, device, dtype


def _backend_for(dtype: str, kind: str) -> str:
    # A precision asked for with `backend: auto`: the engine that runs it (transformers has no
    # int8 on CUDA nor the int8_* mixes).
    if dtype.startswith("int8_") or (dtype == "int8" and kind == "cuda"):
        return "ctranslate2"
    return AUTO[kind][0]


def _cuda_available() -> bool:
    try:
        import ctranslate2

        return bool(ctranslate2.get_cuda_device_count())
    except ImportError:  # pragma: no cover - ctranslate2 is a pinned dependency
        import torch

        return bool(torch.cuda.is_available())


def load_backend(
    model_dir: str | Path,
    engine: Engine,
    decoding: Decoding,
    special: SpecialIds,
    vocabulary_size: int,
) -> Backend:
    backend, device, dtype = choose(engine)
    threads = engine.threads or cpu_allowance()
    if backend == "ctranslate2":
        from translator.backends.ctranslate2_backend import CTranslate2Backend

        return CTranslate2Backend(model_dir, device, dtype, threads, decoding, special, vocabulary_size)
    from translator.backends.transformers_backend import TransformersBackend

    return TransformersBackend(model_dir, device, dtype, threads, decoding, special)

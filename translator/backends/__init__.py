"""Engine backends, one module per engine, behind one interface (`base.Backend`).

`Translator` (translator/engine.py) and the scheduler above it call `Backend.generate` and never
ask which backend runs. This module picks one from the settings and loads it.
"""

from __future__ import annotations

import logging
from pathlib import Path

from translator.backends.base import Backend, Decoding, Generated, SpecialIds, cpu_allowance
from translator.backends.ctranslate2_backend import CONVERTED_DIR, ConversionMissing
from translator.config import Engine

logger = logging.getLogger(__name__)

__all__ = [
    "AUTO",
    "Backend",
    "ConversionMissing",
    "Choice",
    "Decoding",
    "Generated",
    "SpecialIds",
    "choose",
    "load_backend",
]

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


def choose(engine: Engine, cuda_available: bool | None = None, model_dir: str | Path | None = None) -> Choice:
    """The concrete backend, device and dtype the settings ask for, `auto`s resolved.

    With `model_dir`, `backend: auto` takes transformers for a checkpoint directory that has no
    CTranslate2 conversion (a plain checkpoint given to the offline tools; the model store's
    entries always have one): auto means the fastest engine the model can run on.
    """
    device = engine.device
    if device == "auto":
        device = "cuda" if (cuda_available if cuda_available is not None else _cuda_available()) else "cpu"
    kind = "cuda" if device.startswith("cuda") else "cpu"
    backend: str = engine.backend
    dtype: str = engine.dtype
    if backend == "auto":
        backend = AUTO[kind][0] if dtype in ("auto", AUTO[kind][1]) else _backend_for(dtype, kind)
        if backend == "ctranslate2" and model_dir is not None and not is_converted(Path(model_dir)):
            if dtype not in ("auto", "float32", "float16", "bfloat16") and not (dtype == "int8" and kind == "cpu"):
                raise ConversionMissing(_missing(model_dir))
            logger.warning("%s has no CTranslate2 conversion: running it on transformers", model_dir)
            backend = "transformers"
    if dtype == "auto":
        dtype = AUTO_DTYPE[(backend, kind)]
    return backend, device, dtype


def _backend_for(dtype: str, kind: str) -> str:
    # A precision asked for with `backend: auto`: the engine that runs it (transformers has no
    # int8 on CUDA nor the int8_* mixes).
    if dtype.startswith("int8_") or (dtype == "int8" and kind == "cuda"):
        return "ctranslate2"
    return AUTO[kind][0]


def is_converted(model_dir: Path) -> bool:
    return (model_dir / CONVERTED_DIR / "model.bin").is_file()


def _missing(model_dir: str | Path) -> str:
    return (
        f"{model_dir} has no CTranslate2 model ({CONVERTED_DIR}/model.bin): register the checkpoint with "
        f"save_model.py, which converts it, or convert it in place with "
        f"`python -m translator.backends.ctranslate2_convert {model_dir}`; or use backend transformers"
    )


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
    backend, device, dtype = choose(engine, model_dir=model_dir)
    threads = engine.threads or cpu_allowance()
    if backend == "ctranslate2":
        from translator.backends.ctranslate2_backend import CTranslate2Backend

        return CTranslate2Backend(model_dir, device, dtype, threads, decoding, special, vocabulary_size)
    from translator.backends.transformers_backend import TransformersBackend

    return TransformersBackend(model_dir, device, dtype, threads, decoding, special)

"""Engine backends, one module per engine, behind one interface (`base.Backend`).

`Translator` (translator/engine/translator.py) and the scheduler above it call `Backend.generate` and never
ask which backend runs. This module picks one from the settings and loads it.
"""

from __future__ import annotations

import importlib.util
import logging
import math
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from translator.config import CTRANSLATE2_ONLY_DTYPES, Engine
from translator.engine.backends.base import Backend, Decoding, Generated, SpecialIds, cpu_allowance, torch_installed
from translator.engine.backends.ctranslate2_backend import CONVERTED_DIR, ConversionMissing, missing_conversion

logger = logging.getLogger(__name__)

__all__ = [
    "AUTO",
    "Backend",
    "ConversionMissing",
    "Choice",
    "Decoding",
    "Generated",
    "SpecialIds",
    "WEIGHT_FILES",
    "choose",
    "cuda_candidates",
    "fastest",
    "load_backend",
    "measured_on_cuda",
    "missing_conversion",
    "torch_installed",
]

Choice = tuple[str, str, str]  # backend, device, dtype

# The checkpoint's weights, one of the two forms: what the transformers engine reads. A store entry
# made for CTranslate2 alone (the CPU image's, translator/store.py) has none of them.
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")

# What `backend: auto` / `dtype: auto` run, per kind of device: the fastest setting measured
# (README, "Engine backends"). On CUDA, where the model has its CTranslate2 conversion and torch is
# installed (the GPU image), both engines are timed at start-up and the faster runs (`fastest`);
# transformers bfloat16 otherwise.
AUTO: dict[str, tuple[str, str]] = {
    "cpu": ("ctranslate2", "int8"),
    "cuda": ("transformers", "bfloat16"),
}
# `dtype: auto` under a backend that was chosen explicitly.
AUTO_DTYPE: dict[tuple[str, str], str] = {
    ("transformers", "cpu"): "int8",
    ("transformers", "cuda"): "bfloat16",
    ("compiled", "cpu"): "float32",
    ("compiled", "cuda"): "bfloat16",
    ("ctranslate2", "cpu"): "int8",
    ("ctranslate2", "cuda"): "float16",
}


def choose(engine: Engine, cuda_available: bool | None = None, model_dir: str | Path | None = None) -> Choice:
    """The concrete backend, device and dtype the settings ask for, `auto`s resolved; ValueError
    for a combination no engine runs on the device found.

    With `model_dir`, `backend: auto` takes transformers for a checkpoint directory that has no
    CTranslate2 conversion (a plain checkpoint given to the offline tools, or a store entry made
    before the conversion existed, until save_model.py runs again): auto means the fastest engine
    the model can run on.
    """
    device = engine.device
    if engine.backend == "simulated":
        return "simulated", "cpu" if device == "auto" else device, "float32"
    if device == "auto":
        device = "cuda" if (cuda_available if cuda_available is not None else _cuda_available()) else "cpu"
    kind = "cuda" if device.startswith("cuda") else "cpu"
    backend: str = engine.backend
    dtype: str = engine.dtype
    if kind == "cpu" and dtype in CTRANSLATE2_ONLY_DTYPES:
        raise ValueError(f"dtype {dtype} is for CUDA, and the engine runs on the CPU here: use int8 or float32")
    if backend == "auto":
        backend = AUTO[kind][0] if dtype in ("auto", AUTO[kind][1]) else _backend_for(dtype, kind)
        if backend == "ctranslate2" and model_dir is not None and not is_converted(Path(model_dir)):
            if dtype.startswith("int8_") or (dtype == "int8" and kind == "cuda") or not torch_installed():
                # A precision only CTranslate2 runs, or no torch to run transformers on.
                raise ConversionMissing(missing_conversion(model_dir))
            logger.warning("%s has no CTranslate2 conversion: running it on transformers", model_dir)
            backend = "transformers"
        elif backend == "ctranslate2" and not ctranslate2_installed() and torch_installed():
            # A machine without it (the lent GPU machines): auto is the fastest engine there is here.
            logger.warning("ctranslate2 is not installed here: running the model on transformers")
            backend = "transformers"
    if backend in TORCH_BACKENDS and not torch_installed():
        # The CPU image ships CTranslate2 alone (deploy/image): no torch, so no transformers engine.
        raise ValueError(
            f"backend {backend} needs torch, which is not installed here (the CPU image ships CTranslate2 "
            "alone): use backend ctranslate2 or auto, or the GPU image"
        )
    if backend in TORCH_BACKENDS and model_dir is not None and not has_weights(Path(model_dir)):
        raise ValueError(
            f"{model_dir} holds the CTranslate2 conversion alone (an entry made for the CPU image), without the "
            f"weights backend {backend} reads: use backend ctranslate2 or auto"
        )
    if backend == "compiled" and dtype.startswith("int8"):
        raise ValueError(f"backend compiled runs float32, float16 or bfloat16, not {dtype}")
    if backend == "transformers" and (dtype.startswith("int8_") or (dtype == "int8" and kind == "cuda")):
        raise ValueError(f"dtype {dtype} on {kind} needs backend ctranslate2 (torch's int8 runs on the CPU only)")
    if backend == "ctranslate2" and kind == "cpu" and dtype in ("float16", "bfloat16"):
        raise ValueError(f"CTranslate2 on the CPU computes in float32 or int8; dtype {dtype} needs transformers")
    if dtype == "auto":
        dtype = AUTO_DTYPE[(backend, kind)]
    return backend, device, dtype


def _backend_for(dtype: str, kind: str) -> str:
    # A precision asked for with `backend: auto`: the engine that runs it. Transformers has no
    # int8 on CUDA nor the int8_* mixes; CTranslate2 has no half precision on the CPU.
    if dtype.startswith("int8_") or (dtype == "int8" and kind == "cuda"):
        return "ctranslate2"
    if kind == "cpu" and dtype in ("float16", "bfloat16"):
        return "transformers"
    return AUTO[kind][0]


def is_converted(model_dir: Path) -> bool:
    return (model_dir / CONVERTED_DIR / "model.bin").is_file()


def has_weights(model_dir: Path) -> bool:
    return any((model_dir / name).is_file() for name in WEIGHT_FILES)


def ctranslate2_installed() -> bool:
    return importlib.util.find_spec("ctranslate2") is not None


def _cuda_available() -> bool:
    # torch's answer, as before the backends and as the GPU tests ask: the CUDA default (transformers
    # bfloat16) runs on torch. Without torch (the CPU image) there is no CUDA engine to run.
    if not torch_installed():
        return False
    import torch

    return bool(torch.cuda.is_available())


# The backends that run the checkpoint's weights on torch.
TORCH_BACKENDS = ("transformers", "compiled")

# `backend: auto, dtype: auto` on CUDA: what is measured against what, the first as soon as torch
# runs (translator/engine/model_runner.py), CTranslate2 where the model was converted.
CUDA_CANDIDATES: tuple[tuple[str, str], ...] = (
    ("compiled", "bfloat16"),
    ("transformers", "bfloat16"),
    ("ctranslate2", "float16"),
)
# Rows of the comparison batch: a batch a GPU serves (64 of the calibration's sentences, twice).
MEASURED_ROWS = 64


def measured_on_cuda(engine: Engine, model_dir: str | Path) -> bool:
    """Whether `auto` is decided by measurement here: CUDA, torch installed, the weights there."""
    if engine.backend != "auto" or engine.dtype != "auto":
        return False
    _, device, _ = choose(engine, model_dir=model_dir)
    return device.startswith("cuda") and torch_installed() and has_weights(Path(model_dir))


def cuda_candidates(model_dir: str | Path) -> list[tuple[str, str]]:
    """`CUDA_CANDIDATES` that can run this model here: CTranslate2 where it is installed and the model
    converted (the GPU image), the torch backends everywhere torch is."""
    converted = is_converted(Path(model_dir)) and ctranslate2_installed()
    return [(backend, dtype) for backend, dtype in CUDA_CANDIDATES if backend != "ctranslate2" or converted]


def fastest(
    loaders: Sequence[tuple[str, Callable[[], Backend]]], rows: list[list[int]], targets: list[int], max_new_tokens: int
) -> tuple[Backend, dict[str, float]]:
    """The backend that generates `rows` soonest (each timed on its second run, after a warm-up
    run), the others released; with the seconds each took (inf: it failed to load or run)."""
    timings: dict[str, float] = {}
    best: Backend | None = None
    for label, load in loaders:
        try:
            backend = load()
            backend.generate(rows, targets, max_new_tokens)
            started = time.perf_counter()
            backend.generate(rows, targets, max_new_tokens)
            timings[label] = time.perf_counter() - started
        except Exception as exc:  # noqa: BLE001 - a candidate that cannot run is not chosen
            logger.warning("backend %s could not be measured: %s: %s", label, type(exc).__name__, exc)
            timings[label] = math.inf
            continue
        if best is None or timings[label] < min(t for name, t in timings.items() if name != label):
            if best is not None:
                best.release_memory()
            best = backend
        else:
            backend.release_memory()
    if best is None:
        raise RuntimeError(f"no engine could run here: {timings}")
    logger.info("backend auto on CUDA, measured on %d sentences: %s; running %s", len(rows), timings, best.name)
    return best, timings


def load_backend(
    model_dir: str | Path,
    engine: Engine,
    decoding: Decoding,
    special: SpecialIds,
    vocabulary_size: int,
) -> Backend:
    backend, device, dtype = choose(engine, model_dir=model_dir)
    if backend == "simulated":
        from translator.engine.backends.simulated_backend import SimulatedBackend

        return SimulatedBackend(engine.simulated_batch_s, device, lock_share=engine.simulated_lock_share)
    threads = engine.threads or cpu_allowance()
    if backend == "ctranslate2":
        from translator.engine.backends.ctranslate2_backend import CTranslate2Backend

        return CTranslate2Backend(model_dir, device, dtype, threads, decoding, special, vocabulary_size)
    if backend == "compiled":
        from translator.engine.backends.compiled_backend import CompiledBackend

        return CompiledBackend(model_dir, device, dtype, threads, decoding, special)
    from translator.engine.backends.transformers_backend import TransformersBackend

    return TransformersBackend(model_dir, device, dtype, threads, decoding, special)

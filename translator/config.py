"""Runtime settings, read from one YAML file: `bentoconfiguration.yaml`, or the file that
`BENTOML_CONFIG` names (the Kubernetes deployment mounts one from a ConfigMap).

BentoML 1.4 reads `services.<Name>.{http,workers,traffic,...}` from the same file itself, but
validates and then ignores `services.<Name>.batching` for new-style services: batching knobs are
only read from the `@bentoml.api` decorator. `service.py` therefore passes what this module reads
into the decorators, so that the file is the single source of truth for both.
"""

from __future__ import annotations

import copy
import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

CONFIG_ENV = "BENTOML_CONFIG"
MODEL_ENV = "TRANSLATOR_MODEL"
DEFAULT_MODEL_TAG = "m2m100_418m:latest"

API_SERVICE = "Translation"
ENGINE_SERVICE = "TranslationEngine"

DEFAULT_CONFIG_PATH = Path(__file__).resolve().parent.parent / "bentoconfiguration.yaml"

# Service keys that BentoML's own config schema accepts and that are safe to pass to
# `@bentoml.service(...)` unchanged.
_SERVICE_KEYS = ("http", "workers", "threads", "traffic", "runner_connection", "resources", "metrics", "logging")


class ConfigError(ValueError):
    """The configuration file is missing, unreadable or holds an invalid value."""


@dataclass(frozen=True)
class Batching:
    max_batch_size: int = 32
    max_latency_ms: int = 60_000


@dataclass(frozen=True)
class Generation:
    """Generation policy. `None` means: take the value from the checkpoint's generation config."""

    num_beams: int | None = None
    length_penalty: float | None = None
    no_repeat_ngram_size: int | None = None
    # The output budget grows with the input (ratio * source tokens + margin) so that a long
    # sentence is never cut; the checkpoint's fixed `max_length` (200 for m2m100) is not used.
    max_length_ratio: float = 3.0
    max_length_margin: int = 16
    # For benchmarks with random weights: every output gets exactly this many tokens (end of
    # sentence suppressed until then), so the work per sentence is known. Null in production.
    forced_new_tokens: int | None = None


@dataclass(frozen=True)
class Engine:
    # Padded source tokens times beams allowed in one `generate` call: bounds activation memory
    # whatever the mix of short and long sentences in a batch.
    max_batch_tokens: int = 8192
    device: str = "auto"  # auto | cpu | cuda | cuda:N
    dtype: str = "auto"  # auto | float32 | float16 | bfloat16
    torch_threads: int | None = None
    warmup: bool = True
    # After each batch, hold the next one back while the queue is below max_batch_size, for this
    # fraction of the batch's compute time (at most refill_pause_max_ms): the clients just answered
    # come back and fill it (translator/dispatch.py). 0 turns the pause off.
    refill_pause_fraction: float = 0.05
    refill_pause_max_ms: float = 100.0


@dataclass(frozen=True)
class Admission:
    # Requests in flight on the HTTP service (all workers together) before new ones get 429.
    # Enforced by translator.middleware rather than BentoML's `traffic.max_concurrency`, whose 429 has no
    # Retry-After and comes from a middleware outside any the service can add.
    max_concurrency: int = 256

    def per_worker(self, workers: int) -> int:
        return max(1, -(-self.max_concurrency // max(1, workers)))


@dataclass(frozen=True)
class Settings:
    path: Path
    api_service: dict[str, Any] = field(default_factory=dict)
    engine_service: dict[str, Any] = field(default_factory=dict)
    batching: Batching = field(default_factory=Batching)
    generation: Generation = field(default_factory=Generation)
    engine: Engine = field(default_factory=Engine)
    admission: Admission = field(default_factory=Admission)


def config_path() -> Path:
    override = os.environ.get(CONFIG_ENV)
    return Path(override) if override else DEFAULT_CONFIG_PATH


def model_tag() -> str:
    return os.environ.get(MODEL_ENV) or DEFAULT_MODEL_TAG


def load_settings(path: Path | None = None) -> Settings:
    path = path or config_path()
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except OSError as exc:
        raise ConfigError(f"cannot read configuration file {path}: {exc}") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"configuration file {path} is not valid YAML: {exc}") from exc
    if not isinstance(raw, dict):
        raise ConfigError(f"configuration file {path} must hold a mapping at the top level")

    services = _mapping(raw.get("services"), "services", path)
    api = _mapping(services.get(API_SERVICE), f"services.{API_SERVICE}", path)
    engine = _mapping(services.get(ENGINE_SERVICE), f"services.{ENGINE_SERVICE}", path)
    where = f"services.{ENGINE_SERVICE}.translation"
    translation = _mapping(engine.get("translation"), where, path)
    api_where = f"services.{API_SERVICE}.translation"
    api_translation = _mapping(api.get("translation"), api_where, path)
    admission = _section(Admission, api_translation.get("admission"), f"{api_where}.admission", path)
    if admission.max_concurrency < 1:
        raise ConfigError(f"{path}: {api_where}.admission.max_concurrency must be >= 1")
    if "max_concurrency" in (api.get("traffic") or {}):
        # BentoML would enforce it before our middleware sees the request: 429s without Retry-After.
        raise ConfigError(
            f"{path}: services.{API_SERVICE}.traffic.max_concurrency is not used here; "
            f"set {api_where}.admission.max_concurrency instead"
        )

    batching = _section(Batching, engine.get("batching"), f"services.{ENGINE_SERVICE}.batching", path)
    if batching.max_batch_size < 2:
        # BentoML's dispatcher refuses 1, and one item per batch would defeat the service's point.
        raise ConfigError(f"{path}: services.{ENGINE_SERVICE}.batching.max_batch_size must be >= 2")
    if batching.max_latency_ms < 1:
        raise ConfigError(f"{path}: services.{ENGINE_SERVICE}.batching.max_latency_ms must be >= 1")
    generation = _section(Generation, translation.get("generation"), f"{where}.generation", path)
    if generation.forced_new_tokens is not None and generation.forced_new_tokens < 1:
        raise ConfigError(f"{path}: {where}.generation.forced_new_tokens must be >= 1 or null")

    return Settings(
        path=path,
        api_service=_service_kwargs(api),
        engine_service=_service_kwargs(engine),
        batching=batching,
        generation=generation,
        engine=_section(Engine, translation.get("engine"), f"{where}.engine", path),
        admission=admission,
    )


def _mapping(value: Any, where: str, path: Path) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f"{path}: {where} must be a mapping, not {type(value).__name__}")
    return value


def _service_kwargs(section: dict[str, Any]) -> dict[str, Any]:
    return {key: copy.deepcopy(section[key]) for key in _SERVICE_KEYS if key in section}


def _section(cls: type, value: Any, where: str, path: Path) -> Any:
    values = _mapping(value, where, path)
    known = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise ConfigError(f"{path}: unknown key(s) in {where}: {', '.join(unknown)}")
    checked = {name: _coerce(given, known[name].type, f"{where}.{name}", path) for name, given in values.items()}
    return cls(**checked)


def _coerce(value: Any, declared: Any, where: str, path: Path) -> Any:
    # Field types are strings under `from __future__ import annotations`: "int | None", "float"...
    declared = str(declared)
    if value is None:
        if "None" in declared:
            return None
        raise ConfigError(f"{path}: {where} must be set")
    if "bool" in declared:
        ok = isinstance(value, bool)
    elif "float" in declared:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    elif "int" in declared:
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:
        ok = isinstance(value, str)
    if not ok:
        raise ConfigError(f"{path}: {where} must be of type {declared}, not {type(value).__name__}")
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0:
        raise ConfigError(f"{path}: {where} must not be negative")
    return float(value) if "float" in declared else value

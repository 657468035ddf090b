"""Runtime settings, read from one YAML file: `bentoconfiguration.yaml`, or the file that
`BENTOML_CONFIG` names (the Kubernetes deployment mounts one from a ConfigMap).

BentoML 1.4 reads `services.<Name>.{http,workers,traffic,...}` from the same file itself, and
validates and then ignores `services.<Name>.batching`: our engine's own scheduler reads it from
here, as it reads `services.<Name>.translation`, so the file is the single source of truth.

The sections are pydantic dataclasses: strict types, positive numbers, fixed choices and no unknown
keys, so that a bad file stops the start with a message naming the key (a typo or a 0 would
otherwise surface later as a crash-looping engine). They stay dataclasses so that
`dataclasses.replace` (which re-validates) and `dataclasses.asdict` keep working for their users.
"""

from __future__ import annotations

import copy
import dataclasses
import os
from dataclasses import field
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic.dataclasses import dataclass

CONFIG_ENV = "BENTOML_CONFIG"
MODEL_ENV = "TRANSLATOR_MODEL"
# Every checkpoint save_model.py registers goes under this one name (the version is a hash of its
# files), so `latest` is the last one registered: what plain `bentoml serve` and `bentoml build`
# use. TRANSLATOR_MODEL=name:version pins another.
MODEL_NAME = "m2m100"
DEFAULT_MODEL_TAG = f"{MODEL_NAME}:latest"

API_SERVICE = "Translation"
ENGINE_SERVICE = "TranslationEngine"

DEFAULT_CONFIG_PATH = Path(__file__).resolve().parent.parent / "bentoconfiguration.yaml"

# Service keys that BentoML's own config schema accepts and that are safe to pass to
# `@bentoml.service(...)` unchanged.
_SERVICE_KEYS = ("http", "workers", "threads", "traffic", "runner_connection", "resources", "metrics", "logging")

_SECTION = ConfigDict(extra="forbid")

# Strict fields: `2.5` is not a beam count and the string "yes" is not a boolean (YAML's own `yes`
# is). An integer is accepted where a float is expected.
Positive = Annotated[int, Field(gt=0, strict=True)]
NonNegative = Annotated[int, Field(ge=0, strict=True)]
PositiveFloat = Annotated[float, Field(gt=0, strict=True)]
NonNegativeFloat = Annotated[float, Field(ge=0, strict=True)]
Flag = Annotated[bool, Field(strict=True)]
# BentoML's own schema for `workers`: a positive count, or one per CPU the process may use.
Workers = Positive | Literal["cpu_count"]


class ConfigError(ValueError):
    """The configuration file is missing, unreadable or holds an invalid value."""


@dataclass(frozen=True, config=_SECTION)
class Batching:
    # Read by the engine's scheduler. One piece per batch would defeat the service's point. Null:
    # from the device (translator/engine/batch_limits.py): 32 on the CPU, measured at start-up on CUDA.
    max_batch_size: Annotated[int, Field(ge=2, strict=True)] | None = None
    max_latency_ms: Positive = 60_000


@dataclass(frozen=True, config=_SECTION)
class Generation:
    """Generation policy. `None` means: take the value from the checkpoint's generation config."""

    num_beams: Positive | None = None
    length_penalty: Annotated[float, Field(strict=True)] | None = None
    no_repeat_ngram_size: NonNegative | None = None
    # The output budget grows with the input (ratio * source tokens + margin) so that a long
    # sentence is never cut; the checkpoint's fixed `max_length` (200 for m2m100) is not used.
    max_length_ratio: PositiveFloat = 3.0
    max_length_margin: NonNegative = 16
    # For benchmarks with random weights: every output gets exactly this many tokens (end of
    # sentence suppressed until then), so the work per sentence is known. Null in production.
    forced_new_tokens: Positive | None = None


# `simulated`: no model, each call answers its source (translator/engine/backends/simulated_backend.py).
Backend = Literal["auto", "transformers", "compiled", "ctranslate2", "simulated"]
# The precision the model runs in. `int8`: weights in 8 bits, on CPU (torch's dynamic quantization
# of the linear layers under transformers, CTranslate2's int8 kernels). The `int8_*` mixes
# (int8 weights, half-precision activations) are CTranslate2's, for CUDA.
Dtype = Literal["auto", "float32", "float16", "bfloat16", "int8", "int8_float16", "int8_bfloat16"]
# Where `generate` runs: a process of its own or a thread of the engine's (translator/engine/model_runner.py).
Runner = Literal["auto", "process", "thread"]
CTRANSLATE2_ONLY_DTYPES = frozenset({"int8_float16", "int8_bfloat16"})


@dataclass(frozen=True, config=_SECTION)
class Engine:
    # Padded source tokens times beams allowed in one `generate` call: bounds activation memory
    # whatever the mix of short and long sentences in a batch.
    # Null: from the device, like batching.max_batch_size (8192 on the CPU).
    max_batch_tokens: Positive | None = None
    # Which engine runs the model (translator/engine/backends); `auto` picks per device the fastest one
    # measured (translator.engine.backends.choose), and the precision with `dtype: auto`.
    backend: Backend = "auto"
    device: Annotated[str, Field(pattern=r"^(auto|cpu|cuda(:\d+)?)$", strict=True)] = "auto"
    dtype: Dtype = "auto"
    # Threads of the model's arithmetic (torch's, or CTranslate2's intra_threads). Null: the CPUs
    # this process may use (its cgroup's CPU limit and affinity), not the node's cores.
    threads: Positive | None = None
    # One small batch through the model as it loads, so the first real batch does not pay for
    # lazy initialisation. Readiness waits, in any case, for the scheduler's calibration batches.
    warmup: Flag = True
    # backend simulated only: [rows, seconds] points of a call's time (empty: instant).
    simulated_batch_s: list[tuple[Positive, Annotated[float, Field(ge=0)]]] = field(default_factory=list)
    # backend simulated only: the share of a call it holds the interpreter lock (0.63: eager CUDA's).
    simulated_lock_share: Annotated[float, Field(ge=0, le=1)] = 0.0
    runner: Runner = "auto"

    @model_validator(mode="after")
    def _dtype_fits_backend(self) -> Engine:
        if (self.simulated_batch_s or self.simulated_lock_share) and self.backend != "simulated":
            raise ValueError("simulated_batch_s and simulated_lock_share are for backend simulated only")
        if self.backend == "transformers" and self.dtype in CTRANSLATE2_ONLY_DTYPES:
            raise ValueError(f"dtype {self.dtype} needs backend ctranslate2 (transformers has no such mix)")
        if self.backend == "transformers" and self.dtype == "int8" and self.device.startswith("cuda"):
            raise ValueError("dtype int8 with backend transformers runs on the CPU only (torch's dynamic quantization)")
        if self.device == "cpu" and self.dtype in CTRANSLATE2_ONLY_DTYPES:
            raise ValueError(f"dtype {self.dtype} is for CUDA; on the CPU use int8 or float32")
        return self


def with_engine(base: Engine, text: str) -> Engine:
    """`base` with the backend and precision of `BACKEND:DTYPE` (the tools' `--engine`, the bench's
    `--engines`), validated like the file's keys; ValueError naming the problem."""
    backend, sep, dtype = text.strip().partition(":")
    if not sep or not backend or not dtype:
        raise ValueError(f"expected BACKEND:DTYPE, e.g. ctranslate2:int8; got {text!r}")
    return dataclasses.replace(base, backend=backend, dtype=dtype)  # type: ignore[arg-type]


@dataclass(frozen=True, config=_SECTION)
class Scheduling:
    """The engine's own batch scheduler (translator/engine/scheduler.py)."""

    # After each batch, while fewer pieces are queued than it had, or interactive callers it answered
    # are not back, wait for them as long as they have been taking (measured), at least this fraction
    # of the batch's compute time, never more than linger_max_fraction of it nor linger_max_ms.
    # 0 in any of the three: no linger.
    linger_fraction: Annotated[float, Field(ge=0, le=1, strict=True)] = 0.05
    linger_max_fraction: Annotated[float, Field(ge=0, le=1, strict=True)] = 0.25
    linger_max_ms: NonNegativeFloat = 1000.0
    group_window_batches: Positive = 4  # how many batches deep length grouping looks in the queue
    # A batch that runs this many times its predicted time, and at least stall_min_ms, is stuck: its
    # callers get 503, readiness turns false, and then /livez (Kubernetes restarts the pod).
    stall_factor: Annotated[float, Field(ge=2, strict=True)] = 10.0
    stall_min_ms: PositiveFloat = 120_000.0


@dataclass(frozen=True, config=_SECTION)
class Cache:
    """The sentence cache (translator/engine/cache.py)."""

    # Translations kept in the engine process (least recently used out); 0 turns it off.
    size: NonNegative = 50_000
    # A Redis or Valkey shared by the replicas, e.g. redis://valkey:6379/0; null: none. Or the
    # name of an environment variable that holds the URL (for one with a password, from a Secret).
    url: Annotated[str, Field(pattern=r"^(redis|rediss|unix|valkey|valkeys)://", strict=True)] | None = None
    url_env: Annotated[str, Field(min_length=1, strict=True)] | None = None
    ttl_s: Positive = 604_800
    # Bounds every call to the shared cache: it may only ever cost this much.
    timeout_ms: PositiveFloat = 200.0

    def shared_url(self) -> str | None:
        if self.url_env:
            return os.environ.get(self.url_env) or self.url
        return self.url


@dataclass(frozen=True, config=_SECTION)
class Admission:
    # Requests in flight on the HTTP service, all workers together (translator/shm/in_flight.py),
    # before new ones get 429: translator.api.middleware's, since BentoML's `traffic.max_concurrency`
    # answers 429 without Retry-After from a middleware outside any the service can add.
    max_concurrency: Positive = 256


@dataclass(frozen=True, config=_SECTION)
class Documents:
    """Document jobs (translator/documents/jobs.py): where they are kept, how many, how long."""

    # Relative: in the server's BENTOML_HOME, which no other server counts or adopts jobs from.
    folder: Annotated[str, Field(min_length=1, strict=True)] = "documents"
    keep_s: PositiveFloat = 3600.0  # a job's files (its result) are deleted this long after it ended
    max_jobs: Positive = 32  # queued or running on the server, every key's together; past it 503
    max_jobs_per_key: Positive = 4  # ... of one API key (keys on); past it 429
    # Sources and results kept, past it 503: the deployment's BENTOML_HOME is a 256 MiB emptyDir.
    max_stored_bytes: Positive = 128 * 1024 * 1024

    def path(self) -> Path:
        return state_directory(self.folder)


# An API key this short is guessable; the keys are compared in constant time, not rate-limited.
MIN_API_KEY_CHARS = 16


@dataclass(frozen=True, config=_SECTION)
class Auth:
    """API keys for the translation endpoints (translator/api/auth.py); off unless keys_env is set."""

    # The name of an environment variable holding the keys, separated by commas or whitespace (in
    # Kubernetes, from a Secret). Set, it must hold at least one key, or the service does not start:
    # a missing Secret must not turn the keys off unnoticed.
    keys_env: Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$", strict=True)] | None = None

    def keys(self) -> frozenset[str] | None:
        """The accepted keys, read from the environment now; None when keys are off."""
        if self.keys_env is None:
            return None
        keys = frozenset(os.environ.get(self.keys_env, "").replace(",", " ").split())
        where = f"translation.auth.keys_env names {self.keys_env}"
        if not keys:
            raise ConfigError(f"{where}, which is not set or holds no key: refusing to serve without keys")
        short = sum(1 for key in keys if len(key) < MIN_API_KEY_CHARS)
        if short:
            raise ConfigError(f"{where}: {short} of its keys are shorter than {MIN_API_KEY_CHARS} characters")
        return keys


@dataclass(frozen=True)
class Settings:
    path: Path
    api_service: dict[str, Any] = field(default_factory=dict)
    engine_service: dict[str, Any] = field(default_factory=dict)
    batching: Batching = field(default_factory=Batching)
    generation: Generation = field(default_factory=Generation)
    engine: Engine = field(default_factory=Engine)
    scheduling: Scheduling = field(default_factory=Scheduling)
    cache: Cache = field(default_factory=Cache)
    admission: Admission = field(default_factory=Admission)
    auth: Auth = field(default_factory=Auth)
    documents: Documents = field(default_factory=Documents)


class _Loose(BaseModel):
    # BentoML validates its own keys (http, traffic, resources...) against its schema at start-up.
    model_config = ConfigDict(extra="allow")


class _EngineTranslation(BaseModel):
    model_config = ConfigDict(extra="forbid")
    engine: Engine = Field(default_factory=Engine)
    generation: Generation = Field(default_factory=Generation)
    scheduling: Scheduling = Field(default_factory=Scheduling)
    cache: Cache = Field(default_factory=Cache)


class _ApiTranslation(BaseModel):
    model_config = ConfigDict(extra="forbid")
    admission: Admission = Field(default_factory=Admission)
    auth: Auth = Field(default_factory=Auth)
    documents: Documents = Field(default_factory=Documents)


class _Service(_Loose):
    workers: Workers = 1
    traffic: dict[str, Any] = Field(default_factory=dict)


class _ApiService(_Service):
    translation: _ApiTranslation = Field(default_factory=_ApiTranslation)

    @field_validator("traffic")
    @classmethod
    def _no_bentoml_admission(cls, traffic: dict[str, Any]) -> dict[str, Any]:
        if "max_concurrency" in traffic:
            # BentoML would enforce it before our middleware sees the request: 429s without Retry-After.
            raise ValueError(
                "not used here (BentoML's 429 has no Retry-After); "
                f"set services.{API_SERVICE}.translation.admission.max_concurrency instead"
            )
        return traffic


class _EngineService(_Service):
    batching: Batching = Field(default_factory=Batching)
    translation: _EngineTranslation = Field(default_factory=_EngineTranslation)


class _Services(_Loose):
    # Literals for mypy; they are API_SERVICE and ENGINE_SERVICE (a unit test holds them together).
    api: _ApiService = Field(default_factory=_ApiService, alias="Translation")
    engine: _EngineService = Field(default_factory=_EngineService, alias="TranslationEngine")


class _File(_Loose):
    services: _Services = Field(default_factory=_Services)


def state_directory(name: str) -> Path:
    """Own state (document jobs, local glossaries): `name` in BENTOML_HOME (absolute: itself)."""
    return Path(os.environ.get("BENTOML_HOME") or Path.home() / "bentoml") / name


def config_path() -> Path:
    override = os.environ.get(CONFIG_ENV)
    return Path(override) if override else DEFAULT_CONFIG_PATH


def model_tag() -> str:
    return os.environ.get(MODEL_ENV) or DEFAULT_MODEL_TAG


def load_settings(path: Path | None = None) -> Settings:
    path = path or config_path()
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read configuration file {path}: {exc}") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"configuration file {path} is not valid YAML: {exc}") from exc
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"configuration file {path} must hold a mapping at the top level")
    # An empty section (`TranslationEngine:` with nothing under it) reads as null: the defaults.
    raw = _nulls_as_empty(raw)
    try:
        parsed = _File.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(f"invalid configuration file {path}:\n{_describe(exc)}") from None
    services = raw.get("services") or {}
    return Settings(
        path=path,
        api_service=_service_kwargs(services.get(API_SERVICE) or {}),
        engine_service=_service_kwargs(services.get(ENGINE_SERVICE) or {}),
        batching=parsed.services.engine.batching,
        generation=parsed.services.engine.translation.generation,
        engine=parsed.services.engine.translation.engine,
        scheduling=parsed.services.engine.translation.scheduling,
        cache=parsed.services.engine.translation.cache,
        admission=parsed.services.api.translation.admission,
        auth=parsed.services.api.translation.auth,
        documents=parsed.services.api.translation.documents,
    )


_SECTIONS = {
    (),
    ("services",),
    ("services", API_SERVICE),
    ("services", ENGINE_SERVICE),
    ("services", API_SERVICE, "translation"),
    ("services", API_SERVICE, "translation", "admission"),
    ("services", API_SERVICE, "translation", "auth"),
    ("services", API_SERVICE, "translation", "documents"),
    ("services", ENGINE_SERVICE, "batching"),
    ("services", ENGINE_SERVICE, "translation"),
    ("services", ENGINE_SERVICE, "translation", "engine"),
    ("services", ENGINE_SERVICE, "translation", "generation"),
    ("services", ENGINE_SERVICE, "translation", "scheduling"),
    ("services", ENGINE_SERVICE, "translation", "cache"),
}


def _nulls_as_empty(raw: dict[str, Any], where: tuple[str, ...] = ()) -> dict[str, Any]:
    out = dict(raw)
    for key, value in raw.items():
        inner = (*where, key)
        if inner in _SECTIONS:
            out[key] = {} if value is None else _nulls_as_empty(value, inner) if isinstance(value, dict) else value
    return out


def _describe(exc: ValidationError) -> str:
    """One line per problem, each naming the key as a dotted path from the top of the file."""
    problems: dict[str, tuple[list[str], Any]] = {}
    for error in exc.errors(include_url=False):
        # Union members add their type names to `loc` ("int", "literal['cpu_count']"): not keys.
        loc = [str(part) for part in error["loc"] if not (isinstance(part, str) and _is_union_tag(part))]
        key = ".".join(loc) or "the top level"
        message = _MESSAGES.get(error["type"], error["msg"].removeprefix("Value error, "))
        messages, _ = problems.setdefault(key, ([], error["input"]))
        if message not in messages:
            # A union reports once per member: one line per key, its alternatives joined.
            messages.append(message)
    return "\n".join(f"  {key}: {' or '.join(messages)} (got {given!r})" for key, (messages, given) in problems.items())


_MESSAGES = {"extra_forbidden": "unknown key", "unexpected_keyword_argument": "unknown key", "missing": "required"}


def _is_union_tag(part: str) -> bool:
    return part in {"int", "str", "float", "bool", "constrained-int", "constrained-float", "none"} or part.startswith(
        ("literal[", "function-")
    )


def _service_kwargs(section: dict[str, Any]) -> dict[str, Any]:
    return {key: copy.deepcopy(section[key]) for key in _SERVICE_KEYS if key in section}

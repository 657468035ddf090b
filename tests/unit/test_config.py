from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from translator.config import (
    API_SERVICE,
    CONFIG_ENV,
    DEFAULT_CONFIG_PATH,
    ENGINE_SERVICE,
    ConfigError,
    Documents,
    Engine,
    config_path,
    load_settings,
)

pytestmark = pytest.mark.pure


def write(tmp_path: Path, data: dict) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def engine(translation: dict) -> dict:
    return {"services": {ENGINE_SERVICE: {"translation": translation}}}


def test_repository_config_has_no_keys_bentoml_would_reject():
    # BentoML validates BENTOML_CONFIG against its v1 schema at start-up: only `services` at the top.
    raw = yaml.safe_load(DEFAULT_CONFIG_PATH.read_text())
    assert set(raw) == {"services"}


def test_repository_config_loads_with_the_contract_port():
    settings = load_settings(DEFAULT_CONFIG_PATH)
    assert settings.api_service["http"]["port"] == 9527
    assert settings.engine_service["workers"] == 1
    # Unset: from the device (32 on the CPU, measured on CUDA; tests/unit/test_batch_limits.py).
    assert settings.batching.max_batch_size is None and settings.engine.max_batch_tokens is None
    # The bentoml-notes fix for aborted in-flight calls: huge limits, max_age a float.
    connection = settings.engine_service["runner_connection"]
    assert connection["max_requests"] >= 10**9
    assert isinstance(connection["max_age"], float)


def test_env_var_selects_the_file(tmp_path, monkeypatch):
    path = write(tmp_path, {"services": {ENGINE_SERVICE: {"batching": {"max_batch_size": 3, "max_latency_ms": 7}}}})
    monkeypatch.setenv(CONFIG_ENV, str(path))
    assert config_path() == path
    settings = load_settings()
    assert (settings.batching.max_batch_size, settings.batching.max_latency_ms) == (3, 7)


def test_defaults_when_sections_are_missing(tmp_path):
    settings = load_settings(write(tmp_path, {"services": {API_SERVICE: {"workers": 4}}}))
    assert settings.api_service == {"workers": 4}
    assert settings.generation.num_beams is None
    assert settings.engine.device == "auto"


def test_generation_and_engine_sections(tmp_path):
    data = engine({"generation": {"num_beams": 2, "max_length_ratio": 2}, "engine": {"max_batch_tokens": 99}})
    settings = load_settings(write(tmp_path, data))
    assert settings.generation.num_beams == 2
    assert settings.generation.max_length_ratio == 2.0
    assert settings.engine.max_batch_tokens == 99


def test_forced_new_tokens_is_off_in_the_repository_config_and_read_when_set(tmp_path):
    assert load_settings(DEFAULT_CONFIG_PATH).generation.forced_new_tokens is None
    settings = load_settings(write(tmp_path, engine({"generation": {"num_beams": 1, "forced_new_tokens": 16}})))
    assert settings.generation.forced_new_tokens == 16


ENG = f"services.{ENGINE_SERVICE}.translation.engine"
GEN = f"services.{ENGINE_SERVICE}.translation.generation"
DOCS = f"services.{API_SERVICE}.translation.documents"


def documents(section: object) -> dict:
    return {"services": {API_SERVICE: {"translation": {"documents": section}}}}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"services": {ENGINE_SERVICE: {"batching": {"max_batch_size": 1}}}},
            f"services.{ENGINE_SERVICE}.batching.max_batch_size: Input should be greater than or equal to 2 (got 1)",
        ),
        (
            {"services": {ENGINE_SERVICE: {"batching": {"max_latency_ms": 0}}}},
            f"services.{ENGINE_SERVICE}.batching.max_latency_ms: Input should be greater than 0",
        ),
        # Passed before and crash-looped the engine on its warm-up batch.
        (
            engine({"engine": {"max_batch_tokens": 0}}),
            f"{ENG}.max_batch_tokens: Input should be greater than 0",
        ),
        (
            engine({"engine": {"max_batch_tokens": -1}}),
            f"{ENG}.max_batch_tokens: Input should be greater than 0",
        ),
        (
            engine({"engine": {"max_batch_tokens": "8192"}}),
            f"{ENG}.max_batch_tokens: Input should be a valid integer",
        ),
        (
            engine({"engine": {"dtype": "fp16"}}),
            f"{ENG}.dtype: Input should be 'auto', 'float32', 'float16', 'bfloat16', 'int8', 'int8_float16' or",
        ),
        (engine({"engine": {"device": "gpu"}}), f"{ENG}.device: String should match pattern"),
        (engine({"engine": {"threads": 0}}), f"{ENG}.threads: Input should be greater than 0"),
        (engine({"engine": {"torch_threads": 2}}), f"{ENG}.torch_threads: unknown key"),
        (
            engine({"engine": {"backend": "transformers", "dtype": "int8_float16"}}),
            f"{ENG}: dtype int8_float16 needs backend ctranslate2",
        ),
        (engine({"engine": {"warmup": "yes"}}), f"{ENG}.warmup: Input should be a valid boolean (got 'yes')"),
        (
            engine({"scheduling": {"linger_fraction": 2}}),
            "services.TranslationEngine.translation.scheduling.linger_fraction: Input should be less",
        ),
        (
            engine({"cache": {"url": "http://cache:6379"}}),
            "services.TranslationEngine.translation.cache.url: String should match pattern",
        ),
        (engine({"generation": {"num_beams": 2.5}}), f"{GEN}.num_beams: Input should be a valid integer"),
        (engine({"generation": {"num_beams": 0}}), f"{GEN}.num_beams: Input should be greater than 0"),
        (
            engine({"generation": {"max_length_ratio": 0}}),
            f"{GEN}.max_length_ratio: Input should be greater",
        ),
        (
            engine({"generation": {"forced_new_tokens": 0}}),
            f"{GEN}.forced_new_tokens: Input should be greater",
        ),
        (engine({"generation": {"beams": 2}}), f"{GEN}.beams: unknown key (got 2)"),
        (documents({"max_jobs": 0}), f"{DOCS}.max_jobs: Input should be greater than 0 (got 0)"),
        (documents({"max_jobs_per_key": "4"}), f"{DOCS}.max_jobs_per_key: Input should be a valid integer"),
        (documents({"keep_s": -1}), f"{DOCS}.keep_s: Input should be greater than 0 (got -1)"),
        (documents({"max_stored_bytes": 1.5}), f"{DOCS}.max_stored_bytes: Input should be a valid integer"),
        (documents({"folder": ""}), f"{DOCS}.folder: String should have at least 1 character"),
        (documents({"dir": "/tmp"}), f"{DOCS}.dir: unknown key"),
        (engine({"engines": {}}), f"services.{ENGINE_SERVICE}.translation.engines: unknown key"),
        (engine({"engine": "fast"}), f"{ENG}: Input should be a dictionary"),
        (
            {"services": {API_SERVICE: {"translation": {"admission": {"max_concurrency": 0}}}}},
            f"services.{API_SERVICE}.translation.admission.max_concurrency: Input should be greater than 0",
        ),
        (
            {"services": {API_SERVICE: {"traffic": {"max_concurrency": 8}}}},
            f"services.{API_SERVICE}.traffic: not used here",
        ),
        (
            {"services": {API_SERVICE: {"workers": "many"}}},
            f"services.{API_SERVICE}.workers: Input should be a valid integer or Input should be 'cpu_count'",
        ),
        (
            {"services": {API_SERVICE: {"workers": 0}}},
            f"services.{API_SERVICE}.workers: Input should be greater than 0",
        ),
        ({"services": []}, "services: Input should be a valid dictionary"),
    ],
)
def test_invalid_values_are_named_by_their_path_from_the_top(tmp_path, data, message):
    path = write(tmp_path, data)
    with pytest.raises(ConfigError) as info:
        load_settings(path)
    assert message in str(info.value)
    assert str(path) in str(info.value)


def test_every_problem_of_a_file_is_reported_at_once(tmp_path):
    data = engine({"engine": {"max_batch_tokens": 0, "dtype": "half"}, "generation": {"num_beams": -2}})
    with pytest.raises(ConfigError) as info:
        load_settings(write(tmp_path, data))
    lines = str(info.value).splitlines()[1:]
    assert sorted(line.split(":")[0].strip() for line in lines) == [
        f"{ENG}.dtype",
        f"{ENG}.max_batch_tokens",
        f"{GEN}.num_beams",
    ]


def test_empty_sections_mean_the_defaults(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text(f"services:\n  {ENGINE_SERVICE}:\n    translation:\n      engine:\n", encoding="utf-8")
    assert load_settings(path).engine == Engine()


def test_sections_validate_when_built_in_code_too():
    # dataclasses.replace re-runs the validation: the benchmark and evaluation derive settings so.
    with pytest.raises(ValidationError):
        dataclasses.replace(Engine(), max_batch_tokens=0)
    with pytest.raises(ValidationError):
        Engine(dtype="float8")
    assert dataclasses.replace(Engine(), device="cuda:1", dtype="bfloat16").device == "cuda:1"


def test_workers_cpu_count_is_accepted_and_passed_on(tmp_path):
    settings = load_settings(write(tmp_path, {"services": {API_SERVICE: {"workers": "cpu_count"}}}))
    # Passed on to BentoML unchanged; it starts one worker per CPU. Admission is one count across
    # the workers (translator/shm/in_flight.py), so nothing here needs to know how many.
    assert settings.api_service["workers"] == "cpu_count"
    assert settings.admission.max_concurrency == 256
    for bad in (0, -1, "two"):
        with pytest.raises(ConfigError, match=f"services.{API_SERVICE}.workers"):
            load_settings(write(tmp_path, {"services": {API_SERVICE: {"workers": bad}}}))


def test_documents_defaults_and_folder_in_the_servers_home(tmp_path, monkeypatch):
    # As shipped: what the jobs had as constants before (translator/documents/jobs.py).
    shipped = load_settings(DEFAULT_CONFIG_PATH).documents
    assert shipped == Documents() == Documents("documents", 3600.0, 32, 4, 128 * 1024 * 1024)
    monkeypatch.setenv("BENTOML_HOME", str(tmp_path))
    assert shipped.path() == tmp_path / "documents"
    # An absolute folder is taken as it is; an empty section is the defaults.
    settings = load_settings(write(tmp_path, documents({"folder": "/srv/jobs", "max_jobs_per_key": 2})))
    assert (settings.documents.path(), settings.documents.max_jobs_per_key) == (Path("/srv/jobs"), 2)
    assert load_settings(write(tmp_path, documents(None))).documents == Documents()


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigError, match="cannot read configuration file"):
        load_settings(tmp_path / "nope.yaml")


def test_the_service_names_the_file_is_read_by_are_the_services_names():
    from translator.config import _Services

    assert {field.alias for field in _Services.model_fields.values()} == {API_SERVICE, ENGINE_SERVICE}


def test_an_engine_named_on_a_command_line_is_validated_like_the_files_keys():
    from translator.config import Engine, with_engine

    base = Engine(max_batch_tokens=1024, threads=2)
    chosen = with_engine(base, " ctranslate2:int8 ")
    assert (chosen.backend, chosen.dtype, chosen.max_batch_tokens, chosen.threads) == ("ctranslate2", "int8", 1024, 2)
    for text, message in (
        ("ctranslate2", "expected BACKEND:DTYPE"),
        (":int8", "expected BACKEND:DTYPE"),
        ("onnx:int8", "Input should be 'auto', 'transformers', 'compiled', 'ctranslate2' or 'simulated'"),
        ("transformers:int4", "Input should be 'auto', 'float32'"),
        ("transformers:int8_float16", "needs backend ctranslate2"),
    ):
        with pytest.raises(ValueError, match=message):
            with_engine(base, text)

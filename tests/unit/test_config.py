from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from translator.config import (
    API_SERVICE,
    CONFIG_ENV,
    DEFAULT_CONFIG_PATH,
    ENGINE_SERVICE,
    ConfigError,
    config_path,
    load_settings,
)


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
    assert settings.batching.max_batch_size >= 2
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


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"services": {ENGINE_SERVICE: {"batching": {"max_batch_size": 1}}}}, "max_batch_size must be >= 2"),
        (engine({"generation": {"num_beams": 2.5}}), "translation.generation.num_beams must be of type"),
        (engine({"generation": {"beams": 2}}), "unknown key(s) in services.TranslationEngine.translation.generation"),
        (engine({"engine": {"warmup": "yes"}}), "translation.engine.warmup must be of type bool"),
        (engine({"engine": {"max_batch_tokens": -1}}), "must not be negative"),
        (engine({"generation": {"forced_new_tokens": 0}}), "generation.forced_new_tokens must be >= 1 or null"),
        ({"services": []}, "services must be a mapping"),
    ],
)
def test_invalid_values_are_named(tmp_path, data, message):
    with pytest.raises(ConfigError) as info:
        load_settings(write(tmp_path, data))
    assert message in str(info.value)


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigError, match="cannot read configuration file"):
        load_settings(tmp_path / "nope.yaml")

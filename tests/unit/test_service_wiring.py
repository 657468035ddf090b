"""service.py is wiring: importing it is light, and the config file reaches the services.

That a changed max_batch_size really changes the batches is shown on a running server
(tests/e2e/test_config.py)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml

from harness.servers import ROOT

pytestmark = pytest.mark.processes


def import_service(env_extra: dict[str, str], tmp_path) -> dict:
    code = (
        "import json, sys, service;"
        "apis = service.TranslationEngine.apis; batching = service.SETTINGS.batching;"
        "print(json.dumps({'torch': 'torch' in sys.modules, 'transformers': 'transformers' in sys.modules,"
        "'batchable': any(api.batchable for api in apis.values()),"
        "'max_batch_size': batching.max_batch_size, 'max_latency_ms': batching.max_latency_ms,"
        "'engine': service.TranslationEngine.config, 'api': service.Translation.config}))"
    )
    env = {"PATH": "/usr/bin:/bin", "BENTOML_HOME": str(tmp_path / "home"), **env_extra}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_import_does_not_load_torch_and_reads_the_repository_config(tmp_path):
    info = import_service({}, tmp_path)
    assert not info["torch"] and not info["transformers"]
    # The engine batches with its own scheduler, fed through its own channel: BentoML's dispatcher
    # is not in the path.
    assert info["batchable"] is False
    config = yaml.safe_load((ROOT / "bentoconfiguration.yaml").read_text())
    batching = config["services"]["TranslationEngine"]["batching"]
    # Unset in the file: the engine takes it from the device at start-up.
    assert "max_batch_size" not in batching and info["max_batch_size"] is None
    assert info["max_latency_ms"] == batching["max_latency_ms"]
    assert info["api"]["http"]["port"] == 9527
    assert info["engine"]["workers"] == 1


def test_bentoml_config_env_changes_the_batching_settings(tmp_path):
    config = yaml.safe_load((ROOT / "bentoconfiguration.yaml").read_text())
    config["services"]["TranslationEngine"]["batching"] = {"max_batch_size": 5, "max_latency_ms": 1234}
    path = tmp_path / "other.yaml"
    path.write_text(yaml.safe_dump(config))
    info = import_service({"BENTOML_CONFIG": str(path)}, tmp_path)
    assert (info["max_batch_size"], info["max_latency_ms"]) == (5, 1234)

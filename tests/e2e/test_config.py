"""The configuration file against a real `bentoml serve`: its batching knobs take effect (BentoML
1.4 alone would ignore them), a bad value stops the start with a message naming the key, and
`workers: cpu_count` starts one API worker per CPU."""

from __future__ import annotations

import psutil
import pytest
import requests

from harness.servers import launch_server, register, start_server
from tests.e2e.helpers import CONTRACT_REQUEST, CONTRACT_RESPONSE, config_with, largest_batch_seen, request_for

pytestmark = [pytest.mark.server, pytest.mark.slow]

# Ten sentences in one record: one call of ten pieces, which the scheduler splits into batches of
# at most max_batch_size. Deterministic, unlike how many concurrent calls happen to merge.
TEN_SENTENCES = " ".join(
    [
        "Life is like a box of chocolates.",
        "Please do not be late.",
        "Where is the nearest station?",
        "Tokyo is the capital of Japan.",
        "How are you today?",
        "I am fine, thank you.",
        "The train leaves at seven o'clock.",
        "Do you have a favorite author?",
        "It takes about five minutes on foot.",
        "Good morning, everyone!",
    ]
)


def largest_piece_batch(url: str) -> float:
    body = request_for("en", "ja", [("1", TEN_SENTENCES)])
    assert requests.post(f"{url}/translation", json=body, timeout=120).status_code == 200
    metrics = requests.get(f"{url}/metrics", timeout=10).text
    return largest_batch_seen(metrics, metric="translation_batch_pieces")


@pytest.fixture(scope="module")
def small_batch_server(fixture_model, tmp_path_factory):
    # A BentoML home of its own: servers sharing one also share (and reset) its Prometheus
    # multiprocess directory, and their metrics would mix.
    home = tmp_path_factory.mktemp("bentoml-home-small")
    tag = register(fixture_model, home)
    path = config_with(
        tmp_path_factory.mktemp("config"), lambda s: s["TranslationEngine"]["batching"].update(max_batch_size=2)
    )
    server = start_server(home, tag, path.parent / "server.log", config=path)
    yield server
    server.stop()


def test_max_batch_size_from_the_config_file_is_obeyed(small_batch_server, server):
    assert largest_piece_batch(small_batch_server.url) == 2
    # The repository's configuration (max_batch_size 32) hands the model all ten pieces at once.
    assert largest_piece_batch(server.url) >= 10


def test_a_bad_value_stops_the_start_with_the_key_named(model_tag, bentoml_home, tmp_path):
    # Accepted before: the engine then crash-looped on its warm-up batch with a traceback.
    path = config_with(tmp_path, lambda s: s["TranslationEngine"]["translation"]["engine"].update(max_batch_tokens=0))
    server = launch_server(bentoml_home, model_tag, tmp_path / "server.log", config=path)
    try:
        code = server.process.wait(timeout=120)
    finally:
        server.stop()
    assert code != 0
    assert (
        "services.TranslationEngine.translation.engine.max_batch_tokens: Input should be greater than 0" in server.log()
    ), server.log_tail()


def test_workers_cpu_count_starts_one_api_worker_per_cpu(fixture_model, tmp_path_factory):
    # Crashed the import of service.py before (TypeError in the admission split).
    home = tmp_path_factory.mktemp("bentoml-home-cpu-count")
    tag = register(fixture_model, home)
    directory = tmp_path_factory.mktemp("config-cpu-count")
    path = config_with(directory, lambda s: s["Translation"].update(workers="cpu_count"))
    server = start_server(home, tag, directory / "server.log", config=path)
    try:
        assert requests.post(f"{server.url}/translation", json=CONTRACT_REQUEST, timeout=120).json() == (
            CONTRACT_RESPONSE
        )
        commands = [" ".join(p.cmdline()) for p in psutil.Process(server.pid).children(recursive=True)]
        api_workers = [c for c in commands if "--service-name Translation " in c + " "]
        # BentoML's own count (private: pinned here, on a running server).
        from bentoml._internal.resource import system_resources

        assert len(api_workers) == (int(system_resources()["cpu"]) or 1), commands
    finally:
        server.stop()

"""bentoconfiguration.yaml's batching knobs take effect (BentoML 1.4 alone would ignore them)."""

from __future__ import annotations

import pytest
import requests
import yaml

from tests.conftest import ROOT, register, start_server
from tests.e2e.test_api import largest_batch_seen, request_for

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

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
    config = yaml.safe_load((ROOT / "bentoconfiguration.yaml").read_text())
    config["services"]["TranslationEngine"]["batching"]["max_batch_size"] = 2
    path = tmp_path_factory.mktemp("config") / "bentoconfiguration.yaml"
    path.write_text(yaml.safe_dump(config))
    server = start_server(home, tag, path.parent / "server.log", config=path)
    yield server
    server.stop()


def test_max_batch_size_from_the_config_file_is_obeyed(small_batch_server, server):
    assert largest_piece_batch(small_batch_server.url) == 2
    # The repository's configuration (max_batch_size 32) hands the model all ten pieces at once.
    assert largest_piece_batch(server.url) >= 10

"""The sentence cache on a running server, shared through a real Valkey: a repeated request never
reaches the model, answers stay exact under concurrent load, and a cache server killed under
load costs no request."""

from __future__ import annotations

import asyncio
import random
import threading
import time
from collections import Counter
from pathlib import Path

import aiohttp
import pytest
import requests
import yaml

from tests.e2e.test_api import documents, request_for
from tests.e2e.test_scheduling import value
from tests.harness import ROOT, register, start_server
from tests.valkey import start_valkey

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


@pytest.fixture(scope="module")
def cached(fixture_model: Path, tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("cache")
    valkey = start_valkey(tmp)
    home = tmp / "home"
    home.mkdir()
    tag = register(fixture_model, home)
    config = yaml.safe_load((ROOT / "bentoconfiguration.yaml").read_text())
    # No cache in the engine process: every lookup goes to Valkey, as in a pod started cold.
    config["services"]["TranslationEngine"]["translation"]["cache"].update(url=valkey.url, size=0)
    path = tmp / "bentoconfiguration.yaml"
    path.write_text(yaml.safe_dump(config))
    server = start_server(home, tag, tmp / "server.log", config=path)
    yield server, valkey
    server.stop()
    valkey.kill()


def one_sentence_documents() -> list[tuple[str, str, str, str]]:
    return [d for d in documents() if d[2].count(".") == 1 and d[2].endswith(".")]


def test_a_repeated_request_never_reaches_the_model(cached):
    server, _ = cached
    src, tgt, text, expected = one_sentence_documents()[0]
    body = request_for(src, tgt, [("1", text)])
    pieces_before = value(server, "translation_batch_pieces_sum")
    first = requests.post(f"{server.url}/translation", json=body, timeout=60)
    assert first.json() == {"result": [{"id": "1", "text": expected}]}
    pieces = value(server, "translation_batch_pieces_sum") - pieces_before
    assert pieces >= 1
    batches = value(server, "translation_batch_pieces_count")
    hits = value(server, "translation_cache_lookups_total", level="shared", result="hit")
    second = requests.post(f"{server.url}/translation", json=body, timeout=60)
    assert second.json() == first.json()
    assert value(server, "translation_batch_pieces_count") == batches, "the model was called for a cached sentence"
    # Every piece of the second request came from the shared cache.
    assert value(server, "translation_cache_lookups_total", level="shared", result="hit") == hits + pieces


async def mixed_load(url: str, seconds: float, seed: int) -> Counter:
    """Closed-loop clients sending corpus sentences, many repeated; every answer checked."""
    docs = one_sentence_documents()
    rng = random.Random(seed)
    outcomes: Counter = Counter()
    deadline = time.monotonic() + seconds
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=120)) as session:

        async def client() -> None:
            while time.monotonic() < deadline:
                chosen = rng.sample(docs, 3)
                pair = chosen[0][:2]
                same = [d for d in docs if d[:2] == pair]
                records = [rng.choice(same) for _ in range(3)]
                body = request_for(pair[0], pair[1], [(str(i), d[2]) for i, d in enumerate(records)])
                async with session.post(f"{url}/translation", json=body) as response:
                    data = await response.json(content_type=None)
                    if response.status != 200:
                        outcomes[f"status {response.status}"] += 1
                    elif data != {"result": [{"id": str(i), "text": d[3]} for i, d in enumerate(records)]}:
                        outcomes["wrong"] += 1
                    else:
                        outcomes["exact"] += 1

        await asyncio.gather(*(client() for _ in range(16)))
    return outcomes


def test_concurrent_repeats_stay_exact_and_hit(cached):
    server, _ = cached
    hits = value(server, "translation_cache_lookups_total", result="hit")
    outcomes = asyncio.run(mixed_load(server.url, 6, seed=1))
    assert set(outcomes) == {"exact"}, outcomes
    assert value(server, "translation_cache_lookups_total", result="hit") > hits


def test_killing_the_cache_server_under_load_loses_no_request(cached):
    server, valkey = cached
    killer = threading.Timer(2.0, valkey.kill)
    killer.start()
    try:
        outcomes = asyncio.run(mixed_load(server.url, 8, seed=2))
    finally:
        killer.cancel()
    assert valkey.process.poll() is not None, "the cache server was not killed during the load"
    assert set(outcomes) == {"exact"}, outcomes
    assert (
        value(server, "translation_cache_lookups_total", level="shared", result="error")
        + value(server, "translation_cache_lookups_total", level="shared", result="store_error")
        >= 1
    )

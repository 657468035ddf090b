"""The sentence cache on a running server, shared through a real Valkey: a repeated request never
reaches the model, answers stay exact under concurrent load, and a cache server killed under
load costs no request."""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from pathlib import Path

import deepl
import pytest
import requests
from deepl.api_data import MultilingualGlossaryDictionaryEntries as Dictionary

from harness.load import Job, job, run_load
from harness.servers import register, start_server
from tests.e2e.helpers import config_with, documents, metric_value, request_for
from tests.valkey import start_valkey

pytestmark = [pytest.mark.server, pytest.mark.slow]


@pytest.fixture(scope="module")
def cached(fixture_model: Path, tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("cache")
    valkey = start_valkey(tmp)
    home = tmp / "home"
    home.mkdir()
    tag = register(fixture_model, home)
    # No cache in the engine process: every lookup goes to Valkey, as in a pod started cold.
    path = config_with(tmp, lambda s: s["TranslationEngine"]["translation"]["cache"].update(url=valkey.url, size=0))
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
    pieces_before = metric_value(server, "translation_batch_pieces_sum")
    first = requests.post(f"{server.url}/translation", json=body, timeout=60)
    assert first.json() == {"result": [{"id": "1", "text": expected}]}
    pieces = metric_value(server, "translation_batch_pieces_sum") - pieces_before
    assert pieces >= 1
    batches = metric_value(server, "translation_batch_pieces_count")
    hits = metric_value(server, "translation_cache_lookups_total", level="shared", result="hit")
    second = requests.post(f"{server.url}/translation", json=body, timeout=60)
    assert second.json() == first.json()
    assert metric_value(server, "translation_batch_pieces_count") == batches, (
        "the model was called for a cached sentence"
    )
    # Every piece of the second request came from the shared cache.
    assert metric_value(server, "translation_cache_lookups_total", level="shared", result="hit") == hits + pieces


def repeated_jobs(seed: int, count: int) -> list[Job]:
    """Three-record requests of corpus sentences, many repeated, each with its expected answer."""
    docs = one_sentence_documents()
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        pair = rng.choice(docs)[:2]
        records = [rng.choice([d for d in docs if d[:2] == pair]) for _ in range(3)]
        out.append(job(pair[0], pair[1], [d[2] for d in records], [d[3] for d in records]))
    return out


def mixed_load(url: str, seconds: float, seed: int) -> Counter:
    """16 closed-loop clients on the harness, every answer checked against the corpus."""
    return run_load(url, repeated_jobs(seed, 5000), 16, seconds, timeout=120).kinds


def test_concurrent_repeats_stay_exact_and_hit(cached):
    server, _ = cached
    hits = metric_value(server, "translation_cache_lookups_total", result="hit")
    outcomes = mixed_load(server.url, 6, seed=1)
    assert set(outcomes) == {"ok"}, outcomes
    assert metric_value(server, "translation_cache_lookups_total", result="hit") > hits


def test_glossaries_are_kept_in_the_shared_valkey(cached):
    # #33: with a shared cache, every replica sees the same glossaries (translator/api/glossary_store.py).
    import redis

    server, valkey = cached
    entries = [{"source": "Berlin", "target": "BERLIN"}]
    created = requests.post(
        f"{server.url}/glossaries",
        json={"name": "shared", "sourceLang": "en", "targetLang": "de", "entries": entries},
        timeout=30,
    )
    assert created.status_code == 201, created.text
    glossary_id = created.json()["glossaryId"]
    assert redis.Redis.from_url(valkey.url).sismember("glossaries", glossary_id)
    body = request_for("en", "de", [("1", "Welcome to Berlin!")])
    body["payload"]["glossaryId"] = glossary_id
    for _ in range(4):  # whichever API worker answers
        answer = requests.post(f"{server.url}/translation", json=body, timeout=60).json()
        assert "BERLIN" in answer["result"][0]["text"], answer
    # #44: changed in place through DeepL's v3 API, it is read anew by every worker that had it
    # (each checks the glossary's revision, a small key beside it, before using it again).
    revision = redis.Redis.from_url(valkey.url).get(f"glossary-revision:{glossary_id}")
    client = deepl.DeepLClient("any-key-when-keys-are-off", server_url=server.url)
    client.update_multilingual_glossary_dictionary(glossary_id, Dictionary("EN", "DE", {"Berlin": "BÄRLIN"}))
    assert redis.Redis.from_url(valkey.url).get(f"glossary-revision:{glossary_id}") not in (None, revision)
    for _ in range(4):
        answer = requests.post(f"{server.url}/translation", json=body, timeout=60).json()
        assert "BÄRLIN" in answer["result"][0]["text"], answer
    assert requests.delete(f"{server.url}/glossaries/{glossary_id}", timeout=30).status_code == 204
    assert not redis.Redis.from_url(valkey.url).exists(f"glossary:{glossary_id}")


def test_translation_memories_are_kept_in_the_shared_valkey_and_another_replicas_additions_seen(cached):
    # #51: memories on the glossaries' store; a segment another replica adds (here: written through
    # the store itself, as that replica's API worker would) is answered by every worker within its
    # one-second refresh.
    import asyncio

    import redis

    from translator.memory.model import Segment
    from translator.memory.store import ValkeyStore

    server, valkey = cached
    segments = [{"source": "Welcome to Berlin!", "targetLang": "de", "target": "Willkommen in Berlin (von Hand)!"}]
    created = requests.post(
        f"{server.url}/memories", json={"name": "shared", "sourceLang": "en", "segments": segments}, timeout=30
    )
    assert created.status_code == 201, created.text
    memory_id = created.json()["memoryId"]
    assert redis.Redis.from_url(valkey.url).sismember("memories", memory_id)
    body = request_for("en", "de", [("1", "Welcome to Berlin!"), ("2", "Do you speak German?")])
    body["payload"]["translationMemory"] = memory_id
    for _ in range(4):  # whichever API worker answers
        answer = requests.post(f"{server.url}/translation", json=body, timeout=60).json()["result"]
        assert answer[0]["text"] == "Willkommen in Berlin (von Hand)!" and answer[1]["origin"] == {"kind": "model"}
    asyncio.run(
        ValkeyStore(valkey.url).append(
            memory_id, [Segment("Do you speak German?", "de", "Sprechen Sie Deutsch? (Hand)")]
        )
    )
    deadline = time.monotonic() + 10
    seen = 0
    while seen < 4 and time.monotonic() < deadline:  # four answers in a row: both workers have it
        answer = requests.post(f"{server.url}/translation", json=body, timeout=60).json()["result"]
        seen = seen + 1 if answer[1]["text"] == "Sprechen Sie Deutsch? (Hand)" else 0
        time.sleep(0.3)
    assert seen == 4, answer
    assert requests.delete(f"{server.url}/memories/{memory_id}", timeout=30).status_code == 204
    assert not redis.Redis.from_url(valkey.url).exists(f"memory:{memory_id}", f"memory-chunks:{memory_id}")


def test_killing_the_cache_server_under_load_loses_no_request(cached):
    server, valkey = cached
    killer = threading.Timer(2.0, valkey.kill)
    killer.start()
    try:
        outcomes = mixed_load(server.url, 8, seed=2)
    finally:
        killer.cancel()
    assert valkey.process.poll() is not None, "the cache server was not killed during the load"
    assert set(outcomes) == {"ok"}, outcomes
    assert (
        metric_value(server, "translation_cache_lookups_total", level="shared", result="error")
        + metric_value(server, "translation_cache_lookups_total", level="shared", result="store_error")
        >= 1
    )

"""The sentence cache: hits never reach the model, failures of the shared level never fail a
translation. The shared level is a real Valkey server (tests/valkey.py)."""

from __future__ import annotations

import asyncio
import hashlib
import random

import pytest

from tests.valkey import valkey  # noqa: F401 - the fixture
from translator.contract.language_codes import NLLB, LanguageCodes
from translator.contract.protocol import Piece, PieceResult
from translator.engine.cache import LocalCache, SharedCache, TranslationCache, namespace

pytestmark = pytest.mark.server


class Counting:
    def __init__(self) -> None:
        self.lookups: dict[tuple[str, str], int] = {}

    def lookup(self, level: str, result: str, count: int) -> None:
        self.lookups[(level, result)] = self.lookups.get((level, result), 0) + count


class FakeModel:
    """Upper-cases; a text containing 'bad' fails. Records every piece it was asked for."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def __call__(self, pieces: list[Piece]) -> list[PieceResult]:
        self.asked.extend(p.text for p in pieces)
        await asyncio.sleep(0.001)
        return [PieceResult(error="boom") if "bad" in p.text else PieceResult(text=p.text.upper()) for p in pieces]


def pieces(*texts: str, source: str = "en", target: str = "fr") -> list[Piece]:
    return [Piece(text=t, source=source, target=target) for t in texts]


def run(coro):
    return asyncio.run(coro)


@pytest.mark.pure
def test_local_cache_is_bounded_and_keeps_the_recently_used():
    cache = LocalCache(2)
    cache.put("a", "A")
    cache.put("b", "B")
    assert cache.get("a") == "A"
    cache.put("c", "C")
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == ("A", None, "C")
    off = LocalCache(0)
    off.put("a", "A")
    assert off.get("a") is None


@pytest.mark.pure
def test_a_second_request_is_answered_from_the_cache_and_failures_are_not_cached():
    model = FakeModel()
    observer = Counting()
    cache = TranslationCache("ns", LocalCache(100), observer=observer)
    first = run(cache.translate(pieces("one", "two", "bad"), model))
    second = run(cache.translate(pieces("two", "one", "bad", "three"), model))
    assert [r.text for r in first] == ["ONE", "TWO", None]
    assert [(r.text, r.error) for r in second] == [("TWO", None), ("ONE", None), (None, "boom"), ("THREE", None)]
    assert model.asked == ["one", "two", "bad", "bad", "three"]
    assert observer.lookups[("local", "hit")] == 2


@pytest.mark.pure
def test_one_language_under_two_spellings_is_one_entry_and_m2m100_keys_stay_as_they_were():
    nllb = LanguageCodes(["eng_Latn", "fra_Latn", "zho_Hans", "zho_Hant"], NLLB)
    model = FakeModel()
    cache = TranslationCache("ns", LocalCache(100), language=nllb.listed_code)
    spellings = [("en", "fr"), ("eng_Latn", "fra_Latn"), ("en-Latn", "fr")]
    for source, target in spellings:
        run(cache.translate([Piece(text="one", source=source, target=target)], model))
    assert model.asked == ["one"]
    # Two scripts of one language are two entries.
    for target in ("zh-Hans", "zh-Hant", "zho_Hant"):
        run(cache.translate([Piece(text="one", source="en", target=target)], model))
    assert model.asked == ["one", "one", "one"]
    # M2M100 codes are listed as they are: a shared cache filled before keeps its entries.
    m2m = TranslationCache("ns", LocalCache(1), language=LanguageCodes(["en", "fr"]).listed_code)
    piece = Piece(text="one", source="en", target="fr")
    assert m2m.key(piece) == TranslationCache("ns", LocalCache(1)).key(piece)
    assert m2m.key(piece) == "m2m:ns:" + hashlib.sha256(b"en\x00fr\x00one").hexdigest()


def test_pieces_asking_for_alternatives_bypass_the_cache(valkey):  # noqa: F811
    async def main():
        model = FakeModel()
        cache = TranslationCache("ns-alternatives", LocalCache(100), SharedCache(valkey.url, 60, 0.5))
        await cache.translate(pieces("one", "two"), model)
        asking = [Piece(text="one", source="en", target="fr", alternatives=2), *pieces("two", "three")]
        results = await cache.translate(asking, model)
        # the same sentence without alternatives: from the cache, as stored before
        await cache.translate(pieces("one", "three"), model)
        await cache.close()
        return model.asked, results

    asked, results = run(main())
    assert [r.text for r in results] == ["ONE", "TWO", "THREE"]
    # "one" was cached, but asked with alternatives it goes to the model (and is not stored again)
    assert asked == ["one", "two", "one", "three"]


@pytest.mark.pure
def test_keys_depend_on_languages_model_and_settings():
    cache = TranslationCache(namespace("m2m:v1", {"num_beams": 5}), LocalCache(10))
    other_settings = TranslationCache(namespace("m2m:v1", {"num_beams": 1}), LocalCache(10))
    other_model = TranslationCache(namespace("m2m:v2", {"num_beams": 5}), LocalCache(10))
    [fr] = pieces("Hello.")
    [de] = pieces("Hello.", target="de")
    assert cache.key(fr) != cache.key(de)
    assert len({cache.key(fr), other_settings.key(fr), other_model.key(fr)}) == 3


def test_replicas_share_translations_through_valkey(valkey):  # noqa: F811
    async def main():
        model = FakeModel()
        first = TranslationCache("ns", LocalCache(100), SharedCache(valkey.url, 60, 0.5))
        await first.translate(pieces("shared one", "shared two"), model)
        observer = Counting()
        # Another replica: its own empty local cache, the same shared one.
        cold = TranslationCache("ns", LocalCache(100), SharedCache(valkey.url, 60, 0.5), observer)
        results = await cold.translate(pieces("shared two", "shared one"), model)
        await first.close()
        await cold.close()
        return model.asked, results, observer.lookups

    asked, results, lookups = run(main())
    assert asked == ["shared one", "shared two"]
    assert [r.text for r in results] == ["SHARED TWO", "SHARED ONE"]
    assert lookups[("shared", "hit")] == 2


def test_concurrent_requests_get_their_own_translations(valkey):  # noqa: F811
    async def main():
        model = FakeModel()
        replicas = [TranslationCache("ns", LocalCache(50), SharedCache(valkey.url, 60, 0.5)) for _ in range(3)]
        rng = random.Random(3)
        words = [f"word{i}" for i in range(80)]
        requests = [[rng.choice(words) for _ in range(rng.randint(1, 8))] for _ in range(200)]
        answers = []
        for wave in range(0, len(requests), 20):  # 20 at a time: later waves find earlier ones' work
            batch = requests[wave : wave + 20]
            answers += await asyncio.gather(*(rng.choice(replicas).translate(pieces(*r), model) for r in batch))
        for replica in replicas:
            await replica.close()
        return requests, answers, model.asked

    requests, answers, asked = run(main())
    for request, answer in zip(requests, answers, strict=True):
        assert [r.text for r in answer] == [w.upper() for w in request]
    assert len(asked) < sum(len(r) for r in requests)


def test_a_dead_shared_cache_costs_one_timeout_then_is_skipped(valkey):  # noqa: F811
    async def main():
        model = FakeModel()
        observer = Counting()
        cache = TranslationCache("ns", LocalCache(0), SharedCache(valkey.url, 60, 0.3, retry_after_s=30), observer)
        await cache.translate(pieces("before"), model)
        valkey.kill()
        after = [await cache.translate(pieces(f"after {i}"), model) for i in range(5)]
        await cache.close()
        return after, observer.lookups, cache.shared.available if cache.shared else None

    after, lookups, available = run(main())
    assert [r[0].text for r in after] == [f"AFTER {i}" for i in range(5)]
    assert lookups[("shared", "error")] == 1, lookups  # then skipped, not retried per request
    assert available is False


def test_an_unreachable_shared_cache_at_start_is_not_an_error():
    async def main():
        cache = TranslationCache("ns", LocalCache(10), SharedCache("redis://127.0.0.1:9/0", 60, 0.2))
        result = await cache.translate(pieces("hello"), FakeModel())
        await cache.close()
        return result

    assert [r.text for r in run(main())] == ["HELLO"]


def test_the_url_password_never_reaches_the_log(caplog):
    # A shared cache that fails is logged with its address, so operators can find it: read the log
    # it writes when nothing answers there, and look for the password in it.
    import logging

    from harness.servers import free_port
    from translator.engine.cache import SharedCache

    url = f"redis://user:secret@127.0.0.1:{free_port()}/0"
    cache = SharedCache(url, ttl_s=60, timeout_s=0.5)

    async def main() -> None:
        try:
            await cache.get_many(["key"])
        except Exception as exc:  # noqa: BLE001 - what the cache layer does with any failure
            cache.failed(exc)
        else:
            pytest.fail("nothing listens on that port: the lookup should have failed")
        finally:
            await cache.close()

    with caplog.at_level(logging.WARNING, logger="translator.engine.cache"):
        asyncio.run(main())
    assert "shared translation cache redis://***@127.0.0.1:" in caplog.text
    assert "secret" not in caplog.text

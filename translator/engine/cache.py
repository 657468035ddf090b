"""The sentence cache: a translation already made is not made again.

Keyed on (model, generation settings, source language, target language, sentence), the languages
by their listed code (`eng_Latn` and `en` on an NLLB checkpoint are one entry), looked up
before a piece is queued, so hits never reach the scheduler or the model. Two levels:

- in the engine process, a bounded LRU (on by default, `translation.cache.size` entries);
- optionally, one Redis or Valkey shared by every replica (`translation.cache.url`), so that a pod
  that starts cold benefits from what the others translated.

The shared level is an optimisation, never a dependency: every call to it is bounded by a short
timeout, and any failure is logged, counted, and then that level is skipped for a few seconds
(`retry_after_s`) so that a dead server does not add its timeout to every request. Translation
goes on without it. Failed pieces are never cached.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

from cachetools import LRUCache

from translator.contract.protocol import Piece, PieceResult

logger = logging.getLogger(__name__)

Submit = Callable[[list[Piece]], Awaitable[list[PieceResult]]]
# What each level reports to its observer (`lookup(level, result, count)`).
LOCAL_RESULTS = ("hit", "miss")
SHARED_RESULTS = ("hit", "miss", "error", "store_error")


class CacheObserver(Protocol):
    def lookup(self, level: str, result: str, count: int) -> None: ...


class NullCacheObserver:
    def lookup(self, level: str, result: str, count: int) -> None:
        pass


def namespace(model: str, generation: dict[str, Any]) -> str:
    """What besides the text decides a translation: the exact model and the generation settings."""
    return hashlib.sha256(json.dumps([model, generation], sort_keys=True, default=str).encode()).hexdigest()[:16]


class LocalCache:
    """A bounded least-recently-used map; size 0 keeps nothing."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: LRUCache[str, str] = LRUCache(maxsize=size)

    def get(self, key: str) -> str | None:
        return self._items.get(key)

    def put(self, key: str, value: str) -> None:
        # cachetools refuses every item ("value too large") when its maxsize is 0.
        if self.size > 0:
            self._items[key] = value

    def __len__(self) -> int:
        return len(self._items)


class SharedCache:
    """Redis or Valkey through redis-py's asyncio client; failures turn into misses."""

    def __init__(self, url: str, ttl_s: int, timeout_s: float, retry_after_s: float = 5.0) -> None:
        import redis.asyncio as redis

        self.url = url
        self.ttl_s = ttl_s
        self.retry_after_s = retry_after_s
        self._client = redis.Redis.from_url(
            url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s, decode_responses=True
        )
        self._skip_until = 0.0

    @property
    def available(self) -> bool:
        return time.monotonic() >= self._skip_until

    async def get_many(self, keys: Sequence[str]) -> list[str | None]:
        values = await self._client.mget(list(keys))
        return [v.decode() if isinstance(v, bytes) else v for v in values]

    async def put_many(self, items: Sequence[tuple[str, str]]) -> None:
        async with self._client.pipeline(transaction=False) as pipe:
            for key, value in items:
                pipe.set(key, value, ex=self.ttl_s)
            await pipe.execute()

    def failed(self, exc: BaseException) -> None:
        if self.available:
            logger.warning(
                "shared translation cache %s failed (%s: %s); going on without it for %.0f s",
                _redact(self.url),
                type(exc).__name__,
                exc,
                self.retry_after_s,
            )
        self._skip_until = time.monotonic() + self.retry_after_s

    async def close(self) -> None:
        await self._client.aclose()


class TranslationCache:
    def __init__(
        self,
        space: str,
        local: LocalCache,
        shared: SharedCache | None = None,
        observer: CacheObserver | None = None,
        language: Callable[[str], str] = str,
    ) -> None:
        """`language`: one spelling per language (LanguageCodes.listed_code), so that a sentence sent
        as `en` and as `eng_Latn` is one entry; identity on M2M100, whose keys it leaves as they were."""
        self.space = space
        self.language = language
        self.local = local
        self.shared = shared
        self.observer: CacheObserver = observer or NullCacheObserver()
        # Every count this cache can report, at 0 from the start: a rate or an alert on the shared
        # level's errors has its series before the first error.
        for level, results in (("local", LOCAL_RESULTS), ("shared", SHARED_RESULTS if shared is not None else ())):
            for result in results:
                self.observer.lookup(level, result, 0)

    def key(self, piece: Piece) -> str:
        source, target = self.language(piece.source), self.language(piece.target)
        digest = hashlib.sha256(f"{source}\x00{target}\x00{piece.text}".encode()).hexdigest()
        return f"m2m:{self.space}:{digest}"

    async def translate(self, pieces: Sequence[Piece], submit: Submit) -> list[PieceResult]:
        """Results for `pieces` in order: cached ones from the cache, the rest from `submit`.
        Pieces that ask for alternatives neither come from the cache nor go into it (it holds one
        translation a sentence)."""
        keys = [self.key(p) for p in pieces]
        cacheable = [p.alternatives == 0 for p in pieces]
        found: list[str | None] = [self.local.get(k) if c else None for k, c in zip(keys, cacheable, strict=True)]
        self._count("local", [text for text, c in zip(found, cacheable, strict=True) if c])
        missing = [i for i, text in enumerate(found) if text is None]
        lookup = [i for i in missing if cacheable[i]]
        if lookup and self.shared is not None and self.shared.available:
            missing = [i for i in missing if not cacheable[i]]
            try:
                shared = await self.shared.get_many([keys[i] for i in lookup])
            except Exception as exc:  # noqa: BLE001 - the shared cache is optional, whatever it raises
                self.shared.failed(exc)
                self.observer.lookup("shared", "error", len(lookup))
            else:
                self._count("shared", shared)
                for i, text in zip(lookup, shared, strict=True):
                    if text is not None:
                        found[i] = text
                        self.local.put(keys[i], text)
            missing = sorted(missing + [i for i in lookup if found[i] is None])
        results = [PieceResult(text=text) for text in found]
        if not missing:
            return results
        fresh = await submit([pieces[i] for i in missing])
        made = []
        for i, result in zip(missing, fresh, strict=True):
            results[i] = result
            if result.error is None and result.text is not None and cacheable[i]:
                self.local.put(keys[i], result.text)
                made.append((keys[i], result.text))
        if made and self.shared is not None and self.shared.available:
            try:
                await self.shared.put_many(made)
            except Exception as exc:  # noqa: BLE001
                self.shared.failed(exc)
                self.observer.lookup("shared", "store_error", len(made))
        return results

    def _count(self, level: str, found: Sequence[str | None]) -> None:
        hits = sum(text is not None for text in found)
        if hits:
            self.observer.lookup(level, "hit", hits)
        if len(found) - hits:
            self.observer.lookup(level, "miss", len(found) - hits)

    async def close(self) -> None:
        if self.shared is not None:
            await self.shared.close()


def _redact(url: str) -> str:
    # redis://user:password@host -> redis://***@host
    scheme, sep, rest = url.partition("://")
    return f"{scheme}{sep}***@{rest.split('@', 1)[1]}" if "@" in rest else url

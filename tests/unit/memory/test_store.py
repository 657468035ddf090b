"""Stored memories (#51): the same on files and on a real Valkey; chunks appended, never rewritten;
appends serialised across replicas; bounds checked before anything is written; a worker's index
current within its refresh and at once after its own writes."""

from __future__ import annotations

import asyncio

import pytest

from tests.valkey import valkey  # noqa: F401 - the fixture
from translator.contract.errors import PayloadTooLarge
from translator.memory.memories import Memories
from translator.memory.model import MemoryInfo, Segment, new_memory
from translator.memory.store import FileStore, MemoryStore, ValkeyStore, encode_chunk

pytestmark = pytest.mark.pure


def _store(kind: str, tmp_path, request, **bounds) -> MemoryStore:
    if kind == "file":
        return FileStore(tmp_path / "memories", **bounds)
    return ValkeyStore(request.getfixturevalue("valkey").url, **bounds)


STORES = [pytest.param("file", marks=pytest.mark.processes), pytest.param("valkey", marks=pytest.mark.server)]


@pytest.mark.parametrize("kind", STORES)
def test_a_memory_is_created_appended_to_read_listed_and_deleted(kind, tmp_path, request) -> None:
    store = _store(kind, tmp_path, request)

    async def go() -> None:
        info = new_memory("docs", "en")
        await store.create(info)
        first = [Segment("Hello", "de", "Hallo"), Segment("Bye <b>now</b>", "fr-FR", "Au revoir <b>maintenant</b>")]
        after = await store.append(info.memory_id, first)
        assert isinstance(after, MemoryInfo)
        assert (after.chunks, after.segment_count, after.target_langs) == (1, 2, ("de", "fr-FR"))
        after = await store.append(info.memory_id, [Segment("Hello", "de", "Guten Tag")])
        assert (after.chunks, after.segment_count) == (2, 3)  # type: ignore[union-attr]
        assert await store.chunks(info.memory_id, 0) == [first, [Segment("Hello", "de", "Guten Tag")]]
        assert await store.chunks(info.memory_id, 1) == [[Segment("Hello", "de", "Guten Tag")]]
        assert [m.memory_id for m in await store.list()] == [info.memory_id]
        assert (await store.get(info.memory_id)) == after
        assert await store.delete(info.memory_id)
        assert await store.get(info.memory_id) is None and await store.list() == []
        assert not await store.delete(info.memory_id)
        assert await store.append(info.memory_id, first) is None
        assert await store.get("../../etc/passwd") is None and await store.chunks("nope", 0) == []

    asyncio.run(go())


@pytest.mark.parametrize("kind", STORES)
def test_the_store_is_bounded_by_its_bytes_before_it_writes(kind, tmp_path, request) -> None:
    segments = [Segment(f"sentence number {i} of a memory", "de", f"Satz Nummer {i}") for i in range(200)]
    size = len(encode_chunk(segments))
    store = _store(kind, tmp_path, request, max_bytes=2 * size + size // 2)

    async def go() -> None:
        info = new_memory("docs", "en")
        await store.create(info)
        await store.append(info.memory_id, segments)
        await store.append(info.memory_id, segments)
        with pytest.raises(PayloadTooLarge, match="memories: bytes stored"):
            await store.append(info.memory_id, segments)
        assert (await store.get(info.memory_id)).chunks == 2  # type: ignore[union-attr]
        assert len(await store.chunks(info.memory_id, 0)) == 2

    asyncio.run(go())


@pytest.mark.parametrize("kind", STORES)
def test_concurrent_appends_lose_nothing(kind, tmp_path, request) -> None:
    # Replicas appending to one memory at once: every chunk lands, each counted once.
    store = _store(kind, tmp_path, request)

    async def go() -> None:
        info = new_memory("docs", "en")
        await store.create(info)
        await asyncio.gather(*(store.append(info.memory_id, [Segment(f"s{i}", "de", f"t{i}")]) for i in range(12)))
        final = await store.get(info.memory_id)
        assert (final.chunks, final.segment_count) == (12, 12)  # type: ignore[union-attr]
        chunks = await store.chunks(info.memory_id, 0)
        assert sorted(chunk[0].source for chunk in chunks) == sorted(f"s{i}" for i in range(12))

    asyncio.run(go())


@pytest.mark.processes
def test_a_workers_index_reads_only_new_chunks_and_sees_other_replicas_within_its_refresh(tmp_path) -> None:
    shared = FileStore(tmp_path / "memories")
    mine, theirs = Memories(shared, refresh_s=60), Memories(FileStore(tmp_path / "memories"), refresh_s=60)

    async def go() -> None:
        info = await mine.create("docs", "en")
        await mine.add(info.memory_id, [Segment("Open", "de", "Öffnen")])
        _, index = await mine.index(info.memory_id)  # type: ignore[misc]
        assert index.lookup("Open", "de").text == "Öffnen"  # type: ignore[union-attr]
        # Another replica adds a correction: this worker sees it after its refresh, not before ...
        await theirs.add(info.memory_id, [Segment("Open", "de", "Aufmachen")])
        _, same = await mine.index(info.memory_id)  # type: ignore[misc]
        assert same is index and index.lookup("Open", "de").text == "Öffnen"  # type: ignore[union-attr]
        mine.refresh_s = 0
        _, same = await mine.index(info.memory_id)  # type: ignore[misc]
        assert same is index and index.lookup("Open", "de").text == "Aufmachen"  # type: ignore[union-attr]
        assert index.segments == 2  # the first chunk was not read again
        # ... and its own writes at once.
        mine.refresh_s = 60
        await mine.add(info.memory_id, [Segment("Close", "de", "Schließen")])
        _, same = await mine.index(info.memory_id)  # type: ignore[misc]
        assert same.lookup("Close", "de").text == "Schließen"  # type: ignore[union-attr]
        await theirs.delete(info.memory_id)
        mine.refresh_s = 0
        assert await mine.index(info.memory_id) is None

    asyncio.run(go())

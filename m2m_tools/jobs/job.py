"""The one chunk / retry / resume engine behind every offline tool (bulk translation, evaluation).

A job is a list of *units* (an input file, a test direction), each an ordered list of records.
The records a unit's checkpoint lacks are cut into chunks of consecutive records; a bounded number
of chunks is in flight at once, across units, so the translation system never idles at a unit's
end; each chunk is cut into requests (per language pair, within the service's limits) that all go
out at once, the runner capping what is really in flight. A finished chunk is appended to its
unit's checkpoint (:mod:`m2m_tools.jobs.checkpoint`); when a unit's last chunk is in, the caller's
``on_unit_done`` writes its output (or scores it). Killed, a job loses only its chunks in flight.

A record that cannot be translated is *rejected* with its reason, never dropped: a line the
reader could not parse, a missing language, a text over the service's per-record limit, an
unsupported language code, or a record the system refused (a request refused with a 4xx is retried
record by record to find which).
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from m2m_tools.jobs.checkpoint import Chunk, ChunkLog, Done
from m2m_tools.jobs.progress import Progress, Summary
from m2m_tools.jobs.runner import RequestRejected, Runner, plan_requests
from translator.contract import limits
from translator.contract.errors import PayloadTooLarge, UnsupportedLanguage
from translator.text.segment import split_text

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Item:
    """A record to translate."""

    text: str
    source: str | None
    target: str | None
    # The native API's `format`: "html" for a document's units that carry inline tags.
    fmt: str = "text"


@dataclass(frozen=True)
class Invalid:
    """A record the reader could not make sense of: rejected with this reason."""

    reason: str


Entry = Item | Invalid


class Unit(Protocol):
    @property
    def name(self) -> str:
        """For people, and the checkpoint's file name (may hold "/")."""
        ...

    @property
    def key(self) -> str:
        """Everything that decides this unit's translations but the system (the job adds that)."""
        ...

    @property
    def size(self) -> int: ...

    def entries(self) -> Iterator[Entry]:
        """Every record, in order (read lazily: a unit may hold millions)."""
        ...


@dataclass(frozen=True)
class Options:
    chunk_size: int = 256
    records_per_request: int = 8
    # Chunks translated at once; None: enough to keep the runner's concurrency busy, plus one.
    chunks_in_flight: int | None = None
    # None: a progress bar only when stderr is a terminal.
    progress: bool | None = None

    def in_flight(self, concurrency: int) -> int:
        if self.chunks_in_flight is not None:
            return max(1, self.chunks_in_flight)
        requests_per_chunk = max(1, math.ceil(self.chunk_size / max(1, self.records_per_request)))
        return max(2, math.ceil(concurrency / requests_per_chunk) + 1)


@dataclass
class UnitState:
    unit: Unit
    log: ChunkLog
    done: Done

    @property
    def missing(self) -> list[range]:
        return self.done.missing(self.unit.size)


class JobError(ValueError):
    """The job's options make no sense."""


def checkpoint_key(unit: Unit, runner: Runner) -> str:
    from m2m_tools.jobs.checkpoint import digest

    return digest({"unit": unit.key, "system": runner.identity})


def run_job(
    units: Sequence[Unit],
    runner: Runner,
    state_dir: Path,
    options: Options,
    *,
    log_path: Callable[[Unit], Path] | None = None,
    on_unit_done: Callable[[UnitState], Any] | None = None,
    check_languages: Callable[[frozenset[str]], None] | None = None,
) -> Summary:
    """Translate what the checkpoints under ``state_dir`` lack; ``on_unit_done`` runs once per unit."""
    return asyncio.run(
        run_job_async(
            units,
            runner,
            state_dir,
            options,
            log_path=log_path,
            on_unit_done=on_unit_done,
            check_languages=check_languages,
        )
    )


async def run_job_async(
    units: Sequence[Unit],
    runner: Runner,
    state_dir: Path,
    options: Options,
    *,
    log_path: Callable[[Unit], Path] | None = None,
    on_unit_done: Callable[[UnitState], Any] | None = None,
    check_languages: Callable[[frozenset[str]], None] | None = None,
) -> Summary:
    if options.chunk_size < 1 or options.records_per_request < 1:
        raise JobError("--chunk-size and --records-per-request must be at least 1")
    path_of = log_path or (lambda unit: state_dir / f"{unit.name}.chunks.jsonl")
    states = []
    for unit in units:
        log = ChunkLog(path_of(unit), checkpoint_key(unit, runner), unit.size, header=_header(unit, runner))
        states.append(UnitState(unit, log, log.load()))
    summary = Summary(
        records=sum(s.unit.size for s in states),
        already_done=sum(s.done.records for s in states),
        rejects=sum(s.done.rejects for s in states),
        memory=sum(s.done.memory for s in states) if runner.memory is not None else None,
    )
    todo = [s for s in states if s.missing]
    finished = [s for s in states if not s.missing]
    if not todo:
        logger.info("all %d records already done in %s; nothing to translate", summary.records, state_dir)
    for state in finished:
        if on_unit_done is not None:
            on_unit_done(state)
    if not todo:
        return summary

    # Started only now: a finished job neither loads the model nor calls the server.
    await runner.start()
    try:
        languages = await runner.languages()
        if languages is not None and check_languages is not None:
            check_languages(languages)
        run = _Run(runner, options, languages, summary)
        await run.all(todo, on_unit_done)
    finally:
        await runner.close()
    return summary


def _header(unit: Unit, runner: Runner) -> dict[str, Any]:
    return {"unit": unit.name, "system": runner.identity}


def chunk_ranges(missing: Sequence[range], chunk_size: int) -> list[range]:
    """The missing runs of records, cut into chunks of at most ``chunk_size``."""
    return [range(s, min(s + chunk_size, gap.stop)) for gap in missing for s in range(gap.start, gap.stop, chunk_size)]


def _chunks_of(state: UnitState, chunk_size: int) -> Iterator[tuple[range, list[Entry]]]:
    """The unit's missing chunks with their entries, reading the unit once, lazily."""
    ranges = chunk_ranges(state.missing, chunk_size)
    if not ranges:
        return
    entries = state.unit.entries()
    position = 0
    for span in ranges:
        while position < span.start:
            next(entries)
            position += 1
        batch = [next(entries) for _ in span]
        position = span.stop
        yield span, batch


class _Run:
    def __init__(self, runner: Runner, options: Options, languages: frozenset[str] | None, summary: Summary) -> None:
        self.runner = runner
        self.options = options
        self.languages = languages
        self.summary = summary
        # One id per run: the "started" lines tell a resumed job what was in flight when this died.
        self.run_id = f"{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}-{uuid.uuid4().hex[:6]}"

    async def all(self, todo: list[UnitState], on_unit_done: Callable[[UnitState], Any] | None) -> None:
        slots = asyncio.Semaphore(self.options.in_flight(self.runner.concurrency))
        progress = Progress(self.summary.records, self.summary.already_done, self.options.progress)
        started = time.perf_counter()
        try:
            async with asyncio.TaskGroup() as group:
                for state in todo:
                    tasks = []
                    for span, entries in _chunks_of(state, self.options.chunk_size):
                        await slots.acquire()
                        state.log.started(span.start, len(span), self.run_id)
                        task = group.create_task(self._chunk(state, span, entries, progress))
                        task.add_done_callback(lambda _: slots.release())
                        tasks.append(task)
                    group.create_task(self._finish_unit(state, tasks, on_unit_done))
        except BaseExceptionGroup as group_error:
            # The first real failure, not the cancellations it caused.
            failures = [e for e in group_error.exceptions if not isinstance(e, asyncio.CancelledError)]
            raise (failures or list(group_error.exceptions))[0] from None
        finally:
            self.summary.seconds = time.perf_counter() - started
            progress.close()

    async def _finish_unit(
        self, state: UnitState, tasks: list[asyncio.Task[None]], on_unit_done: Callable[[UnitState], Any] | None
    ) -> None:
        await asyncio.gather(*tasks)
        state.done = state.log.load()
        if state.missing:
            raise AssertionError(f"{state.unit.name}: records {state.missing} still missing after every chunk")
        if on_unit_done is not None:
            # In a thread: writing a big output file must not stall the requests still in flight.
            await asyncio.to_thread(on_unit_done, state)

    async def _chunk(self, state: UnitState, span: range, entries: list[Entry], progress: Progress) -> None:
        began = time.perf_counter()
        texts, rejects, sentences, memory = await self.translate_entries(entries)
        chunk = Chunk(span.start, texts, rejects, sentences, time.perf_counter() - began, self.run_id, memory)
        state.log.append(chunk)
        self.summary.translated += len(span)
        self.summary.sentences += sentences
        self.summary.rejects += len(rejects)
        if self.summary.memory is not None:
            self.summary.memory += memory
        progress.advance(len(span), sentences)

    async def translate_entries(self, entries: list[Entry]) -> tuple[list[str | None], dict[int, str], int, int]:
        """Each entry's text (None: rejected), the rejects' reasons, the sentences translated and the
        records the translation memory answered."""
        texts: list[str | None] = [None] * len(entries)
        from_memory: set[int] = set()
        rejects: dict[int, str] = {}
        groups: dict[tuple[str, str, str], list[int]] = {}
        for offset, entry in enumerate(entries):
            reason = self._check(entry)
            if reason is not None:
                rejects[offset] = reason
                continue
            assert isinstance(entry, Item) and entry.source and entry.target
            groups.setdefault((entry.source, entry.target, entry.fmt), []).append(offset)

        async def send(pair: tuple[str, str, str], offsets: list[int]) -> None:
            sources = [entries[o] for o in offsets]
            try:
                got = await self.runner.translate(pair[0], pair[1], [e.text for e in sources], pair[2])  # type: ignore[union-attr]
            except RequestRejected as exc:
                if len(offsets) > 1:
                    # Which record is at fault? Each again on its own; the others go through.
                    await asyncio.gather(*(send(pair, [o]) for o in offsets))
                    return
                rejects[offsets[0]] = exc.message
                return
            for offset, translated in zip(offsets, got, strict=True):
                texts[offset] = translated.text
                if translated.memory:
                    from_memory.add(offset)

        requests = []
        for pair, offsets in groups.items():
            for span in plan_requests([entries[o].text for o in offsets], self.options.records_per_request):  # type: ignore[union-attr]
                requests.append(send(pair, offsets[span.start : span.stop]))
        await asyncio.gather(*requests)
        sentences = sum(
            len(split_text(entry.text, limits.MAX_PIECE_CHARS).pieces)
            for offset, entry in enumerate(entries)
            if isinstance(entry, Item) and texts[offset] is not None
        )
        return texts, rejects, sentences, len(from_memory)

    def _check(self, entry: Entry) -> str | None:
        """Why the service would refuse this record, in the service's own words; None if it would not."""
        if isinstance(entry, Invalid):
            return entry.reason
        if not entry.source:
            return "no source language: give fromLang on the line, or --from for the whole job"
        if not entry.target:
            return "no target language: give toLang on the line, or --to for the whole job"
        if len(entry.text) > limits.MAX_CHARS_PER_RECORD:
            return PayloadTooLarge("text: length in characters", limits.MAX_CHARS_PER_RECORD, len(entry.text)).message
        if self.languages is not None:
            for field, code in (("fromLang", entry.source), ("toLang", entry.target)):
                if code not in self.languages:
                    return UnsupportedLanguage(field, code).message
        return None

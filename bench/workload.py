"""What every system translates: fixture-corpus sentences in a fixed, mixed order of language pairs.

The engine translates identical pieces of one batch once (`translator.engine.batching.deduplicate`) and
keeps what it translated in its sentence cache, which would flatter whichever system merges or
remembers more. So no text is ever sent twice in a run: the n-th pass over the corpus prefixes each
sentence with "(n) " (the first pass sends the sentences as they are), and every measured point
draws from its own epoch (prefix "(epoch-n) "), the same for every system at that point. The
prefix never makes a sentence split in two (checked here), so one record is one sentence is one
piece for the model, in all three systems. Only the `repeated` scenario repeats, on purpose.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass

from harness.corpus import corpus_sentences
from harness.load import Job, job
from translator.contract import limits
from translator.text.segment import split_text

SEED = 20240611


@dataclass(frozen=True)
class Request:
    source: str
    target: str
    texts: tuple[str, ...]

    def job(self) -> Job:
        """The request, ids "0", "1", ...; the texts are not checked (random weights)."""
        return job(self.source, self.target, self.texts)


def corpus() -> list[tuple[str, str, str]]:
    """(source, target, text) for every corpus sentence in both directions, in a seeded mixed order."""
    items = [(src, tgt, text) for src, tgt, text, _ in corpus_sentences()]
    random.Random(SEED).shuffle(items)
    return items


def variant(text: str, n: int, epoch: int = 0) -> str:
    if epoch:
        return f"({epoch}-{n}) {text}"
    return text if n == 0 else f"({n}) {text}"


def requests(records: int, epoch: int = 0) -> Iterator[Request]:
    """The endless request stream for `records` records per request; the same on every call with
    the same `epoch`, and no text in common between epochs.

    One record: the mixed corpus order, pair by pair as it comes. Several records: one language pair
    per request (the API's contract), the pairs in turn, each request taking the next sentences of
    its pair.
    """
    items = corpus()
    if records == 1:
        for n in _count():
            for src, tgt, text in items:
                yield Request(src, tgt, (variant(text, n, epoch),))
    pools: dict[tuple[str, str], list[str]] = {}
    for src, tgt, text in items:
        pools.setdefault((src, tgt), []).append(text)
    order = list(pools)
    cursors = dict.fromkeys(order, 0)
    for k in _count():
        pair = order[k % len(order)]
        pool = pools[pair]
        start = cursors[pair]
        cursors[pair] = start + records
        texts = tuple(variant(pool[i % len(pool)], i // len(pool), epoch) for i in range(start, start + records))
        yield Request(pair[0], pair[1], texts)


def repeated_requests() -> Iterator[Request]:
    """One-record requests cycling over the corpus's sentences as they are: after the first pass
    every one has been translated before (catalogues, UI strings, retries). What the cache buys."""
    items = corpus()
    while True:
        for src, tgt, text in items:
            yield Request(src, tgt, (text,))


def sentences() -> Iterator[tuple[str, str, str]]:
    """The one-record stream as (source, target, text): what the offline limit translates."""
    for request in requests(1):
        yield request.source, request.target, request.texts[0]


def check_one_piece_per_record(sample: int = 1000) -> None:
    """Every text the bench sends is one sentence to the service's splitter."""
    for stream in (requests(1), requests(1, epoch=64016)):
        for _ in range(sample):
            [text] = next(stream).texts
            if len(split_text(text, limits.MAX_PIECE_CHARS).pieces) != 1:
                raise AssertionError(f"benchmark text splits into several pieces: {text!r}")


def epoch_of(concurrency: int, records: int) -> int:
    """The epoch of a closed-loop point: the same for every system, distinct between points."""
    return 1000 * concurrency + records


# The scenarios' epochs, beyond any closed-loop point's.
EPOCH_INTERACTIVE, EPOCH_BULK, EPOCH_OVERLOAD, EPOCH_BULK_JOB = 10_000_001, 10_000_002, 10_000_003, 10_000_004
# The libretranslate scenario's halves take the ten epochs from here.
EPOCH_LIBRETRANSLATE = 10_000_010
# The deepl scenario's, from here.
EPOCH_DEEPL = 10_000_020


def _count() -> Iterator[int]:
    n = 0
    while True:
        yield n
        n += 1

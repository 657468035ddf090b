"""One request's path through the API service: check, split, translate, rejoin.

The engine is passed in as an async callable, so this runs the same in a test with the fixture
model as behind BentoML, where the callable is the call to the engine service.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Collection, Sequence

from translator.contract import limits
from translator.contract.errors import (
    PayloadTooLarge,
    RecordFailed,
    TranslationFailed,
    TranslationIncomplete,
    UndeterminedLanguage,
    UnsupportedLanguage,
)
from translator.contract.protocol import ENGINE_FAILED, TRUNCATED, Piece, PieceResult
from translator.contract.schemas import Payload, TranslatedRecord, TranslationResult
from translator.text.langdetect import AUTO, UNDETERMINED, Detection, detector_for
from translator.text.segment import UNSPACED_LANGUAGES, Segmented, join, split_text

# Pieces that touched in the source (Japanese or Chinese sentences after 。) get a space between
# them when the target language writes with spaces, so ja→en does not come back as
# "Hello.How are you?".

EngineCall = Callable[[list[Piece]], Awaitable[Sequence[PieceResult]]]


def check_limits(payload: Payload) -> None:
    records = payload.records
    if len(records) > limits.MAX_RECORDS_PER_REQUEST:
        raise PayloadTooLarge("payload.records: number of records", limits.MAX_RECORDS_PER_REQUEST, len(records))
    total = 0
    for index, record in enumerate(records):
        if len(record.text) > limits.MAX_CHARS_PER_RECORD:
            raise PayloadTooLarge(
                f"payload.records.{index}.text: length in characters", limits.MAX_CHARS_PER_RECORD, len(record.text)
            )
        total += len(record.text)
    if total > limits.MAX_CHARS_PER_REQUEST:
        raise PayloadTooLarge("payload.records: total characters", limits.MAX_CHARS_PER_REQUEST, total)


def check_languages(payload: Payload, supported: Collection[str]) -> None:
    codes = [("payload.toLang", payload.to_lang)]
    if payload.from_lang != AUTO:
        codes.insert(0, ("payload.fromLang", payload.from_lang))
    if payload.fallback_lang is not None:
        codes.append(("payload.fallbackLang", payload.fallback_lang))
    for field, code in codes:
        if code not in supported:
            raise UnsupportedLanguage(field, code)


# Above this many characters in a request, splitting leaves the event loop (a thread hop costs
# more than splitting a small request).
SPLIT_IN_THREAD_CHARS = 20_000


async def translate_payload(payload: Payload, supported: Collection[str], engine: EngineCall) -> TranslationResult:
    check_limits(payload)
    check_languages(payload, supported)
    detected: list[str] | None = None
    if payload.from_lang == AUTO:
        sources, detected = await _detect_sources(payload, supported)
    elif payload.from_lang == payload.to_lang:
        # Nothing to translate; the model would only paraphrase, slowly.
        return TranslationResult(result=[TranslatedRecord(id=r.id, text=r.text) for r in payload.records])
    else:
        sources = [payload.from_lang] * len(payload.records)

    # A large request is split in a thread: 500,000 characters take tens of milliseconds, which on
    # the worker's event loop every other request in that worker would wait out.
    if sum(len(record.text) for record in payload.records) > SPLIT_IN_THREAD_CHARS:
        plans = await asyncio.to_thread(_plans, payload, sources)
    else:
        plans = _plans(payload, sources)
    pieces = [
        Piece(text=text, source=source, target=payload.to_lang)
        for plan, source in zip(plans, sources, strict=True)
        for text in plan.pieces
    ]
    # All of a request's pieces go in one call: the dispatcher merges them with other requests'
    # pieces and the engine sorts them by length, so splitting costs no extra round trips.
    results = list(await engine(pieces)) if pieces else []
    if len(results) != len(pieces):
        raise TranslationFailed(f"the engine answered {len(results)} pieces for {len(pieces)} sent")
    spaced = payload.to_lang not in UNSPACED_LANGUAGES
    return TranslationResult(result=_reassemble(payload, plans, results, spaced, detected))


async def _detect_sources(payload: Payload, supported: Collection[str]) -> tuple[list[str], list[str]]:
    """Each record's source language and the `detectedLang` to answer, or UndeterminedLanguage
    naming every record whose language is not determined when there is no fallback."""
    texts = [record.text for record in payload.records]
    # In a thread: the first call loads the detector's model (about a second), and scoring a
    # large request takes a while; the worker's event loop keeps serving meanwhile.
    detections = await asyncio.to_thread(_detect_all, texts, frozenset(supported))
    sources, detected, failures = [], [], []
    for index, (record, detection) in enumerate(zip(payload.records, detections, strict=True)):
        if detection is None:  # blank: nothing to detect, nothing to translate
            sources.append(payload.to_lang)
            detected.append(UNDETERMINED)
        elif detection.language is not None:
            sources.append(detection.language)
            detected.append(detection.language)
        elif payload.fallback_lang is not None:
            sources.append(payload.fallback_lang)
            detected.append(UNDETERMINED)
        else:
            failures.append((index, record.id, detection.reason or "language not determined"))
    if failures:
        raise UndeterminedLanguage(failures)
    return sources, detected


def _detect_all(texts: list[str], supported: frozenset[str]) -> list[Detection | None]:
    if not any(text.strip() for text in texts):
        return [None] * len(texts)  # the model is not loaded for a request of blank records
    detector = detector_for(supported)
    return [detector.detect(text) if text.strip() else None for text in texts]


def _plans(payload: Payload, sources: list[str]) -> list[Segmented]:
    # A record already in the target language comes back as it is, like a whole request does.
    return [
        split_text(record.text, limits.MAX_PIECE_CHARS, source) if source != payload.to_lang else _verbatim(record.text)
        for record, source in zip(payload.records, sources, strict=True)
    ]


def _verbatim(text: str) -> Segmented:
    return Segmented((text,), (False,)) if text else Segmented((), ())


def _reassemble(
    payload: Payload, plans: list[Segmented], results: list[PieceResult], spaced: bool, detected: list[str] | None
) -> list[TranslatedRecord]:
    out = []
    start = 0
    for index, (record, plan) in enumerate(zip(payload.records, plans, strict=True)):
        mine = results[start : start + len(plan.pieces)]
        start += len(plan.pieces)
        bad = next((r for r in mine if r.error is not None or r.text is None), None)
        if bad is not None:
            message = f"record {record.id!r} could not be translated: {bad.error or 'no text returned'}"
            if bad.error_kind == TRUNCATED:
                raise TranslationIncomplete(message, field=f"payload.records.{index}.text")
            if bad.error_kind == ENGINE_FAILED:
                raise TranslationFailed(message)
            raise RecordFailed(message, record.id, index)
        texts = [r.text or "" for r in mine]
        if spaced:
            texts = _space_adjacent(plan, texts)
        language = detected[index] if detected is not None else None
        out.append(TranslatedRecord(id=record.id, text=join(plan, texts), detectedLang=language))
    return out


def _space_adjacent(plan: Segmented, texts: list[str]) -> list[str]:
    spaced = list(texts)
    piece = -1
    previous_was_piece = False
    for is_piece in plan.translatable:
        if is_piece:
            piece += 1
            if previous_was_piece and spaced[piece] and spaced[piece - 1]:
                spaced[piece] = " " + spaced[piece]
        previous_was_piece = is_piece
    return spaced

"""One request's path through the API service: check, split, translate, rejoin.

The engine is passed in as an async callable, so this runs the same in a test with the fixture
model as behind BentoML, where the callable is the call to the engine service.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Collection, Sequence

from translator.contract import limits
from translator.contract.errors import (
    PayloadTooLarge,
    RecordFailed,
    TranslationFailed,
    TranslationIncomplete,
    UnsupportedLanguage,
)
from translator.contract.glossary import GlossaryEntry
from translator.contract.protocol import ENGINE_FAILED, TRUNCATED, Piece, PieceResult
from translator.contract.schemas import Payload, TranslatedRecord, TranslationResult
from translator.text.glossary import Terms
from translator.text.langdetect import AUTO, UNDETERMINED, Detection, detector_for
from translator.text.markup import Token
from translator.text.plan import Plan, Resolution, language_text, plan_record, record_tokens
from translator.text.segment import has_letters

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


# Above this many characters in a request, planning and rendering leave the event loop (a thread
# hop costs more than the work for a small request; HTML and placeholders make the work heavier).
SPLIT_IN_THREAD_CHARS = 5_000


def _same(code: str) -> str:
    return code


async def translate_payload(
    payload: Payload,
    supported: Collection[str],
    engine: EngineCall,
    terms: Terms | None = None,
    canonical: Callable[[str], str] = _same,
) -> TranslationResult:
    """`terms`: the request's glossary (translator/api/glossaries.py `request_terms`), if any;
    `canonical`: one spelling per language (LanguageCodes.listed_code), so that `en` and `eng_Latn`
    on an NLLB checkpoint are one language, never translated into themselves."""
    check_limits(payload)
    check_languages(payload, supported)
    detected: list[tuple[str, float]] | None = None
    tokens: list[list[Token]] | None = None
    if payload.from_lang == AUTO:
        sources, detected, tokens = await _detect_sources(payload, supported)
        # Detection answers listed codes (`en`); a record in the target language under another
        # spelling (`eng_Latn`) takes the target's, so the planner passes it through as it is.
        target = canonical(payload.to_lang)
        sources = [payload.to_lang if canonical(source) == target else source for source in sources]
    elif canonical(payload.from_lang) == canonical(payload.to_lang):
        # Nothing to translate; the model would only paraphrase, slowly.
        report: list[GlossaryEntry] | None = [] if payload.glossary_report else None
        return TranslationResult(
            result=[TranslatedRecord(id=r.id, text=r.text, glossary=report) for r in payload.records]
        )
    else:
        sources = [payload.from_lang] * len(payload.records)

    # A large request is split in a thread: 500,000 characters take tens of milliseconds, which on
    # the worker's event loop every other request in that worker would wait out.
    # A glossary's matcher (up to 10,000 alternatives) compiles and matches in a thread too.
    large = terms is not None or sum(len(record.text) for record in payload.records) > SPLIT_IN_THREAD_CHARS
    make = functools.partial(_plans, payload, sources, tokens, terms)
    plans = await asyncio.to_thread(make) if large else make()
    # All of a request's sentences go in one call: the scheduler merges them with other requests'
    # and sorts them by length, so splitting costs no extra round trips. A second call, for the
    # whole request, only where inline tags or placeholders could not be placed in a sentence's
    # translation (translator/text/plan.py).
    wanted = payload.alternatives
    first = await _translate(payload, sources, [plan.first_round for plan in plans], engine, wanted)
    resolve = functools.partial(_resolve_all, plans, first)
    resolutions = await asyncio.to_thread(resolve) if large else resolve()
    second = await _translate(payload, sources, [r.second_round for r in resolutions], engine)
    render = functools.partial(_render_all, payload, plans, resolutions, first, second, detected, wanted)
    return TranslationResult(result=await asyncio.to_thread(render) if large else render())


def _resolve_all(plans: list[Plan], first: list[list[PieceResult]]) -> list[Resolution]:
    return [plan.resolve([r.text or "" for r in results]) for plan, results in zip(plans, first, strict=True)]


def _render_all(
    payload: Payload,
    plans: list[Plan],
    resolutions: list[Resolution],
    first: list[list[PieceResult]],
    second: list[list[PieceResult]],
    detected: list[tuple[str, float]] | None,
    wanted: int,
) -> list[TranslatedRecord]:
    out = []
    for index, (record, plan, resolution, results, more) in enumerate(
        zip(payload.records, plans, resolutions, first, second, strict=True)
    ):
        language, confidence = detected[index] if detected is not None else (None, None)
        texts = [r.text or "" for r in more]
        text = resolution.render(texts)
        alternatives = _alternatives(plan, resolution, results, texts, text, wanted) if wanted else None
        out.append(
            TranslatedRecord(
                id=record.id,
                text=text,
                detectedLang=language,
                detectedConfidence=confidence,
                alternatives=alternatives,
                glossary=_report(plan) if payload.glossary_report else None,
            )
        )
    return out


def _report(plan: Plan) -> list[GlossaryEntry]:
    entries = plan.applied.entries
    return [GlossaryEntry(source=s, target=t if t != s else None) for s, t in entries.items()]


def _alternatives(
    plan: Plan, best: Resolution, results: list[PieceResult], second: list[str], text: str, wanted: int
) -> list[str]:
    """A record's other translations: the k-th takes each sentence's k-th alternative (its best
    where it has fewer), rendered as the best one was; distinct, best first."""
    known = dict(zip(best.second_round, second, strict=True))
    out: dict[str, None] = {}
    for k in range(wanted):
        choice = [r.alternatives[k] if len(r.alternatives) > k else r.text or "" for r in results]
        resolution = plan.resolve(choice)
        if not set(resolution.second_round) <= known.keys():
            continue  # tags or placeholders placed otherwise than in the best: not without another call
        rendered = resolution.render([known[t] for t in resolution.second_round])
        if rendered != text:
            out.setdefault(rendered, None)
    return list(out)


async def _translate(
    payload: Payload, sources: list[str], texts: list[list[str]], engine: EngineCall, alternatives: int = 0
) -> list[list[PieceResult]]:
    """Each record's texts translated, in one engine call for the whole request."""
    pieces = [
        Piece(text=text, source=source, target=payload.to_lang, alternatives=alternatives)
        for record_texts, source in zip(texts, sources, strict=True)
        for text in record_texts
    ]
    if not pieces:
        return [[] for _ in texts]
    results = list(await engine(pieces))
    if len(results) != len(pieces):
        raise TranslationFailed(f"the engine answered {len(results)} pieces for {len(pieces)} sent")
    out = []
    start = 0
    for index, (record, record_texts) in enumerate(zip(payload.records, texts, strict=True)):
        mine = results[start : start + len(record_texts)]
        start += len(record_texts)
        bad = next((r for r in mine if r.error is not None or r.text is None), None)
        if bad is not None:
            message = f"record {record.id!r} could not be translated: {bad.error or 'no text returned'}"
            if bad.error_kind == TRUNCATED:
                raise TranslationIncomplete(message, field=f"payload.records.{index}.text")
            if bad.error_kind == ENGINE_FAILED:
                raise TranslationFailed(message)
            raise RecordFailed(message, record.id, index)
        out.append(mine)
    return out


async def _detect_sources(
    payload: Payload, supported: Collection[str]
) -> tuple[list[str], list[tuple[str, float]], list[list[Token]]]:
    """Each record's source language, the (detectedLang, detectedConfidence) to answer, and its
    tokens (to plan from).

    A record with letters is never refused: one whose language is not determined (a greeting, a
    button label, an ambiguous line) is translated from `fallbackLang` when the caller gave one
    (answered 'und'), else from the language most of its request's determined records are in
    where that language is written in the record's script (a Greek word among German sentences is
    not German), else from the detector's best guess. Records without letters, or in a script none
    of the model's languages is written in, come back as they are ('und').
    """
    # In a thread: the first call loads the detector's models (a few seconds), and scoring (and
    # parsing HTML) of a large request takes a while; the worker's event loop keeps serving meanwhile.
    tokens, detections = await asyncio.to_thread(_detect_all, payload, frozenset(supported))
    majority = _majority([d for d in detections if d is not None and d.language is not None])
    sources, detected = [], []
    for detection in detections:
        if detection is None or detection.guess is None:  # no letters: nothing to translate
            sources.append(payload.to_lang)
            detected.append((UNDETERMINED, 0.0))
        elif detection.language is not None:
            sources.append(detection.language)
            detected.append((detection.language, round(detection.confidence, 3)))
        elif payload.fallback_lang is not None:
            sources.append(payload.fallback_lang)
            detected.append((UNDETERMINED, 0.0))
        elif majority is not None and majority in detection.candidates:
            sources.append(majority)
            detected.append((majority, round(detection.share(majority), 3)))
        else:
            sources.append(detection.guess)
            detected.append((detection.guess, round(detection.guess_confidence, 3)))
    return sources, detected, tokens


def _majority(detections: list[Detection]) -> str | None:
    """The language most determined records are in (ties: the higher total confidence)."""
    if not detections:
        return None
    votes: dict[str, tuple[int, float]] = {}
    for detection in detections:
        language = str(detection.language)  # determined: never None here
        count, total = votes.get(language, (0, 0.0))
        votes[language] = (count + 1, total + detection.confidence)
    return max(votes, key=votes.__getitem__)


def _detect_all(payload: Payload, supported: frozenset[str]) -> tuple[list[list[Token]], list[Detection | None]]:
    """Each record's tokens (planned from later, not parsed again) and its detection."""
    keep = payload.kept_tags()
    tokens = [record_tokens(record.text, payload.format, keep) for record in payload.records]
    texts = [language_text(record) for record in tokens]
    if not any(has_letters(text) for text in texts):
        return tokens, [None] * len(texts)  # the model is not loaded for a request without words
    detector = detector_for(supported)
    return tokens, [detector.detect(text) if has_letters(text) else None for text in texts]


def _plans(
    payload: Payload, sources: list[str], tokens: list[list[Token]] | None, terms: Terms | None = None
) -> list[Plan]:
    # A record already in the target language comes back as it is, like a whole request does.
    made: list[list[Token] | None] = list(tokens) if tokens is not None else [None] * len(payload.records)
    keep = payload.kept_tags()
    return [
        plan_record(record.text, source, limits.MAX_PIECE_CHARS, payload.to_lang, payload.format, parsed, terms, keep)
        for record, source, parsed in zip(payload.records, sources, made, strict=True)
    ]

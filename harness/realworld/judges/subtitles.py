"""WebVTT and SubRip: webvtt-py and pysrt read them; timing lines and the blocks that are not cues
come back byte for byte; a cue's tags and inline timestamps all come back."""

from __future__ import annotations

import collections
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.realworld.judges.common import blocks, decoded, decoded_original, first_difference, in_order

if TYPE_CHECKING:
    from harness.realworld import Answer, RealFile

_TAG = re.compile(r"<[^>]*>")
CUE_TIMESTAMP = re.compile(r"<\d{2}(?::\d{2}){1,2}\.\d{3}>")
_NOT_CUES = re.compile(r"(WEBVTT|NOTE|STYLE|REGION)\b")


def timing_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if "-->" in line]


def _cue_markup(texts: list[str]) -> list[tuple[int, Any, Any]]:
    return [(i, collections.Counter(_TAG.findall(t)), CUE_TIMESTAMP.findall(t)) for i, t in enumerate(texts)]


def judge_vtt(f: RealFile, original: bytes, answer: Answer) -> list[str]:
    import webvtt

    problems, text, answer_text = decoded(f, original, answer)
    if answer_text is None:
        return problems
    problems += first_difference(timing_lines(text), timing_lines(answer_text), "timing lines")
    fixed = [b for b in blocks(text) if _NOT_CUES.match(b)]
    missing = in_order(fixed, blocks(answer_text))
    if missing:
        problems.append(f"header, NOTE, STYLE or REGION blocks not given back byte for byte: {missing[0][:200]!r}")
    with tempfile.TemporaryDirectory() as folder:
        paths = []
        for name, content in (("original.vtt", text), ("answer.vtt", answer_text)):
            (Path(folder) / name).write_text(content, encoding="utf-8")
            paths.append(str(Path(folder) / name))
        try:
            a, b = webvtt.read(paths[0]), webvtt.read(paths[1])
        except Exception as exc:  # webvtt-py's MalformedFileError and what its parser raises
            return [*problems, f"webvtt-py cannot read the answer: {type(exc).__name__}: {exc}"]
    cues = [[(c.identifier, c.start, c.end) for c in v.captions] for v in (a, b)]
    problems += first_difference(cues[0], cues[1], "webvtt-py: cues (identifier, start, end)")
    problems += first_difference([s.text for s in a.styles], [s.text for s in b.styles], "webvtt-py: STYLE blocks")
    markup = [_cue_markup([c.raw_text for c in v.captions]) for v in (a, b)]
    problems += first_difference(markup[0], markup[1], "webvtt-py: cue tags and inline timestamps")
    return problems


def judge_srt(f: RealFile, original: bytes, answer: Answer) -> list[str]:
    import pysrt

    problems, text, answer_text = decoded(f, original, answer)
    if answer_text is None:
        return problems
    problems += first_difference(timing_lines(text), timing_lines(answer_text), "timing lines")
    try:
        a = pysrt.from_string(text)
        b = pysrt.from_string(answer_text, error_handling=pysrt.ERROR_RAISE)
    except Exception as exc:  # pysrt's InvalidItem and what its parser raises
        return [*problems, f"pysrt cannot read the answer: {type(exc).__name__}: {exc}"]
    items = [[(s.index, str(s.start), str(s.end), s.position) for s in x] for x in (a, b)]
    problems += first_difference(items[0], items[1], "pysrt: items (index, start, end, position)")
    markup = [_cue_markup([s.text for s in x]) for x in (a, b)]
    problems += first_difference(markup[0], markup[1], "pysrt: tags in the items")
    return problems


def texts(f: RealFile, original: bytes) -> Iterator[str]:
    """The cue blocks (a WebVTT file's header, NOTE, STYLE and REGION blocks aside)."""
    yield from (block for block in blocks(decoded_original(f, original)) if not _NOT_CUES.match(block))

"""Plain text: the same lines, each with its line ending and indentation; lines without letters and
blank lines byte for byte."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from harness.realworld.judges.common import decoded, decoded_original, letters

if TYPE_CHECKING:
    from harness.realworld import Answer, RealFile


def judge(f: RealFile, original: bytes, answer: Answer) -> list[str]:
    problems, text, answer_text = decoded(f, original, answer)
    if answer_text is None:
        return problems
    a, b = text.splitlines(keepends=True), answer_text.splitlines(keepends=True)
    if len(a) != len(b):
        return [*problems, f"{len(a)} lines in the original, {len(b)} in the answer"]
    for number, (x, y) in enumerate(zip(a, b, strict=True), 1):
        body_x, body_y = x.rstrip("\r\n"), y.rstrip("\r\n")
        if x[len(body_x) :] != y[len(body_y) :]:
            problems.append(f"line {number}: line ending {x[len(body_x) :]!r} came back as {y[len(body_y) :]!r}")
        elif not letters(x) and x != y:
            problems.append(f"line {number} has nothing to translate but changed: {x!r} -> {y!r}")
        elif (
            len(body_x) - len(body_x.lstrip())
            and body_x[: len(body_x) - len(body_x.lstrip())] != body_y[: len(body_y) - len(body_y.lstrip())]
        ):
            problems.append(f"line {number}: its indentation changed: {x[:40]!r} -> {y[:40]!r}")
        if len(problems) > 5:
            break
    return problems


def texts(f: RealFile, original: bytes) -> Iterator[str]:
    yield decoded_original(f, original)

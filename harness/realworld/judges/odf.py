"""OpenDocument (text, spreadsheet, presentation): the zip package judged part by part
(judges/zipped.py), its paragraphs and headings holding spans, spaces, tabs and page breaks; its
first member `mimetype`, stored."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.realworld.judges.zipped import XmlText, judge_package, package_texts

if TYPE_CHECKING:
    from harness.realworld import Answer, RealFile

_T = "{urn:oasis:names:tc:opendocument:xmlns:text:1.0}"

ODF = XmlText(
    ("content.xml", "styles.xml"),
    frozenset({_T + "p", _T + "h"}),
    frozenset({_T + "span"}),
    frozenset(),
    frozenset({_T + "s", _T + "tab", _T + "soft-page-break"}),
)


def judge(f: RealFile, original: bytes, answer: Answer) -> list[str]:
    return judge_package(original, answer, ODF)


texts = package_texts(ODF)

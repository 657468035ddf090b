"""EPUB: the zip package judged part by part (judges/zipped.py), each XHTML page as HTML is
(judges/html.py), the package's other XML (its OPF, its NCX) the same elements; its first member
`mimetype`, stored."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.realworld.judges.zipped import XmlText, judge_package, package_texts

if TYPE_CHECKING:
    from harness.realworld import Answer, RealFile

EPUB = XmlText(("*.xhtml", "*.html", "*.htm", "*.xml", "*.ncx", "*.opf"))


def judge(f: RealFile, original: bytes, answer: Answer) -> list[str]:
    return judge_package(original, answer, EPUB)


texts = package_texts(EPUB)

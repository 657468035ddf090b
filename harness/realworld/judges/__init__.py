"""The judges, one module per format, by file extension: `judge` finds what is wrong with a
translation by the format's own tools; `texts` finds the text in the original a translation must
cover (keys, tags, timings and what people translated aside)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from harness.realworld.judges import epub, html, json, markdown, odf, ooxml, po, subtitles, text, xliff, yaml

if TYPE_CHECKING:
    from harness.realworld import Answer, RealFile

Judge = Callable[["RealFile", bytes, "Answer"], list[str]]
Texts = Callable[["RealFile", bytes], Iterator[str]]

FORMATS: dict[str, tuple[Judge, Texts]] = {
    ".po": (po.judge, po.texts),
    ".pot": (po.judge, po.texts),
    ".xlf": (xliff.judge, xliff.texts),
    ".xliff": (xliff.judge, xliff.texts),
    ".vtt": (subtitles.judge_vtt, subtitles.texts),
    ".srt": (subtitles.judge_srt, subtitles.texts),
    ".md": (markdown.judge, markdown.texts),
    ".html": (html.judge, html.texts),
    ".htm": (html.judge, html.texts),
    ".xhtml": (html.judge, html.texts),
    ".txt": (text.judge, text.texts),
    ".json": (json.judge, json.texts),
    ".yaml": (yaml.judge, yaml.texts),
    ".yml": (yaml.judge, yaml.texts),
    ".docx": (ooxml.judge_docx, ooxml.texts_docx),
    ".pptx": (ooxml.judge_pptx, ooxml.texts_pptx),
    ".xlsx": (ooxml.judge_xlsx, ooxml.texts_xlsx),
    ".odt": (odf.judge, odf.texts),
    ".ods": (odf.judge, odf.texts),
    ".odp": (odf.judge, odf.texts),
    ".epub": (epub.judge, epub.texts),
}

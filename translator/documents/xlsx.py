"""Excel (.xlsx), a zip package: the shared strings (xl/sharedStrings.xml), where Excel keeps cells'
text, and the inline strings of the worksheets (`<c t="inlineStr"><is>`, which many exporters write
instead); rich text runs as Word's (translator/documents/runs.py), a line break in a cell's rich
text a `<br>` of its unit (it is one in the cell, not white space as in HTML). Formulas and numbers
are not text and stay; so do phonetic runs (`rPh`). Only the strings whose text changed are written
again (ooxml.Part); every other member keeps its bytes.
"""

from __future__ import annotations

import re
from typing import Any

from translator.documents.archive import Archive
from translator.documents.model import NO_OPTIONS, BadDocument, Document, ReadOptions, Unit
from translator.documents.ooxml import Part, parse_xml
from translator.documents.runs import Names, Stretch, stretches

_S = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
SHARED = Names(f"{_S}si", f"{_S}r", f"{_S}rPr", f"{_S}t")
INLINE = Names(f"{_S}is", f"{_S}r", f"{_S}rPr", f"{_S}t")
_WORKSHEET = re.compile(r"^xl/worksheets/[^/]+\.xml$")
XLSX_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


def read_xlsx(data: bytes, options: ReadOptions = NO_OPTIONS) -> Document:
    archive = Archive(data, "xlsx")
    if not any(n.startswith("xl/") for n in archive.names()):
        raise BadDocument("this zip has no xl/ folder: it is not an .xlsx workbook")
    parts: dict[str, tuple[bytes, Any, Names]] = {}
    for name in archive.names():
        if name == "xl/sharedStrings.xml":
            parts[name] = (archive.read(name), None, SHARED)
        elif _WORKSHEET.match(name):
            original = archive.read(name)
            # A sheet of numbers and shared strings only (most are) is not parsed at all.
            if b"inlineStr" in original:
                parts[name] = (original, None, INLINE)
    # (part, the element written again: a string's <t> or a rich string's <si>/<is>, its stretch)
    strings: list[tuple[str, Any, Stretch | None]] = []
    for name, (original, _, names) in parts.items():
        root = parse_xml(original, name)
        parts[name] = (original, root, names)
        strings += [(name, t, None) for p in root.iter(names.paragraph) for t in p.findall(names.text)]
        strings += [(name, stretch.paragraph, stretch) for stretch in stretches(root, names)]
    strings = [(n, e, s) for n, e, s in strings if s is not None or (e.text or "").strip()]
    units = [Unit(element.text or "") if stretch is None else _cell_unit(stretch) for _, element, stretch in strings]

    def write(translations: list[str]) -> bytes:
        changed = [
            (name, element, stretch, unit, translation)
            for (name, element, stretch), unit, translation in zip(strings, units, translations, strict=True)
            if translation != unit.text
        ]
        if not changed:
            return data
        # Only the strings whose text changed are written again, in the parts that hold them.
        elements: dict[str, list[Any]] = {}
        for name, element, _, _, _ in changed:
            elements.setdefault(name, []).append(element)
        written = {name: Part(parts[name][0], parts[name][1], found) for name, found in elements.items()}
        for _, element, stretch, unit, translation in changed:
            if stretch is None:
                element.text = translation
            else:
                stretch.write(translation.replace("<br>", "\n") if unit.fmt == "html" else translation, unit.fmt)
        return archive.write({name: part.write() for name, part in written.items()})

    return Document(units, write, XLSX_TYPE)


def _cell_unit(stretch: Stretch) -> Unit:
    """A rich string's unit: a line break in it is the cell's, a `<br>` (HTML would read it as a space)."""
    unit = stretch.unit()
    return Unit(unit.text.replace("\n", "<br>"), "html") if unit.fmt == "html" else unit

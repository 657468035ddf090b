"""Zip packages (OOXML, OpenDocument, EPUB), what their judges share: the same members in the same
order, every member but the parts with text byte for byte, those parts the same XML but their text
(a paragraph's runs compared as the set of their formatting: runs of one format may merge), and
the format's own library reading the answer as it reads the original."""

from __future__ import annotations

import fnmatch
import io
import re
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harness.realworld.judges.common import first_difference, local_name, multiset_difference, xml_root
from harness.realworld.judges.html import judge_trees

if TYPE_CHECKING:
    from harness.realworld import Answer, RealFile


@dataclass(frozen=True)
class XmlText:
    """How a format's XML holds text: the parts that hold it, its paragraphs, its runs (compared per
    paragraph as a set of their formatting: the properties child, or the run's own attributes), and
    the elements that are text (their content ignored)."""

    parts: tuple[str, ...]
    paragraphs: frozenset[str] = frozenset()
    runs: frozenset[str] = frozenset()
    properties: frozenset[str] = frozenset()
    text: frozenset[str] = frozenset()

    def holds_text(self, name: str) -> bool:
        return any(fnmatch.fnmatch(name, p) for p in self.parts) and not name.startswith("META-INF/")


# Attributes that say nothing about the text's form: revision ids, spelling marks.
_IGNORED_ATTRIBUTE = re.compile(r"^(rsid\w*|dirty|err|smtClean)$")


def _attributes(element: Any) -> dict[str, str]:
    return {local_name(k): v for k, v in element.attrib.items() if not _IGNORED_ATTRIBUTE.match(local_name(k))}


def _name(element: Any) -> str:
    """prefix:name, as the file writes it (shorter in a message than lxml's {namespace}name)."""
    return f"{element.prefix}:{local_name(element.tag)}" if element.prefix else local_name(element.tag)


def _xml_shape(root: Any, kind: XmlText) -> tuple[list[tuple[Any, ...]], list[set[str]]]:
    from lxml import etree

    skeleton: list[tuple[Any, ...]] = []
    formats: dict[Any, set[str]] = {}
    for element in root.iter():
        if not isinstance(element.tag, str):
            continue
        ancestors = list(element.iterancestors())
        if any(a.tag in kind.text or a.tag in kind.properties for a in ancestors) or element.tag in kind.text:
            continue
        if element.tag in kind.paragraphs:
            formats[element] = set()
        if element.tag in kind.runs:
            paragraph = next((a for a in ancestors if a.tag in kind.paragraphs), None)
            found = next((c for c in element if c.tag in kind.properties), None)
            shape = _attributes(element) if found is None else etree.tostring(_stripped(found))
            formats.setdefault(paragraph, set()).add(repr(shape))
            continue
        if element.tag in kind.properties:
            continue
        skeleton.append((_name(element), _attributes(element)))
    return skeleton, list(formats.values())


def _stripped(element: Any) -> Any:
    from copy import deepcopy

    copy = deepcopy(element)
    for e in copy.iter():
        for k in [k for k in e.attrib if _IGNORED_ATTRIBUTE.match(local_name(k))]:
            del e.attrib[k]
    return copy


def judge_package(
    original: bytes,
    answer: Answer,
    kind: XmlText,
    outline: Callable[[bytes], list[Any]] | None = None,
    translated: Callable[[zipfile.ZipFile, zipfile.ZipFile], list[str]] | None = None,
) -> list[str]:
    """The package judged as `kind` holds its text; `outline` (its docstring names the library)
    reads both files; `translated` finds text left as it was, where the answer is not the original."""
    from lxml import etree

    try:
        a, b = zipfile.ZipFile(io.BytesIO(original)), zipfile.ZipFile(io.BytesIO(answer.data))
    except zipfile.BadZipFile as exc:
        return [f"zipfile: the answer is not a zip: {exc}"]
    problems = first_difference(a.namelist(), b.namelist(), "zip members")
    if problems:
        return problems
    # OpenDocument and EPUB readers find the format in a first member "mimetype", stored.
    if "mimetype" in a.namelist() and a.infolist()[0].filename == "mimetype":
        stored = [z.getinfo("mimetype").compress_type == zipfile.ZIP_STORED for z in (a, b)]
        if b.infolist()[0].filename != "mimetype" or stored[0] and not stored[1]:
            problems.append("zip: mimetype is no longer the first member, stored")
    for name in a.namelist():
        x, y = a.read(name), b.read(name)
        if x == y:
            continue
        if not kind.holds_text(name):
            problems.append(f"zip: {name} changed, and it holds no text the service translates")
            continue
        try:
            root_a, root_b = xml_root(x), xml_root(y)
        except etree.XMLSyntaxError as exc:
            problems.append(f"lxml: {name} is no longer XML: {exc}")
            continue
        if local_name(root_a.tag) == "html":
            problems += judge_trees(root_a, root_b, f"{name}: ")
            continue
        (skeleton_a, formats_a), (skeleton_b, formats_b) = _xml_shape(root_a, kind), _xml_shape(root_b, kind)
        problems += first_difference(skeleton_a, skeleton_b, f"lxml: {name}: elements (runs and text aside)")
        problems += multiset_difference(
            [sorted(x) for x in formats_a], [sorted(x) for x in formats_b], f"lxml: {name}: the run formats"
        )
    if translated is not None and original != answer.data:  # the same bytes: no unit found, judged apart
        problems += translated(a, b)
    if outline is not None:
        try:
            outline_a = outline(original)
        except Exception:  # a file the library itself cannot read has no outline to keep
            return problems
        try:
            outline_b = outline(answer.data)
        except Exception as exc:  # whatever the library raises on a broken document
            return [*problems, f"{outline.__doc__}: cannot read the answer: {type(exc).__name__}: {exc}"]
        problems += first_difference(outline_a, outline_b, str(outline.__doc__))
    return problems


def package_texts(kind: XmlText) -> Callable[[RealFile, bytes], Iterator[str]]:
    """The text of the parts that hold it: each text element's, or each page body's."""

    def texts(f: RealFile, original: bytes) -> Iterator[str]:
        from lxml import etree

        with zipfile.ZipFile(io.BytesIO(original)) as package:
            for name in package.namelist():
                if not kind.holds_text(name):
                    continue
                try:
                    root = xml_root(package.read(name))
                except etree.XMLSyntaxError:
                    continue
                for e in root.iter():
                    if e.tag in kind.text or local_name(e.tag) == "body":
                        yield "".join(e.itertext())

    return texts

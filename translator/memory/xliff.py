"""XLIFF 1.x and 2.0 read into segments: the targets people translated or approved.

A target is taken where its unit is approved (1.x `approved="yes"`), or where its state (1.x's on
`<target>`, 2.0's on `<segment>`) is absent or says it is done: 1.x `translated`, `signed-off`,
`final`; 2.0 `translated`, `reviewed`, `final` (an absent 2.0 state is `initial` by the standard,
but a target is there: taken, as translator/documents/xliff.py takes it).

Left out, each with a note: states asking for work (`new`, `needs-translation`, `initial`, 1.x's
`needs-review-*`...), a machine's suggestion (1.2's `state-qualifier="mt-suggestion"`, the 2.0
`subState` this service writes on its own targets), units marked `translate="no"`, a PO header
(translate-toolkit's po2xliff writes it as a unit), empty targets, and units whose source or
target holds inline elements (`<g>`, `<x/>`, `<ph>`, `<bpt>`, 2.0's `<pc>`, `<ph/>`...): their
markup is XLIFF's own, ids standing for codes kept elsewhere in the file, which no request to
translate a text holds (the document reader sends them to the model as spans of its own:
translator/documents/xliff_inline.py).
A 1.x unit's `<alt-trans>` (a memory's suggestions) is not read.

Languages: 1.x `<file source-language target-language>` (per file), 2.0 `<xliff srcLang trgLang>`;
a client's source language must agree with the file's, and its target language where the file
names one; where the file names none, the client's is taken.
"""

from __future__ import annotations

from typing import Any

from translator.contract.errors import InvalidRequest
from translator.memory.model import Imported
from translator.memory.reading import Collector, local_name, refused, same_language, xml_events

_DONE_1 = frozenset({"translated", "signed-off", "final"})
_DONE_2 = frozenset({"translated", "reviewed", "final"})
# The subState translator/documents/xliff.py writes on a 2.0 segment it filled.
_MACHINE_SUBSTATE = "m2m:mt-suggestion"


def read_xliff(data: bytes, source_lang: str | None, target_lang: str | None) -> Imported:
    collected: Collector | None = None
    version = ""
    languages: tuple[str, str] = ("", "")
    for event, element in xml_events(data, "XLIFF"):
        name = local_name(element)
        if not version:
            version = _version(element)
        if event == "start":
            if (name == "file" and version == "1") or (name == "xliff" and version == "2"):
                attributes = ("source-language", "target-language") if version == "1" else ("srcLang", "trgLang")
                languages = _languages(element, attributes, source_lang, target_lang)
                if collected is None:
                    collected = Collector(languages[0], "XLIFF")
                elif not same_language(languages[0], collected.imported.source_lang):
                    raise refused(
                        f"the <file> at line {element.sourceline} of this XLIFF file is from {languages[0]}, "
                        f"the file's first from {collected.imported.source_lang}: a memory has one source language"
                    )
            continue
        if collected is not None and name == ("trans-unit" if version == "1" else "segment"):
            _read_unit(element, version, languages[1], collected)
        if name in ("trans-unit", "unit"):
            element.clear(keep_tail=True)
            while element.getprevious() is not None:
                del element.getparent()[0]
    if collected is None:
        raise refused("this XLIFF file has no <file>: it holds no translations")
    return collected.imported


def _version(root: Any) -> str:
    namespace = root.tag[1:].partition("}")[0] if root.tag.startswith("{") else ""
    if local_name(root) != "xliff":
        raise refused(f"this file's root element is <{local_name(root)}>, not an XLIFF document's <xliff>")
    stated = root.get("version") or namespace.rpartition(":")[2]
    if stated.startswith("2."):
        return "2"
    if stated.startswith("1."):
        return "1"
    raise refused(f"this XLIFF file's version ({stated!r}) is not 1.x or 2.0")


def _languages(
    element: Any, attributes: tuple[str, str], client_source: str | None, client_target: str | None
) -> tuple[str, str]:
    source, target = (element.get(attribute, "").strip() for attribute in attributes)
    where = f"<{local_name(element)}> at line {element.sourceline} of this XLIFF file"
    if client_source and source and not same_language(source, client_source):
        raise InvalidRequest(f"sourceLang: {client_source!r}, but the {where} is from {source!r} ({attributes[0]})")
    if client_target and target and not same_language(target, client_target):
        raise InvalidRequest(f"targetLang: {client_target!r}, but the {where} is to {target!r} ({attributes[1]})")
    source, target = client_source or source, target or client_target or ""
    if not source:
        raise InvalidRequest(f"sourceLang: required: the {where} names no {attributes[0]}")
    if not target:
        raise InvalidRequest(f"targetLang: required: the {where} names no {attributes[1]}")
    return source, target


def _child(element: Any, name: str) -> Any:
    return next((child for child in element if local_name(child) == name), None)


def _read_unit(unit: Any, version: str, target_lang: str, collected: Collector) -> None:
    """A 1.x `<trans-unit>` or a 2.0 `<segment>`."""
    where = f"line {unit.sourceline}"
    source, target = _child(unit, "source"), _child(unit, "target")
    if source is None:
        return
    why = _left_out(unit, version, target)
    if why is None and (len(source) or (target is not None and len(target))):
        why = "inline elements (their codes are in the file's skeleton, not in its text)"
    if why is not None:
        collected.skip(f"{where}: {why}")
        return
    collected.add(where, source.text or "", target_lang, target.text or "")


def _left_out(unit: Any, version: str, target: Any) -> str | None:
    """Why a unit's target is not a person's finished translation, or None where it is."""
    for element in (unit, *unit.iterancestors()):
        if element.get("translate") == "no":
            return 'translate="no"'
    if unit.get("restype") == "x-gettext-domain-header":  # a PO file's header, as po2xliff writes it
        return "a PO header"
    if target is None:
        return "no target"
    if version == "1":
        state, approved = target.get("state"), unit.get("approved") == "yes"
        if approved:
            return None
        if target.get("state-qualifier") == "mt-suggestion":
            return "a machine translation's suggestion (state-qualifier)"
        return None if state is None or state in _DONE_1 else f'state="{state}"'
    state = unit.get("state")
    if unit.get("subState") == _MACHINE_SUBSTATE:
        return f'a machine translation (subState="{_MACHINE_SUBSTATE}")'
    return None if state is None or state in _DONE_2 else f'state="{state}"'

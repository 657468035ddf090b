"""XLIFF (1.0, 1.1, 1.2, 2.0), read by lxml: the same tree, but for the targets; a target a person
wrote comes back as it was, every plain-text source without one gets one, and a target written
for a source with inline elements holds the same elements."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from harness.realworld.judges.common import first_difference, letters, local_name, xml_root

if TYPE_CHECKING:
    from harness.realworld import Answer, RealFile

_TARGET_ATTRIBUTES = {"target-language", "trgLang", "state", "subState"}


def _translate_no(element: Any) -> bool:
    return any(e.get("translate") == "no" for e in (element, *element.iterancestors()))


def judge(f: RealFile, original: bytes, answer: Answer) -> list[str]:
    from lxml import etree

    try:
        a, b = xml_root(original), xml_root(answer.data)
    except etree.XMLSyntaxError as exc:
        return [f"lxml cannot read the answer: {exc}"]
    problems = []
    if (a.tag, a.get("version")) != (b.tag, b.get("version")):
        problems.append(
            f"lxml: root {a.tag} version {a.get('version')} came back as {b.tag} version {b.get('version')}"
        )
    units_a = [u for u in a.iter() if local_name(u.tag) in ("trans-unit", "segment")]
    units_b = [u for u in b.iter() if local_name(u.tag) in ("trans-unit", "segment")]
    kept = []
    for x, y in zip(units_a, units_b, strict=False):
        target_a = next((c for c in x if local_name(c.tag) == "target"), None)
        target_b = next((c for c in y if local_name(c.tag) == "target"), None)
        source = next((c for c in x if local_name(c.tag) == "source"), None)
        asks = (target_a is not None and target_a.get("state") in ("new", "needs-translation", "initial")) or (
            x.get("state") == "initial"
        )
        if target_a is not None and (target_a.text or len(target_a)) and not asks:
            if target_b is None or etree.tostring(target_a) != etree.tostring(target_b):
                kept.append(x.get("id") or (source.text or "")[:40] if source is not None else "?")
        elif (
            target_a is None
            and source is not None
            and not len(source)
            and letters(source.text or "")
            and not _translate_no(x)
            and (target_b is None or not (target_b.text or "").strip())
        ):
            problems.append(f"unit {x.get('id')!r}: no translation for its plain-text source {source.text[:60]!r}")
        elif target_a is None and source is not None and len(source) and target_b is not None:
            # A source with inline elements: its target holds each of them once, as the source has it.
            if _inline(source) != _inline(target_b):
                problems.append(
                    f"unit {x.get('id')!r}: its target's inline elements {_inline(target_b)} are not its "
                    f"source's {_inline(source)}"
                )
    if kept:
        problems.append(f"lxml: {len(kept)} existing targets changed, e.g. {kept[:3]}")
    problems += first_difference(_shape(a), _shape(b), "lxml: elements (targets aside)")
    return problems


def _inline(element: Any) -> list[tuple[str, list[tuple[str, str]]]]:
    """The inline elements inside `element`, each its name and attributes, in no particular order."""
    from lxml import etree

    inside = [e for e in element.iterdescendants() if isinstance(e.tag, str)]
    return sorted((etree.QName(e).localname, sorted(e.attrib.items())) for e in inside)


def _shape(root: Any) -> list[tuple[Any, ...]]:
    """Every element but targets, with its attributes (those the service sets aside) and text."""
    out = []
    for element in root.iter():
        if any(local_name(e.tag) == "target" for e in (element, *element.iterancestors())):
            continue
        attributes = {k: v for k, v in element.attrib.items() if local_name(k) not in _TARGET_ATTRIBUTES}
        text = element.text if isinstance(element.tag, str) else str(element)
        out.append((element.tag if isinstance(element.tag, str) else "#comment", attributes, text))
    return out


def texts(f: RealFile, original: bytes) -> Iterator[str]:
    """The plain-text sources of units with no target, not marked translate="no"."""
    for unit in xml_root(original).iter():
        children = {local_name(c.tag): c for c in unit} if local_name(unit.tag) in ("trans-unit", "segment") else {}
        source = children.get("source")
        if source is not None and "target" not in children and not len(source) and not _translate_no(unit):
            yield source.text or ""

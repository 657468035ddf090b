"""Localization files: JSON and YAML i18n files (gettext's PO/POT: po.py; XLIFF: xliff.py).

Only the translatable strings change; keys, contexts, comments, flags (`fuzzy` included) and
placeholders stay (placeholders are kept by the text path, translator/text/placeholders.py).
- JSON: every string value, at any depth, replaced where it stands; keys, numbers, escapes and the
  layout come back byte for byte.
- YAML (Rails, Symfony, i18next... locale files): every string value, at any depth, replaced where
  it stands in the file, so that keys, comments, anchors, other scalars and the layout come back
  byte for byte; a value keeps its quoting style (plain, single, double quoted, or a `|`/`>` block)
  where the translation can be written in it, else it is double quoted. Keys are never translated,
  the top-level locale key (`en:`) included: rename it to the target's where the framework wants.
"""

from __future__ import annotations

import json
import re
from typing import Any

from translator.documents.model import BadDocument, Document, Unit, decode_text

# A string token of valid JSON (outside strings there are no quotes), and whether a `:` makes it a key.
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"(?P<key>(?=\s*:))?')


def read_json(data: bytes) -> Document:
    text, encoding = decode_text(data, "JSON")
    try:
        json.loads(text)
    except ValueError as exc:
        raise BadDocument(f"file: not valid JSON ({str(exc)[:200]})") from exc
    # Each string value where it stands, so that keys, numbers, escapes and layout come back byte
    # for byte, and a value left as it was too.
    values = [
        (match.start(), match.end(), json.loads(match.group()))
        for match in _JSON_STRING.finditer(text)
        if match.group("key") is None
    ]
    values = [value for value in values if value[2].strip()]

    def write(translations: list[str]) -> bytes:
        out, last = [], 0
        for (start, end, value), translation in zip(values, translations, strict=True):
            if translation != value:
                original = text[start:end]
                # \u escapes where the file writes its non-ASCII text so.
                escaped = original.isascii() and "\\u" in original
                out += [text[last:start], json.dumps(translation, ensure_ascii=escaped)]
                last = end
        out.append(text[last:])
        return "".join(out).encode(encoding)

    return Document([Unit(value) for _, _, value in values], write, "application/json")


# An anchor (`&name`) or a tag (`!!str`) before a scalar: kept in front of its translation.
_PROPERTIES = re.compile(r"^((?:[&!]\S*\s+)*)")
_STR = "tag:yaml.org,2002:str"


def read_yaml(data: bytes) -> Document:
    import yaml

    text, encoding = decode_text(data, "YAML")
    try:
        roots = list(yaml.compose_all(text, Loader=yaml.SafeLoader))
    except yaml.YAMLError as exc:
        raise BadDocument(f"file: not valid YAML ({str(exc)[:200]})") from exc
    # By identity: an aliased value is translated once, where it is anchored. With whether it stands in
    # a flow collection (`[a, b]`), where a plain scalar cannot hold `,[]{}`.
    scalars: dict[int, tuple[Any, bool]] = {}
    # Collections walked, by identity: an alias is the node it names, so a billion laughs (nine
    # levels of nine aliases to the level before) is a few nodes walked once each, not 9**9.
    walked: set[int] = set()

    def walk(node: Any, flow: bool) -> None:
        if node is None or id(node) in scalars or id(node) in walked:
            return
        if isinstance(node, yaml.CollectionNode):
            walked.add(id(node))
            inner = flow or bool(node.flow_style)
            for item in node.value:
                walk(item[1] if isinstance(node, yaml.MappingNode) else item, inner)  # keys never
        elif node.tag == _STR and node.value.strip():
            scalars[id(node)] = (node, flow)

    for root in roots:
        walk(root, False)
    nodes = sorted(scalars.values(), key=lambda found: found[0].start_mark.index)

    def write(translations: list[str]) -> bytes:
        out, last = [], 0
        for (node, flow), translation in zip(nodes, translations, strict=True):
            start, end = node.start_mark.index, node.end_mark.index
            original = text[start:end]
            properties = _PROPERTIES.match(original).group(1)  # type: ignore[union-attr]
            body = original[len(properties) :]
            stripped = body.rstrip()
            # Unchanged (a value of placeholders only, say): as it stood, folding and all.
            written = stripped if translation == node.value else _yaml_scalar(translation, node.style, stripped, flow)
            out += [text[last:start], properties, written, body[len(stripped) :]]
            last = end
        out.append(text[last:])
        return "".join(out).encode(encoding)

    return Document([Unit(node.value) for node, _ in nodes], write, "application/yaml")


def _yaml_scalar(value: str, style: str | None, original: str, flow: bool) -> str:
    """`value` written in `style` (PyYAML's: None plain, `'`, `"`, `|`, `>`) where it reads back as
    `value` in it, else double quoted (JSON's escapes are YAML's). `original`: the scalar as it stood;
    `flow`: inside a flow collection."""
    if style in ("|", ">"):
        eol = "\r\n" if "\r\n" in original else "\n"  # the file's own line ending (Windows-edited files)
        header, _, block = original.partition(eol)
        lines = block.split(eol)
        indent = next((line[: len(line) - len(line.lstrip(" "))] for line in lines if line.strip()), "  ")
        written = header + "".join(f"{eol}{indent}{line}" if line else eol for line in value.rstrip("\n").split("\n"))
        if _reads_back(f"key: {written}\n", value):
            return written
    elif style == "'" and "\n" not in value:
        return "'" + value.replace("'", "''") + "'"
    elif style is None and "\n" not in value and not (flow and set(value) & set(",[]{}")):
        if _reads_back(f"key: {value}", value):
            return value
    return json.dumps(value, ensure_ascii=False)


def _reads_back(document: str, value: str) -> bool:
    import yaml

    try:
        return yaml.safe_load(document) == {"key": value}
    except yaml.YAMLError:
        return False

"""YAML localization files (Rails, Symfony, i18next, Hexo themes...; translator/documents/i18n.py:
what every catalog format shares).

Every string value, at any depth, replaced where it stands in the file, so that keys, comments,
anchors, other scalars and the layout come back byte for byte; a value keeps its quoting style
(plain, single, double quoted, or a `|`/`>` block) where the translation can be written in it, else
it is double quoted. Keys are never translated; a Rails locale file's one top-level key (`en:`)
names the target's locale once translated. ICU messages have each case translated.
"""

from __future__ import annotations

import json
import re
from typing import Any

from translator.documents.encoding import decode_text
from translator.documents.i18n import is_locale
from translator.documents.model import ICU_KEPT, NO_OPTIONS, BadDocument, Document, ReadOptions, Unit
from translator.text.inline import analyse

_PROPERTIES = re.compile(r"^((?:[&!]\S*\s+)*)")
_STR = "tag:yaml.org,2002:str"


def read_yaml(data: bytes, options: ReadOptions = NO_OPTIONS) -> Document:
    import yaml

    text, encoding = decode_text(data, "YAML")
    try:
        roots = list(yaml.compose_all(text, Loader=yaml.SafeLoader))
    except yaml.YAMLError as exc:
        raise BadDocument(f"not valid YAML ({str(exc)[:200]})") from exc
    # By identity: an aliased value is translated once, where it is anchored. With whether it stands in
    # a flow collection (`[a, b]`), where a plain scalar cannot hold `,[]{}`.
    scalars: dict[int, tuple[Any, bool]] = {}
    # Collections walked, by identity: an alias is the node it names, so a billion laughs (nine
    # levels of nine aliases to the level before) is a few nodes walked once each, not 9**9.
    walked: set[int] = set()

    def walk(node: Any, flow: bool, key: str | None, parent: str | None) -> None:
        """`key`: the key whose value `node` is (or holds it, in a sequence); `parent`: the one before."""
        if node is None or id(node) in scalars or id(node) in walked:
            return
        if isinstance(node, yaml.MappingNode):
            walked.add(id(node))
            for name, value in node.value:  # keys never
                walk(value, flow or bool(node.flow_style), _scalar(name), key)
        elif isinstance(node, yaml.SequenceNode):
            walked.add(id(node))
            for item in node.value:
                walk(item, flow or bool(node.flow_style), key, parent)
        elif node.tag == _STR and node.value.strip() and not is_locale(node.value, key, parent):
            scalars[id(node)] = (node, flow)

    for root in roots:
        walk(root, False, None, None)
    nodes = sorted(scalars.values(), key=lambda found: found[0].start_mark.index)
    analysed = analyse([node.value for node, _ in nodes])

    def write(unit_translations: list[str]) -> bytes:
        out, last = [], 0
        document.kept.clear()
        if locale_key is not None:  # before every value: it opens the file
            key_start, key_end = locale_key.start_mark.index, locale_key.end_mark.index
            out, last = (
                [text[:key_start], _yaml_scalar(options.target, locale_key.style, text[key_start:key_end], False)],
                key_end,
            )
        for (node, flow), translation in zip(nodes, analysed.fold(unit_translations), strict=True):
            # An ICU message whose arguments did not come back: as it was.
            if translation is None:
                document.keep(f"line {node.start_mark.line + 1}", ICU_KEPT)
                translation = node.value
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
        return encoding.bom + "".join(out).encode(encoding.codec)

    locale_key = _rails_locale_key(roots, options.target)
    document = Document([Unit(*piece) for piece in analysed.pieces], write, "application/yaml")
    return document


# A Rails (Ruby i18n) locale file holds its strings under one top-level key, the locale's (`en:`),
# which Rails loads as that locale: translated, it must name the target's, or the French file
# overrides English. A language code of two letters, with a script or region (`pt-BR`, `zh_Hant`);
# three-letter ones are left alone (`app:` is a key, and Apma's code).
_RAILS_LOCALE = re.compile(r"[a-z]{2}(?:[-_][A-Za-z0-9]{2,8})*")


def _rails_locale_key(roots: list[Any], target: str) -> Any:
    """The key node to rename to `target` (None where the file is not shaped so, or no target)."""
    import langcodes
    import yaml

    if not target or len(roots) != 1 or not isinstance(roots[0], yaml.MappingNode) or len(roots[0].value) != 1:
        return None
    key, value = roots[0].value[0]
    if not (isinstance(key, yaml.ScalarNode) and key.tag == _STR and isinstance(value, yaml.MappingNode)):
        return None
    if not _RAILS_LOCALE.fullmatch(key.value) or not langcodes.tag_is_valid(key.value.replace("_", "-")):
        return None
    return key if key.value != target else None


def _scalar(node: Any) -> str | None:
    import yaml

    return node.value if isinstance(node, yaml.ScalarNode) else None


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

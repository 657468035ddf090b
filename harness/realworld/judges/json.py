"""JSON: the same tree (keys, order, types, every value but strings), a value under a locale key
unchanged, the text outside strings byte for byte; and what the catalog formats inside JSON keep:
Docusaurus' `|`-separated plural forms, a formatjs message's code, a gettext catalog's header and
the translations people made."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from harness.realworld.judges.common import LOCALE_KEY, LOCALE_VALUE, decoded, decoded_original, first_difference

if TYPE_CHECKING:
    from harness.realworld import Answer, RealFile

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


def _same_tree(a: Any, b: Any, path: str, problems: list[str], key: str = "") -> None:
    if len(problems) > 5:
        return
    if isinstance(a, dict):
        if not isinstance(b, dict) or list(a) != list(b):
            problems.append(
                f"{path or '/'}: keys {list(a)[:8]} came back as {list(b)[:8] if isinstance(b, dict) else b!r}"
            )
            return
        for k in a:
            _same_tree(a[k], b[k], f"{path}/{k}", problems, str(k))
    elif isinstance(a, list):
        if not isinstance(b, list) or len(a) != len(b):
            problems.append(f"{path}: a list of {len(a)} came back as {str(b)[:80]}")
            return
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _same_tree(x, y, f"{path}/{i}", problems, key)
    elif isinstance(a, str):
        if not isinstance(b, str):
            problems.append(f"{path}: the string {a[:40]!r} came back as {type(b).__name__} {b!r}")
        elif LOCALE_KEY.match(key) and LOCALE_VALUE.match(a) and a != b:
            problems.append(f"{path}: the locale code {a!r} was translated to {b!r}")
    elif type(a) is not type(b) or a != b:
        problems.append(f"{path}: {a!r} ({type(a).__name__}) came back as {b!r} ({type(b).__name__})")


def judge(f: RealFile, original: bytes, answer: Answer) -> list[str]:
    problems, text, answer_text = decoded(f, original, answer)
    if answer_text is None:
        return problems
    try:
        a, b = json.loads(text), json.loads(answer_text)
    except ValueError as exc:
        return [*problems, f"json: the answer is not JSON: {exc}"]
    _same_tree(a, b, "", problems)
    problems += first_difference(_STRING.split(text), _STRING.split(answer_text), "JSON outside strings")
    keys = [re.findall(r'("(?:[^"\\]|\\.)*")\s*:', t) for t in (text, answer_text)]
    problems += first_difference(keys[0], keys[1], "JSON keys")
    problems += first_difference(_plural_forms(a), _plural_forms(b), "json: plural forms of '|'-separated messages")
    if _formatjs(a) and _without_literals(a) != _without_literals(b):
        problems.append("json: a formatjs message's code changed (argument names, plural keys, node types)")
    catalog_a, catalog_b = _gettext_json(a), _gettext_json(b)
    if catalog_a is not None:
        if catalog_b is None or catalog_b.get("") != catalog_a[""]:
            problems.append("json: the gettext catalog's header changed")
        else:
            changed = [k for k, v in catalog_a.items() if k and _translated(v) and catalog_b.get(k) != v]
            if changed:
                problems.append(f"json: {len(changed)} translations people made changed, as {changed[:3]!r}")
    return problems


def _formatjs(tree: Any) -> bool:
    """A formatjs compiled catalog: every message a list of AST nodes with an integer type."""
    return (
        isinstance(tree, dict)
        and bool(tree)
        and all(
            isinstance(v, list) and all(isinstance(n, dict) and isinstance(n.get("type"), int) for n in v)
            for v in tree.values()
        )
    )


def _without_literals(node: Any) -> Any:
    """The tree with each literal node's text (type 0) blanked: what no translation may change."""
    if isinstance(node, list):
        return [_without_literals(item) for item in node]
    if isinstance(node, dict):
        return {k: "" if k == "value" and node.get("type") == 0 else _without_literals(v) for k, v in node.items()}
    return node


def _gettext_json(tree: Any) -> dict[str, Any] | None:
    """A gettext catalog in JSON (Jed's, JupyterLab's): the object whose "" key is the header."""
    fields = {"domain", "lang", "language", "plural_forms", "plural-forms", "Plural-Forms"}
    candidates = [tree] + (list(tree.get("locale_data", {}).values()) if isinstance(tree, dict) else [])
    for catalog in candidates:
        if isinstance(catalog, dict) and isinstance(catalog.get(""), dict) and fields & set(catalog[""]):
            return catalog
    return None


def _translated(value: Any) -> bool:
    forms = value if isinstance(value, list) else [value]
    return any(isinstance(form, str) and form.strip() for form in forms)


def _plural_forms(tree: Any) -> list[tuple[str, int]]:
    """(key, number of forms) of each Docusaurus plural message (a `...plurals` key, forms split by `|`)."""
    if isinstance(tree, dict):
        found = [(k, v.count("|") + 1) for k, v in tree.items() if isinstance(v, str) and k.endswith("plurals")]
        return found + [pair for v in tree.values() for pair in _plural_forms(v)]
    if isinstance(tree, list):
        return [pair for v in tree for pair in _plural_forms(v)]
    return []


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def texts(f: RealFile, original: bytes) -> Iterator[str]:
    """Every string value; in a gettext catalog, the msgids nobody translated."""
    tree = json.loads(decoded_original(f, original))
    catalog = _gettext_json(tree)
    if catalog is None:
        yield from _strings(tree)
    else:
        yield from (k.split("\x04")[-1] for k, v in catalog.items() if k and not _translated(v))

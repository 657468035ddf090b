"""YAML: PyYAML's node trees alike (keys whole, every scalar's resolved type, non-strings' values),
a value under a locale key unchanged, and the comment lines; a Rails locale file answered under the
target's locale."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from harness.realworld.judges.common import LOCALE_KEY, LOCALE_VALUE, decoded, decoded_original, first_difference

if TYPE_CHECKING:
    from harness.realworld import Answer, RealFile


def judge(f: RealFile, original: bytes, answer: Answer) -> list[str]:
    import yaml

    problems, text, answer_text = decoded(f, original, answer)
    if answer_text is None:
        return problems
    # Composed, not constructed: a complex key (a sequence as a key) is valid YAML that
    # yaml.safe_load cannot turn into a dict.
    a = list(yaml.compose_all(text))
    try:
        b = list(yaml.compose_all(answer_text))
    except yaml.YAMLError as exc:
        return [*problems, f"PyYAML cannot read the answer: {exc}"]
    if len(a) != len(b):
        return [*problems, f"PyYAML: {len(a)} documents came back as {len(b)}"]
    if len(a) == 1 and _rails_root(a[0]) is not None and _rails_root(b[0]) == f.target:
        # A Rails locale file is answered under the target's locale (`en:` -> `fr:`), its one key.
        b[0].value[0][0].value = _rails_root(a[0])
    for number, (x, y) in enumerate(zip(a, b, strict=True)):
        _same_nodes(x, y, f"/{number}", problems)
    comments = [[line.strip() for line in t.splitlines() if line.lstrip().startswith("#")] for t in (text, answer_text)]
    return problems + first_difference(comments[0], comments[1], "YAML comment lines")


def _rails_root(node: Any) -> str | None:
    """The one top-level key of a YAML document shaped as a Rails locale file, if it is one."""
    import yaml

    if not isinstance(node, yaml.MappingNode) or len(node.value) != 1:
        return None
    key, value = node.value[0]
    is_locale = isinstance(key, yaml.ScalarNode) and LOCALE_VALUE.match(key.value)
    return key.value if is_locale and isinstance(value, yaml.MappingNode) else None


def _same_nodes(a: Any, b: Any, path: str, problems: list[str], key: str = "") -> None:
    import yaml

    if len(problems) > 5:
        return
    if type(a) is not type(b):
        problems.append(f"{path}: a {type(a).__name__} came back as a {type(b).__name__}")
    elif isinstance(a, yaml.MappingNode):
        keys = [[yaml.serialize(k).strip() for k, _ in node.value] for node in (a, b)]
        if keys[0] != keys[1]:
            problems.append(f"{path}: keys {keys[0][:6]} came back as {keys[1][:6]}")
            return
        for (k, x), (_, y) in zip(a.value, b.value, strict=True):
            name = k.value if isinstance(k, yaml.ScalarNode) else "?"
            _same_nodes(x, y, f"{path}/{name}", problems, name)
    elif isinstance(a, yaml.SequenceNode):
        if len(a.value) != len(b.value):
            problems.append(f"{path}: a sequence of {len(a.value)} came back with {len(b.value)}")
            return
        for i, (x, y) in enumerate(zip(a.value, b.value, strict=True)):
            _same_nodes(x, y, f"{path}/{i}", problems, key)
    elif a.tag.endswith(":str"):
        if not b.tag.endswith(":str"):
            problems.append(f"{path}: the string {a.value[:40]!r} came back as {b.tag} {b.value!r}")
        elif LOCALE_KEY.match(key) and LOCALE_VALUE.match(a.value) and a.value != b.value:
            problems.append(f"{path}: the locale code {a.value!r} was translated to {b.value!r}")
    elif (a.tag, a.value) != (b.tag, b.value):
        problems.append(f"{path}: {a.value!r} ({a.tag}) came back as {b.value!r} ({b.tag})")


def _scalar_values(node: Any) -> Iterator[Any]:
    import yaml

    if isinstance(node, yaml.MappingNode):
        for _, value in node.value:
            yield from _scalar_values(value)
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            yield from _scalar_values(item)
    elif isinstance(node, yaml.ScalarNode):
        yield node


def texts(f: RealFile, original: bytes) -> Iterator[str]:
    """Every string value (keys aside)."""
    import yaml

    for document in yaml.compose_all(decoded_original(f, original)):
        yield from (node.value for node in _scalar_values(document) if node.tag.endswith(":str"))

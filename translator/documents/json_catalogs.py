"""JSON localization files (translator/documents/i18n.py: what every catalog format shares).

Every string value, at any depth, replaced where it stands: keys, numbers, escapes and the layout
come back byte for byte. Catalogs are read by their structure: gettext in JSON (Jed, JupyterLab's
language packs), formatjs/react-intl's compiled ASTs (only literal nodes), Docusaurus' `|` plural
forms, i18next's CLDR plural keys, ICU messages (each case translated).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from translator.documents import xmltext
from translator.documents.encoding import decode_text
from translator.documents.i18n import is_locale
from translator.documents.model import ICU_KEPT, NO_OPTIONS, BadDocument, Document, ReadOptions, Unit
from translator.text.inline import analyse

# A string token of valid JSON (outside strings there are no quotes), and whether a `:` makes it a key;
# or a bracket, which opens (closes) an object or an array.
_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"(?P<key>(?=\s*:))?|[{}\[\]]')


def _formatjs_literals(tree: Any) -> list[bool] | None:
    """For a formatjs/react-intl compiled catalog (each message an AST: a list of nodes, literal text
    the `value` of a node of type 0), whether each string value of the file, in document order, is
    such a literal; None for any other JSON. Argument names, plural and select keys, styles and
    pluralType are the program's, never words (#49: a compiled catalog's argument names translated)."""
    if not isinstance(tree, dict) or not tree:
        return None
    if not all(
        isinstance(v, list) and all(isinstance(n, dict) and isinstance(n.get("type"), int) for n in v)
        for v in tree.values()
    ):
        return None
    flags: list[bool] = []

    def walk(node: Any, literal: bool) -> None:
        if isinstance(node, str):
            flags.append(literal)
        elif isinstance(node, list):
            for item in node:
                walk(item, False)
        elif isinstance(node, dict):
            for key, value in node.items():
                walk(value, key == "value" and node.get("type") == 0)

    walk(tree, False)
    return flags


def _json_string_values(text: str) -> Iterator[tuple[Any, str, list[list[Any]]]]:
    """Each string value of a valid JSON text (not its keys), in order: its match, its value, and
    the open containers around it, outermost first, each ["{", its current key, where that key
    starts] or ["[", None]."""
    frames: list[list[Any]] = []
    for match in _JSON_TOKEN.finditer(text):
        token = match.group()
        if token in ("{", "["):
            frames.append([token, None])
        elif token in ("}", "]"):
            frames.pop()
        elif match.group("key") is not None:
            frames[-1][1:] = [json.loads(token), match.start()]
        else:
            yield match, json.loads(token), frames


def _json_strings(text: str, literal: list[bool] | None = None) -> list[tuple[int, int, str, str | None]]:
    """The string values of a valid JSON text, each (start, end, value, its key), but those naming a
    locale; with `literal` (one flag for each string value of the file, in order), only those flagged."""
    values = []
    for seen, (match, value, frames) in enumerate(_json_string_values(text)):
        if literal is not None and not (seen < len(literal) and literal[seen]):
            continue
        keys = [frame[1] for frame in reversed(frames) if frame[0] == "{"]
        key, parent = (keys + [None, None])[:2]
        if value.strip() and not is_locale(value, key, parent):
            values.append((match.start(), match.end(), value, key))
    return values


# Docusaurus writes a message's plural forms in one string, `|` between them ("One post|{count}
# posts"), under a key that says so (`theme.blog.post.plurals`). Each form is translated alone and
# the separator kept: translated whole, the `|` was dropped and two or three forms became one (#49).
_PLURALS_KEY = re.compile(r"(?:^|[._-])plurals$", re.IGNORECASE)


# i18next (v21 on) and other CLDR-keyed catalogs write a plural as sibling keys, one per category of
# the language's plural rules: `item_one`, `item_other` in English; Czech needs `item_few` and
# `item_many` too, or i18next finds no string for 2 or 5 items. A translation adds the categories
# the target language has and the file lacks, each from the `_other` form (the general one, with
# its `{{count}}`); the source's own categories stay (i18next ignores one a language lacks).
_CATEGORIES = ("zero", "one", "two", "few", "many", "other")
_CATEGORY_KEY = re.compile(r"^(?P<base>.+)_(?P<category>zero|one|two|few|many|other)$")


def plural_categories(language: str) -> tuple[str, ...]:
    """The CLDR plural categories of a language, in CLDR's order (`other` always), or () where
    Babel does not know the language."""
    from babel import Locale, UnknownLocaleError

    try:
        tags = Locale.parse(language.replace("-", "_")).plural_form.tags
    except (UnknownLocaleError, ValueError, TypeError):
        return ()
    return tuple(category for category in _CATEGORIES if category in tags or category == "other")


@dataclass(frozen=True)
class _PluralKeys:
    """Categories a plural group lacks, to be added after its last member (at `after`)."""

    base: str
    missing: tuple[str, ...]
    other: int  # where its `_other` value starts: its translation fills the new keys
    after: int
    separator: str  # between the last member and the one before it: `,` and the white space
    colon: str  # between a member's key and its value


def _plural_keys(text: str, target: str) -> list[_PluralKeys]:
    wanted = plural_categories(target) if target else ()
    if not wanted:
        return []
    # Members of each object's plural groups: object -> base -> category -> (key start, value match)
    groups: dict[int, dict[str, dict[str, tuple[int, Any]]]] = {}
    objects: dict[int, list[Any]] = {}  # the frames, alive: their ids are the objects' names
    for match, _, frames in _json_string_values(text):
        frame = frames[-1] if frames else None
        if frame is None or frame[0] != "{" or not isinstance(frame[1], str):
            continue
        found = _CATEGORY_KEY.match(frame[1])
        if found:
            objects[id(frame)] = frame
            groups.setdefault(id(frame), {}).setdefault(found["base"], {})[found["category"]] = (frame[2], match)
    out = []
    for by_base in groups.values():
        for base, members in by_base.items():
            missing = tuple(category for category in wanted if category not in members)
            if "other" not in members or len(members) < 2 or not missing:
                continue
            ordered = sorted(members.values(), key=lambda member: member[0])
            (last_key, last), (_, before) = ordered[-1], ordered[-2]
            key_end = _JSON_KEY.match(text, last_key).end()  # type: ignore[union-attr]
            out.append(
                _PluralKeys(
                    base=base,
                    missing=missing,
                    other=members["other"][1].start(),
                    after=last.end(),
                    separator=text[before.end() : last_key],
                    colon=text[key_end : last.start()],
                )
            )
    del objects  # held until here: a frame's id names its object only while the frame lives
    return sorted(out, key=lambda group: group.after)


_JSON_KEY = re.compile(r'"(?:[^"\\]|\\.)*"')


def _forms(value: str, key: str | None) -> list[str]:
    """The plural forms a value holds (itself alone, for any other value)."""
    if key is not None and _PLURALS_KEY.search(key) and "|" in value:
        return value.split("|")
    return [value]


# gettext catalogs in JSON (Jed, JupyterLab's language packs, po2json): an object whose "" key holds
# the header (domain, language, plural forms), every other key a msgid (its context before \x04)
# and its value the msgstr forms; Jed nests it as locale_data.<domain>.
_HEADER_FIELDS = frozenset({"domain", "lang", "language", "plural_forms", "plural-forms", "Plural-Forms"})
_CONTEXT = "\x04"


def gettext_catalog_path(tree: Any) -> list[str] | None:
    """The keys leading to a gettext catalog's object in a parsed JSON file, None if it is none."""

    def header(value: Any) -> bool:
        return isinstance(value, dict) and bool(_HEADER_FIELDS & set(value))

    if isinstance(tree, dict) and header(tree.get("")):
        return []
    locale_data = tree.get("locale_data") if isinstance(tree, dict) else None
    if isinstance(locale_data, dict):
        for domain, catalog in locale_data.items():
            if isinstance(catalog, dict) and header(catalog.get("")):
                return ["locale_data", domain]
    return None


def _gettext_forms(text: str, path: list[str]) -> dict[str, list[tuple[int, int, str]]]:
    """Each entry of the catalog at `path` (its key) and its msgstr forms where they stand: the
    strings of a list under the entry's key, or (po2json's) the entry's one string."""
    entries: dict[str, list[tuple[int, int, str]]] = {}
    for match, value, frames in _json_string_values(text):
        # The entry's object, then its list of forms (or none): the containers above are the path.
        objects = frames[:-1] if frames and frames[-1][0] == "[" else frames
        if len(objects) != len(path) + 1 or any(frame[0] != "{" for frame in objects):
            continue
        if [frame[1] for frame in objects[:-1]] == path and objects[-1][1]:
            entries.setdefault(str(objects[-1][1]), []).append((match.start(), match.end(), value))
    return entries


def _read_gettext_json(text: str, encoding: Any, path: list[str]) -> Document:
    """A gettext catalog in JSON read as PO is: the header never touched, a person's translation
    never overwritten; only entries whose every form is empty get the msgid's translation (each
    form the same one, as the catalog does not hold the msgid's plural) (#49: JupyterLab's German
    language pack had all 1,025 translations replaced and its header translated)."""
    entries = _gettext_forms(text, path)
    todo = [(key, forms) for key, forms in entries.items() if not any(value.strip() for _, _, value in forms)]
    msgids = [key.split(_CONTEXT, 1)[-1] for key, _ in todo]
    # A gettext catalog's strings are gettext's, not ICU messages.
    units = [Unit(*piece) for piece in analyse(msgids, messages=False).pieces]

    escaped = text.isascii() and "\\u" in text  # as the file writes its non-ASCII text

    def write(translations: list[str]) -> bytes:
        edits = [
            (start, end, json.dumps(translation, ensure_ascii=escaped))
            for (_, forms), translation in zip(todo, translations, strict=True)
            for start, end, _ in forms
        ]
        return encoding.bom + xmltext.splice(text, edits).encode(encoding.codec)

    return Document(units, write, "application/json")


def read_json(data: bytes, options: ReadOptions = NO_OPTIONS) -> Document:
    text, encoding = decode_text(data, "JSON")
    try:
        tree = json.loads(text)
    except ValueError as exc:
        raise BadDocument(f"not valid JSON ({str(exc)[:200]})") from exc
    catalog = gettext_catalog_path(tree)
    if catalog is not None:
        return _read_gettext_json(text, encoding, catalog)
    # Each string value where it stands, so that keys, numbers, escapes and layout come back byte
    # for byte, and a value left as it was too.
    values = _json_strings(text, _formatjs_literals(tree))
    forms = [_forms(value, key) for _, _, value, key in values]
    # (value, form) of each piece: a form with no text (an empty one of "|x") stays as it is; an
    # ICU message is several pieces (its texts), put back together by its join.
    slots = [(index, at) for index, held in enumerate(forms) for at, form in enumerate(held) if form.strip()]
    analysed = analyse([forms[index][at] for index, at in slots])

    def write(unit_translations: list[str]) -> bytes:
        translated = [list(held) for held in forms]
        document.kept.clear()
        for (index, at), translation in zip(slots, analysed.fold(unit_translations), strict=True):
            if translation is None:  # an ICU message whose arguments did not come back: as it was
                document.keep(f"line {text.count(chr(10), 0, values[index][0]) + 1}", ICU_KEPT)
                continue
            # A `|` in a form's translation would read as one more form.
            translated[index][at] = translation.replace("|", "/") if len(forms[index]) > 1 else translation
        translations = ["|".join(held) for held in translated]
        edits = []
        for (start, end, value, _), translation in zip(values, translations, strict=True):
            if translation != value:
                edits.append((start, end, _json_string(translation, text[start:end])))
        by_start = {start: translation for (start, _, _, _), translation in zip(values, translations, strict=True)}
        for group in plural_keys:
            if group.other not in by_start:
                continue  # an empty `_other`: nothing to fill the new forms from
            written = _json_string(by_start[group.other], text[group.other : group.after])
            added = "".join(
                f"{group.separator}{json.dumps(f'{group.base}_{category}')}{group.colon}{written}"
                for category in group.missing
            )
            edits.append((group.after, group.after, added))
        return encoding.bom + xmltext.splice(text, sorted(edits)).encode(encoding.codec)

    plural_keys = _plural_keys(text, options.target)
    document = Document([Unit(*piece) for piece in analysed.pieces], write, "application/json")
    return document


def _json_string(value: str, original: str) -> str:
    """A JSON string of `value`, with \\u escapes where the file wrote its non-ASCII text so."""
    return json.dumps(value, ensure_ascii=original.isascii() and "\\u" in original)

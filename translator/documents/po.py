"""Gettext PO/POT files, edited where they stand.

Each entry not translated yet (or fuzzy) gets its msgstr from its msgid, a plural entry msgstr[0]
from msgid and the other forms from msgid_plural (its forms still empty; all of them when fuzzy),
and is flagged `fuzzy`: machine output for a translator to review, as gettext tools mark what they
did not get from a person (`msgfmt` leaves it out unless `--use-fuzzy`). Translated entries, the
header and obsolete entries are left as they are.

Only the msgstr lines of the entries filled and their flags line change: every other byte comes
back as it was, so that a reviewer's diff (Weblate's, git's) shows the machine's work and nothing
else. polib re-serialized the whole catalog, joining multi-line strings, adding a `#` line to a
header without one and reflowing the header's msgstr. A msgstr written here is wrapped as its
msgid is: on one line where the msgid is on one, else from an empty first string (where the
msgid starts so) with a line after each `\\n` and, where the file wraps long strings, at its width.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from translator.documents.model import BadDocument, Document, Unit, decode_text

_KEYWORD = re.compile(r'(msgctxt|msgid_plural|msgid|msgstr(?:\[\d+\])?)\s*(".*)')
_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"\s*')
_UNESCAPE = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "f": "\f", "v": "\v", "\\": "\\", '"': '"'}
_ESCAPE = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}
# gettext's default width (of a line with its quotes), where the file shows none of its own.
_GETTEXT_WIDTH = 79


@dataclass
class _Field:
    start: int  # the index of its first line
    end: int  # past its last line
    value: str
    first_empty: bool  # the first line's string is "" (gettext's style for multi-line strings)


@dataclass
class _Entry:
    fields: dict[str, _Field] = field(default_factory=dict)
    first: int = -1  # the first keyword line
    flags: int = -1  # the `#,` line
    previous: int = -1  # the first `#|` line (gettext writes flags before those)
    obsolete: bool = False

    def fuzzy(self, lines: list[str]) -> bool:
        return self.flags >= 0 and "fuzzy" in (flag.strip() for flag in lines[self.flags].strip()[2:].split(","))

    def forms(self) -> list[str]:
        return sorted((k for k in self.fields if k.startswith("msgstr")), key=lambda k: (len(k), k))


def _string(text: str, number: int) -> str:
    match = _STRING.fullmatch(text.strip())
    if match is None:
        raise BadDocument(f"file: line {number} of this PO file is not a properly quoted string")
    return re.sub(r"\\(.)", lambda m: _UNESCAPE.get(m.group(1), m.group(0)), match.group(1))


def _parse(lines: list[str]) -> list[_Entry]:
    entries: list[_Entry] = []
    current: _Entry | None = None
    last: _Field | None = None
    for index, line in enumerate(lines):
        body = line.strip()
        if not body:
            current = last = None
            continue
        if body.startswith("#"):
            if current is None or current.forms():
                current = _Entry()
                entries.append(current)
            if body.startswith("#~"):  # kept as it is: an obsolete entry is a translator's memory
                current.obsolete = True
            elif body.startswith("#,") and current.flags < 0:
                current.flags = index
            elif body.startswith("#|") and current.previous < 0:
                current.previous = index
            last = None
            continue
        keyword = _KEYWORD.fullmatch(body)
        if keyword is not None:
            name = keyword.group(1)
            # What a new entry starts with, after a msgstr or where its entry has one already.
            starts = {"msgctxt": ("msgctxt", "msgid"), "msgid": ("msgid",)}.get(name)
            if current is None or (starts and (current.forms() or any(k in current.fields for k in starts))):
                current = _Entry()
                entries.append(current)
            if name in current.fields:
                raise BadDocument(f"file: line {index + 1} of this PO file repeats its entry's {name}")
            current.first = index if current.first < 0 else current.first
            string = keyword.group(2)
            last = _Field(index, index + 1, _string(string, index + 1), string.strip() == '""')
            current.fields[name] = last
        elif body.startswith('"') and last is not None:
            last.value += _string(body, index + 1)
            last.end = index + 1
        else:
            raise BadDocument(f"file: line {index + 1} of this PO file is not a comment, a keyword or a string")
    for entry in entries:
        if "msgid" in entry.fields and not entry.forms():
            raise BadDocument(f"file: the entry at line {entry.first + 1} of this PO file has no msgstr")
    return entries


def _width(lines: list[str], entries: list[_Entry]) -> int | None:
    """The width the file wraps its strings at (the longest line broken inside its text, gettext's
    where shorter), None where it shows it does not (a one-line string past gettext's width), else
    gettext's."""
    wrapped, unwrapped = 0, False
    for entry in entries:
        for string in entry.fields.values():
            for index in range(string.start, string.end - 1):
                line = lines[index].rstrip("\r\n")
                if not line.endswith('\\n"') and not line.endswith('""'):
                    wrapped = max(wrapped, len(line))
            if string.end - string.start == 1 and len(lines[string.start].rstrip("\r\n")) > _GETTEXT_WIDTH:
                unwrapped = True
    # A file's longest wrapped line is at most its width, and a file gettext wrapped shows 79 or less.
    return max(wrapped, _GETTEXT_WIDTH) if wrapped else None if unwrapped else _GETTEXT_WIDTH


def _escape(text: str) -> str:
    return "".join(_ESCAPE.get(char, char) for char in text)


def _wrap(text: str, room: int) -> list[str]:
    """`text` (escaped) in lines of `room` characters at most where its spaces allow, each space
    left at the end of its line as gettext leaves it."""
    lines = [""]
    for word in re.findall(r" +|[^ ]+ *", text):
        if lines[-1] and len(lines[-1]) + len(word) > room:
            lines.append("")
        lines[-1] += word
    return lines


def _written(keyword: str, value: str, model: _Field, width: int | None) -> list[str]:
    """`keyword` and `value`, in lines wrapped as the `model` string (the msgid) is."""
    one_line = f'{keyword} "{_escape(value)}"'
    if model.end - model.start == 1 and (width is None or len(one_line) <= width):
        return [one_line]
    chunks = [
        chunk
        for piece in re.findall(r"[^\n]*\n|[^\n]+", value)
        for chunk in (_wrap(_escape(piece), width - 2) if width else [_escape(piece)])
    ]
    if model.first_empty or not chunks:
        return [f'{keyword} ""'] + [f'"{chunk}"' for chunk in chunks]
    return [f'{keyword} "{chunks[0]}"'] + [f'"{chunk}"' for chunk in chunks[1:]]


def read_po(data: bytes) -> Document:
    text, encoding = decode_text(data, "PO")
    lines = re.findall(r"[^\n]*\n|[^\n]+", text)
    entries = _parse(lines)
    width = _width(lines, entries)
    # Entries to fill, with their forms to fill: where a person's form is there, it stays.
    todo: list[tuple[_Entry, list[str]]] = []
    for entry in entries:
        if entry.obsolete or "msgid" not in entry.fields or not entry.fields["msgid"].value:
            continue  # the header (msgid ""), a comment without an entry, an obsolete entry
        forms = entry.forms()
        if "msgid_plural" in entry.fields:
            forms += [f"msgstr[{n}]" for n in range(len(forms), 2)]  # a template may give one form
        if not entry.fuzzy(lines):
            forms = [form for form in forms if form not in entry.fields or not entry.fields[form].value]
        if forms:
            todo.append((entry, forms))
    units = [
        Unit(entry.fields[key].value) for entry, _ in todo for key in ("msgid", "msgid_plural") if key in entry.fields
    ]

    def write(translations: list[str]) -> bytes:
        edits: list[tuple[int, int, list[str]]] = []  # lines [start, end) replaced by these
        given = iter(translations)
        for entry, forms in todo:
            singular = next(given)
            plural = next(given) if "msgid_plural" in entry.fields else singular
            eol = lines[entry.first][len(lines[entry.first].rstrip("\r\n")) :] or "\n"
            for form in forms:
                model = entry.fields["msgid" if form in ("msgstr", "msgstr[0]") else "msgid_plural"]
                written = _written(form, singular if model is entry.fields["msgid"] else plural, model, width)
                if form in entry.fields:
                    span = entry.fields[form]
                    ending = lines[span.end - 1][len(lines[span.end - 1].rstrip("\r\n")) :]
                    edits.append((span.start, span.end, [line + eol for line in written[:-1]] + [written[-1] + ending]))
                else:  # a form added after the last one there
                    after = entry.fields[entry.forms()[-1]].end
                    ending = lines[after - 1][len(lines[after - 1].rstrip("\r\n")) :]
                    edits.append((after, after, [eol if not ending else ""] + [line + eol for line in written]))
            if not entry.fuzzy(lines):
                if entry.flags >= 0:
                    flags = lines[entry.flags]
                    at = flags.index("#,") + 2
                    edits.append((entry.flags, entry.flags + 1, [f"{flags[:at]} fuzzy,{flags[at:]}"]))
                else:
                    at = entry.previous if entry.previous >= 0 else entry.first
                    edits.append((at, at, [f"#, fuzzy{eol}"]))
        out = list(lines)
        for start, end, replacement in sorted(edits, key=lambda edit: (edit[0], edit[1]), reverse=True):
            out[start:end] = replacement
        return "".join(out).encode(encoding)

    return Document(units, write, "text/x-gettext-translation; charset=utf-8")

"""A PO file's syntax: its lines parsed into entries (each keyword's string, where it stands), the
header entry and its fields, and a string written back as gettext writes it (escaped, wrapped at the
file's width).

Apart from translator/documents/po.py, which decides what is filled and edits the lines in place:
this is the grammar both its reading and its writing stand on, and nothing here edits a file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from translator.documents.model import BadDocument

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
class Entry:
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
        raise BadDocument(f"line {number} of this PO file is not a properly quoted string")
    return re.sub(r"\\(.)", lambda m: _UNESCAPE.get(m.group(1), m.group(0)), match.group(1))


def parse_entries(lines: list[str]) -> list[Entry]:
    entries: list[Entry] = []
    current: Entry | None = None
    last: _Field | None = None
    for index, line in enumerate(lines):
        body = line.strip()
        if not body:
            current = last = None
            continue
        if body.startswith("#"):
            if current is None or current.forms():
                current = Entry()
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
                current = Entry()
                entries.append(current)
            if name in current.fields:
                raise BadDocument(f"line {index + 1} of this PO file repeats its entry's {name}")
            if name == "msgid_plural" and current.forms():
                raise BadDocument(f"line {index + 1} of this PO file has a msgid_plural after its entry's msgstr")
            current.first = index if current.first < 0 else current.first
            string = keyword.group(2)
            last = _Field(index, index + 1, _string(string, index + 1), string.strip() == '""')
            current.fields[name] = last
        elif body.startswith('"') and last is not None:
            last.value += _string(body, index + 1)
            last.end = index + 1
        else:
            raise BadDocument(f"line {index + 1} of this PO file is not a comment, a keyword or a string")
    for entry in entries:
        if "msgid" in entry.fields and not entry.forms():
            raise BadDocument(f"the entry at line {entry.first + 1} of this PO file has no msgstr")
    return entries


def wrap_width(lines: list[str], entries: list[Entry]) -> int | None:
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


def escape_po(text: str) -> str:
    return "".join(_ESCAPE.get(char, char) for char in text)


def wrap_po(text: str, room: int) -> list[str]:
    """`text` (escaped) in lines of `room` characters at most where its spaces allow, each space
    left at the end of its line as gettext leaves it."""
    lines = [""]
    for word in re.findall(r" +|[^ ]+ *", text):
        if lines[-1] and len(lines[-1]) + len(word) > room:
            lines.append("")
        lines[-1] += word
    return lines


def written_lines(keyword: str, value: str, model: _Field, width: int | None) -> list[str]:
    """`keyword` and `value`, in lines wrapped as the `model` string (the msgid) is."""
    one_line = f'{keyword} "{escape_po(value)}"'
    if model.end - model.start == 1 and (width is None or len(one_line) <= width):
        return [one_line]
    chunks = [
        chunk
        for piece in re.findall(r"[^\n]*\n|[^\n]+", value)
        for chunk in (wrap_po(escape_po(piece), width - 2) if width else [escape_po(piece)])
    ]
    if model.first_empty or not chunks:
        return [f'{keyword} ""'] + [f'"{chunk}"' for chunk in chunks]
    return [f'{keyword} "{chunks[0]}"'] + [f'"{chunk}"' for chunk in chunks[1:]]


def line_ending(line: str) -> str:
    return line[len(line.rstrip("\r\n")) :]


def header_entry(entries: list[Entry]) -> Entry | None:
    for entry in entries:
        if "msgid" in entry.fields and not entry.obsolete:
            msgid = entry.fields["msgid"]
            return entry if not msgid.value and "msgctxt" not in entry.fields and "msgstr" in entry.fields else None
    return None


def header_field(header: Entry | None, name: str) -> str | None:
    if header is None:
        return None
    for line in header.fields["msgstr"].value.split("\n"):
        key, colon, value = line.partition(":")
        if colon and key.strip().lower() == name.lower():
            return value.strip()
    return None

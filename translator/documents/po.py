"""Gettext PO/POT files, edited where they stand.

Each entry not translated yet (or fuzzy) gets its msgstr from its msgid and is flagged `fuzzy`:
machine output for a translator to review, as gettext tools mark what they did not get from a
person (`msgfmt` leaves it out unless `--use-fuzzy`). A plural entry gets exactly as many forms
as the file's `Plural-Forms` header says (`nplurals`), or, where the header has none (a template),
as the target language's CLDR rule gives, which is then written into the header as `msginit`
writes it: the form gettext picks for n = 1 is filled from msgid, the others from msgid_plural (a
language of one form, Japanese, gets msgid_plural's: it stands for every n). An entry translated
by a person (its forms all filled, not fuzzy) is left as it is, whatever its number of forms, and
so are obsolete entries and the header (but for that Plural-Forms line and the charset below).

Only the msgstr lines of the entries filled and their flags line change: every other byte comes
back as it was, so that a reviewer's diff (Weblate's, git's) shows the machine's work and nothing
else. polib re-serialized the whole catalog, joining multi-line strings, adding a `#` line to a
header without one and reflowing the header's msgstr. A msgstr written here is wrapped as its
msgid is: on one line where the msgid is on one, else from an empty first string (where the
msgid starts so) with a line after each `\\n` and, where the file wraps long strings, at its width.

A file is read in the charset its header declares (found in its bytes as gettext finds it, the
header being ASCII) and written back in it; where a translation has a character that charset
cannot hold, the file is written in UTF-8 and its header's charset says so.

This module decides what is filled and edits the lines; the file's syntax is po_syntax.py, its
plural forms po_plurals.py, its charset and bytes po_charset.py.
"""

from __future__ import annotations

import re

from translator.documents.encoding import UTF8
from translator.documents.model import ICU_KEPT, NO_OPTIONS, Document, ReadOptions, Unit
from translator.documents.po_charset import declared_charset, decode_lines, encoded_lines, names_utf8, po_content_type
from translator.documents.po_plurals import plurals_for
from translator.documents.po_syntax import (
    Entry,
    escape_po,
    header_entry,
    line_ending,
    parse_entries,
    wrap_po,
    wrap_width,
    written_lines,
)
from translator.text.inline import analyse


def _header_edits(header: Entry, lines: list[str], value: str, width: int | None) -> list[tuple[int, int, list[str]]]:
    """`Plural-Forms: value` written into the header: in place of a template's placeholder line,
    else after its last line; a field that spans lines is left as it is."""
    string = header.fields["msgstr"]
    eol = line_ending(lines[string.start]) or "\n"
    field_text = escape_po(f"Plural-Forms: {value}\n")
    written = [f'"{chunk}"' for chunk in (wrap_po(field_text, width - 2) if width else [field_text])]
    for index in range(string.start, string.end):
        line = lines[index]
        if line.strip().startswith('"Plural-Forms:'):
            if not line.rstrip().endswith('\\n"'):
                return []
            return [(index, index + 1, [text + eol for text in written[:-1]] + [written[-1] + line_ending(line)])]
    if re.search(r"(?m)^\s*Plural-Forms\s*:", string.value):
        return []
    if string.value and not string.value.endswith("\n"):
        written[0] = '"\\n' + written[0][1:]
    # The header's last line has its line ending: the plural entries that ask for this follow it.
    return [(string.end, string.end, [text + eol for text in written])]


def read_po(data: bytes, options: ReadOptions = NO_OPTIONS) -> Document:
    declared = declared_charset(data)
    charset = declared[0] if declared is not None else None
    lines, raw, encoding = decode_lines(data, charset)
    entries = parse_entries(lines)
    width = wrap_width(lines, entries)
    header = header_entry(entries)
    # The number of forms each plural entry a person translated has (all its forms, not fuzzy).
    persons_forms = frozenset(
        len(entry.forms())
        for entry in entries
        if not entry.obsolete
        and "msgid_plural" in entry.fields
        and not entry.fuzzy(lines)
        and all(entry.fields[form].value for form in entry.forms())
    )
    plurals = plurals_for(header, options.target, persons_forms)
    # Entries to fill: the forms to fill, each with the key of the string it is filled from, and a
    # plural entry's forms past nplurals that it loses (empty, or fuzzy and refilled anyway).
    todo: list[tuple[Entry, dict[str, str], list[str]]] = []
    for entry in entries:
        if entry.obsolete or "msgid" not in entry.fields or not entry.fields["msgid"].value:
            continue  # the header (msgid ""), a comment without an entry, an obsolete entry
        fuzzy, forms = entry.fuzzy(lines), entry.forms()
        if "msgid_plural" not in entry.fields:
            fill = {form: "msgid" for form in forms if fuzzy or not entry.fields[form].value}
            if fill:
                todo.append((entry, fill, []))
            continue
        wanted = {
            f"msgstr[{index}]": "msgid" if index == plurals.singular else "msgid_plural"
            for index in range(plurals.count)
        }
        done = [form for form in forms if entry.fields[form].value]
        if not fuzzy and (len(done) == len(forms) or all(form in done for form in wanted)):
            continue  # a person's translation, however many forms it has
        fill = {form: source for form, source in wanted.items() if fuzzy or form not in done}
        lose = [form for form in forms if form not in wanted and (fuzzy or form not in done)]
        todo.append((entry, fill, lose))
    sources = [[key for key in ("msgid", "msgid_plural") if key in fill.values()] for _, fill, _ in todo]
    values = [entry.fields[key].value for (entry, _, _), keys in zip(todo, sources, strict=True) for key in keys]
    # An ICU message (Lingui's catalogs) is its texts, each translated alone, and each text HTML or
    # not (translator/text/inline.py).
    analysed = analyse(values)
    units = [Unit(*piece) for piece in analysed.pieces]
    header_edits: list[tuple[int, int, list[str]]] = []
    if header is not None and plurals.header is not None and any("msgid_plural" in e.fields for e, _, _ in todo):
        header_edits = _header_edits(header, lines, plurals.header, width)

    def write(translations: list[str]) -> bytes:
        edits = list(header_edits)  # lines [start, end) replaced by these
        given = iter(analysed.fold(translations))
        document.kept.clear()
        for (entry, fill, lose), keys in zip(todo, sources, strict=True):
            folded = {key: next(given) for key in keys}
            if any(value is None for value in folded.values()):
                document.keep(f"line {entry.first + 1}", ICU_KEPT)  # left untranslated, not fuzzy
                continue
            translated = {key: value for key, value in folded.items() if value is not None}
            eol = line_ending(lines[entry.first]) or "\n"
            if "msgid_plural" in entry.fields:
                edits.append(_plural_edit(entry, fill, lose, translated, lines, eol, width))
            else:
                for form in fill:
                    span = entry.fields[form]
                    written = written_lines(form, translated["msgid"], entry.fields["msgid"], width)
                    ending = line_ending(lines[span.end - 1])
                    edits.append((span.start, span.end, [line + eol for line in written[:-1]] + [written[-1] + ending]))
            if not entry.fuzzy(lines):
                if entry.flags >= 0:
                    flags = lines[entry.flags]
                    at = flags.index("#,") + 2
                    edits.append((entry.flags, entry.flags + 1, [f"{flags[:at]} fuzzy,{flags[at:]}"]))
                else:
                    at = entry.previous if entry.previous >= 0 else entry.first
                    edits.append((at, at, [f"#, fuzzy{eol}"]))
        written_in = encoding
        if raw is not None:
            try:
                return encoded_lines(lines, raw, edits, encoding)
            except UnicodeEncodeError:
                # A translation the file's charset cannot hold (msgconv would fail on it): the file
                # in UTF-8, its header's charset saying so, every other character as it was.
                written_in = UTF8
                document.content_type = po_content_type(written_in.charset)
                relabel = True
        else:
            # Read as UTF-8 where the header names another charset (a template's `CHARSET`, a name
            # Python does not know): once a translation is not ASCII, the header says UTF-8.
            relabel = not names_utf8(charset) and not all(text.isascii() for text in translations)
        if relabel and declared is not None:
            name, number, column = declared
            line = lines[number]
            edits.append((number, number + 1, [line[:column] + "UTF-8" + line[column + len(name) :]]))
        return encoded_lines(lines, None, edits, written_in)

    document = Document(units, write, po_content_type(encoding.charset))
    return document


def _form_order(form: str) -> tuple[int, int]:
    index = re.fullmatch(r"msgstr\[(\d+)\]", form)
    return (0, int(index.group(1))) if index else (1, 0)


def _plural_edit(
    entry: Entry,
    fill: dict[str, str],
    lose: list[str],
    translated: dict[str, str],
    lines: list[str],
    eol: str,
    width: int | None,
) -> tuple[int, int, list[str]]:
    """A plural entry's msgstr lines (one block: nothing comes between them) written again, its
    forms in order: those kept as they were, those filled wrapped as the string they come from."""
    forms = entry.forms()
    start, end = entry.fields[forms[0]].start, entry.fields[forms[-1]].end
    block: list[str] = []
    for form in sorted({*fill, *(form for form in forms if form not in lose)}, key=_form_order):
        if form in fill:
            source = fill[form]
            block += [line + eol for line in written_lines(form, translated[source], entry.fields[source], width)]
        else:
            span = entry.fields[form]
            block += [line if line_ending(line) else line + eol for line in lines[span.start : span.end]]
    if not line_ending(lines[end - 1]):  # the file's last line, without a line ending
        block[-1] = block[-1].rstrip("\r\n")
    return start, end, block

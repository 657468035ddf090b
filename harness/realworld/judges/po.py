"""PO and POT: `msgfmt -c` (gettext's own check before a catalog ships) and polib. What a person
translated, obsolete entries and comments come back byte for byte; the header changes only where
the service has a reason to."""

from __future__ import annotations

import collections
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.realworld.judges.common import blocks, charset_of, codec, decoded, first_difference, in_order
from harness.realworld.judges.html import markup

if TYPE_CHECKING:
    from harness.realworld import Answer, RealFile

MSGFMT = "msgfmt"


def _msgfmt_errors(path: Path) -> list[str]:
    if shutil.which(MSGFMT) is None:
        raise RuntimeError("the PO judge needs gettext's msgfmt (Debian: apt-get install gettext)")
    done = subprocess.run([MSGFMT, "-c", "-o", os.devnull, str(path)], capture_output=True, text=True, timeout=60)
    if done.returncode == 0:
        return []
    # Without the file name and line numbers: the answer's lines are not the original's.
    lines = [re.sub(r"^.*?\.po:(?:\d+:)?\s*", "", line).strip() for line in done.stderr.splitlines()]
    return [line for line in lines if line and not line.startswith("msgfmt: found")] or [done.stderr.strip()]


def _kept_blocks(text: str) -> list[str]:
    """The blocks of a PO file the service must give back byte for byte: entries a person
    translated (not fuzzy), obsolete entries and comments alone (the header is judged by its fields)."""
    import polib

    kept = []
    for block in blocks(text):
        try:
            parsed = polib.pofile(block + "\n", wrapwidth=0)
        except (OSError, ValueError):
            continue
        entries = list(parsed) + parsed.obsolete_entries()
        if not entries:
            if block.lstrip().startswith("#") and not parsed.metadata:
                kept.append(block)
            continue
        if all(entry.obsolete or entry.translated() for entry in entries):
            kept.append(block)
    return kept


def _header_changes(a: dict[str, str], b: dict[str, str]) -> list[str]:
    """The header fields changed that the service has no reason to change: it may fill in a
    template's Language and Plural-Forms, and say UTF-8 where the translation does not fit the
    declared charset (`decoded` judges that)."""
    changed = []
    for field, value in a.items():
        if field == "Content-Type" and codec(charset_of(b.get(field, "")) or "ascii") == "utf-8":
            continue
        if field == "Plural-Forms" and not nplurals(value) or field == "Language" and not value.strip():
            continue
        if b.get(field) != value:
            changed.append(f"{field}: {value!r} -> {b.get(field)!r}")
    return changed


def nplurals(plural_forms: str) -> int:
    match = re.search(r"nplurals\s*=\s*(\d+)", plural_forms)
    return int(match.group(1)) if match else 0


def judge(f: RealFile, original: bytes, answer: Answer) -> list[str]:
    import polib

    problems, text, answer_text = decoded(f, original, answer)
    if answer_text is None:
        return problems
    with tempfile.TemporaryDirectory() as folder:
        before, after = Path(folder) / "original.po", Path(folder) / "answer.po"
        before.write_bytes(original)
        after.write_bytes(answer.data)
        new = list(
            (collections.Counter(_msgfmt_errors(after)) - collections.Counter(_msgfmt_errors(before))).elements()
        )
        if new:
            problems.append("msgfmt -c fails where the original passes: " + "; ".join(new[:4]))
        try:
            a, b = polib.pofile(str(before)), polib.pofile(str(after))
        except (OSError, ValueError) as exc:
            return [*problems, f"polib cannot read the answer: {exc}"]
    changed_fields = _header_changes(a.metadata, b.metadata)
    if changed_fields:
        problems.append(f"polib: header fields changed: {changed_fields[:4]}")
    declared = charset_of(b.metadata.get("Content-Type", ""))
    sent = charset_of(answer.content_type)
    if declared and sent and declared.upper() != "CHARSET" and codec(declared) != codec(sent):
        problems.append(f"the header declares charset={declared}, the answer's Content-Type {sent}")
    forms = nplurals(a.metadata.get("Plural-Forms", ""))
    if f.plurals and forms != f.plurals:
        problems.append(f"manifest: the file's header gives nplurals={forms}, the manifest {f.plurals}")
    answer_plurals = nplurals(b.metadata.get("Plural-Forms", ""))
    a_entries, b_entries = list(a) + a.obsolete_entries(), list(b) + b.obsolete_entries()

    def key(entry: Any) -> tuple[Any, ...]:
        return (entry.msgctxt, entry.msgid, entry.msgid_plural, entry.obsolete)

    problems += first_difference([key(e) for e in a_entries], [key(e) for e in b_entries], "polib: entries")
    changed = [
        x.msgid[:60]
        for x, y in zip(a_entries, b_entries, strict=False)
        if (x.obsolete or x.translated())
        and (x.msgstr, x.msgstr_plural, sorted(x.flags)) != (y.msgstr, y.msgstr_plural, sorted(y.flags))
    ]
    if changed:
        problems.append(f"polib: {len(changed)} entries a person translated were changed, e.g. {changed[:3]}")
    wrong = [
        (y.msgid[:40], len(y.msgstr_plural))
        for x, y in zip(a_entries, b_entries, strict=False)
        if y.msgid_plural
        and not y.obsolete
        and not x.translated()
        and any(y.msgstr_plural.values())
        and answer_plurals
        and len(y.msgstr_plural) != answer_plurals
    ]
    if wrong:
        problems.append(f"polib: plural translations without the header's nplurals={answer_plurals} forms: {wrong[:3]}")
    lost = [
        y.msgid[:60]
        for x, y in zip(a_entries, b_entries, strict=False)
        # Not an obsolete entry: polib calls it untranslated, but it is a person's, kept as it was
        # (pydata-sphinx-theme's Russian one holds markup its translator escaped wrongly).
        if not x.translated()
        and not x.obsolete
        and y.msgstr
        and markup(y.msgid)
        and markup(y.msgid) != markup(y.msgstr)
    ]
    if lost:
        problems.append(f"lxml: {len(lost)} translations lost or changed their msgid's markup, e.g. {lost[:3]}")
    missing = in_order(_kept_blocks(text), blocks(answer_text))
    if missing:
        problems.append(
            f"{len(missing)} untouched blocks not given back byte for byte, the first: {missing[0][:300]!r}"
        )
    return problems


def texts(f: RealFile, original: bytes) -> Iterator[str]:
    """The msgids nobody translated (untranslated or fuzzy entries)."""
    import polib

    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "file.po").write_bytes(original)
        catalog = polib.pofile(str(Path(folder) / "file.po"))
    yield from (e.msgid for e in catalog.untranslated_entries() + catalog.fuzzy_entries())

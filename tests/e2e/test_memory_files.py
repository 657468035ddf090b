"""Translation memories made and read by a tool nobody here wrote: translate-toolkit's `po2tmx`
(requirements-dev.txt) over the real-world tier's PO catalogs (harness/realworld/manifest.toml:
pinned by version and sha256, cached in build/realworld/), its TMX imported by
read_memory_file, and that import written by write_tmx and read by translate-toolkit's own
`tmxfile`; and its `po2xliff` over the same catalogs, read by read_memory_file and by
translate-toolkit's PO-flavoured XLIFF reader.

- every unit po2tmx wrote comes back as a segment, as translate-toolkit reads the same file;
- our TMX of those segments, read by translate-toolkit, gives the same units;
- our PO reader gives segments po2tmx gave too (po2tmx writes every plural form, ours the first
  and the last: translator/memory/files.py), but where a language has one form: po2tmx pairs a
  msgid_plural with nothing then, ours with that form;
- the XLIFF po2xliff wrote gives the units translate-toolkit reads as translated and not fuzzy,
  in their order.

`make test` takes the tier's CI subset of catalogs; REALWORLD=all every PO file of the manifest.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from translate.storage.po import pofile
from translate.storage.poxliff import PoXliffFile
from translate.storage.tmx import tmxfile

from harness import realworld
from harness.realworld import RealFile
from translator.memory.files import read_memory_file, write_tmx

pytestmark = [pytest.mark.processes, pytest.mark.realworld]

CATALOGS = [f for f in realworld.selected() if f.fmt in (".po", ".pot") and not f.make]


def catalog(f: RealFile) -> bytes:
    try:
        return realworld.local_path(f).read_bytes()
    except realworld.FetchError as exc:
        pytest.fail(f"{f.id}: {exc}", pytrace=False)


def convert(tool: str, f: RealFile, folder: Path) -> bytes:
    """The catalog converted by translate-toolkit's `tool` (po2tmx, po2xliff)."""
    # They take .po files only (a .pot is passed over with a warning, and an empty output).
    source, out = folder / "catalog.po", folder / ("made.tmx" if tool == "po2tmx" else "made.xlf")
    data = catalog(f)
    if f.encoding:
        # translate-toolkit reads what comes before the header as UTF-8 (roundup's es.po fails in its
        # first comment): it is given the same catalog in UTF-8.
        text = re.sub(r"charset=[\w.:+-]+", "charset=UTF-8", data.decode(f.encoding), count=1)
        data = text.encode("utf-8")
    source.write_bytes(data)
    language = ["-l", f.target] if tool == "po2tmx" else []
    command = [sys.executable, "-m", f"translate.convert.{tool}", "--progress=none", *language, str(source), str(out)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0 and not done.stderr, f"{f.id}: {tool} failed: {done.stderr[-500:]}"
    if not out.exists():
        pytest.skip(f"{tool} wrote nothing: the catalog has no unit it writes")
    return out.read_bytes()


def single_form_plurals(data: bytes) -> set[str]:
    """The msgid_plurals of entries with one form (Japanese, Thai...), which po2tmx pairs with
    nothing: its msgid_plural goes with msgstr[1] and after."""
    return {u.source.strings[1] for u in pofile.parsestring(data).units if u.hasplural() and len(u.target.strings) == 1}


def toolkit_units(data: bytes, target: str) -> list[tuple[str, str]]:
    store = tmxfile.parsestring(data)
    return [(unit.source, unit.gettarget(target)) for unit in store.units]


@pytest.mark.parametrize("f", CATALOGS, ids=[f.id for f in CATALOGS])
def test_a_tmx_po2tmx_made_comes_back_whole_and_goes_back_as_translate_toolkit_reads_it(f, tmp_path):
    data = convert("po2tmx", f, tmp_path)
    theirs = toolkit_units(data, f.target)
    imported = read_memory_file("made.tmx", data, None, None)
    assert imported.source_lang == "en"
    assert {s.target_lang for s in imported.segments} <= {f.target}
    ours = [(s.source, s.target) for s in imported.segments]
    # po2tmx writes a plural's empty form as an empty <seg>, which is no translation.
    filled = [(source, target) for source, target in theirs if source.strip() and target.strip()]
    assert ours == filled, f"{f.id}: {len(ours)} segments read, translate-toolkit reads {len(filled)} units"
    assert imported.skipped == len(theirs) - len(filled), imported.notes

    written = write_tmx(f.id, "en", imported.segments)
    # One unit per source: the last of a source's segments, as a memory matches it.
    last = dict(ours)
    assert toolkit_units(written, f.target) == list(last.items())
    assert [(s.source, s.target) for s in read_memory_file("ours.tmx", written, None, None).segments] == list(
        last.items()
    )

    from_po = read_memory_file(f.name, catalog(f), f.source, f.target)
    missing = {(s.source, s.target) for s in from_po.segments} - set(theirs)
    missing = {(source, target) for source, target in missing if source not in single_form_plurals(catalog(f))}
    assert not missing, f"{f.id}: our PO reader gives segments po2tmx does not: {sorted(missing)[:5]}"


def plain(value: str) -> list[str]:
    # A multistring's first string is the multistring itself (its other forms attached, true where
    # any is): sliced, each is a str.
    return [string[:] for string in getattr(value, "strings", [value])]


def toolkit_xliff_pairs(data: bytes) -> list[tuple[str, str]]:
    """The translated, not fuzzy units of a po2xliff file as translate-toolkit's PO-flavoured XLIFF
    reader has them, a plural's forms paired with its sources as po2tmx pairs them."""
    pairs: list[tuple[str, str]] = []
    for unit in PoXliffFile.parsestring(data).units:
        if unit.isheader() or not unit.istranslated() or unit.isfuzzy():
            continue
        sources, forms = (plain(unit.source), plain(unit.target))
        pairs += [(sources[min(n, len(sources) - 1)], form) for n, form in enumerate(forms) if form]
    return pairs


@pytest.mark.parametrize("f", CATALOGS, ids=[f.id for f in CATALOGS])
def test_an_xliff_po2xliff_made_gives_its_translated_units(f, tmp_path):
    data = convert("po2xliff", f, tmp_path)
    # po2xliff's target-language is the header's Language, where it has one.
    imported = read_memory_file("made.xlf", data, None, None if b"target-language=" in data else f.target)
    assert imported.source_lang == "en-US"  # po2xliff's
    ours = [(s.source, s.target) for s in imported.segments]
    theirs = toolkit_xliff_pairs(data)
    assert [pair for pair in ours if pair in theirs] == theirs
    # Beyond them, only what po2xliff marks translated and approved where the catalog did not: an
    # obsolete entry, the first form of a fuzzy plural (translate-toolkit's reader, which reads the
    # plural's group, calls it fuzzy). What a file says is translated is taken as it says.
    assert len(ours) - len(theirs) <= catalog(f).count(b"#~ msgid") + catalog(f).count(b"msgid_plural")

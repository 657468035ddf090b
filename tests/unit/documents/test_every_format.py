"""Document readers and writers without a server: each format read into units, "translated" by
replacing corpus sentences with their translations, and written back; everything outside the
text must come back unchanged (bytes, or the zip's other members and the XML outside text)."""

from __future__ import annotations

import json
import sys

import pytest

from harness import documents
from tests.unit.helpers.round_trip import TA, TB, TC, A, B, C, identity, members, translate
from translator.contract.errors import PayloadTooLarge
from translator.documents import model, yaml_catalogs
from translator.documents.formats import read_document, supported
from translator.documents.model import BadDocument, UnsupportedDocument

pytestmark = pytest.mark.pure


def test_text_keeps_line_endings_blank_lines_and_bom():
    source = f"\ufeff{A}\r\n\r\n   {B} {C}\n".encode()
    assert identity("a.txt", source) == source
    assert translate("a.txt", source) == f"\ufeff{TA}\r\n\r\n   {TB} {TC}\n".encode()


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_srt_keeps_numbers_timings_and_line_breaks(newline):
    source = documents.srt([A, f"{B}{newline}{C}"], newline)
    assert identity("a.srt", source) == source
    assert translate("a.srt", source) == documents.srt([TA, f"{TB}{newline}{TC}"], newline)


def test_vtt_keeps_header_notes_settings_and_cue_markup():
    source = (
        f"WEBVTT - film\n\nNOTE not a cue\n\nintro\n00:00.500 --> 00:02.000 line:90%\n<v Anna>{A}</v>\n\n"
        f"00:03.000 --> 00:04.000\n{B}\n"
    ).encode()
    assert identity("a.vtt", source) == source
    expected = source.decode().replace(A, TA).replace(B, TB).encode()
    assert translate("a.vtt", source) == expected


def test_docx_keeps_bold_runs_and_every_other_member():
    source = documents.docx([[(A + " ", False), (B, True), (" " + C, False)], [(C, True)]])
    out = translate("a.docx", source)
    assert documents.docx_runs(out) == [[(TA + " ", False), (TB, True), (" " + TC, False)], [(TC, True)]]
    before, after = members(source), members(out)
    assert list(after) == list(before)
    assert {n: d for n, d in after.items() if n != "word/document.xml"} == {
        n: d for n, d in before.items() if n != "word/document.xml"
    }
    assert documents.docx_runs(identity("a.docx", source)) == documents.docx_runs(source)


def test_pptx_keeps_bold_runs():
    source = documents.pptx([[(A + " ", False), (B, True)]])
    out = members(translate("a.pptx", source))["ppt/slides/slide1.xml"].decode()
    assert f"<a:t>{TA} </a:t>" in out.replace(' xml:space="preserve"', "") and f'b="1"/><a:t>{TB}</a:t>' in out


def test_html_and_markdown_keep_markup_and_code():
    # (The fake translation replaces sentences anywhere: the service's keeps <script> and <pre>; e2e.)
    page = f"<!doctype html><html><head><title>{A}</title><script>var s = 1;</script></head>"
    page += f"<body><p>{B} <b>{C}</b></p><pre>x = 1</pre></body></html>"
    assert identity("a.html", page.encode()) == page.encode()
    assert translate("a.html", page.encode()).decode() == (
        f"<!doctype html><html><head><title>{TA}</title><script>var s = 1;</script></head>"
        f"<body><p>{TB} <b>{TC}</b></p><pre>x = 1</pre></body></html>"
    )
    markdown = f"# {A}\n\n- {B}\n1. {C}\n\n```\n{A}\n```\n\n---\n"
    assert identity("a.md", markdown.encode()) == markdown.encode()
    assert translate("a.md", markdown.encode()).decode() == f"# {TA}\n\n- {TB}\n1. {TC}\n\n```\n{A}\n```\n\n---\n"


def test_markdown_front_matter_is_the_site_generators_not_text():
    front = f"---\ntitle: {A}\nlayout: post\n---\n"
    assert translate("a.md", f"{front}\n{B}\n".encode()).decode() == f"{front}\n{TB}\n"
    # A rule at the top that never closes is a rule, and the text after it is translated.
    assert translate("a.md", f"---\n\n{B}\n".encode()).decode() == f"---\n\n{TB}\n"


def test_po_fills_msgstr_keeps_plurals_fuzzy_and_context():
    import polib

    source = (
        'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n'
        '"Plural-Forms: nplurals=2; plural=(n > 1);\\n"\n\n'
        f'#, fuzzy\nmsgctxt "menu"\nmsgid "{A}"\nmsgstr ""\n\n'
        f'msgid "{B}"\nmsgid_plural "{C}"\nmsgstr[0] ""\nmsgstr[1] ""\n'
    )
    done = f'#: a translator\'s\nmsgid "{C}"\nmsgstr "Une traduction faite par une personne."\n'
    catalog = polib.pofile(translate("a.po", (source + "\n" + done).encode()).decode())
    first, second, third = list(catalog)
    assert (first.msgctxt, first.msgid, first.msgstr, first.fuzzy) == ("menu", A, TA, True)
    assert second.msgstr_plural == {0: TB, 1: TC} and second.msgid_plural == C
    # Machine output is flagged for review; a person's translation is left as it was.
    assert second.fuzzy and not third.fuzzy
    assert third.msgstr == "Une traduction faite par une personne."
    assert "Plural-Forms" in catalog.metadata


@pytest.mark.parametrize("version", ["1.2", "2.0"])
def test_xliff_targets_filled(version):
    from lxml import etree

    if version == "1.2":
        source = (
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            '<xliff version="1.2" xmlns="urn:oasis:names:tc:xliff:document:1.2">'
            f'<file source-language="en" datatype="plaintext" original="x"><body>'
            f'<trans-unit id="1"><source>{A}</source></trans-unit>'
            f'<trans-unit id="2"><source>{B}</source><target state="new">old</target></trans-unit>'
            f'<trans-unit id="3"><source>{C}</source><target>A person\'s</target></trans-unit></body></file></xliff>'
        )
    else:
        source = (
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            '<xliff version="2.0" xmlns="urn:oasis:names:tc:xliff:document:2.0" srcLang="en">'
            f'<file id="f"><unit id="1"><segment><source>{A}</source></segment></unit>'
            f'<unit id="2"><segment state="initial"><source>{B}</source><target>old</target></segment></unit>'
            f'<unit id="3"><segment><source>{C}</source><target>A person\'s</target></segment></unit></file></xliff>'
        )
    root = etree.fromstring(translate("a.xlf", source.encode()))
    ns = {"x": root.nsmap[None]}
    # Filled where missing or asked for; a translation already there is a person's, and stays.
    assert [t.text for t in root.iterfind(".//x:target", ns)] == [TA, TB, "A person's"]
    assert [s.text for s in root.iterfind(".//x:source", ns)] == [A, B, C]
    if version == "1.2":
        states = [(t.get("state"), t.get("state-qualifier")) for t in root.iterfind(".//x:target", ns)]
        assert states == [("needs-review-translation", "mt-suggestion")] * 2 + [(None, None)]
    else:
        states = [(s.get("state"), s.get("subState")) for s in root.iterfind(".//x:segment", ns)]
        assert states == [("translated", "m2m:mt-suggestion")] * 2 + [(None, None)]


def test_xliff_alt_trans_suggestions_are_left_as_they_are():
    from lxml import etree

    suggestion = f"<alt-trans><source>{B}</source><target>a memory's suggestion</target></alt-trans>"
    source = (
        '<xliff version="1.2" xmlns="urn:oasis:names:tc:xliff:document:1.2">'
        '<file source-language="en" datatype="plaintext" original="x"><body>'
        f'<trans-unit id="1"><source>{A}</source>{suggestion}</trans-unit></body></file></xliff>'
    )
    root = etree.fromstring(translate("a.xlf", source.encode()))
    ns = {"x": root.nsmap[None]}
    assert [t.text for t in root.iterfind("./x:file/x:body/x:trans-unit/x:target", ns)] == [TA]
    assert [t.text for t in root.iterfind(".//x:alt-trans/x:target", ns)] == ["a memory's suggestion"]


def test_json_values_only():
    source = json.dumps({"greeting": A, "menu": {"items": [B, 3, {"{name}": f"{C} {{name}}"}]}}, indent=2) + "\n"
    out = translate("en.json", source.encode()).decode()
    assert json.loads(out) == {"greeting": TA, "menu": {"items": [TB, 3, {"{name}": f"{TC} {{name}}"}]}}
    assert out.endswith("\n") and '\n  "greeting"' in out


def test_json_values_in_place_and_everything_else_byte_for_byte():
    # Compact and odd layout, escapes, a float written 1.0, a key holding a sentence: as they were.
    source = f'{{"{A}":"{A}",  "n": 1.0, "u": "caf\\u00e9", "q": "say \\"hi\\"",\n "list": [ "{B}", 2 ]}}'
    assert identity("en.json", source.encode()) == source.encode()
    out = translate("en.json", source.encode()).decode()
    assert out == source.replace(f':"{A}"', f":{json.dumps(TA, ensure_ascii=False)}").replace(
        f'"{B}"', json.dumps(TB, ensure_ascii=False)
    )
    escaped = read_document("en.json", b'{"a": "caf\\u00e9 au lait"}').write(["Caf\u00e9 cr\u00e8me"])
    assert escaped == b'{"a": "Caf\\u00e9 cr\\u00e8me"}'  # the file's ASCII escapes kept up


YAML = f"""# Greetings
en:
  greeting: "{A}"   # shown first
  plain: {B}
  count: 3
  enabled: yes
  shared: &common '{C}'
  again: *common
  block: |
    {A}
    {B}
  folded: >-
    {C}
  items:
    - {A}
    - [{B}, 42]
"""


def test_yaml_values_in_place_and_everything_else_byte_for_byte():
    import yaml

    # A Rails locale file: answered under the target's locale (fr), everything else as it was.
    assert identity("en.yml", YAML.encode()) == YAML.replace("\nen:\n", "\nfr:\n").encode()
    expected = (
        YAML.replace("\nen:\n", "\nfr:\n")
        .replace(f'"{A}"', f'"{TA}"')
        .replace(f"plain: {B}", f"plain: {TB}")
        .replace(f"'{C}'", f"'{TC}'")
        .replace(f"    {A}\n    {B}\n", f"    {TA}\n    {TB}\n")
        .replace(f">-\n    {C}", f">-\n    {TC}")
        .replace(f"- {A}", f"- {TA}")
        .replace(f"[{B}, 42]", f"[{TB}, 42]")
    )
    assert translate("en.yaml", YAML.encode()).decode() == expected
    assert yaml.safe_load(expected)["fr"]["again"] == TC  # the alias follows its anchor


def test_yaml_with_windows_line_endings_keeps_them_in_blocks_too():
    source = YAML.replace("\n", "\r\n").encode()
    assert identity("en.yml", source) == source.replace(b"\nen:\r\n", b"\nfr:\r\n")
    out = translate("en.yml", source)
    assert out == translate("en.yml", YAML.encode()).replace(b"\n", b"\r\n")


def test_a_yaml_value_is_quoted_where_its_style_cannot_hold_the_translation():
    import yaml

    source = "a: plain words\nb: 'single'\nc: |\n  block\nd: [x, y]\n"
    document = read_document("a.yaml", source.encode())
    hard = ["key: value, with # marks", "two\nlines", " leading space", "it's [flow]", "yes"]
    written = document.write(hard).decode()
    assert yaml.safe_load(written) == {"a": hard[0], "b": hard[1], "c": hard[2], "d": [hard[3], hard[4]]}
    assert written.startswith('a: "key: value, with # marks"\n')


def test_bad_yaml_is_a_400_naming_it():
    with pytest.raises(BadDocument, match="not valid YAML"):
        read_document("a.yaml", b"key: [unclosed\n")


def test_yaml_aliases_are_walked_once_each_so_a_billion_laughs_is_read_at_once():
    # Each collection was walked again through every alias naming it: 9**9 visits, minutes of a
    # worker's thread for 600 bytes (#39's hostile files). Aliases of strings: translated once.
    # The reader's walk counted, not timed: once per collection and item, about a hundred calls.
    walks = 0

    def count(frame, event, arg):
        nonlocal walks
        if event == "call" and frame.f_code.co_name == "walk" and frame.f_globals["__name__"] == yaml_catalogs.__name__:
            walks += 1
            assert walks < 1_000, "walked through the aliases"  # at once, not after 9**9 calls

    sys.setprofile(count)
    try:
        document = read_document("laughs.yaml", documents.yaml_laughs("a comment"))
    finally:
        sys.setprofile(None)
    assert 9 * 9 <= walks < 1_000
    assert document.units == [] and document.write([]) == documents.yaml_laughs("a comment")
    aliased = read_document("a.yaml", b"a: &a [Hello., &b [World.]]\nb: [*a, *a, *b]\n")
    assert [unit.text for unit in aliased.units] == ["Hello.", "World."]


def test_xlsx_odt_epub_round_trips():
    out = members(translate("a.xlsx", documents.xlsx([A, "42", B])))
    assert (
        f"<t>{TA}</t>" in out["xl/sharedStrings.xml"].decode()
        and f"<t>{TB}</t>" in out["xl/sharedStrings.xml"].decode()
    )
    source = documents.odt([f'{A} <text:span text:style-name="T1">{B}</text:span><text:tab/>{C}'])
    content = members(translate("a.odt", source))["content.xml"].decode()
    assert f'<text:p>{TA} <text:span text:style-name="T1">{TB}</text:span><text:tab/>{TC}</text:p>' in content
    assert members(translate("a.odt", source))["meta.xml"] == members(source)["meta.xml"]
    book = documents.epub([f"<h1>{A}</h1><p>{B}<br/>{C}</p>"])
    chapter = members(translate("a.epub", book))["OEBPS/ch1.xhtml"].decode()
    assert f"<h1>{TA}</h1><p>{TB}<br/>{TC}</p>" in chapter


def test_bad_files_are_named(monkeypatch):
    with pytest.raises(UnsupportedDocument, match="PDF"):
        read_document("a.pdf", b"%PDF")
    with pytest.raises(UnsupportedDocument, match=r"\.exe"):
        read_document("a.exe", b"MZ")
    with pytest.raises(BadDocument, match="zip"):
        read_document("a.docx", b"plain")
    with pytest.raises(BadDocument, match="encrypted"):
        read_document("a.xlsx", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(64))
    with pytest.raises(BadDocument, match="not a .docx"):
        read_document("a.docx", documents.package({"x.xml": "<x/>"}))
    with pytest.raises(BadDocument, match="well-formed"):
        read_document("a.docx", documents.package({"word/document.xml": "<w:document"}))
    # A zip bomb: bounded from the central directory, before anything is decompressed.
    bomb = documents.package({"word/document.xml": "<a/>", "big.bin": "0" * 1_000_000})
    monkeypatch.setattr(model, "MAX_UNCOMPRESSED_BYTES", 500_000)
    monkeypatch.setattr("translator.documents.archive.MAX_UNCOMPRESSED_BYTES", 500_000)
    with pytest.raises(PayloadTooLarge, match="uncompressed"):
        read_document("a.docx", bomb)
    many = documents.package({f"f{i}.xml": "" for i in range(30)})
    monkeypatch.setattr("translator.documents.archive.MAX_ZIP_ENTRIES", 20)
    with pytest.raises(PayloadTooLarge, match="entries"):
        read_document("a.docx", many)


@pytest.mark.parametrize("extension", supported())
def test_garbage_in_every_format_is_a_4xx_or_a_document(extension):
    import random

    from translator.contract.errors import TranslationError
    from translator.documents.formats import read_document_safely
    from translator.documents.model import Part

    generator = random.Random(extension)
    samples = [b"", bytes(generator.randrange(256) for _ in range(300)), b"\xff\xfe<", b"PK\x03\x04" + bytes(40)]
    samples += [documents.package({"word/document.xml": "<x>", "content.xml": "<", "xl/sharedStrings.xml": "<"})]
    samples += [b"[" * 100_000, b'{"a": ' * 50_000, b"<" * 1000]
    for data in samples:
        try:
            document = read_document_safely(f"a{extension}", data, "fr")
        except TranslationError as exc:
            assert 400 <= exc.status < 500 and getattr(exc, "part", None) is Part.CONTENT
        else:
            document.write([unit.text for unit in document.units])


def test_docx_hyperlink_is_rebuilt_around_its_words():
    w = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
    r = 'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"'
    body = (
        f'<w:p><w:r><w:t xml:space="preserve">{A} </w:t></w:r>'
        f'<w:hyperlink r:id="rId9"><w:r><w:rPr><w:rStyle w:val="Hyperlink"/></w:rPr><w:t>{B}</w:t></w:r></w:hyperlink>'
        "</w:p>"
    )
    declaration = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\r\n'
    xml = f"{declaration}<w:document {w} {r}><w:body>{body}</w:body></w:document>"
    out = members(translate("a.docx", documents.package({"word/document.xml": xml})))["word/document.xml"].decode()
    assert f'<w:t xml:space="preserve">{TA} </w:t>' in out
    assert (
        f'<w:hyperlink r:id="rId9"><w:r><w:rPr><w:rStyle w:val="Hyperlink"/></w:rPr><w:t>{TB}</w:t></w:r></w:hyperlink>'
        in out
    )


ODF = (
    'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
    'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
    'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" '
    'xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0"'
)


@pytest.mark.parametrize(
    ("extension", "body"),
    [
        # A slide's text frame, and a spreadsheet's cells (a number cell stays).
        (
            "odp",
            f"<office:presentation><draw:page><draw:frame><draw:text-box><text:p>{A}</text:p>"
            f"<text:p>{B}</text:p></draw:text-box></draw:frame></draw:page></office:presentation>",
        ),
        (
            "ods",
            f"<office:spreadsheet><table:table><table:table-row><table:table-cell><text:p>{A}</text:p>"
            f'</table:table-cell><table:table-cell office:value-type="float" office:value="42"><text:p>42</text:p>'
            f"</table:table-cell><table:table-cell><text:p>{B}</text:p></table:table-cell></table:table-row>"
            "</table:table></office:spreadsheet>",
        ),
    ],
)
def test_odp_and_ods_round_trips(extension, body):
    declaration = '<?xml version="1.0" encoding="UTF-8"?>\r\n'
    content = f"{declaration}<office:document-content {ODF}><office:body>{body}</office:body></office:document-content>"
    mimetype = f"application/vnd.oasis.opendocument.{extension}"
    source = documents.package({"mimetype": mimetype, "content.xml": content, "meta.xml": "<m/>"})
    assert members(identity(f"a.{extension}", source)) == members(source)
    out = members(translate(f"a.{extension}", source))
    assert out["content.xml"].decode() == content.replace(f">{A}<", f">{TA}<").replace(f">{B}<", f">{TB}<")
    assert out["meta.xml"] == b"<m/>" and out["mimetype"] == mimetype.encode()


def test_pot_template_is_filled_as_a_po_file():
    import polib

    source = (
        f'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n\n#: app.py:3\nmsgid "{A}"\nmsgstr ""\n'
    )
    catalog = polib.pofile(translate("messages.pot", source.encode()).decode())
    [entry] = list(catalog)
    assert (entry.msgid, entry.msgstr, entry.occurrences, entry.fuzzy) == (A, TA, [("app.py", "3")], True)


def test_subtitles_without_a_cue_are_refused_naming_what_a_cue_is():
    # A malformed timing line ("->") leaves no cue: the file would come back untranslated, unexplained.
    with pytest.raises(BadDocument, match="no subtitle cue found.*00:00:01,000 --> 00:00:02,000"):
        read_document("film.srt", b"1\n00:00:01,000 -> 00:00:02,000\nHello.\n", "fr")
    with pytest.raises(BadDocument, match="00:00:01.000 --> 00:00:02.000"):
        read_document("film.vtt", b"1\n00:00:01.000 -> 00:00:02.000\nHello.\n", "fr")
    # A WebVTT file of its header and a note alone is valid, and empty.
    assert read_document("film.vtt", b"WEBVTT\n\nNOTE nothing yet\n", "fr").units == []
    assert read_document("film.srt", b"\n\n", "fr").units == []


@pytest.mark.parametrize("build", [documents.docx, documents.pptx], ids=["docx", "pptx"])
def test_the_harness_builds_the_same_bytes_at_any_hour(monkeypatch, build):
    # The test-suite's workers each build these while collecting parametrized cases, and
    # pytest-xdist refuses to run when a case differs between them: a zip dated "now" did.
    import time

    paragraphs = [[(A, False), (B, True)]]
    before = build(paragraphs)
    later = time.time() + 3_600
    monkeypatch.setattr(time, "time", lambda: later)
    assert build(paragraphs) == before

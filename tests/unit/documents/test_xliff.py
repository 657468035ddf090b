"""XLIFF 1.0, 1.1, 1.2 and 2.0: only the targets are written and the target language changed, byte
for byte otherwise (attribute quotes, references, comments, notes, a person's translation, inline
markup, line endings); each file comes back in its own version with that version's states; what is
not XLIFF is refused, naming the root found."""

from __future__ import annotations

import pytest
from lxml import etree

from tests.unit.helpers.round_trip import hunks, identity, translate
from translator.documents.formats import read_document, read_document_safely
from translator.documents.model import BadDocument
from translator.documents.xliff import INLINE_KEPT

pytestmark = pytest.mark.pure


# XLIFF round trips as a translator's diff sees them (#39): files shaped as Weblate, Okapi and
# Angular write them (single-quoted attributes, `&apos;` and character references, the namespace
# declared after `version`, comments, notes, a person's translation, inline markup, CRLF lines)
# come back with only the targets written and the target language changed, byte for byte otherwise.
MACHINE = "state='needs-review-translation' state-qualifier='mt-suggestion'"
V12 = """<?xml version='1.0' encoding='UTF-8'?>
<!-- Exported by Weblate 5.4 -->
<xliff version='1.2' xmlns='urn:oasis:names:tc:xliff:document:1.2' \
xmlns:xsi='http://www.w3.org/2001/XMLSchema-instance' \
xsi:schemaLocation='urn:oasis:names:tc:xliff:document:1.2 xliff-core-1.2-strict.xsd'>
  <file original='shop.json' source-language='en' datatype='plaintext'>
    <header>
      <tool tool-id='weblate' tool-name='Weblate' tool-version='5.4'/>
    </header>
    <body>
      <!-- Home page -->
      <trans-unit id='home.title' resname='home.title'>
        <source>Life is like a box of chocolates.</source>
        <note from='developer'>The page&apos;s title: keep it &lt;short&gt;.</note>
      </trans-unit>
      <trans-unit id='home.walk' xml:space='preserve'>
        <source>Let&apos;s go for a walk in the park.</source>
        <target state='new'/>
      </trans-unit>
      <trans-unit id='home.weather'>
        <source>The weather is beautiful today!</source>
        <target state='translated'>Il fait tr&#232;s beau aujourd&apos;hui !</target>
      </trans-unit>
      <trans-unit id='cart.link' extype="a&gt;b">
        <source>Where is the <g id='1' ctype='x-html-a'>library</g>?<x id='2' ctype='lb'/></source>
      </trans-unit>
      <trans-unit id='cart.price'>
        <source>How much does it cost?</source>
        <!-- the price is shown beside it -->
        <target state="needs-translation"></target>
        <note>In &#x20AC; (&#8364;).</note>
      </trans-unit>
      <group id='footer' resname='footer'>
        <trans-unit id='footer.thanks'>
          <source>Thank you for dinner.</source>
        </trans-unit>
      </group>
    </body>
  </file>
</xliff>
"""
EXPECTED_V12 = [
    (
        ["  <file original='shop.json' source-language='en' datatype='plaintext'>"],
        ["  <file original='shop.json' source-language='en' datatype='plaintext' target-language='fr'>"],
    ),
    ([], [f"        <target {MACHINE}>La vie, c'est comme une boîte de chocolats.</target>"]),
    (["        <target state='new'/>"], [f"        <target {MACHINE}>Allons nous promener dans le parc.</target>"]),
    # Inline elements as the source wrote them, around the words they held (not a corpus sentence here).
    (
        [],
        [
            f"        <target {MACHINE}>Where is the <g id='1' ctype='x-html-a'>library</g>?<x id='2' ctype='lb'/>"
            "</target>"
        ],
    ),
    # A target whose attributes are double quoted keeps its quotes.
    (
        ['        <target state="needs-translation"></target>'],
        ['        <target state="needs-review-translation" state-qualifier="mt-suggestion">Combien ça coûte?</target>'],
    ),
    ([], [f"          <target {MACHINE}>Merci pour le dîner.</target>"]),
]


def test_only_the_targets_written_and_the_target_language_change():
    out = translate("shop.xlf", V12.encode()).decode()
    assert hunks(V12, out) == EXPECTED_V12


def test_the_result_reads_back_as_the_translations():
    root = etree.fromstring(translate("shop.xlf", V12.encode()))
    ns = {"x": "urn:oasis:names:tc:xliff:document:1.2"}
    targets = {
        unit.get("id"): (target.text, target.get("state"), target.get("state-qualifier"))
        for unit in root.iterfind(".//x:trans-unit", ns)
        for target in unit.iterfind("x:target", ns)
    }
    machine = ("needs-review-translation", "mt-suggestion")
    assert targets == {
        "home.title": ("La vie, c'est comme une boîte de chocolats.", *machine),
        "home.walk": ("Allons nous promener dans le parc.", *machine),
        "home.weather": ("Il fait très beau aujourd'hui !", "translated", None),  # a person's
        "cart.link": ("Where is the ", *machine),
        "cart.price": ("Combien ça coûte?", *machine),
        "footer.thanks": ("Merci pour le dîner.", *machine),
    }
    assert root.find("x:file", ns).get("target-language") == "fr"


def test_windows_line_endings_and_a_bom_are_kept():
    source = "\ufeff" + V12.replace("\n", "\r\n")
    out = translate("shop.xlf", source.encode())
    assert out == ("\ufeff" + translate("shop.xlf", V12.encode()).decode().replace("\n", "\r\n")).encode()


def test_a_file_already_in_the_target_language_comes_back_as_it_was_but_its_targets():
    # The target language set already and the sources "translated" as themselves: only the targets.
    source = V12.replace("datatype='plaintext'>", "datatype='plaintext' target-language='fr'>")
    changed = [old for old, _ in hunks(source, identity("shop.xlf", source.encode()).decode())]
    empty = ["        <target state='new'/>"], ['        <target state="needs-translation"></target>']
    assert changed == [[], empty[0], [], empty[1], []]


V20 = """<?xml version="1.0" encoding="UTF-8"?>
<xliff version="2.0" xmlns="urn:oasis:names:tc:xliff:document:2.0" srcLang="en">
  <file id="f1" original="shop.json">
    <notes>
      <note category="context">The shop&apos;s pages &#8212; all of them.</note>
    </notes>
    <unit id="home.title">
      <segment>
        <source>Life is like a box of chocolates.</source>
      </segment>
    </unit>
    <unit id="home.weather">
      <segment state="translated">
        <source>The weather is beautiful today!</source>
        <target>Il fait tr&#232;s beau aujourd&apos;hui !</target>
      </segment>
    </unit>
    <unit id="cart.link">
      <originalData><data id="d1">&lt;a href=&apos;/library&apos;&gt;</data></originalData>
      <segment>
        <source>Where is the <pc id="1" dataRefStart="d1">library</pc>?<ph id="2"/></source>
      </segment>
    </unit>
    <unit id="cart">
      <segment>
        <source>It is next to the town hall.</source>
      </segment>
      <ignorable>
        <source> </source>
      </ignorable>
      <segment state="initial">
        <source>I would like a coffee, please.</source>
        <target/>
      </segment>
    </unit>
  </file>
</xliff>
"""
EXPECTED_V20 = [
    (
        ['<xliff version="2.0" xmlns="urn:oasis:names:tc:xliff:document:2.0" srcLang="en">'],
        ['<xliff version="2.0" xmlns="urn:oasis:names:tc:xliff:document:2.0" srcLang="en" trgLang="fr">'],
    ),
    # A segment filled here says so (2.0's subState is a tool's own qualifier).
    (["      <segment>"], ['      <segment state="translated" subState="m2m:mt-suggestion">']),
    ([], ["        <target>La vie, c'est comme une boîte de chocolats.</target>"]),
    (["      <segment>"], ['      <segment state="translated" subState="m2m:mt-suggestion">']),
    ([], ['        <target>Where is the <pc id="1" dataRefStart="d1">library</pc>?<ph id="2"/></target>']),
    (["      <segment>"], ['      <segment state="translated" subState="m2m:mt-suggestion">']),
    ([], ["        <target>Elle est à côté de la mairie.</target>"]),
    (['      <segment state="initial">'], ['      <segment state="translated" subState="m2m:mt-suggestion">']),
    (["        <target/>"], ["        <target>Je voudrais un café, s'il vous plaît.</target>"]),
]


def test_xliff_2_only_the_targets_written_and_the_target_language_change():
    out = translate("shop.xlf", V20.encode()).decode()
    assert hunks(V20, out) == EXPECTED_V20
    assert translate("shop.xlf", V20.replace("\n", "\r\n").encode()).decode() == out.replace("\n", "\r\n")
    # Translated is translated: a second pass finds nothing to do (left `initial`, it redid them).
    assert translate("shop.xlf", out.encode()).decode() == out


def test_a_translation_is_escaped_and_its_lines_end_as_the_files_do():
    source = V20.replace("\n", "\r\n").encode()
    document = read_document("shop.xlf", source, "fr")
    written = [
        'Tom & Jerry <b>\n"s\'il" ]]>',
        "x",
        "y\u0001",
        'O&ugrave; &amp; <span data-x="0">l&agrave;</span><code data-x="1"></code>',
    ]
    root = etree.fromstring(document.write(written))
    targets = [t.text for t in root.iter("{urn:oasis:names:tc:xliff:document:2.0}target")]
    assert targets == ['Tom & Jerry <b>\n"s\'il" ]]>', "Il fait très beau aujourd'hui !", "Où & ", "x", "y"]
    out = document.write(written)
    assert b'<target>Tom &amp; Jerry &lt;b&gt;\r\n"s\'il" ]]&gt;</target>' in out
    assert out.count(b"\n") == out.count(b"\r\n")
    assert '<target>Où &amp; <pc id="1" dataRefStart="d1">là</pc><ph id="2"/></target>'.encode() in out


def test_the_declared_encoding_is_kept_and_what_it_cannot_hold_is_a_reference():
    latin = V12.replace("encoding='UTF-8'", "encoding='ISO-8859-1'").replace(
        "Thank you for dinner.", "My sister lives in Paris with her two cats."
    )
    latin = latin.replace("keep it &lt;short&gt;", "keep it brève")
    out = translate("shop.xlf", latin.encode("latin-1"))
    assert b"keep it br\xe8ve" in out  # untouched, in Latin-1
    assert b">Ma s&#339;ur habite \xe0 Paris avec ses deux chats.</target>" in out
    assert etree.fromstring(out).find(".//{*}group//{*}target").text.startswith("Ma sœur habite à Paris")
    utf16 = V20.encode("utf-16")  # with its byte order mark
    assert translate("shop.xlf", utf16).decode("utf-16") == translate("shop.xlf", V20.encode()).decode()


def test_a_prefixed_vocabulary_gets_a_prefixed_target():
    source = (
        "<x:xliff xmlns:x='urn:oasis:names:tc:xliff:document:1.2' version='1.2'>"
        "<x:file original='a' source-language='en' datatype='plaintext'><x:body>"
        "<x:trans-unit id='1'><x:source>Where is the library?</x:source></x:trans-unit>"
        "</x:body></x:file></x:xliff>"
    )
    out = translate("a.xlf", source.encode()).decode()
    assert out == source.replace("datatype='plaintext'>", "datatype='plaintext' target-language='fr'>").replace(
        "</x:source>", f"</x:source><x:target {MACHINE}>Où est la bibliothèque?</x:target>"
    )


def test_markup_the_scanner_must_pass_over_as_lxml_does():
    # A DOCTYPE with an internal subset, CDATA, a `>` in attributes, a comment and a processing
    # instruction holding markup: each element is still found where it stands.
    source = (
        '<?xml version="1.0"?>\n<!DOCTYPE xliff [ <!ENTITY brand "Shop"> <!-- ] > --> ]>\n'
        "<xliff version='1.2' xmlns='urn:oasis:names:tc:xliff:document:1.2'>\n"
        "<file original='a>b' source-language='en' datatype='plaintext' x='/>'><body>\n"
        "<!-- <trans-unit id='0'><source>Where is the library?</source></trans-unit> -->\n"
        "<?tool <trans-unit>?>\n"
        "<trans-unit id='1'><source><![CDATA[Where is the library?]]></source></trans-unit>\n"
        "<trans-unit id='2'><source>&brand; Thank you for dinner.</source></trans-unit>\n"
        "<trans-unit id='3'><source>How much does it cost?</source><seg-source><mrk mtype='seg' mid='1'>"
        "How much does it cost?</mrk></seg-source></trans-unit>\n"
        "</body></file></xliff>\n"
    )
    out = translate("a.xlf", source.encode()).decode()
    assert hunks(source, out) == [
        (
            ["<file original='a>b' source-language='en' datatype='plaintext' x='/>'><body>"],
            ["<file original='a>b' source-language='en' datatype='plaintext' x='/>' target-language='fr'><body>"],
        ),
        (
            ["<trans-unit id='1'><source><![CDATA[Where is the library?]]></source></trans-unit>"],
            [
                "<trans-unit id='1'><source><![CDATA[Where is the library?]]></source>"
                f"<target {MACHINE}>Où est la bibliothèque?</target></trans-unit>"
            ],
        ),
        # A source holding an entity lxml leaves unresolved is inline markup: no target.
        # XLIFF 1.2's target goes after the <seg-source>.
        (
            [
                "<trans-unit id='3'><source>How much does it cost?</source><seg-source><mrk mtype='seg' mid='1'>"
                "How much does it cost?</mrk></seg-source></trans-unit>"
            ],
            [
                "<trans-unit id='3'><source>How much does it cost?</source><seg-source><mrk mtype='seg' mid='1'>"
                f"How much does it cost?</mrk></seg-source><target {MACHINE}>Combien ça coûte?</target></trans-unit>"
            ],
        ),
    ]


@pytest.mark.parametrize(
    ("source", "problem"),
    [
        (b"<xliff version='1.2' xmlns='urn:oasis:names:tc:xliff:document:1.2'><file>", "not well-formed"),
        (b"<xliff version='1.2'><file/></xliff>", "its root is <xliff> in no namespace with version='1.2'; accepted"),
        (b"<?xml version='1.0' encoding='x-no-such'?><xliff/>", "Unsupported encoding: x-no-such"),
        # One libxml2 reads and Python's codecs do not: refused before any work.
        (
            b"<?xml version='1.0' encoding='EUC-TW'?><xliff xmlns='urn:oasis:names:tc:xliff:document:1.2'/>",
            "encoding 'EUC-TW' is not supported",
        ),
    ],
)
def test_a_broken_xliff_file_is_a_400_naming_the_problem(source, problem):
    with pytest.raises(BadDocument, match=problem):
        read_document_safely("a.xlf", source, "fr")


def test_a_text_whose_markup_is_not_the_trees_is_refused_rather_than_edited_wrong():
    from translator.documents import xmltext

    root = etree.fromstring("<a><b/><c/></a>")
    assert xmltext.spans("<a><b/><c/></a>", root, [root[1]])[root[1]].start == len("<a><b/>")
    for text in ("<a><b/><d/></a>", "<a><b/></a>", "<a><b/><c/><c/></a>"):
        with pytest.raises(BadDocument, match="could not be located"):
            xmltext.spans(text, root, [])


def test_units_marked_translate_no_are_left_as_they_are():
    # XLIFF's translate attribute: the nearest element that has one decides (1.2: trans-unit and
    # group; 2.0: unit, group and file).
    source = V12.replace(
        "<trans-unit id='home.title' resname='home.title'>", "<trans-unit id='home.title' translate='no'>"
    )
    source = source.replace("<group id='footer' resname='footer'>", "<group id='footer' translate='no'>")
    out = translate("shop.xlf", source.encode()).decode()
    assert "La vie, c'est comme" not in out and "Merci pour le dîner." not in out
    assert "Allons nous promener dans le parc." in out  # its neighbours are translated
    overridden = source.replace("<trans-unit id='footer.thanks'>", "<trans-unit id='footer.thanks' translate='yes'>")
    assert "Merci pour le dîner." in translate("shop.xlf", overridden.encode()).decode()


# XLIFF 1.0 and 1.1 (#42): translate-toolkit's `po2xliff` writes XLIFF 1.1, and 1.0 files have
# no namespace at all; each comes back in its own version (namespace and version attribute as they
# were), its new targets in the states that version has (`state`, without 1.2's `state-qualifier`),
# byte for byte otherwise. What is not XLIFF is refused, naming what the file's root is.


REVIEW = 'state="needs-review-translation"'
# As translate-toolkit 3.20's po2xliff writes a PO file: XLIFF 1.1, the gettext header as a
# translated unit, a fuzzy entry as `approved="no"` with a needs-translation target, a plural
# entry as a group of units, one for each of its source forms.
PO2XLIFF = """<?xml version="1.0" encoding="UTF-8"?>
<xliff xmlns="urn:oasis:names:tc:xliff:document:1.1" version="1.1">
  <file original="shop.po" source-language="en-US" datatype="plaintext" target-language="fr">
    <body>
      <trans-unit xml:space="preserve" id="2" approved="no" restype="x-gettext-domain-header">
        <source>Project-Id-Version: shop 1.0
Content-Type: text/plain; charset=UTF-8
Plural-Forms: nplurals=2; plural=(n &gt; 1);
</source>
        <target state="translated">Project-Id-Version: shop 1.0
Content-Type: text/plain; charset=UTF-8
Plural-Forms: nplurals=2; plural=(n &gt; 1);
</target>
      </trans-unit>
      <trans-unit xml:space="preserve" id="3">
        <source>Life is like a box of chocolates.</source>
        <target></target>
        <context-group name="po-reference" purpose="location">
          <context context-type="sourcefile">shop/views.py</context>
          <context context-type="linenumber">12</context>
        </context-group>
        <note from="developer">A note for translators.</note>
      </trans-unit>
      <trans-unit xml:space="preserve" id="4" approved="no">
        <source>Where is the library?</source>
        <target state="needs-translation">Où est la?</target>
      </trans-unit>
      <trans-unit xml:space="preserve" id="5" approved="yes">
        <source>How much does it cost?</source>
        <target state="translated">Combien ça coûte ?</target>
      </trans-unit>
      <group restype="x-gettext-plurals" id="6">
        <trans-unit xml:space="preserve" id="6[0]">
          <source>It is next to the town hall.</source>
        </trans-unit>
        <trans-unit xml:space="preserve" id="6[1]">
          <source>I would like a coffee, please.</source>
        </trans-unit>
      </group>
    </body>
  </file>
</xliff>
"""


def test_po2xliff_output_comes_back_in_xliff_1_1():
    out = translate("shop.xlf", PO2XLIFF.encode(), "de").decode()
    assert hunks(PO2XLIFF, out) == [
        (
            ['  <file original="shop.po" source-language="en-US" datatype="plaintext" target-language="fr">'],
            ['  <file original="shop.po" source-language="en-US" datatype="plaintext" target-language="de">'],
        ),
        (
            ["        <target></target>"],
            [f"        <target {REVIEW}>La vie, c'est comme une boîte de chocolats.</target>"],
        ),
        (
            ['        <target state="needs-translation">Où est la?</target>'],
            [f"        <target {REVIEW}>Où est la bibliothèque?</target>"],
        ),
        ([], [f"          <target {REVIEW}>Elle est à côté de la mairie.</target>"]),
        ([], [f"          <target {REVIEW}>Je voudrais un café, s'il vous plaît.</target>"]),
    ]
    root = etree.fromstring(out.encode())
    assert (root.tag, root.get("version")) == ("{urn:oasis:names:tc:xliff:document:1.1}xliff", "1.1")
    assert not any(target.get("state-qualifier") for target in root.iter("{*}target"))


def test_xliff_1_0_without_a_namespace_is_read_and_written_as_1_0():
    source = (
        '<?xml version="1.0" ?>\n'
        '<!DOCTYPE xliff PUBLIC "-//XLIFF//DTD XLIFF//EN" '
        '"http://www.oasis-open.org/committees/xliff/documents/xliff.dtd">\n'
        '<xliff version="1.0">\n'
        '<file original="strings.txt" source-language="en" datatype="plaintext"><body>\n'
        '<trans-unit id="1"><source>Thank you for dinner.</source></trans-unit>\n'
        '<trans-unit id="2" translate="no"><source>It was delicious!</source></trans-unit>\n'
        "</body></file>\n</xliff>\n"
    )
    assert (
        identity("strings.xliff", source.encode())
        == source.replace('datatype="plaintext">', 'datatype="plaintext" target-language="fr">')
        .replace("dinner.</source>", f"dinner.</source><target {REVIEW}>Thank you for dinner.</target>")
        .encode()
    )
    out = translate("strings.xliff", source.encode()).decode()
    assert f"<source>Thank you for dinner.</source><target {REVIEW}>Merci pour le dîner.</target>" in out
    assert "<source>It was delicious!</source></trans-unit>" in out


@pytest.mark.parametrize(
    "root",
    [
        "<xliff version='1.0' xmlns='urn:oasis:names:tc:xliff:document:1.0'>",
        "<xliff version='1.1'>",
    ],
)
def test_xliff_1_0_in_its_urn_and_1_1_without_a_namespace_are_read_too(root):
    body = "<file original='a' source-language='en' datatype='plaintext'><body><trans-unit id='1'>"
    source = f"{root}{body}<source>Can you help me?</source></trans-unit></body></file></xliff>"
    out = translate("a.xlf", source.encode()).decode()
    assert out.startswith(root)
    assert "<source>Can you help me?</source><target state='needs-review-translation'>Pouvez-vous" in out


def test_xliff_1_2_keeps_its_state_qualifier():
    source = (
        "<xliff version='1.2' xmlns='urn:oasis:names:tc:xliff:document:1.2'><file original='a' source-language='en' "
        "datatype='plaintext'><body><trans-unit id='1'><source>Can you help me?</source></trans-unit></body></file>"
        "</xliff>"
    )
    document = read_document("a.xlf", source.encode(), "fr")
    assert "state='needs-review-translation' state-qualifier='mt-suggestion'>" in document.write(["Aide"]).decode()


ACCEPTED = "accepted: <xliff> in urn:oasis:names:tc:xliff:document:1.2, :2.0, :1.1 or :1.0"


@pytest.mark.parametrize(
    ("source", "found"),
    [
        (b"<xliff version='1.2'><file/></xliff>", "<xliff> in no namespace with version='1.2'"),
        (b"<xliff><file/></xliff>", "<xliff> in no namespace without a version attribute"),
        (
            b"<xliff version='2.2' xmlns='urn:oasis:names:tc:xliff:document:2.2'/>",
            "<xliff> in namespace urn:oasis:names:tc:xliff:document:2.2 with version='2.2'",
        ),
        (
            b"<file xmlns='urn:oasis:names:tc:xliff:document:1.2'/>",
            "<file> in namespace urn:oasis:names:tc:xliff:document:1.2 without a version attribute",
        ),
        (b"<html><body/></html>", "<html> in no namespace without a version attribute"),
    ],
)
def test_what_is_not_xliff_is_refused_naming_what_it_is_and_what_is_read(source, found):
    with pytest.raises(BadDocument) as refused:
        read_document_safely("a.xlf", source, "fr")
    message = refused.value.message
    assert message.startswith(f"not an XLIFF document this service reads: its root is {found}; {ACCEPTED}")
    assert message.endswith('or in no namespace with version="1.0" or "1.1" (XLIFF 1.0, 1.1, 1.2 and 2.0)')


def test_a_source_wrapped_over_lines_is_one_sentence_and_its_break_comes_back():
    # po2xliff and pretty-printers wrap long sources: the break is white space (as in HTML), the
    # model gets the sentence whole, and the target gets the break back where the translation allows.
    from translator.contract import limits
    from translator.text.plan import plan_record

    wrapped = "Life is like a box\n          of chocolates &amp; sweets."
    source = (
        "<xliff version='1.2' xmlns='urn:oasis:names:tc:xliff:document:1.2'><file original='a' source-language='en' "
        f"datatype='plaintext'><body><trans-unit id='1'><source>{wrapped}</source></trans-unit></body></file></xliff>"
    )
    document = read_document("a.xlf", source.encode(), "fr")
    (unit,) = document.units
    plan = plan_record(unit.text, "en", limits.MAX_PIECE_CHARS, "fr", unit.fmt)
    assert plan.first_round == ["Life is like a box of chocolates & sweets."]
    translation = plan.resolve(["La vie est comme une boîte de chocolats & bonbons."]).render([])
    out = document.write([translation]).decode()
    assert "<target state='needs-review-translation' state-qualifier='mt-suggestion'>La vie est comme une" in out
    assert "une\n          boîte de chocolats &amp; bonbons.</target>" in out


def test_a_source_left_without_a_target_is_named_in_the_report():
    # "Where is the <g>library</g>?<x/>": a translation that lost the <x/> gets no target, and the
    # document says so, where, and why (the job reports it: never `done` silently).
    document = read_document("shop.xlf", V12.encode(), "fr")
    out = document.write([unit.text.replace('<code data-x="1"></code>', "") for unit in document.units])
    assert document.kept == [f"line 23: {INLINE_KEPT}"]
    assert "<target" not in out.decode().partition("cart.link")[2].partition("</trans-unit>")[0]


INLINE_V12 = """<xliff version='1.2' xmlns='urn:oasis:names:tc:xliff:document:1.2'>
<file original='a' source-language='en' datatype='html'><body>
<trans-unit id='1'>\
<source>Life is like a <g id='1' ctype='bold'>box</g> of chocolates.<x id='2' ctype='lb'/></source></trans-unit>
<trans-unit id='2'><source><bpt id='3'>&lt;b&gt;</bpt>Thank you<ept id='3'>&lt;/b&gt;</ept> for dinner. \
<ph id='4'>{{name}}</ph> <mrk mtype='protected'>%s</mrk></source></trans-unit>
</body></file></xliff>"""
INLINE_V20 = """<xliff version="2.0" xmlns="urn:oasis:names:tc:xliff:document:2.0" srcLang="en">
<file id="f"><unit id="1"><originalData><data id="d1">&lt;b&gt;</data><data id="d2">&lt;/b&gt;</data></originalData>
<segment>\
<source>Life is like a <pc id="1" dataRefStart="d1" dataRefEnd="d2">box</pc> of chocolates.<ph id="2"/></source>
</segment></unit>
<unit id="2"><segment><source><sc id="3"/>Thank you<ec startRef="3"/> for dinner. <mrk id="m1" translate="no">%s</mrk> \
<pc id="4"><pc id="5">Yes</pc></pc></source></segment></unit></file></xliff>"""
# A model that knows these sentences and the fragments the HTML path asks for where it cannot
# place every element in one translation (translator/text/plan.py's second round).
INLINE_MODEL = {
    "Life is like a box of chocolates.": "La vie est comme une boîte de chocolats.",
    "Life is like a": "La vie est comme une",
    "box": "boîte",
    "of chocolates.": "de chocolats.",
    "Thank you for dinner.": "Merci pour le dîner.",
    "Thank you": "Merci",
    "for dinner.": "pour le dîner.",
    "Yes": "Oui",
}


def through_the_html_path(document) -> list[str]:
    """Each unit translated as the service does (its plan, two rounds), by INLINE_MODEL."""
    from translator.contract import limits
    from translator.text.plan import plan_record

    out = []
    for unit in document.units:
        plan = plan_record(unit.text, "en", limits.MAX_PIECE_CHARS, "fr", unit.fmt)
        resolution = plan.resolve([INLINE_MODEL.get(text, text) for text in plan.first_round])
        out.append(resolution.render([INLINE_MODEL.get(text, text) for text in resolution.second_round]))
    return out


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (
            INLINE_V12,
            [
                "La vie est comme une <g id='1' ctype='bold'>boîte</g> de chocolats.<x id='2' ctype='lb'/>",
                "<bpt id='3'>&lt;b&gt;</bpt>Merci<ept id='3'>&lt;/b&gt;</ept> pour le dîner. "
                "<ph id='4'>{{name}}</ph> <mrk mtype='protected'>%s</mrk>",
            ],
        ),
        (
            INLINE_V20,
            [
                'La vie est comme une <pc id="1" dataRefStart="d1" dataRefEnd="d2">boîte</pc> '
                'de chocolats.<ph id="2"/>',
                '<sc id="3"/>Merci<ec startRef="3"/> pour le dîner. <mrk id="m1" translate="no">%s</mrk> '
                '<pc id="4"><pc id="5">Oui</pc></pc>',
            ],
        ),
    ],
    ids=["1.2", "2.0"],
)
def test_a_source_with_inline_elements_is_translated_each_element_as_written(source, expected):
    # #49: such a source was left untranslated (reported); its words are translated now on the
    # HTML path, and each element comes back once, as the source wrote it, around its words.
    document = read_document("a.xlf", source.encode(), "fr")
    assert all(unit.fmt == "html" for unit in document.units)
    out = document.write(through_the_html_path(document)).decode()
    assert document.kept == []
    targets = [t.partition(">")[2].partition("</target>")[0] for t in out.split("<target")[1:]]
    assert targets == expected
    etree.fromstring(out.encode())  # well-formed


@pytest.mark.parametrize(
    "change",
    [
        lambda t: t.replace('<code data-x="1"></code>', ""),  # a code lost
        lambda t: t + '<code data-x="1"></code>',  # a code twice
        lambda t: t.replace('<span data-x="0">', "").replace("</span>", "", 1),  # a wrapping element lost
        lambda t: t.replace('data-x="0"', 'data-x="7"'),  # one the source did not have
        lambda t: t + "<b>!</b>",  # an element of the translation's own
    ],
    ids=["lost", "twice", "unwrapped", "unknown", "foreign"],
)
def test_a_source_whose_elements_do_not_come_back_as_they_went_is_left_and_reported(change):
    document = read_document("a.xlf", INLINE_V12.encode(), "fr")
    first, second = (unit.text for unit in document.units)
    out = document.write([change(first), second]).decode()
    assert out.count("<target") == 1  # the second unit's
    assert document.kept == [f"line 3: {INLINE_KEPT}"]


def test_paired_codes_put_out_of_their_order_are_not_written():
    # 2.0's <ec/> before its <sc/> would not be XLIFF: the source is kept and reported.
    document = read_document("a.xlf", INLINE_V20.encode(), "fr")
    first, second = (unit.text for unit in document.units)
    swapped = second.replace('data-x="0"', "@").replace('data-x="1"', 'data-x="0"').replace("@", 'data-x="1"')
    assert swapped.startswith('<code data-x="1"></code>Thank you<code data-x="0"></code>')
    document.write([first, swapped])
    assert document.kept == [f"line 5: {INLINE_KEPT}"]

"""XLIFF 1.0 and 1.1 (#42): translate-toolkit's `po2xliff` writes XLIFF 1.1, and 1.0 files have
no namespace at all; each comes back in its own version (namespace and version attribute as they
were), its new targets in the states that version has (`state`, without 1.2's `state-qualifier`),
byte for byte otherwise. What is not XLIFF is refused, naming what the file's root is."""

from __future__ import annotations

import pytest
from lxml import etree

from tests.unit.helpers.round_trip import hunks, identity, translate
from translator.documents.formats import read_document, read_document_safely
from translator.documents.model import BadDocument

pytestmark = pytest.mark.pure

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
    assert message.startswith(f"file: not an XLIFF document this service reads: its root is {found}; {ACCEPTED}")
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

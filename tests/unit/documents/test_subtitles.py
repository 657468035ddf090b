"""Subtitle files as other projects publish them (#42), in small reproductions of the samples of
webvtt-py 0.5.1 and pysrt 1.1.2: cue boundaries as WebVTT's parser draws them, inline timestamps
and cue tags kept, identifiers, NOTE, STYLE and REGION blocks byte for byte.

Each cue goes through the same planning and placement as a record of `POST /translation` (its
HTML path where the cue has markup), with a "model" that upper-cases what it is given; the
result is read back by webvtt-py and pysrt, the parsers these files' users have."""

from __future__ import annotations

import time
from collections.abc import Callable

import pysrt
import pytest
import webvtt

from translator.contract import limits
from translator.documents.formats import read_document
from translator.documents.model import BadDocument, Document
from translator.text.plan import plan_record

pytestmark = pytest.mark.pure


def served(document: Document, model: Callable[[str], str] = str.upper) -> list[str]:
    """Each unit's translation as the service makes it from the model's (translator/api/pipeline.py)."""
    out = []
    for unit in document.units:
        plan = plan_record(unit.text, "en", limits.MAX_PIECE_CHARS, "fr", unit.fmt)
        resolution = plan.resolve([model(text) for text in plan.first_round])
        out.append(resolution.render([model(text) for text in resolution.second_round]))
    return out


def upper(name: str, source: str) -> str:
    document = read_document(name, source.encode(), "fr")
    assert document.write([unit.text for unit in document.units]) == source.encode()
    return document.write(served(document)).decode()


# webvtt-py's youtube_dl.vtt: a timing line right after a cue's text, no blank line before it.
YOUTUBE = (
    "WEBVTT\nKind: captions\nLanguage: en\nStyle:\n::cue(c.colorCCCCCC) { color: rgb(204,204,204);\n }\n##\n\n\n"
    "00:04:46.070 --> 00:04:46.470 align:start position:0%\nyeah\n\n\n"
    "00:04:46.470 --> 00:05:04.080 align:start position:0%\nyeah\n<c.colorCCCCCC>what</c>\n"
    "00:05:04.080 --> 00:05:05.069 align:start position:0%\n"
    "this<00:05:04.199><c> will</c><c.colorE5E5E5><00:05:04.379><c> happen</c></c>\n\n"
    "00:05:05.069 --> 00:05:05.400 align:start position:0%\nthis will<c.colorE5E5E5> happen</c>\n"
)


def test_a_timing_line_after_cue_text_starts_the_next_cue():
    document = read_document("youtube.vtt", YOUTUBE.encode(), "fr")
    assert len(document.units) == 4
    assert all("-->" not in unit.text for unit in document.units)
    # (Where the sentence is translated whole, a space at an element's edge goes outside it, as in HTML.)
    assert upper("youtube.vtt", YOUTUBE) == (
        "WEBVTT\nKind: captions\nLanguage: en\nStyle:\n::cue(c.colorCCCCCC) { color: rgb(204,204,204);\n }\n##\n\n\n"
        "00:04:46.070 --> 00:04:46.470 align:start position:0%\nYEAH\n\n\n"
        "00:04:46.470 --> 00:05:04.080 align:start position:0%\nYEAH\n<c.colorCCCCCC>WHAT</c>\n"
        "00:05:04.080 --> 00:05:05.069 align:start position:0%\n"
        "THIS<00:05:04.199><c> WILL</c><c.colorE5E5E5><00:05:04.379><c> HAPPEN</c></c>\n\n"
        "00:05:05.069 --> 00:05:05.400 align:start position:0%\nTHIS WILL <c.colorE5E5E5>HAPPEN</c>\n"
    )
    before, after = webvtt.from_string(YOUTUBE), webvtt.from_string(upper("youtube.vtt", YOUTUBE))
    assert [(c.start, c.end) for c in after] == [(c.start, c.end) for c in before]


def test_subrip_timing_line_inside_a_cue_starts_a_cue_and_its_number_stays_out_of_the_text():
    source = "1\n00:00:01,000 --> 00:00:02,000\nHello there\n2\n00:00:03,000 --> 00:00:04,000\nGood bye\n"
    document = read_document("a.srt", source.encode(), "fr")
    assert [unit.text for unit in document.units] == ["Hello there", "Good bye"]
    out = upper("a.srt", source)
    assert out == source.replace("Hello there", "HELLO THERE").replace("Good bye", "GOOD BYE")
    assert [(s.index, str(s.start), s.text) for s in pysrt.from_string(out)] == [
        (s.index, str(s.start), s.text.upper()) for s in pysrt.from_string(source)
    ]


# webvtt-py's cue_tags.vtt: karaoke timestamps inside the text, a class on a <c> span.
CUE_TAGS = (
    "WEBVTT\n\n00:16.500 --> 00:18.500\nWhen the moon <00:17.500>hits your eye\n\n"
    "00:00:18.500 --> 00:00:20.500\nLike a <00:19.000>big-a <00:19.500>pizza <00:20.000>pie\n\n"
    "00:00:20.500 --> 00:00:21.500\nThat's <00:00:21.000><c.colorE5E5E5>amore</c>"
)


def test_inline_timestamps_and_cue_tags_come_back_around_their_words():
    assert upper("tags.vtt", CUE_TAGS) == (
        "WEBVTT\n\n00:16.500 --> 00:18.500\nWHEN THE MOON <00:17.500>HITS YOUR EYE\n\n"
        "00:00:18.500 --> 00:00:20.500\nLIKE A <00:19.000>BIG-A <00:19.500>PIZZA <00:20.000>PIE\n\n"
        "00:00:20.500 --> 00:00:21.500\nTHAT'S <00:00:21.000><c.colorE5E5E5>AMORE</c>"
    )


@pytest.mark.parametrize(
    ("cue", "expected"),
    [
        ("<v.quiet.slow Lisa Simpson>Knock knock</v>", "<v.quiet.slow Lisa Simpson>KNOCK KNOCK</v>"),
        # A voice left open (WebVTT's own examples write it so) ends with the cue.
        ("<v Roger Bingham>We are in New York City", "<v Roger Bingham>WE ARE IN NEW YORK CITY"),
        ("<i>Hello</i> <b>world</b> <u>again</u>", "<i>HELLO</i> <b>WORLD</b> <u>AGAIN</u>"),
        ("<lang fr>Bonjour</lang> and hello", "<lang fr>BONJOUR</lang> AND HELLO"),
        ("<ruby>Kanji <rt>reading</rt></ruby> here", "<ruby>KANJI <rt>READING</rt></ruby> HERE"),
        # An end tag closing nothing, an unknown tag: kept where they were.
        ("Stray </b>end and <x>odd tag", "STRAY </b>END AND <x>ODD TAG"),
        ("Tom &amp; Jerry &lt;3", "TOM &amp; JERRY &lt;3"),
    ],
)
def test_webvtt_cue_tags_and_escapes_survive(cue, expected):
    source = f"WEBVTT\n\n00:01.000 --> 00:02.000\n{cue}\n"
    assert upper("a.vtt", source) == f"WEBVTT\n\n00:01.000 --> 00:02.000\n{expected}\n"


BLOCKS = (
    "WEBVTT - with blocks\n\nREGION\nid:fred\nwidth:40%\n\nSTYLE\n::cue(b) {\n  color: peachpuff;\n}\n\n"
    "NOTE\nThis translation was done by Kyle\n\n"
    "1\n00:02:15.000 --> 00:02:20.000 region:fred\n- Ta en kopp varmt te.\n- Det är inte varmt.\n\n"
    "second caption\n00:02:20.000 --> 00:02:25.000\nHar en kopp te.\n\n"
    "NOTE This last line may not translate well.\n\n"
    "00:02:25.000 --> 00:02:30.000\nTa en kopp\n"
)


def test_identifiers_notes_styles_and_regions_come_back_byte_for_byte():
    document = read_document("blocks.vtt", BLOCKS.encode(), "fr")
    assert [unit.text for unit in document.units] == [
        "- Ta en kopp varmt te.\n- Det är inte varmt.",
        "Har en kopp te.",
        "Ta en kopp",
    ]
    out = upper("blocks.vtt", BLOCKS)
    cues = ("- Ta en kopp varmt te.\n- Det är inte varmt.", "Har en kopp te.", "\nTa en kopp\n")
    assert out == BLOCKS.replace(cues[0], cues[0].upper()).replace(cues[1], cues[1].upper()).replace(
        cues[2], cues[2].upper()
    )
    before, after = webvtt.from_string(BLOCKS), webvtt.from_string(out)
    assert [(c.identifier, c.start, c.end) for c in after] == [(c.identifier, c.start, c.end) for c in before]
    assert [c.text for c in after] == [c.text.upper() for c in before]
    assert [s.text for s in after.styles] == [s.text for s in before.styles]


def test_a_second_arrow_line_ends_the_block_as_webvtt_parses_it():
    # webvtt-py's invalid_timeframe_in_cue_text.vtt: the repeated timing line is the next cue's.
    source = (
        "WEBVTT\n\n00:00:00.500 --> 00:00:07.000\nCaption text #1\n\n"
        "00:00:07.000 --> 00:00:10.890\n00:00:07.000 --> 00:00:10.890\nCaption text #2\n"
    )
    assert [unit.text for unit in read_document("a.vtt", source.encode(), "fr").units] == [
        "Caption text #1",
        "Caption text #2",
    ]
    # The header ends at a timing line too.
    source = "WEBVTT\n00:01.000 --> 00:02.000\nNo blank line after the header\n"
    assert [unit.text for unit in read_document("a.vtt", source.encode(), "fr").units] == [
        "No blank line after the header"
    ]
    # An arrow line that is no timing line starts a block that is no cue: its text is not shown.
    broken = "WEBVTT\n\n00:01.000 --> 00:02.000\nShown\nnot a --> timing\nNot shown\n"
    assert [unit.text for unit in read_document("a.vtt", broken.encode(), "fr").units] == ["Shown"]


def test_subrip_tags_ass_overrides_and_a_bare_ampersand_come_back_as_they_were():
    source = (
        "1\r\n00:00:01,000 --> 00:00:02,000\r\n{\\an8}<i>Tom & Jerry</i>\r\n"
        '<font color="#ff0000">2<3, 5>1</font>\r\n\r\n'
        "2\r\n00:00:03,000 --> 00:00:04,000\r\nFish &amp; chips\r\n"
    )
    out = upper("a.srt", source)
    assert out == (
        "1\r\n00:00:01,000 --> 00:00:02,000\r\n{\\an8}<i>TOM & JERRY</i>\r\n"
        '<font color="#ff0000">2<3, 5>1</font>\r\n\r\n'
        "2\r\n00:00:03,000 --> 00:00:04,000\r\nFISH &AMP; CHIPS\r\n"
    )
    assert [(str(s.start), str(s.end)) for s in pysrt.from_string(out)] == [
        (str(s.start), str(s.end)) for s in pysrt.from_string(source)
    ]


def test_a_translation_never_breaks_the_cue_structure():
    source = "WEBVTT\n\n00:01.000 --> 00:02.000\nOne line\nand two\n\n00:03.000 --> 00:04.000\nPlain\n"
    document = read_document("a.vtt", source.encode(), "fr")
    # A blank line would end the cue; markup characters of a plain cue's translation are escaped.
    out = document.write(["first\n\n\r\nsecond", "a < b --> c & d"]).decode()
    assert out == (
        "WEBVTT\n\n00:01.000 --> 00:02.000\nfirst\nsecond\n\n00:03.000 --> 00:04.000\na &lt; b --&gt; c &amp; d\n"
    )
    assert [(c.start, c.text) for c in webvtt.from_string(out)] == [
        ("00:00:01.000", "first\nsecond"),
        ("00:00:03.000", "a &lt; b --&gt; c &amp; d"),
    ]


def test_lines_end_at_cr_and_lf_only():
    # A form feed or U+2028 inside a cue's text is text, not a line break to lose in the writer.
    source = "1\r00:00:01,000 --> 00:00:02,000\rPage\x0cone\u2028two\r\r"
    document = read_document("a.srt", source.encode(), "fr")
    assert [unit.text for unit in document.units] == ["Page\x0cone\u2028two"]
    assert (
        document.write(["PAGE\x0cONE\u2028TWO"]) == b"1\r00:00:01,000 --> 00:00:02,000\rPAGE\x0cONE\xe2\x80\xa8TWO\r\r"
    )


def test_hostile_cues_are_read_in_linear_time():
    # A quadratic reader (a line's regex backtracking, an end tag searching every open tag) takes
    # minutes on these; a linear one a fraction of a second.
    start = time.monotonic()
    with pytest.raises(BadDocument, match="no subtitle cue found"):
        read_document("a.srt", b"[" * 1_000_000, "fr")
    cue = "<b>" * 30_000 + "x" + "</i>" * 30_000 + "</b>" * 30_000
    for name, header in (("a.srt", ""), ("a.vtt", "WEBVTT\n\n")):
        document = read_document(name, f"{header}00:00:01.000 --> 00:00:02.000\n{cue}\n".encode(), "fr")
        assert document.write([unit.text for unit in document.units]).decode().endswith(f"{cue}\n")
    assert time.monotonic() - start < 10

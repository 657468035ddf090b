"""Small documents of every translated format, built from corpus sentences, for the tests and
tools: the same builders in unit tests (no server) and e2e tests."""

from __future__ import annotations

import io
import struct
import zipfile

_W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
_CONTENT_TYPES = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\r\n'
    '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
    '<Default Extension="xml" ContentType="application/xml"/>'
    '<Override PartName="/word/document.xml" '
    'ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>'
)


def docx(paragraphs: list[list[tuple[str, bool]]]) -> bytes:
    """A .docx whose paragraphs are runs of (text, bold)."""
    body = []
    for runs in paragraphs:
        xml = []
        for text, bold in runs:
            props = "<w:rPr><w:b/></w:rPr>" if bold else ""
            xml.append(f'<w:r>{props}<w:t xml:space="preserve">{_escape(text)}</w:t></w:r>')
        body.append("<w:p>" + "".join(xml) + "</w:p>")
    document = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\r\n'
        f"<w:document {_W}><w:body>{''.join(body)}<w:sectPr/></w:body></w:document>"
    )
    styles = '<?xml version="1.0"?><w:styles ' + _W + "/>"
    return package({"[Content_Types].xml": _CONTENT_TYPES, "word/document.xml": document, "word/styles.xml": styles})


def docx_body(body: str, namespace: str = "http://schemas.openxmlformats.org/wordprocessingml/2006/main") -> bytes:
    """A .docx whose body is `body`, WordprocessingML written with the w: prefix, bound to
    `namespace` (Transitional's, or Strict's `http://purl.oclc.org/ooxml/wordprocessingml/main`)."""
    document = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\r\n'
        f'<w:document xmlns:w="{namespace}"><w:body>{body}<w:sectPr/></w:body></w:document>'
    )
    return package({"[Content_Types].xml": _CONTENT_TYPES, "word/document.xml": document})


def docx_runs(data: bytes) -> list[list[tuple[str, bool]]]:
    """The (text, bold) runs of each paragraph of a .docx's body, adjacent runs of one kind joined."""
    from lxml import etree

    w = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
    root = etree.fromstring(zipfile.ZipFile(io.BytesIO(data)).read("word/document.xml"))
    out = []
    for paragraph in root.iter(f"{w}p"):
        runs: list[tuple[str, bool]] = []
        for run in paragraph.iter(f"{w}r"):
            text = "".join(t.text or "" for t in run.iter(f"{w}t"))
            bold = run.find(f"{w}rPr/{w}b") is not None
            if runs and runs[-1][1] == bold:
                runs[-1] = (runs[-1][0] + text, bold)
            else:
                runs.append((text, bold))
        out.append(runs)
    return out


def unreadable(good_docx: bytes) -> dict[str, tuple[bytes, str]]:
    """Files no reader takes, as a folder given to `m2m-translate` holds them: name -> (bytes, what
    the refusal says, in words that outlive changes to the reader's). A .docx cut in half (a
    download that stopped), a PO file with a line that is no PO, a PDF."""
    return {
        "manual.pdf": (b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n", "PDF is not translated"),
        "messages.po": (b'msgid "Hello."\nmsgstr ""\n\nthis is not PO\n', "this PO file"),
        "broken.docx": (good_docx[: len(good_docx) // 2], "a docx file must be a zip archive"),
    }


def srt(cues: list[str], newline: str = "\r\n") -> bytes:
    blocks = []
    for number, text in enumerate(cues, 1):
        start, end = f"00:00:{number:02d},250", f"00:00:{number:02d},900"
        blocks.append(newline.join([str(number), f"{start} --> {end}", text]))
    return (newline * 2).join(blocks).encode() + newline.encode()


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


# Every member is dated the same instant, so the same members make the same bytes at any hour:
# pytest-xdist's workers each collect the parametrized cases and refuse to run when a case built
# from these bytes differs between them (CI failed so when two workers straddled a second).
_DATED = (1980, 1, 1, 0, 0, 0)


def package(members: dict[str, str] | dict[str, bytes]) -> bytes:
    """A zip of these members, in this order (deflated), the same bytes whenever it is built."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in members.items():
            member = zipfile.ZipInfo(name, _DATED)
            member.external_attr = 0o600 << 16  # what writestr(name, ...) gives: rw for the owner
            archive.writestr(member, text, compress_type=zipfile.ZIP_DEFLATED)
    return out.getvalue()


def pptx(paragraphs: list[list[tuple[str, bool]]]) -> bytes:
    a = 'xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main"'
    p = 'xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main"'
    body = "".join(
        "<a:p>"
        + "".join(
            f'<a:r><a:rPr lang="en-US"{" b=" + chr(34) + "1" + chr(34) if bold else ""}/><a:t>{_escape(t)}</a:t></a:r>'
            for t, bold in runs
        )
        + "</a:p>"
        for runs in paragraphs
    )
    tree = f"<p:cSld><p:spTree><p:sp><p:txBody>{body}</p:txBody></p:sp></p:spTree></p:cSld>"
    slide = f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\r\n<p:sld {a} {p}>{tree}</p:sld>'
    return package({"[Content_Types].xml": "<Types/>", "ppt/presentation.xml": "<p/>", "ppt/slides/slide1.xml": slide})


def odt(paragraphs: list[str]) -> bytes:
    """An .odt whose paragraphs are given as ODF XML content (spans allowed)."""
    ns = (
        'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
        'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"'
    )
    body = "".join(f"<text:p>{p}</text:p>" for p in paragraphs)
    inner = f"<office:body><office:text>{body}</office:text></office:body>"
    content = (
        f'<?xml version="1.0" encoding="UTF-8"?>\r\n<office:document-content {ns}>{inner}</office:document-content>'
    )
    return package({"mimetype": "application/vnd.oasis.opendocument.text", "content.xml": content, "meta.xml": "<m/>"})


def xlsx(strings: list[str]) -> bytes:
    ns = 'xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"'
    shared = "".join(f"<si><t>{_escape(s)}</t></si>" for s in strings)
    xml = f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\r\n<sst {ns} count="{len(strings)}">{shared}</sst>'
    return package({"[Content_Types].xml": "<Types/>", "xl/workbook.xml": "<w/>", "xl/sharedStrings.xml": xml})


def epub(chapters: list[str]) -> bytes:
    members = {"mimetype": "application/epub+zip", "META-INF/container.xml": "<container/>"}
    for number, body in enumerate(chapters, 1):
        members[f"OEBPS/ch{number}.xhtml"] = (
            '<?xml version="1.0" encoding="utf-8"?>\n<html xmlns="http://www.w3.org/1999/xhtml"><head>'
            f"<title>{number}</title></head><body>{body}</body></html>"
        )
    return package(members)


def lying(data: bytes, member: str, declared: int) -> bytes:
    """`data`, a zip, with `member`'s uncompressed size declared as `declared` bytes in both its
    local header and the central directory: the lie of a zip bomb that passes a check of the
    declared sizes."""
    out = bytearray(data)
    struct.pack_into("<I", out, zipfile.ZipFile(io.BytesIO(data)).getinfo(member).header_offset + 22, declared)
    end = data.rindex(b"PK\x05\x06")
    count, _, position = struct.unpack_from("<HII", data, end + 10)
    for _ in range(count):
        name_length, extra_length, comment_length = struct.unpack_from("<HHH", data, position + 28)
        if data[position + 46 : position + 46 + name_length].decode() == member:
            struct.pack_into("<I", out, position + 24, declared)
        position += 46 + name_length + extra_length + comment_length
    return bytes(out)


def bomb(data: bytes, member: str, real_size: int, declared: int = 5_000) -> bytes:
    """`data`, a zip, with `member` (replaced, or added) holding `real_size` zero bytes, deflated
    (about 1,000 to 1: 200 MB in 200 KB), and declaring `declared`."""
    source = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as target:
        for info in source.infolist():
            if info.filename != member:
                target.writestr(info, source.read(info))
        zeros = bytes(1 << 20)
        with target.open(member, "w") as stream:
            for start in range(0, real_size, len(zeros)):
                stream.write(zeros[: real_size - start])
    return lying(out.getvalue(), member, declared)


W_NAMESPACE = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
W_RUN = "<w:p><w:r><w:t>{}</w:t></w:r></w:p>"
# A billion laughs: nine entities of ten references to the one before.
LAUGHS = (
    '<!DOCTYPE d [<!ENTITY l0 "lol">' + "".join(f'<!ENTITY l{i} "{f"&l{i - 1};" * 10}">' for i in range(1, 10)) + "]>"
)


def hostile_xml(text: str = "") -> dict[str, bytes]:
    """A docx's word/document.xml that no reader should take, by kind (each a 400): `text` is
    written inside each (a marker that a log must not show)."""
    w = W_NAMESPACE
    cases = {
        "nested too deeply": f"<w:document {w}>{'<w:p>' * 100_000}{text}{'</w:p>' * 100_000}</w:document>",
        "a huge attribute": f'<w:document {w} a="{text}{"x" * 20_000_000}"/>',
        "a huge text node": f"<w:document {w}>{W_RUN.format(text + 'x ' * 6_000_000)}</w:document>",
        "entities that expand": f"{LAUGHS}<w:document {w}>{W_RUN.format(text + '&l9;')}</w:document>",
        "broken syntax": f"<w:document {w}><w:body><w:p>{text}",
    }
    out = {case: xml.encode() for case, xml in cases.items()}
    # Latin-1 in a part that declares no encoding (so UTF-8).
    latin = W_RUN.format(text + "caf\xe9")
    out["bytes that are not its encoding"] = f"<w:document {w}>{latin}</w:document>".encode("latin-1")
    return out


def yaml_laughs(comment: str = "") -> bytes:
    """YAML's billion laughs: nine levels of nine aliases to the level before (9**9 leaves where
    aliases are expanded), with numbers only (nothing to translate) and `comment` on its first line."""
    levels = "".join(f"{c}: &{c} [{', '.join([f'*{p}'] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi", strict=True))
    return f"# {comment}\na: &a [{', '.join('1' * 9)}]\n{levels}".encode()

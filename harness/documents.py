"""Small documents of every translated format, built from corpus sentences, for the tests and
tools: the same builders in unit tests (no server) and e2e tests."""

from __future__ import annotations

import io
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
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as package:
        package.writestr("[Content_Types].xml", _CONTENT_TYPES)
        package.writestr("word/document.xml", document)
        package.writestr("word/styles.xml", '<?xml version="1.0"?><w:styles ' + _W + "/>")
    return out.getvalue()


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


def srt(cues: list[str], newline: str = "\r\n") -> bytes:
    blocks = []
    for number, text in enumerate(cues, 1):
        start, end = f"00:00:{number:02d},250", f"00:00:{number:02d},900"
        blocks.append(newline.join([str(number), f"{start} --> {end}", text]))
    return (newline * 2).join(blocks).encode() + newline.encode()


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")

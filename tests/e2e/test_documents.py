"""Document translation on the session's real server (fixture model): files through the native
`/documents` jobs and LibreTranslate's `translate_file`, translated exactly, structure kept."""

from __future__ import annotations

import io
import time
import zipfile

import pytest
import requests
import yaml

from harness import documents
from harness.corpus import corpus_sentences
from tests.e2e.helpers import api_workers, create_glossary, finished, peak_rss
from translator.documents.model import MAX_UNCOMPRESSED_BYTES

pytestmark = pytest.mark.server


def pairs(source: str, target: str) -> list[tuple[str, str]]:
    return [(text, translation) for src, tgt, text, translation in corpus_sentences() if (src, tgt) == (source, target)]


def upload(server, name: str, data: bytes, **fields: str) -> requests.Response:
    return requests.post(f"{server.url}/documents", files={"file": (name, data)}, data=fields, timeout=60)


def test_text_file_job_translates_each_line_and_keeps_the_rest(server):
    (a, ta), (b, tb), *_ = pairs("en", "de")
    source = f"{a}\r\n\r\n  {b}\r\n".encode()
    response = upload(server, "notes.txt", source, fromLang="en", toLang="de")
    assert response.status_code == 202, response.text
    job = response.json()
    assert job["status"] in ("queued", "running", "done") and job["filename"] == "notes.txt"
    assert job["resultUrl"] == f"/documents/{job['id']}/result"
    state = finished(server, job)
    assert state["status"] == "done", state
    assert state["progress"] == {"done": 2, "total": 2}
    result = requests.get(f"{server.url}{state['resultUrl']}", timeout=10)
    assert result.status_code == 200
    assert result.content == f"{ta}\r\n\r\n  {tb}\r\n".encode()
    assert 'filename="notes.txt"' in result.headers["content-disposition"]
    assert result.headers["content-type"].startswith("text/plain")


def test_a_text_file_in_the_encoding_its_form_names_comes_back_in_it(server):
    # One line of French with accents, named windows-1252: read, translated and written back in it,
    # the job saying which; the field on a .docx, or naming no encoding, a 400 on it.
    (text, translation), *_ = [(t, tr) for t, tr in pairs("fr", "en") if not t.isascii()]
    source = f"{text}\r\n".encode("cp1252")
    response = upload(server, "note.txt", source, fromLang="fr", toLang="en", encoding="windows-1252")
    assert response.status_code == 202, response.text
    state = finished(server, response.json())
    assert state["status"] == "done" and state["encoding"] == "windows-1252", state
    result = requests.get(f"{server.url}{state['resultUrl']}", timeout=10)
    assert result.content == f"{translation}\r\n".encode("cp1252")
    assert result.headers["content-type"] == "text/plain; charset=windows-1252"
    refused = upload(server, "report.docx", documents.docx([[(text, False)]]), toLang="en", encoding="latin-1")
    assert refused.status_code == 400 and refused.json()["field"] == "encoding", refused.text
    unknown = upload(server, "note.txt", source, toLang="en", encoding="klingon-8")
    assert unknown.status_code == 400, unknown.text
    assert unknown.json()["error"].startswith("encoding: 'klingon-8' is not a text encoding")


def test_libretranslate_translate_file_docx_keeps_bold_runs(server):
    (a, ta), (b, tb), (c, tc), *_ = pairs("en", "de")
    source = documents.docx([[(a + " ", False), (b, True)], [(c, True)]])
    response = requests.post(
        f"{server.url}/libretranslate/translate_file",
        files={"file": ("report.docx", source)},
        data={"source": "en", "target": "de", "api_key": ""},
        timeout=120,
    )
    assert response.status_code == 200, response.text
    url = response.json()["translatedFileUrl"]
    assert url.startswith(server.url) and url.endswith(".report.docx")
    translated = requests.get(url, timeout=10)
    assert translated.status_code == 200
    assert documents.docx_runs(translated.content) == [[(ta + " ", False), (tb, True)], [(tc, True)]]
    before, after = zipfile.ZipFile(io.BytesIO(source)), zipfile.ZipFile(io.BytesIO(translated.content))
    assert after.namelist() == before.namelist()
    assert after.read("word/styles.xml") == before.read("word/styles.xml")


def test_libretranslate_translate_file_srt_keeps_numbers_and_timings(server):
    (a, ta), (b, tb), (c, tc), *_ = pairs("en", "fr")
    source = documents.srt([a, f"{b}\n{c}".replace("\n", "\r\n")])
    response = requests.post(
        f"{server.url}/libretranslate/translate_file",
        files={"file": ("film.srt", source)},
        data={"source": "en", "target": "fr"},
        timeout=120,
    )
    assert response.status_code == 200, response.text
    translated = requests.get(response.json()["translatedFileUrl"], timeout=10).content
    assert translated == documents.srt([ta, f"{tb}\r\n{tc}"])


def test_bad_files_get_a_clear_4xx(server):
    (a, _), *_ = pairs("en", "de")
    cases = {
        ("scan.pdf", b"%PDF-1.7"): (415, "PDF"),
        ("photo.png", b"\x89PNG"): (415, ".png"),
        ("broken.docx", b"not a zip"): (400, "zip"),
        ("locked.docx", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 100): (400, "encrypted"),
        ("latin1.txt", "café".encode("latin-1")): (400, "UTF-8"),
    }
    for (name, data), (status, word) in cases.items():
        response = upload(server, name, data, fromLang="en", toLang="de")
        assert response.status_code == status, (name, response.text)
        assert word in response.json()["error"], (name, response.text)
    response = upload(server, "a.txt", a.encode(), fromLang="en", toLang="xx")
    assert response.status_code == 400 and "toLang" in response.text
    response = requests.post(f"{server.url}/documents", data={"toLang": "de"}, timeout=10)
    assert response.status_code == 400 and "file: required" in response.text
    assert requests.get(f"{server.url}/documents/{'0' * 32}", timeout=10).status_code == 404


def test_an_empty_file_on_each_api(server):
    # The native jobs refuse it at once, naming the file: a job would only finish with an empty
    # result. LibreTranslate's translate_file takes it as LibreTranslate does (its "empty file"
    # 400 is for a file part without a name) and answers the URL of the empty translation.
    response = upload(server, "notes.txt", b"", fromLang="en", toLang="de")
    assert response.status_code == 400, response.text
    error = response.json()
    assert error["field"] == "file" and "'notes.txt' is empty" in error["error"]
    response = requests.post(
        f"{server.url}/libretranslate/translate_file",
        files={"file": ("notes.txt", b"")},
        data={"source": "en", "target": "de"},
        timeout=60,
    )
    assert response.status_code == 200, response.text
    assert requests.get(response.json()["translatedFileUrl"], timeout=10).content == b""


def test_result_is_409_until_done(server):
    (a, _), *_ = pairs("en", "de")
    job = upload(server, "one.txt", a.encode(), fromLang="en", toLang="de").json()
    early = requests.get(f"{server.url}/documents/{job['id']}/result", timeout=10)
    assert early.status_code in (200, 409)
    if early.status_code == 409:
        assert early.json()["status"] in ("queued", "running")
    assert finished(server, job)["status"] == "done"


def test_more_formats_through_the_native_jobs(server):
    (a, ta), (b, tb), (c, tc), *_ = pairs("en", "fr")
    quoted = b.replace("'", "''")  # YAML's single-quoted style
    page = f"<html><body><h1>{a}</h1><p>{b} <b>{c}</b></p><script>var s = '{a}';</script></body></html>"
    cases = {
        "page.html": (page.encode(), page.replace(f">{a}<", f">{ta}<").replace(b, tb).replace(c, tc).encode()),
        "chapter.odt": (documents.odt([f"{a} <text:span text:style-name='T1'>{b}</text:span>"]), None),
        "en.yml": (f"en:\n  # home page\n  title: {a}\n  body: '{quoted}'\n  count: 2\n".encode(), None),
    }
    for name, (data, expected) in cases.items():
        job = upload(server, name, data, fromLang="en", toLang="fr").json()
        state = finished(server, job)
        assert state["status"] == "done", state
        result = requests.get(f"{server.url}{state['resultUrl']}", timeout=10).content
        if expected is not None:
            assert result == expected
        elif name.endswith(".yml"):
            # A Rails locale file: under the target's locale.
            assert yaml.safe_load(result) == {"fr": {"title": ta, "body": tb, "count": 2}}
            assert result.startswith(b"fr:\n  # home page\n  title: ") and result.endswith(b"\n  count: 2\n")
        else:
            content = zipfile.ZipFile(io.BytesIO(result)).read("content.xml").decode()
            assert f'{ta} <text:span text:style-name="T1">{tb}</text:span>' in content


def test_libretranslate_settings_list_the_file_formats(server):
    settings = requests.get(f"{server.url}/libretranslate/frontend/settings", timeout=10).json()
    assert settings["filesTranslation"] is True
    assert {".txt", ".docx", ".srt"} <= set(settings["supportedFilesFormat"])


def test_a_python_docx_document_through_translate_file(server):
    # Built and read back by python-docx, as users' tools make and check them: its template's
    # styles, settings, theme and section properties, a heading, a table cell and a header.
    import docx

    (a, ta), (b, tb), (c, tc), *_ = pairs("en", "fr")
    document = docx.Document()
    document.add_heading(a, level=1)
    paragraph = document.add_paragraph(b + " ")
    paragraph.add_run(c).bold = True
    document.add_table(rows=1, cols=1).cell(0, 0).text = a
    document.sections[0].header.paragraphs[0].text = b
    source = io.BytesIO()
    document.save(source)
    response = requests.post(
        f"{server.url}/libretranslate/translate_file",
        files={"file": ("memo.docx", source.getvalue())},
        data={"source": "en", "target": "fr"},
        timeout=120,
    )
    assert response.status_code == 200, response.text
    translated = requests.get(response.json()["translatedFileUrl"], timeout=10).content
    result = docx.Document(io.BytesIO(translated))
    heading, body = result.paragraphs[0], result.paragraphs[1]
    assert heading.text == ta and heading.style.name == "Heading 1"
    assert [(run.text, bool(run.bold)) for run in body.runs] == [(tb + " ", False), (tc, True)]
    assert result.tables[0].cell(0, 0).text == ta
    assert result.sections[0].header.paragraphs[0].text == tb
    before, after = zipfile.ZipFile(source), zipfile.ZipFile(io.BytesIO(translated))
    assert after.namelist() == before.namelist()
    for name in before.namelist():
        if name not in ("word/document.xml", "word/header1.xml"):
            assert after.read(name) == before.read(name), name


def test_a_stored_glossary_applies_to_documents_on_both_apis(server):
    sentence = "Mi hermano estudia medicina en Madrid."
    translation = next(t for text, t in pairs("es", "en") if text == sentence)
    expected = translation.replace("Madrid", "MAD")
    glossary_id = create_glossary(server, "doc places", "es", "en", {"Madrid": "MAD"})["glossaryId"]
    try:
        job = upload(server, "places.txt", f"{sentence}\n".encode(), fromLang="es", toLang="en", glossaryId=glossary_id)
        assert job.status_code == 202, job.text
        state = finished(server, job.json())
        assert state["status"] == "done" and state["glossaryId"] == glossary_id, state
        assert requests.get(f"{server.url}{state['resultUrl']}", timeout=10).content == f"{expected}\n".encode()
        libre = requests.post(
            f"{server.url}/libretranslate/translate_file",
            files={"file": ("places.txt", f"{sentence}\n".encode())},
            data={"source": "es", "target": "en", "glossary_id": glossary_id},
            timeout=120,
        )
        assert libre.status_code == 200, libre.text
        assert requests.get(libre.json()["translatedFileUrl"], timeout=10).content == f"{expected}\n".encode()
        # Checked before any job exists: a glossary for another pair, an unknown one.
        mismatch = upload(server, "places.txt", b"Hola.\n", fromLang="es", toLang="fr", glossaryId=glossary_id)
        assert mismatch.status_code == 400 and mismatch.json()["field"] == "glossaryId", mismatch.text
        assert "es -> en" in mismatch.json()["error"]
        unknown = "00000000-0000-0000-0000-000000000000"
        missing = upload(server, "places.txt", b"Hola.\n", fromLang="es", toLang="en", glossaryId=unknown)
        assert missing.status_code == 404 and missing.json()["field"] == "glossaryId", missing.text
        refused = requests.post(
            f"{server.url}/libretranslate/translate_file",
            files={"file": ("places.txt", b"Hola.\n")},
            data={"source": "es", "target": "en", "glossary_id": unknown},
            timeout=60,
        )
        assert refused.status_code == 404 and "glossary_id" in refused.json()["error"], refused.text
    finally:
        requests.delete(f"{server.url}/glossaries/{glossary_id}", timeout=30)


def test_a_lying_zip_bomb_is_a_fast_413_in_bounded_memory_on_both_apis(server):
    """#39's bomb: a .docx whose word/document.xml declares 5,000 bytes and inflates to 1 GB (about
    1 MB uploaded). It took a worker from 211 MiB to 1,998 MiB for a 400 after 4.3 s."""
    bomb = documents.bomb(documents.docx([[("Hello.", False)]]), "word/document.xml", 1_000_000_000)
    assert len(bomb) < 2_000_000
    workers = api_workers(server)
    before = {pid: peak_rss(pid) for pid in workers}
    message = f"file: uncompressed bytes exceeds the limit of {MAX_UNCOMPRESSED_BYTES}"
    for _ in range(2):  # each API worker most likely gets one of either
        start = time.monotonic()
        native = upload(server, "bomb.docx", bomb, fromLang="en", toLang="de")
        assert (native.status_code, native.json()["error"]) == (413, message), native.text
        libre = requests.post(
            f"{server.url}/libretranslate/translate_file",
            files={"file": ("bomb.docx", bomb)},
            data={"source": "en", "target": "de"},
            timeout=60,
        )
        assert libre.status_code == 413 and message in libre.json()["error"], libre.text
        assert time.monotonic() - start < 4  # two refusals
    grown = {pid: peak_rss(pid) - before[pid] for pid in workers}
    # The upload, its copies through the form parser and a 64 KiB chunk: far under the bound.
    assert max(grown.values()) < MAX_UNCOMPRESSED_BYTES + 32 * 1024 * 1024, grown
    assert requests.get(f"{server.url}/readyz", timeout=10).status_code == 200

"""DeepL's document API on the session's real server (fixture model, #44), driven by DeepL's own
Python client (`deepl.Translator`, `deepl.DeepLClient`) and its command line (`python -m deepl`):
the same document jobs as `POST /documents`, files translated exactly, downloaded once."""

from __future__ import annotations

import re
import subprocess
import sys
import time

import deepl
import pytest
import requests
from deepl.api_data import MultilingualGlossaryDictionaryEntries

from harness import documents
from harness.corpus import corpus_sentences
from translator.documents.model import MAX_UNCOMPRESSED_BYTES

pytestmark = pytest.mark.server

KEY = "any-key-when-keys-are-off"


def pairs(source: str, target: str) -> list[tuple[str, str]]:
    return [(text, translation) for src, tgt, text, translation in corpus_sentences() if (src, tgt) == (source, target)]


def translator(server) -> deepl.DeepLClient:
    return deepl.DeepLClient(KEY, server_url=server.url)


def test_text_and_docx_files_translated_exactly_by_translate_document_from_filepath(server, tmp_path):
    (a, ta), (b, tb), *_ = pairs("en", "de")
    source, output = tmp_path / "notes.txt", tmp_path / "out" / "notes.txt"
    output.parent.mkdir()
    source.write_text(f"{a}\n\n  {b}\n", encoding="utf-8")
    status = translator(server).translate_document_from_filepath(source, output, target_lang="DE")
    assert status.done and status.status == deepl.DocumentStatus.Status.DONE
    assert status.billed_characters == len(a) + len(f"  {b}")  # its lines' text, as written
    assert output.read_text(encoding="utf-8") == f"{ta}\n\n  {tb}\n"
    # A .docx keeps its bold runs around their words, as through POST /documents.
    docx, translated = tmp_path / "report.docx", tmp_path / "out" / "report.docx"
    docx.write_bytes(documents.docx([[(a + " ", False), (b, True)]]))
    translator(server).translate_document_from_filepath(docx, translated, source_lang="EN", target_lang="DE")
    assert documents.docx_runs(translated.read_bytes()) == [[(ta + " ", False), (tb, True)]]


def test_documents_with_a_v3_and_a_v2_glossary(server, tmp_path):
    # deepl-python's own test_glossary_translate_document: each line a glossary term.
    client = translator(server)
    source, output = tmp_path / "terms.txt", tmp_path / "terms.de.txt"
    source.write_text("artist\nprize", encoding="utf-8")
    dictionaries = [
        MultilingualGlossaryDictionaryEntries("EN", "DE", {"artist": "Maler", "prize": "Gewinn"}),
        MultilingualGlossaryDictionaryEntries("DE", "EN", {"Maler": "artist"}),
    ]
    v3 = client.create_multilingual_glossary("documents", dictionaries)
    v2 = client.create_glossary("documents v2", "EN", "DE", {"Berlin": "BERLIN"})
    try:
        # The output path's extension differs only in its name: the client sends no output_format.
        client.translate_document_from_filepath(source, output, source_lang="EN", target_lang="DE", glossary=v3)
        assert output.read_text(encoding="utf-8") == "Maler\nGewinn"
        sentence = "Welcome to Berlin!"
        source.write_text(sentence, encoding="utf-8")
        client.translate_document_from_filepath(source, output, source_lang="EN", target_lang="DE", glossary=v2)
        expected = dict(pairs("en", "de"))[sentence].replace("Berlin", "BERLIN")
        assert output.read_text(encoding="utf-8") == expected
        # DeepL's rule: a glossary needs the source language (refused before any job exists).
        refused = requests.post(
            f"{server.url}/v2/document",
            files={"file": ("a.txt", b"artist")},
            data={"target_lang": "DE", "glossary_id": v3.glossary_id},
            headers={"Authorization": f"DeepL-Auth-Key {KEY}"},
            timeout=30,
        )
        assert refused.status_code == 400 and "source_lang" in refused.json()["message"], refused.text
    finally:
        client.delete_multilingual_glossary(v3)
        client.delete_glossary(v2)


def test_the_deepl_document_command(server, tmp_path):
    (a, ta), *_ = pairs("en", "de")
    source, out = tmp_path / "document.txt", tmp_path / "output"
    source.write_text(a, encoding="utf-8")
    env = {"DEEPL_SERVER_URL": server.url, "DEEPL_AUTH_KEY": KEY, "PATH": "/usr/bin:/bin"}

    def deepl_cli(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "deepl", "-vv", "document", "--to", "DE", *args]
        return subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)

    done = deepl_cli(str(source), str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    assert (out / "document.txt").read_text(encoding="utf-8") == ta
    # deepl-python's test_invalid_document: a format not translated, in DeepL's words.
    invalid = tmp_path / "document.invalid"
    invalid.write_text(a, encoding="utf-8")
    refused = deepl_cli(str(invalid), str(tmp_path / "other"))
    assert refused.returncode == 1 and "Invalid file data" in refused.stdout + refused.stderr


def test_status_download_once_and_the_document_key(server):
    client = translator(server)
    lines = [text for text, _ in pairs("en", "de")] * 40
    handle = client.translate_document_upload("\n".join(lines), source_lang="EN", target_lang="DE", filename="a.txt")
    assert re.fullmatch(r"[0-9A-F]{32}", handle.document_id) and re.fullmatch(r"[0-9A-F]{64}", handle.document_key)
    with pytest.raises(deepl.DeepLException, match="Not found"):  # a wrong key reads nothing
        client.translate_document_get_status(deepl.DocumentHandle(handle.document_id, "0" * 64))
    seen = []
    while not (status := client.translate_document_get_status(handle)).done:
        assert status.ok, status.error_message
        seen.append(status)
        time.sleep(0.05)
    for step in seen:
        assert step.status.value in ("queued", "translating"), step.status
        if step.status.value == "translating":
            assert isinstance(step.seconds_remaining, int) and step.seconds_remaining >= 0
    assert status.billed_characters == sum(len(line) for line in lines)
    # The id in any case: DeepL writes it in upper case.
    same = client.translate_document_get_status(deepl.DocumentHandle(handle.document_id.lower(), handle.document_key))
    assert same.done
    expected = "\n".join(dict(pairs("en", "de"))[line] for line in lines)
    response = client.translate_document_download(handle)
    assert response.content.decode("utf-8") == expected
    assert 'filename="a.txt"' in response.headers["content-disposition"]
    # Once, as DeepL: the downloaded document is deleted.
    with pytest.raises(deepl.DeepLException, match="Not found"):
        client.translate_document_download(handle)
    with pytest.raises(deepl.DeepLException, match="Not found"):
        client.translate_document_get_status(handle)
    # Nor can the native API read a DeepL document without its key.
    assert requests.get(f"{server.url}/documents/{handle.document_id.lower()}", timeout=10).status_code == 404


def test_deepls_answers_to_documents_it_refuses(server, tmp_path):
    client = translator(server)
    (a, _), *_ = pairs("en", "de")
    # deepl-python's test_document_failure_during_translation: a document already in the target
    # language (detected) is DeepL's error, with the document's handle.
    german = tmp_path / "german.txt"
    german.write_text(dict(pairs("en", "de"))[a], encoding="utf-8")
    with pytest.raises(deepl.DocumentTranslationException, match="Source and target language are equal") as same:
        client.translate_document_from_filepath(german, tmp_path / "out.txt", target_lang="DE")
    assert re.search(r"ID: [0-9A-F]{32}, key: [0-9A-F]{64}", str(same.value))
    with pytest.raises(deepl.DeepLException, match=r"Bad request, message: Source and target language are equal"):
        client.translate_document_upload(a, source_lang="DE", target_lang="DE", filename="a.txt")
    with pytest.raises(deepl.DeepLException, match=r"Value for 'output_format' not supported: .*\(\.txt\), not \.pdf"):
        client.translate_document_upload(a, target_lang="DE", filename="a.txt", output_format="pdf")
    with pytest.raises(deepl.DeepLException, match=r"Target language 'DE' doesn't support formality"):
        client.translate_document_upload(a, target_lang="DE", filename="a.txt", formality="more")
    with pytest.raises(deepl.DeepLException, match=r"Invalid file data: 'empty.txt' is empty"):
        client.translate_document_upload(b"", target_lang="DE", filename="empty.txt")
    with pytest.raises(deepl.DeepLException, match=r"Invalid file data: file: PDF is not translated"):
        client.translate_document_upload(b"%PDF-1.4", target_lang="DE", filename="a.pdf")


def test_the_limits_and_bombs_of_documents(server):
    # The same code path as POST /documents: #39's zip bomb is the same fast 413, in DeepL's shape.
    bomb = documents.bomb(documents.docx([[("Hello.", False)]]), "word/document.xml", 1_000_000_000)
    response = requests.post(
        f"{server.url}/deepl/v2/document",
        files={"file": ("bomb.docx", bomb)},
        data={"target_lang": "DE", "auth_key": KEY},
        timeout=60,
    )
    message = f"file: uncompressed bytes exceeds the limit of {MAX_UNCOMPRESSED_BYTES}"
    assert response.status_code == 413 and response.json()["message"] == message, response.text
    # A body over the request limit, refused for its declared size before it is read.
    big = requests.post(
        f"{server.url}/v2/document",
        files={"file": ("big.txt", b"x" * (4 * 1024 * 1024 + 1))},
        data={"target_lang": "DE"},
        timeout=60,
    )
    assert big.status_code == 413 and "request body in bytes exceeds" in big.json()["message"], big.text


def test_unknown_documents_are_deepls_404(server):
    client = translator(server)
    for document_id in ("12AB" * 8, "not-an-id"):
        with pytest.raises(deepl.DeepLException, match="Not found"):
            client.translate_document_get_status(deepl.DocumentHandle(document_id, "CD34" * 16))
    missing_key = requests.post(f"{server.url}/v2/document/{'12AB' * 8}", json={}, timeout=30)
    assert missing_key.status_code == 400 and missing_key.json()["message"] == "Parameter 'document_key' not specified."

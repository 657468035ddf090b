"""Translation memories in document jobs on the session's real server (fixture model, #51): a TMX that
translate-toolkit wrote, imported, then a .docx job, LibreTranslate's translate_file and DeepL's
document upload with the memory named: people's sentences come back as written, numbers
substituted, the rest the model's, and the job counts the memory's hits; a PO job that learns, then
a document with the same sentence gets the person's translation."""

from __future__ import annotations

import io

import pytest
import requests

from tests.e2e.helpers import docx_of, finished, paragraphs_of, translation_of

pytestmark = pytest.mark.server

PEOPLE = {"Welcome to our shop.": "Bienvenue dans notre boutique !", "Page 1 of 10": "Page 1 sur 10"}


def toolkit_tmx() -> bytes:
    """A TMX as translate-toolkit writes it (its own header, DOCTYPE, region codes)."""
    from translate.storage import tmx

    memory = tmx.tmxfile(sourcelanguage="en-US", targetlanguage="fr-FR")
    for source, target in PEOPLE.items():
        memory.addsourceunit(source).target = target
    return bytes(memory)


def imported_memory(server, name: str) -> str:
    created = requests.post(
        f"{server.url}/memories",
        data={"name": name, "sourceLang": "en"},
        files={"file": ("shop.tmx", toolkit_tmx())},
        timeout=30,
    )
    assert created.status_code == 201, created.text
    assert created.json()["imported"]["segments"] == 2 and created.json()["targetLangs"] == ["fr-FR"]
    return created.json()["memoryId"]


MODEL = "Where is the library?"


def test_a_docx_job_takes_peoples_sentences_from_the_memory_and_counts_them(server):
    memory_id = imported_memory(server, "docx")
    data = docx_of(["Welcome to our shop.", "Page 4 of 12", MODEL])
    job = requests.post(
        f"{server.url}/documents",
        files={"file": ("shop.docx", data)},
        data={"fromLang": "en", "toLang": "fr", "translationMemory": memory_id},
        timeout=60,
    )
    assert job.status_code == 202, job.text
    state = finished(server, job.json())
    assert state["status"] == "done", state
    assert (state["translationMemory"], state["memoryHits"]) == (memory_id, 2)
    result = requests.get(f"{server.url}{state['resultUrl']}", timeout=10).content
    assert paragraphs_of(result) == [
        "Bienvenue dans notre boutique !",
        "Page 4 sur 12",
        translation_of(MODEL, "en", "fr"),
    ]


def test_libretranslates_translate_file_and_deepls_document_upload_take_a_memory(server):
    memory_id = imported_memory(server, "apis")
    text = "Welcome to our shop.\nPage 2 of 3\n"
    answer = requests.post(
        f"{server.url}/libretranslate/translate_file",
        files={"file": ("shop.txt", text.encode())},
        data={"source": "en", "target": "fr", "translation_memory": memory_id},
        timeout=120,
    )
    assert answer.status_code == 200, answer.text
    assert (
        requests.get(answer.json()["translatedFileUrl"], timeout=10).text
        == "Bienvenue dans notre boutique !\nPage 2 sur 3\n"
    )

    import deepl

    client = deepl.DeepLClient("any-key-when-keys-are-off", server_url=server.url)
    uploaded = requests.post(
        f"{server.url}/v2/document",
        files={"file": ("shop.txt", text.encode())},
        data={"source_lang": "EN", "target_lang": "FR", "translation_memory_id": memory_id},
        timeout=60,
    )
    assert uploaded.status_code == 200, uploaded.text
    handle = deepl.DocumentHandle(uploaded.json()["document_id"], uploaded.json()["document_key"])
    status = client.translate_document_wait_until_done(handle)
    assert status.ok, status
    out = io.BytesIO()
    client.translate_document_download(handle, out)
    assert out.getvalue().decode() == "Bienvenue dans notre boutique !\nPage 2 sur 3\n"


def test_a_po_job_that_learns_then_a_document_with_the_same_sentence(server):
    created = requests.post(f"{server.url}/memories", json={"name": "learnt", "sourceLang": "en"}, timeout=30)
    memory_id = created.json()["memoryId"]
    person = "Bienvenue à Berlin, relu par une personne !"
    po = (
        'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n"Language: fr\\n"\n\n'
        f'msgid "Welcome to Berlin!"\nmsgstr "{person}"\n\n'
        f'msgid "{MODEL}"\nmsgstr ""\n'
    )
    job = requests.post(
        f"{server.url}/documents",
        files={"file": ("app.po", po.encode())},
        data={"fromLang": "en", "toLang": "fr", "translationMemory": memory_id, "memoryLearn": "true"},
        timeout=60,
    )
    assert job.status_code == 202, job.text
    state = finished(server, job.json())
    assert state["status"] == "done" and state["learned"] == 1, state
    assert requests.get(f"{server.url}/memories/{memory_id}", timeout=10).json()["segmentCount"] == 1
    later = requests.post(
        f"{server.url}/documents",
        files={"file": ("news.txt", f"Welcome to Berlin!\n{MODEL}\n".encode())},
        data={"fromLang": "en", "toLang": "fr", "translationMemory": memory_id},
        timeout=60,
    )
    done = finished(server, later.json())
    assert done["memoryHits"] == 1, done
    result = requests.get(f"{server.url}{done['resultUrl']}", timeout=10).text
    assert result == f"{person}\n{translation_of(MODEL, 'en', 'fr')}\n"


def test_a_jobs_memory_fields_are_checked_before_any_job(server):
    def refused(data: dict[str, str], name: str = "a.txt") -> requests.Response:
        return requests.post(
            f"{server.url}/documents",
            files={"file": (name, b"Welcome to Berlin!\n")},
            data={"fromLang": "en", "toLang": "fr", **data},
            timeout=60,
        )

    unknown = refused({"translationMemory": "00000000-0000-0000-0000-000000000000"})
    assert unknown.status_code == 404 and unknown.json()["field"] == "translationMemory", unknown.text
    alone = refused({"memoryLearn": "true"})
    assert alone.status_code == 400 and alone.json()["field"] == "memoryLearn", alone.text
    memory_id = requests.post(f"{server.url}/memories", json={"name": "x", "sourceLang": "de"}, timeout=30).json()[
        "memoryId"
    ]
    other = refused({"translationMemory": memory_id})
    assert other.status_code == 400 and "from 'de'" in other.json()["error"], other.text
    memory_id = requests.post(f"{server.url}/memories", json={"name": "y", "sourceLang": "en"}, timeout=30).json()[
        "memoryId"
    ]
    text = refused({"translationMemory": memory_id, "memoryLearn": "true"})
    assert text.status_code == 400 and ".po" in text.json()["error"], text.text
    odd = refused({"translationMemory": memory_id, "memoryLearn": "maybe"})
    assert odd.status_code == 400 and odd.json()["field"] == "memoryLearn", odd.text

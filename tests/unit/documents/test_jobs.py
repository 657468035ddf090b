"""The document jobs' store without a server: limits per key and per server (as the configuration
sets them), a dead worker's job resumed where it stopped (or failed with the reason), expiry."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.corpus import corpus_sentences
from translator.config import API_SERVICE, Documents, load_settings
from translator.contract.errors import Unavailable
from translator.contract.options import BULK, RequestOptions
from translator.contract.schemas import Payload, TranslatedRecord, TranslationResult
from translator.documents import jobs
from translator.documents.formats import read_document_safely
from translator.documents.job_state import JobState, Progress
from translator.documents.model import ICU_KEPT

pytestmark = pytest.mark.pure

PAIRS = [(text, translation) for src, tgt, text, translation in corpus_sentences() if (src, tgt) == ("en", "fr")]


def in_folder(folder: Path, **limits: Any) -> jobs.JobStore:
    return jobs.JobStore(Documents(folder=str(folder), **limits))


def test_jobs_per_key_and_per_server_as_the_configuration_sets_them(tmp_path):
    # Through the configuration file, as a server reads it: the limits it sets are the ones kept.
    config = tmp_path / "config.yaml"
    section = {"folder": str(tmp_path / "jobs"), "max_jobs_per_key": 2, "max_jobs": 3}
    config.write_text(yaml.safe_dump({"services": {API_SERVICE: {"translation": {"documents": section}}}}))
    store = jobs.JobStore(load_settings(config).documents)
    assert store.root == tmp_path / "jobs"
    alice, bob = jobs.owner_of(b"alice-key"), jobs.owner_of(b"bob-key")
    assert alice != bob and b"alice" not in alice.encode()
    for _ in range(2):
        store.create("a.txt", "en", "fr", 1, alice)
    with pytest.raises(jobs.JobsPerKey, match="at most 2 documents") as refused:
        store.create("a.txt", "en", "fr", 1, alice)
    assert refused.value.status == 429 and refused.value.headers()["Retry-After"]
    state = store.create("b.txt", "en", "fr", 1, bob)
    assert jobs.public(state).keys() == {"id", "status", "filename", "progress", "resultUrl"}
    with pytest.raises(Unavailable, match="3 documents are being translated"):
        store.create("c.txt", "en", "fr", 1, jobs.owner_of(b"carol-key"))
    # The shipped limits take more of one key than 2.
    default = in_folder(tmp_path / "other")
    for _ in range(Documents().max_jobs_per_key):
        default.create("a.txt", "en", "fr", 1, alice)


def test_stored_bytes_are_bounded(tmp_path):
    store = in_folder(tmp_path, max_stored_bytes=4000)
    state = store.create("a.txt", "en", "fr", 1)
    store.save_source(state.id, b"x" * 5000)
    with pytest.raises(Unavailable, match="storage"):
        store.create("b.txt", "en", "fr", 1)


def test_the_active_jobs_paragraphs_are_bounded_together(tmp_path):
    # Each running job holds its parsed document in memory: their paragraphs count together.
    store = in_folder(tmp_path)
    store.create("big.docx", "en", "fr", jobs.MAX_ACTIVE_UNITS - 10)
    store.create("small.txt", "en", "fr", 10)
    with pytest.raises(Unavailable, match="would pass this server's") as refused:
        store.create("one-more.txt", "en", "fr", 1)
    assert refused.value.headers()["Retry-After"]
    # Beside one of the largest documents a job takes, another fits.
    other = in_folder(tmp_path / "other")
    other.create("largest.docx", "en", "fr", jobs.MAX_UNITS)
    assert other.create("report.docx", "en", "fr", 5000).status == "queued"


@pytest.mark.processes
def test_an_orphan_waits_for_room_before_it_resumes(tmp_path):
    store = in_folder(tmp_path)
    state = store.create("a.txt", "en", "fr", 10)
    state.status = "running"
    state.pid = _dead_pid()
    store.save(state)
    store.create("big.docx", "en", "fr", jobs.MAX_ACTIVE_UNITS - 5)  # what runs meanwhile
    orphan = store.load(state.id)
    assert orphan is not None
    waiting, work = jobs.adopt(store, orphan, read_document_safely, None)  # type: ignore[arg-type]
    assert work is None and waiting.orphaned and waiting.status == "running"


def _dead_pid() -> int:
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(gone.stdout)


@pytest.mark.processes
def test_a_dead_workers_job_resumes_where_it_stopped(tmp_path):
    (a, ta), (b, tb), (c, tc), *_ = PAIRS
    store = in_folder(tmp_path)
    source = f"{a}\n{b}\n{c}\n".encode()
    state = store.create("a.txt", "en", "fr", 3)
    store.save_source(state.id, source)
    store.record(state.id, {0: "ALREADY"})  # what the dead worker had translated
    state.status = "running"
    state.pid = _dead_pid()
    store.save(state)
    orphan, seen_elsewhere = store.load(state.id), store.load(state.id)  # two workers' reads
    assert orphan is not None and orphan.orphaned and "orphaned" not in jobs.public(orphan)
    asked: list[str] = []

    async def engine(payload: Payload, options: RequestOptions) -> TranslationResult:
        # A stand-in for the engine: the corpus's translations, and a note of what was sent.
        assert options == BULK  # bulk work, and nobody waiting on a connection
        asked.extend(r.text for r in payload.records)
        table = dict(PAIRS)
        return TranslationResult(result=[TranslatedRecord(id=r.id, text=table[r.text]) for r in payload.records])

    adopted, work = jobs.adopt(store, orphan, read_document_safely, engine)
    assert work is not None and adopted.pid == os.getpid()
    assert seen_elsewhere is not None
    _, none = jobs.adopt(store, seen_elsewhere, read_document_safely, engine)
    assert none is None  # one worker takes it
    asyncio.run(work)
    assert asked == [b, c]
    final = store.load(state.id)
    assert final is not None and final.status == "done" and final.progress == Progress(done=3, total=3)
    assert store.result_path(state.id).read_bytes() == f"ALREADY\n{tb}\n{tc}\n".encode()


@pytest.mark.processes
def test_an_orphan_without_its_file_fails_with_the_reason_and_expires(tmp_path):
    store = in_folder(tmp_path)
    state = store.create("a.txt", "en", "fr", 3)
    state.status = "running"
    state.pid = _dead_pid()
    store.save(state)
    orphan = store.load(state.id)
    assert orphan is not None
    failed, work = jobs.adopt(store, orphan, read_document_safely, None)  # type: ignore[arg-type]
    assert work is None and failed.status == "failed" and "restarted" in failed.error
    assert store.load("../../etc/passwd") is None and store.load("0" * 32) is None
    store.sweep()
    assert store.load(state.id) is not None  # kept keep_s (an hour) after it ended
    time.sleep(0.02)
    in_folder(tmp_path, keep_s=0.01).sweep()
    assert store.load(state.id) is None


def test_orphans_do_not_hold_the_servers_slots_and_a_reused_pid_is_not_their_worker(tmp_path):
    store = in_folder(tmp_path, max_jobs=2)
    for _ in range(2):
        state = store.create("a.txt", "en", "fr", 1)
        # A worker of a container that restarted: the same pid as this process, started earlier.
        state.status = "running"
        state.worker = f"{os.getpid()}@1"
        store.save(state)
    assert all(s.orphaned for s in store.states())
    for name in ("b.txt", "c.txt"):  # the orphans wait to be asked for; they take no slot
        store.create(name, "en", "fr", 1)
    with pytest.raises(Unavailable):
        store.create("d.txt", "en", "fr", 1)


@pytest.mark.processes
def test_a_resumed_job_reads_its_file_in_the_encoding_its_form_named(tmp_path):
    (a, ta), *_ = [(text, translation) for text, translation in PAIRS if not translation.isascii()]
    store = in_folder(tmp_path)
    state = store.create("a.txt", "en", "fr", 1)
    state.status = "running"
    state.pid = _dead_pid()
    state.encoding = "windows-1252"
    store.save_source(state.id, f"{a}\n".encode("cp1252"))
    store.save(state)
    orphan = store.load(state.id)
    assert orphan is not None

    async def engine(payload: Payload, options: RequestOptions) -> TranslationResult:
        return TranslationResult(result=[TranslatedRecord(id=r.id, text=dict(PAIRS)[r.text]) for r in payload.records])

    adopted, work = jobs.adopt(store, orphan, read_document_safely, engine)
    assert work is not None
    asyncio.run(work)
    # Written in windows-1252, as the first worker would have: read as UTF-8 it would come back so.
    assert store.result_path(state.id).read_bytes() == f"{ta}\n".encode("cp1252")


def test_a_job_that_kept_texts_as_they_were_says_so_and_where(tmp_path):
    # A catalog whose ICU message lost its argument in translation: the message is kept as it was
    # (translator/text/icu.py), and the job, done, names it rather than saying nothing (#49).
    catalog = b'{"inbox": "{count, plural, one {# message} other {# messages}}", "title": "Inbox"}'
    store = in_folder(tmp_path)
    document = read_document_safely("en.json", catalog, "fr")
    state = store.create("en.json", "en", "fr", len(document.units))

    async def engine(payload: Payload, options: RequestOptions) -> TranslationResult:
        # Every text back upper-cased, the outer message's `{count}` lost.
        lost = {"{count}": "count"}
        return TranslationResult(
            result=[TranslatedRecord(id=r.id, text=lost.get(r.text, r.text.upper())) for r in payload.records]
        )

    asyncio.run(jobs.run(store, state, document, engine))
    final = store.load(state.id)
    assert final is not None and final.status == "done"
    assert final.untranslated == {"count": 1, "where": ["line 1: " + ICU_KEPT]}
    assert "1 of the file's texts are not translated" in final.warning
    assert store.result_path(state.id).read_bytes() == catalog.replace(b'"Inbox"', b'"INBOX"')


def test_a_state_the_untyped_release_stored_is_read_and_stored_back_the_same():
    # A job left by a worker of the release before job states were typed resumes after an upgrade.
    stored = {
        "id": "ab" * 16,
        "status": "running",
        "filename": "a.txt",
        "fromLang": "auto",
        "toLang": "fr",
        "progress": {"done": 3, "total": 10},
        "resultUrl": f"/documents/{'ab' * 16}/result",
        "created": 1.5,
        "pid": 42,
        "worker": "42@7",
        "owner": "",
        "contentType": "text/plain; charset=utf-8",
        "encoding": "windows-1252",
        "characters": 120,
        "deepl": {"key": "digest"},
    }
    state = JobState.from_json(stored)
    assert state.to_json() == stored
    assert state.public() == {
        "id": "ab" * 16,
        "status": "running",
        "filename": "a.txt",
        "progress": {"done": 3, "total": 10},
        "resultUrl": f"/documents/{'ab' * 16}/result",
        "encoding": "windows-1252",
    }

"""Document jobs: a file translated in the background, its state on disk for every API worker.

A job's state, source and result live in the settings' `documents.folder` (shared by the API
workers of one server, which answer `GET /documents/{id}` for jobs another worker runs). The worker
that took the upload translates it: its units go through the same handler as `POST /translation`, in requests of
at most `CHUNK_RECORDS` records (`CHUNKS_IN_FLIGHT` at once) at bulk priority (`Priority: u=7`),
so a document's sentences share batches with everyone's and yield to interactive requests. A job
whose worker is gone (restarted) is resumed by the next worker asked about it, from the units
already translated (`done.jsonl`); one that cannot be (its source gone) reads failed, with why.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import hashlib
import json
import os
import shutil
import time
import uuid
from collections.abc import Awaitable, Callable, Collection
from pathlib import Path
from typing import Any

from translator.config import Documents
from translator.contract import limits
from translator.contract.errors import GatewayTimeout, TranslationError, Unavailable
from translator.contract.options import BULK, RequestOptions
from translator.contract.schemas import Payload, Record, TranslationResult
from translator.documents.job_state import JobState, Progress
from translator.documents.model import MAX_UNITS, Document, TooLarge, Unit

# Where jobs are kept, how many at once and how long: the settings' `documents` section
# (translator/config.py, bentoconfiguration.yaml's services.Translation.translation.documents).
# As m2m-translate sends bulk work (m2m_tools/bulk.py's defaults): small requests, several in
# flight, so that each stays well inside the latency objective and the batches stay mixed.
CHUNK_RECORDS = 8
CHUNKS_IN_FLIGHT = 4
# A chunk refused by a busy engine (503) is sent again after its Retry-After, this many times.
MAX_RETRIES = 60
# A running job holds its parsed document (the XML tree its writer fills) and its translations:
# measured, about 3.5 KB a paragraph (a .docx of 100,000 short paragraphs, 13 MB of XML, took
# 330 MB), so the jobs' count alone let 32 large documents take 20 GB of a 6 GiB pod. The paragraphs
# of the server's active jobs together stay within two of the largest documents (~1.4 GB): one of
# them leaves room for the others' (a bound of one would refuse every document while it ran).
MAX_ACTIVE_UNITS = 2 * MAX_UNITS
# The job's `warning` when its file has no text to translate.
# A job's `untranslated` names at most this many of the texts it kept as they were (all counted).
UNTRANSLATED_LISTED = 50
NOTHING_TO_TRANSLATE = "nothing to translate was found in this file: it comes back as it was"
Translate = Callable[[Payload, RequestOptions], Awaitable[TranslationResult]]


class JobsPerKey(TranslationError):
    status = 429

    def headers(self) -> dict[str, str]:
        return {"Retry-After": "30"}


def owner_of(token: bytes | None) -> str:
    """Who a job counts against: a digest of its API key (the key itself is never stored)."""
    return hashlib.sha256(token).hexdigest()[:32] if token else ""


class JobStore:
    def __init__(self, settings: Documents) -> None:
        self.settings = settings
        self.root = settings.path()

    def folder(self, job_id: str) -> Path:
        # Only ids this module made: 32 hex digits, never a path.
        if len(job_id) != 32 or not all(c in "0123456789abcdef" for c in job_id):
            raise KeyError(job_id)
        return self.root / job_id

    def create(self, filename: str, source: str, target: str, total: int, owner: str = "") -> JobState:
        """`owner`: a digest of the API key, never the key."""
        self.sweep()
        active = self.active()
        stored = sum(p.stat().st_size for p in self.root.rglob("*") if p.is_file()) if self.root.is_dir() else 0
        bounds = self.settings
        if stored > bounds.max_stored_bytes:
            raise Unavailable(
                "the documents kept for download fill this server's storage; retry later", retry_after_s=60
            )
        if len(active) >= bounds.max_jobs:
            raise Unavailable(f"{bounds.max_jobs} documents are being translated; retry later", retry_after_s=30)
        held = _paragraphs(active)
        if held + total > MAX_ACTIVE_UNITS:
            raise Unavailable(
                f"documents of {held} paragraphs are being translated, and with this one's {total} they would "
                f"pass this server's {MAX_ACTIVE_UNITS}; retry later",
                retry_after_s=30,
            )
        # Keys off (no owner): the server's bound only, everyone being one "key".
        if owner and sum(1 for state in active if state.owner == owner) >= bounds.max_jobs_per_key:
            raise JobsPerKey(
                f"at most {bounds.max_jobs_per_key} documents of one API key are translated at once; retry later"
            )
        job_id = uuid.uuid4().hex
        state = JobState(
            id=job_id,
            filename=filename,
            from_lang=source,
            to_lang=target,
            progress=Progress(0, total),
            created=time.time(),
            pid=os.getpid(),
            worker=_worker(),
            owner=owner,
        )
        if total == 0:
            # Done at once with 0 units, the file back as it was: the client is told it is not a failure
            # of the service (a format whose text this reader does not know, a file of numbers only).
            state.warning = NOTHING_TO_TRANSLATE
        self.folder(job_id).mkdir(parents=True, exist_ok=True)
        self.save(state)
        return state

    def active(self) -> list[JobState]:
        """Jobs queued or running; one whose worker died counts no more: it waits for someone to ask
        for it (then resumes)."""
        return [s for s in self.states() if s.status in ("queued", "running") and not s.orphaned]

    def save(self, state: JobState) -> None:
        folder = self.folder(state.id)
        temporary = folder / f"state.{os.getpid()}.tmp"
        temporary.write_text(json.dumps(state.to_json()))
        os.replace(temporary, folder / "state.json")

    def load(self, job_id: str) -> JobState | None:
        try:
            state = JobState.from_json(json.loads((self.folder(job_id) / "state.json").read_text()))
        except (KeyError, OSError, ValueError, TypeError):
            return None
        if state.status in ("queued", "running") and not _alive(state.pid, state.worker):
            state.orphaned = True  # its worker is gone: `adopt` resumes it
        return state

    def save_source(self, job_id: str, data: bytes) -> None:
        (self.folder(job_id) / "source").write_bytes(data)

    def done(self, job_id: str) -> dict[int, str]:
        """The units translated so far (a resumed job does not send them again)."""
        try:
            lines = (self.folder(job_id) / "done.jsonl").read_text(encoding="utf-8").splitlines()
        except OSError:
            return {}
        out: dict[int, str] = {}
        for line in lines:
            try:
                index, text = json.loads(line)
            except ValueError:
                continue  # the last line of a worker killed while writing it
            out[int(index)] = text
        return out

    def record(self, job_id: str, translated: dict[int, str]) -> None:
        lines = "".join(json.dumps([index, text], ensure_ascii=False) + "\n" for index, text in translated.items())
        with (self.folder(job_id) / "done.jsonl").open("a", encoding="utf-8") as file:
            file.write(lines)

    def claim(self, state: JobState) -> bool:
        """True in the one process that takes over an orphaned job (the others see the file)."""
        try:
            os.close(
                os.open(
                    self.folder(state.id) / f"claim.{state.worker or state.pid}",
                    os.O_CREAT | os.O_EXCL | os.O_WRONLY,
                )
            )
        except FileExistsError:
            return False
        return True

    def result_path(self, job_id: str) -> Path:
        return self.folder(job_id) / "result"

    def states(self) -> list[JobState]:
        if not self.root.is_dir():
            return []
        return [s for s in (self.load(p.name) for p in self.root.iterdir()) if s is not None]

    def sweep(self) -> None:
        now = time.time()
        for state in self.states():
            # An orphan nobody asked for within the keep time (a translate_file caller gone with
            # its worker) goes too, or it would hold its files for ever.
            since = state.ended if state.ended is not None else state.created if state.orphaned else now
            if since < now - self.settings.keep_s:
                shutil.rmtree(self.folder(state.id), ignore_errors=True)


def _paragraphs(states: list[JobState]) -> int:
    return sum(state.progress.total for state in states)


def public(state: JobState) -> dict[str, Any]:
    """A job's state as the API answers it."""
    return state.public()


def _started(pid: int) -> str | None:
    """A process's start time in clock ticks since boot (/proc/PID/stat, field 22): with its pid, a
    name no later process has, where a pid alone is reused (a container restarted in the same pod
    gets the same small pids, and would take its predecessor's jobs for its own)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rpartition(")")[2].split()[19]  # fields after the command name, which may hold spaces


@functools.cache
def _worker_of(pid: int) -> str:
    return f"{pid}@{_started(pid)}"


def _worker() -> str:
    """This process's name for its jobs (by pid, so a forked child is not its parent)."""
    return _worker_of(os.getpid())


def _alive(pid: int, worker: str | None = None) -> bool:
    if worker is not None:
        return f"{pid}@{_started(pid)}" == worker
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def check_size(document: Document) -> None:
    if len(document.units) > MAX_UNITS:
        raise TooLarge("text units", MAX_UNITS, len(document.units))
    for unit in document.units:
        if len(unit.text) > limits.MAX_CHARS_PER_RECORD:
            raise TooLarge("characters in one paragraph", limits.MAX_CHARS_PER_RECORD, len(unit.text))


def _chunks(units: list[Unit], skip: Collection[int] = ()) -> list[list[int]]:
    """Indexes of units per request (but those in `skip`): one format each, within the native
    API's limits."""
    out: list[list[int]] = []
    for fmt in ("text", "html"):
        current: list[int] = []
        chars = 0
        for index, unit in enumerate(units):
            if unit.fmt != fmt or index in skip:
                continue
            if current and (len(current) >= CHUNK_RECORDS or chars + len(unit.text) > limits.MAX_CHARS_PER_REQUEST):
                out.append(current)
                current, chars = [], 0
            current.append(index)
            chars += len(unit.text)
        if current:
            out.append(current)
    return out


async def run(store: JobStore, state: JobState, document: Document, translate: Translate) -> None:
    """Translate the job's document and store its result, or its failure with the reason."""
    state.status = "running"
    store.save(state)
    translations: list[str] = [""] * len(document.units)
    finished = store.done(state.id)
    for index, text in finished.items():
        if 0 <= index < len(translations):
            translations[index] = text
    state.progress.done = len(finished)
    detected: collections.Counter[str] = collections.Counter()
    gate = asyncio.Semaphore(CHUNKS_IN_FLIGHT)
    hits = [state.memory_hits or 0]  # texts a memory answered, resumed jobs' earlier ones included

    async def one(chunk: list[int]) -> None:
        payload = Payload(
            fromLang=state.from_lang,
            toLang=state.to_lang,
            records=[Record(id=str(i), text=document.units[i].text) for i in chunk],
            format=document.units[chunk[0]].fmt,  # type: ignore[arg-type]
            glossaryId=state.glossary_id,
            translationMemory=state.memory_id,
        )
        async with gate:
            result = await _with_retries(functools.partial(translate, payload, BULK))
        for index, record in zip(chunk, result.result, strict=True):
            translations[index] = record.text
            if record.detected_lang:
                detected[record.detected_lang] += len(document.units[index].text)
            if record.origin is not None and record.origin.kind == "memory":
                hits[0] += 1
        store.record(state.id, {index: translations[index] for index in chunk})
        state.progress.done += len(chunk)
        if state.memory_id is not None:
            state.memory_hits = hits[0]
        store.save(state)

    try:
        tasks = [asyncio.ensure_future(one(chunk)) for chunk in _chunks(document.units, finished.keys())]
        try:
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:  # one chunk failed: the others are not needed
                task.cancel()
        data = await asyncio.to_thread(document.write, translations)
        store.result_path(state.id).write_bytes(data)
        # As written: a writer may settle its charset only then (a PO file its charset cannot hold).
        state.content_type = document.content_type
        if document.kept:
            # Done, and told what is not translated and why: never `done` over text left silently.
            state.untranslated = {"count": len(document.kept), "where": document.kept[:UNTRANSLATED_LISTED]}
            state.warning = f"{len(document.kept)} of the file's texts are not translated: see `untranslated`"
        if detected:
            state.detected_language = detected.most_common(1)[0][0]
        state.status = "done"
    except TranslationError as exc:
        state.status, state.error = "failed", exc.message
    except Exception as exc:  # a writer's bug must not leave the job running for ever
        state.status = "failed"
        state.error = f"the translated file could not be written ({type(exc).__name__})"
    finally:
        state.ended = time.time()
        store.save(state)


def adopt(
    store: JobStore,
    state: JobState,
    read: Callable[[str, bytes, str, str | None], Document],
    translate: Translate,
) -> tuple[JobState, Awaitable[None] | None]:
    """An orphaned job (its worker restarted) resumed in this process from its saved source and
    the units it had translated; the coroutine to run, or None when another process took it or
    it cannot be resumed (then it reads failed, with the reason)."""
    if _paragraphs(store.active()) + state.progress.total > MAX_ACTIVE_UNITS:
        return state, None  # still an orphan: resumed when asked about once there is room
    state.orphaned = False
    if not store.claim(state):
        return state, None
    try:
        source = (store.folder(state.id) / "source").read_bytes()
        document = read(state.filename, source, state.to_lang, state.encoding)
    except (OSError, TranslationError) as exc:
        reason = exc.message if isinstance(exc, TranslationError) else "its file is gone"
        state.status = "failed"
        state.error = f"the server restarted while translating it ({reason}); send it again"
        state.ended = time.time()
        store.save(state)
        return state, None
    state.pid, state.worker, state.status = os.getpid(), _worker(), "queued"
    store.save(state)
    return state, run(store, state, document, translate)


async def _with_retries(call: Callable[[], Awaitable[TranslationResult]]) -> TranslationResult:
    # What m2m-translate retries (m2m_tools/jobs/http_runner.py): a full or restarting engine
    # (503), and a deadline missed at bulk priority under interactive load (504), which is the
    # expected answer to bulk work then, not a reason to fail the whole document.
    for _ in range(MAX_RETRIES):
        try:
            return await call()
        except Unavailable as exc:
            await asyncio.sleep(min(exc.retry_after_s or 1.0, 10.0))
        except GatewayTimeout:
            await asyncio.sleep(1.0)
    return await call()

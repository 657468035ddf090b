"""Document translation routes: the native `/documents` jobs and LibreTranslate's
`translate_file` / `download_file` (translator/documents/ holds the formats and the jobs).

`POST /documents` answers 202 with the job at once; `POST /libretranslate/translate_file` waits
for the same job and answers the URL of its result, as LibreTranslate does. Both refuse a bad
file, a format not translated or an unknown language with a 4xx naming the problem, before any
job exists.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Collection
from typing import Any

from translator.api import access
from translator.api.endpoints import CORS, NATIVE, endpoint
from translator.api.endpoints import LIBRETRANSLATE as LIBRETRANSLATE_ERRORS
from translator.api.glossaries import stored_terms
from translator.api.job_memory import JobMemory, job_memory, prepared
from translator.api.libretranslate import PREFIX, Service, normalize_code
from translator.contract import limits
from translator.contract.errors import (
    InvalidRequest,
    TranslationError,
    UnsupportedLanguage,
)
from translator.documents import jobs
from translator.documents.formats import read_document_safely
from translator.documents.job_state import JobState
from translator.documents.model import BadDocument, Document, Part, TooLarge, UnsupportedDocument
from translator.text.langdetect import AUTO

DOCUMENTS_PATH = "/documents"
TRANSLATE_FILE_PATH = f"{PREFIX}/translate_file"
DOWNLOAD_PATH = f"{PREFIX}/download_file"
# A form without a file part is let through to be answered "file: required".
UPLOAD_TYPES = frozenset({"multipart/form-data", "application/x-www-form-urlencoded"})
# Tasks of this worker's jobs, kept referenced while they run.
_RUNNING: dict[str, asyncio.Task[None]] = {}


def accepts_upload(path: str) -> bool:
    """Whether the edge middleware lets a multipart body through to this path."""
    return path.rstrip("/") == DOCUMENTS_PATH


async def read_upload(request: Any) -> tuple[dict[str, str], Any]:
    try:
        form = await request.form(max_part_size=limits.MAX_BODY_BYTES)
    except Exception as exc:  # malformed multipart: python-multipart's and Starlette's errors
        raise InvalidRequest(f"the form could not be read ({exc})") from exc
    fields = {key: value for key, value in form.items() if isinstance(value, str)}
    upload = form.get("file")
    if upload is None or isinstance(upload, str):
        raise InvalidRequest("file: required, as a file part of a multipart/form-data body", field="file")
    return fields, upload


# The form field each part of an upload is sent in, by every route that takes a document (the
# native, LibreTranslate's and DeepL's): what a reader's refusal is about, named as the client sent it.
FIELDS = {Part.CONTENT: "file", Part.ENCODING: "encoding"}


def upload_refusal(exc: BadDocument | UnsupportedDocument | TooLarge) -> TranslationError:
    """A reader's refusal as the upload's field it is about: its message after `file: ` or
    `encoding: `, and `field` in the detail where the native API has always given it (a format
    not taken, an encoding named), not for a file that cannot be read, nor beside a `limit`."""
    field = FIELDS[exc.part]
    if isinstance(exc, TooLarge):
        return TooLarge(f"{field}: {exc.what}", exc.limit, exc.got)
    if isinstance(exc, UnsupportedDocument):
        return UnsupportedDocument(f"{field}: {exc.message}", field=field)
    if exc.part is Part.ENCODING:
        return BadDocument(f"{field}: {exc.message}", exc.part, field=field)
    return BadDocument(f"{field}: {exc.message}", exc.part)


def read_file(filename: str, data: bytes, target: str = "", encoding: str | None = None) -> Document:
    """An uploaded file's document, within the bounds of a job, or its refusal named as the upload's
    field (`upload_refusal`): what every route that reads a document calls, a resumed job too."""
    try:
        document = read_document_safely(filename, data, target, encoding)
        jobs.check_size(document)
    except (BadDocument, UnsupportedDocument, TooLarge) as exc:
        raise upload_refusal(exc) from exc
    return document


def _language(value: str | None, name: str, supported: Collection[str], auto: bool) -> str:
    if not value:
        raise InvalidRequest(f"{name}: required", field=name)
    if auto and value == AUTO:
        return value
    code = normalize_code(value, supported)
    if code is None:
        raise UnsupportedLanguage(name, value[:20])
    return code


def _glossary(fields: dict[str, str], name: str) -> tuple[str, str] | None:
    value = fields.get(name)
    return (value, name) if value else None


async def start_job(
    store: jobs.JobStore,
    upload: Any,
    source: str,
    target: str,
    service: Service,
    key: bytes | None,
    glossary: tuple[str, str] | None = None,
    deepl: dict[str, Any] | None = None,
    encoding: str | None = None,
    memory: JobMemory | None = None,
) -> JobState:
    """`glossary`: a stored glossary's id and the form field that named it, checked against the
    languages before any job exists (each chunk of the job then applies it, as a request would);
    `deepl`: DeepL's job, with its document key's digest (translator/api/deepl_documents.py);
    `encoding`: a text file's encoding as the client named it (the form's `encoding`); `memory`: a
    translation memory the job's texts are matched against (translator/api/job_memory.py), which
    with learning on first takes the file's own translations people made."""
    if glossary is not None:
        glossary_id, field = glossary
        handler = service.handler
        await stored_terms(glossary_id, source, target, handler.glossaries, handler.canonical, field=field)
    filename = upload.filename or "document"
    data = await upload.read()
    encoding = encoding or None
    document = await asyncio.to_thread(read_file, filename, data, target, encoding)
    learned = await prepared(memory, service.handler, source, target, filename, data) if memory else None
    state = store.create(filename, source, target, len(document.units), jobs.owner_of(key))
    state.content_type = document.content_type
    state.encoding = encoding  # read the same way again by a worker that resumes the job
    # What DeepL bills (its `billed_characters`): the characters of the text the job translates.
    state.characters = sum(len(unit.text) for unit in document.units)
    state.deepl = deepl
    if glossary is not None:
        state.glossary_id = glossary[0]
    if memory is not None:
        state.memory_id, state.learned = memory.memory_id, learned
    store.save_source(state.id, data)  # a restarted worker's job resumes from it
    store.save(state)
    _launch(state.id, jobs.run(store, state, document, service.handler.translate))
    return state


def resumed(store: jobs.JobStore, job_id: str, service: Service) -> JobState | None:
    """A job's state; one whose worker restarted is resumed by this worker, where it stopped."""
    state = store.load(job_id)
    if state is not None and state.orphaned:
        state, work = jobs.adopt(store, state, read_file, service.handler.translate)
        if work is not None:
            _launch(state.id, work)
    return state


def _launch(job_id: str, work: Any) -> None:
    task = asyncio.create_task(work)
    _RUNNING[job_id] = task
    task.add_done_callback(lambda _: _RUNNING.pop(job_id, None))


@functools.cache
def job_store() -> jobs.JobStore:
    """This worker's one store of jobs, over the settings' `documents` folder, its limits and keep
    time: the native and DeepL's document routes share it (two stores over one folder counted the
    same jobs twice over, each with its own copy of the settings)."""
    from translator.config import load_settings

    return jobs.JobStore(load_settings().documents)


def routes(get_service: Callable[[], Service]) -> list[Any]:
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    store = job_store()

    async def create(request: Request) -> dict[str, Any]:
        service = get_service()
        fields, upload = await read_upload(request)
        if upload.size == 0:
            # Nothing to translate: said at once, where a job would finish with an empty result.
            # LibreTranslate's translate_file takes such a file (and so does ours, below).
            name = repr(upload.filename[:200]) if upload.filename else "the file"
            raise InvalidRequest(f"file: {name} is empty (0 bytes); there is nothing to translate", field="file")
        languages = service.handler.languages
        source = _language(fields.get("fromLang", AUTO), "fromLang", languages, auto=True)
        target = _language(fields.get("toLang"), "toLang", languages, auto=False)
        key = access.offered(request.scope)
        glossary = _glossary(fields, "glossaryId")
        memory = job_memory(fields, "translationMemory", "memoryLearn")
        state = await start_job(
            store, upload, source, target, service, key, glossary, encoding=fields.get("encoding"), memory=memory
        )
        return jobs.public(state)

    def _found(request: Request) -> JobState | None:
        state = resumed(store, request.path_params["job"], get_service())
        # A DeepL document is read with its document key only (translator/api/deepl_documents.py).
        return None if state is None or state.deepl is not None else state

    async def status(request: Request) -> Response:
        state = _found(request)
        if state is None:
            return JSONResponse({"error": "no such document job (or it expired)", "field": "id"}, status_code=404)
        return JSONResponse(jobs.public(state))

    def _file(state: JobState) -> Response:
        from starlette.responses import FileResponse

        return FileResponse(
            store.result_path(state.id),
            media_type=state.content_type or "application/octet-stream",
            filename=state.filename,
        )

    async def result(request: Request) -> Response:
        state = _found(request)
        if state is None:
            return JSONResponse({"error": "no such document job (or it expired)", "field": "id"}, status_code=404)
        if state.status != "done":
            body = {"error": f"the document is {state.status}, not done", **jobs.public(state)}
            return JSONResponse(body, status_code=409)
        return _file(state)

    async def translate_file(request: Request) -> dict[str, Any]:
        service = get_service()
        try:
            fields, upload = await read_upload(request)
        except InvalidRequest as exc:
            raise InvalidRequest(exc.message.replace("file: required", "Invalid request: missing file")) from exc
        languages = service.handler.languages
        source = _language(fields.get("source"), "source", languages, auto=True)
        target = _language(fields.get("target"), "target", languages, auto=False)
        key = access.offered(request.scope)
        glossary = _glossary(fields, "glossary_id")
        memory = job_memory(fields, "translation_memory")
        state = await start_job(
            store, upload, source, target, service, key, glossary, encoding=fields.get("encoding"), memory=memory
        )
        await _wait(state.id, request)
        final = store.load(state.id) or state
        if final.status != "done":
            raise InvalidRequest(f"the file could not be translated: {final.error or final.status}")
        url = f"{str(request.base_url).rstrip('/')}{DOWNLOAD_PATH}/{state.id}.{state.filename}"
        return {"translatedFileUrl": url}

    async def download(request: Request) -> Response:
        job_id, _, _ = request.path_params["name"].partition(".")
        state = store.load(job_id)
        if state is None or state.status != "done" or state.deepl is not None:
            raise InvalidRequest("Invalid filename")
        return _file(state)

    translating_file = endpoint(LIBRETRANSLATE_ERRORS, translate_file)

    async def preflighted(request: Request) -> Response:
        if request.method == "OPTIONS":  # a browser's preflight
            return Response(status_code=204, headers=CORS)
        return await translating_file(request)

    return [
        Route(DOCUMENTS_PATH, endpoint(NATIVE, create, status=202), methods=["POST"]),
        Route(DOCUMENTS_PATH + "/{job}", status, methods=["GET"]),
        Route(DOCUMENTS_PATH + "/{job}/result", result, methods=["GET"]),
        Route(TRANSLATE_FILE_PATH, preflighted, methods=["POST", "OPTIONS"]),
        Route(DOWNLOAD_PATH + "/{name:path}", endpoint(LIBRETRANSLATE_ERRORS, download), methods=["GET"]),
    ]


async def _wait(job_id: str, request: Any) -> None:
    """Until the job's task ends. A client that goes stops waiting (CallerGone), not the job: its
    result stays downloadable, as any job's, for the settings' `documents.keep_s`."""
    from translator.api.disconnect import unless_disconnected

    task = _RUNNING.get(job_id)
    if task is not None:
        await unless_disconnected(request.receive, asyncio.shield(task))

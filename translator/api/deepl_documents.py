"""DeepL's document API (#44), on the document jobs the service runs for `POST /documents`
(translator/api/documents.py): the same formats, limits, checks of the file and bounds on jobs,
through the same code.

`POST v2/document` (a multipart form: `file`, `target_lang`, `source_lang`, `glossary_id`,
`formality`, `output_format`, `filename`) starts a job and answers its `document_id` and a
`document_key`, 64 hex digits of which the job keeps only a digest. `POST v2/document/{id}` with the
key answers its status as DeepL words it (queued, translating with `seconds_remaining`, done with
`billed_characters`, error with `error_message`), and `POST v2/document/{id}/result` the file, once:
as DeepL does, a downloaded document is deleted, and asked for again is a 404, as is a wrong key
(or, with keys on, another API key than the one that uploaded it). A document in the target
language already (detected) is DeepL's error "Source and target language are equal.".
"""

from __future__ import annotations

import hashlib
import hmac
import math
import os
import re
import secrets
import shutil
import time
from collections.abc import Callable
from typing import Any

from translator.api import access, documents
from translator.api.auth import api_keys
from translator.api.deepl import V2_PATHS, answering
from translator.api.deepl_params import languages_and_options, memory_options, one
from translator.api.job_memory import job_memory
from translator.api.params import read_params
from translator.contract.errors import InvalidRequest, TranslationError, Unavailable
from translator.documents import jobs
from translator.documents.formats import extension
from translator.documents.job_state import JobState
from translator.documents.model import BadDocument, UnsupportedDocument
from translator.text.langdetect import AUTO

_ID = re.compile(r"[0-9a-fA-F]{32}")
SAME_LANGUAGE = "Source and target language are equal."
# Output formats that are one format written two ways.
_SAME_FORMAT = {".htm": ".html"}


class DocumentNotFound(TranslationError):
    """No document of that id with that key (or it was downloaded, or it expired)."""

    status = 404

    def __init__(self) -> None:
        super().__init__("Document not found (a document is downloaded once, and kept for a while only)")


def _digest(document_key: str) -> str:
    return hashlib.sha256(document_key.upper().encode("utf-8")).hexdigest()


def _format(name: str) -> str:
    ext = extension(name)
    return _SAME_FORMAT.get(ext, ext)


def upload_filename(params: dict[str, Any], upload: Any) -> str:
    """The file's name: DeepL's `filename` field, else the file part's, with `output_format` (the
    extension to write, without its dot) checked: this server writes a document in its own format."""
    filename = one(params, "filename") or upload.filename or "document"
    output = one(params, "output_format")
    if output is not None and _format(f"document.{output}") != _format(filename):
        raise InvalidRequest(
            f"Value for 'output_format' not supported: this server writes a document in the format it came in "
            f"({extension(filename) or 'no extension'}), not .{output.lower()}"
        )
    return filename


def remaining_s(state: JobState, now: float) -> int:
    """DeepL's `seconds_remaining`: from the job's pace so far; before its first units come back, at
    least as long again as it has run."""
    done, total = state.progress.done, state.progress.total
    elapsed = max(0.0, now - state.created)
    if done:
        return math.ceil(elapsed * (total - done) / done)
    return max(1, math.ceil(elapsed))


def status_body(state: JobState, same_language: bool, now: float) -> dict[str, Any]:
    """A job's state as DeepL's document status."""
    body: dict[str, Any] = {"document_id": state.id.upper()}
    if state.status == "queued":
        body["status"] = "queued"
    elif state.status == "running":
        body.update(status="translating", seconds_remaining=remaining_s(state, now))
    elif state.status == "done" and not same_language:
        body.update(status="done", seconds_remaining=0, billed_characters=state.characters)
    else:
        message = SAME_LANGUAGE if state.status == "done" else str(state.error or "the translation failed")
        # `message` as well, as DeepL answers it for older clients.
        body.update(status="error", error_message=message, message=message)
    return body


def routes(get_service: Callable[[], Any]) -> list[Any]:
    from starlette.background import BackgroundTask
    from starlette.requests import Request
    from starlette.responses import FileResponse
    from starlette.routing import Route

    store = documents.job_store()  # the one `POST /documents` uses

    async def upload(request: Request, handler: Any) -> Any:
        fields, file = await documents.read_upload(request)
        params: dict[str, Any] = {**request.query_params, **fields}
        key = access.offered(request.scope)
        source, target, glossary_id = languages_and_options(params, handler.languages)
        memory_options(params)  # checked as on translate; a document's fuzzy matches have nowhere to go
        if source != AUTO and handler.canonical(source) == handler.canonical(target):
            raise InvalidRequest(SAME_LANGUAGE)
        file.filename = upload_filename(params, file)
        if file.size == 0:
            raise InvalidRequest(f"Invalid file data: {file.filename[:200]!r} is empty (0 bytes)")
        document_key = secrets.token_hex(32).upper()
        glossary = (glossary_id, "glossary_id") if glossary_id is not None else None
        try:
            state = await documents.start_job(
                store,
                file,
                source,
                target,
                get_service(),
                key,
                glossary,
                deepl={"key": _digest(document_key)},
                memory=job_memory(params, "translation_memory_id"),
            )
        except (UnsupportedDocument, BadDocument) as exc:  # DeepL's words for a file it does not take
            raise InvalidRequest(f"Invalid file data: {exc.message}") from None
        return {"document_id": state.id.upper(), "document_key": document_key}

    async def found(request: Request) -> JobState:
        """The document the request names, if its key (and API key) may read it."""
        params = await read_params(request)
        document_key = one(params, "document_key")
        if document_key is None:
            raise InvalidRequest("Parameter 'document_key' not specified.")
        document_id = request.path_params["document_id"]
        state = documents.resumed(store, document_id.lower(), get_service()) if _ID.fullmatch(document_id) else None
        mine = state.deepl if state is not None else None
        if state is None or not isinstance(mine, dict):
            raise DocumentNotFound()
        if not hmac.compare_digest(str(mine.get("key", "")), _digest(document_key)):
            raise DocumentNotFound()
        if api_keys() is not None and state.owner != jobs.owner_of(access.offered(request.scope)):
            raise DocumentNotFound()
        if state.status == "done" and not store.result_path(state.id).exists():
            raise DocumentNotFound()  # downloaded: its folder goes once the answer is sent
        return state

    def same_language(state: JobState, handler: Any) -> bool:
        detected = state.detected_language
        return detected is not None and handler.canonical(detected) == handler.canonical(state.to_lang)

    async def status(request: Request, handler: Any) -> Any:
        state = await found(request)
        return status_body(state, same_language(state, handler), time.time())

    async def result(request: Request, handler: Any) -> Any:
        state = await found(request)
        body = status_body(state, same_language(state, handler), time.time())
        if body["status"] in ("queued", "translating"):
            raise Unavailable(
                f"Document translation is not done: it is {body['status']}", body.get("seconds_remaining", 5)
            )
        if body["status"] == "error":
            raise InvalidRequest(f"The document could not be translated: {body['error_message']}")
        # Taken by one download only (a rename is atomic), and deleted once sent, as DeepL does.
        sending = store.folder(state.id) / "result.sending"
        try:
            os.rename(store.result_path(state.id), sending)
        except FileNotFoundError:
            raise DocumentNotFound() from None
        return FileResponse(
            sending,
            media_type=state.content_type or "application/octet-stream",
            filename=state.filename,
            background=BackgroundTask(shutil.rmtree, store.folder(state.id), ignore_errors=True),
        )

    return [
        route
        for v2 in V2_PATHS
        for route in (
            # The key may come in the body (`auth_key`): the edge reads it there (translator/api/access.py).
            Route(f"{v2}/document", answering(get_service, upload), methods=["POST"]),
            Route(f"{v2}/document/{{document_id}}", answering(get_service, status), methods=["POST"]),
            Route(f"{v2}/document/{{document_id}}/result", answering(get_service, result), methods=["POST"]),
        )
    ]

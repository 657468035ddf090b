"""`LocalRunner`: a checkpoint in-process, through the service's own request pipeline
(`translator.api.pipeline.translate_payload`) and the engine's own scheduler
(`translator.engine.scheduler.Scheduler`), which merges the pieces of concurrent requests into
batches exactly as in the engine service.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from m2m_tools.jobs.runner import RequestRejected, RunnerError, Translated, records_from
from translator.contract.errors import RecordFailed, TranslationError
from translator.contract.protocol import Piece, PieceResult, Priority
from translator.contract.schemas import Payload, Record, TranslationResult
from translator.engine.scheduler import Scheduler, SchedulerSettings

if TYPE_CHECKING:
    from translator.config import Settings
    from translator.contract.language_codes import LanguageCodes
    from translator.memory.memories import Memories


logger = logging.getLogger(__name__)


class TranslatorLike(Protocol):
    """What the scheduler needs of the model (translator.engine.translator.Translator)."""

    num_beams: int
    max_batch_tokens: int  # padded tokens x beams in one generate call
    codes: LanguageCodes  # its languages' table: which codes name one language

    @property
    def languages(self) -> list[str]: ...

    def translate(self, pieces: Sequence[Piece]) -> list[PieceResult]: ...

    def count_tokens(self, piece: Piece) -> int: ...


# An in-process run has no latency objective and nobody else to serve: its batches are bounded by
# the token budget alone (as the engine's generate calls are), not by a piece count.
OFFLINE_MAX_BATCH = 4096


class LocalRunner:
    def __init__(
        self,
        model_dir: str | Path,
        *,
        settings: Settings | None = None,
        translator: TranslatorLike | None = None,
        concurrency: int = 64,
        memory: str | None = None,
        memories: Memories | None = None,
    ) -> None:
        """`memory`: the translation memory every request names, looked up in `memories` (default:
        the store the service's configuration names, its shared Valkey or this machine's files)."""
        from translator.config import load_settings
        from translator.engine.backends import choose

        self.model_dir = Path(model_dir).resolve()
        self.label = str(self.model_dir)
        # The service's own configuration (bentoconfiguration.yaml or BENTOML_CONFIG), so in-process
        # translations use the same generation settings as the served model.
        self.settings = settings or load_settings()
        self.identity: dict[str, Any] = {
            "kind": "model",
            "checkpoint": _checkpoint_version(self.model_dir),
            "generation": dataclasses.asdict(self.settings.generation),
            # int8 may translate a sentence differently: a job resumed on another engine or
            # precision does not reuse the chunks of the first.
            "engine": list(choose(self.settings.engine, model_dir=self.model_dir)),
        }
        self.memory = memory
        if memory is not None:
            self.identity["memory"] = memory  # a job without one keeps the key it always had
        self._memories = memories
        # Requests are merged into engine calls anyway; this only bounds the Python work queued.
        self.concurrency = max(1, concurrency)
        self._translator = translator
        self._scheduler: Scheduler | None = None
        self._languages: frozenset[str] = frozenset()
        self._canonical: Callable[[str], str] = str

    async def start(self) -> None:
        if self._translator is None:
            from translator.engine.translator import Translator

            engine = dataclasses.replace(self.settings.engine, warmup=False)
            self._translator = await asyncio.to_thread(Translator, self.model_dir, engine, self.settings.generation)
        translator = self._translator
        assert translator is not None
        # The engine's own scheduler merges the pieces of concurrent requests into batches, as in the
        # service: one micro-batcher, whichever way the model is reached. Nothing is refused (no
        # deadline) and it never lingers (every request of a chunk is queued at once). Nor is a long
        # batch stuck: nobody waits on a deadline here, and Ctrl-C stops a job that hangs.
        self._scheduler = Scheduler(
            translator.translate,
            translator.count_tokens,
            SchedulerSettings(
                max_batch_size=OFFLINE_MAX_BATCH,
                max_batch_tokens=translator.max_batch_tokens,
                beams=translator.num_beams,
                max_latency_s=math.inf,
                linger_fraction=0.0,
                stall_min_s=math.inf,
            ),
        )
        self._scheduler.start()
        self._languages = frozenset(translator.languages)
        self._canonical = translator.codes.listed_code  # `en` and `eng_Latn` are one language

    async def close(self) -> None:
        if self._scheduler is not None:
            await self._scheduler.close()
            self._scheduler = None

    async def _engine(self, pieces: list[Piece]) -> list[PieceResult]:
        assert self._scheduler is not None, "start() first"
        return await self._scheduler.submit(pieces, Priority.BULK)

    async def languages(self) -> frozenset[str] | None:
        return self._languages

    def memories(self) -> Memories:
        if self._memories is None:
            from translator.memory.memories import Memories
            from translator.memory.store import store_for

            # Where the service keeps them: its shared store, or this machine's BentoML home.
            self._memories = Memories(store_for(self.settings.cache.shared_url()))
        return self._memories

    async def memory_info(self) -> dict[str, Any] | None:
        from translator.api.memories import native_info

        assert self.memory is not None
        info = await self.memories().get(self.memory)
        return None if info is None else native_info(info)

    async def learn(self, filename: str, data: bytes, target: str) -> int:
        from translator.memory.files import read_memory_file

        assert self.memory is not None
        info = await self.memories().get(self.memory)
        if info is None:
            raise RunnerError(f"no translation memory {self.memory!r}")
        try:
            imported = await asyncio.to_thread(read_memory_file, filename, data, info.source_lang, target)
        except TranslationError as exc:
            raise RequestRejected(f"{filename}: {exc.message}", exc.status) from exc
        if imported.segments:
            await self.memories().add(self.memory, imported.segments)
        return len(imported.segments)

    async def translate(self, source: str, target: str, texts: Sequence[str], fmt: str = "text") -> list[Translated]:
        from translator.api.pipeline import translate_payload
        from translator.memory.requests import split_payload

        assert self._translator is not None and self._scheduler is not None, "start() first"
        payload = Payload(
            fromLang=source,
            toLang=target,
            records=[Record(id=str(i), text=text) for i, text in enumerate(texts)],
            format=fmt,  # type: ignore[arg-type]
            translationMemory=self.memory,
        )

        async def model(asked: Payload) -> TranslationResult:
            return await translate_payload(asked, self._languages, self._engine, canonical=self._canonical)

        try:
            # The service's own split (translator/api/handler.py): the memory's records from it, the
            # others from the model, one answer in order with each record's origin.
            split = await split_payload(payload, self.memories(), self._canonical) if self.memory else None
            if split is None:
                result = await model(payload)
            else:
                result = split.merge(await model(split.rest) if split.rest is not None else None)
        except TranslationError as exc:
            # The status the service would answer with decides, as it does for HttpRunner.
            if 400 <= exc.status < 500 or isinstance(exc, RecordFailed):
                raise RequestRejected(f"in-process {source}-{target}: {exc.message}", exc.status) from exc
            raise RunnerError(f"in-process {source}-{target}: {exc.message}") from exc
        return records_from(result.model_dump(), [str(i) for i in range(len(texts))], f"in-process {self.label}")


def _checkpoint_version(model_dir: Path) -> str:
    from translator.store import RegistrationError, checkpoint_files, content_version

    # The same content hash save_model.py uses for the BentoML tag: a copied or moved checkpoint
    # keeps its checkpoints, a retrained one does not.
    try:
        return content_version(checkpoint_files(model_dir))
    except RegistrationError as exc:
        raise RunnerError(str(exc)) from exc

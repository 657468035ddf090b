"""One translation request in an API worker, whichever API it came by: its payload and its typed
options (each API reads them from its own request; a document job's are bulk), then the pipeline
with this worker's engine client, abandoned if the client goes away.

`POST /translation`, LibreTranslate's and DeepL's APIs and the document jobs all call
`RequestHandler.translate`: one path to the model, one admission, one set of priorities.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Collection

from translator.api.disconnect import unless_disconnected
from translator.api.engine_client import EngineClient
from translator.api.glossaries import request_terms
from translator.api.glossary_store import GlossaryStore, store_for
from translator.api.pipeline import translate_payload
from translator.contract.options import RequestOptions
from translator.contract.protocol import Piece
from translator.contract.schemas import Payload, TranslationResult
from translator.memory.memories import Memories
from translator.memory.requests import split_payload
from translator.memory.store import store_for as memory_store_for
from translator.shm.engine_load import LoadReader


class RequestHandler:
    def __init__(
        self,
        client: EngineClient,
        languages: Collection[str],
        max_latency_ms: float,
        engine_load: LoadReader | None = None,
        glossaries: GlossaryStore | None = None,
        listed: Collection[str] | None = None,
        canonical: Callable[[str], str] | None = None,
        memories: Memories | None = None,
    ) -> None:
        self.client = client
        # Stored glossaries (#33): in the shared Valkey when there is one, else in local files.
        self.glossaries = glossaries if glossaries is not None else store_for(None)
        # Translation memories (#51), on the same store as the glossaries.
        self.memories = memories if memories is not None else Memories(memory_store_for(None))
        # Told each request's size: the early refusal sizes requests like the recent ones.
        self.engine_load = engine_load
        # `languages`: every code a request may name; `listed`: what /languages shows, one code a
        # language (they differ for NLLB checkpoints: translator/contract/language_codes.py).
        self.languages = frozenset(languages)
        self.listed = sorted(listed if listed is not None else self.languages)
        # One spelling per language (LanguageCodes.listed_code), for glossaries' language pairs.
        self.canonical: Callable[[str], str] = canonical if canonical is not None else str
        self.max_latency_ms = max_latency_ms

    async def translate(self, payload: Payload, options: RequestOptions) -> TranslationResult:
        """Raises `TranslationError` (answered by the caller in its API's error shape), or
        `CallerGone` when the client closed the connection before the answer."""
        # A memory's records are answered from it; the others go to the model as a request of their own.
        split = await split_payload(payload, self.memories, self.canonical)
        if split is None:
            return await self._model(payload, options)
        return split.merge(await self._model(split.rest, options) if split.rest is not None else None)

    async def _model(self, payload: Payload, options: RequestOptions) -> TranslationResult:
        priority = options.priority
        # The latency objective runs from arrival here: time spent waiting for a connection to the
        # engine counts, and the engine plans with what is left.
        asked_ms = options.deadline_ms
        budget_ms = min(asked_ms or math.inf, self.max_latency_ms)
        deadline = time.monotonic() + budget_ms / 1000
        # The caller's own deadline is kept whatever the engine does; the server's objective is the
        # engine's to keep (translator/api/engine_client.py says why).
        binding = asked_ms is not None and asked_ms <= self.max_latency_ms

        async def engine(pieces: list[Piece]):
            if self.engine_load is not None:
                self.engine_load.saw(priority, len(pieces))
            return await self.client.translate(pieces, priority, deadline, binding)

        terms = await request_terms(payload, self.glossaries, self.canonical)
        work = translate_payload(payload, self.languages, engine, terms, self.canonical)
        return await (work if options.gone is None else unless_disconnected(options.gone, work))

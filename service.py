"""M2M100 translation service: BentoML wiring only; the logic lives in the `translator` package.

Two services in one process tree: `Translation` (HTTP, several async workers) validates, splits
and reassembles; `TranslationEngine` (one worker) owns the model, and its batchable `translate`
merges the pieces of concurrent requests into shared `generate` calls.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from typing import Annotated

import bentoml
from pydantic import Field

from translator.config import API_SERVICE, ENGINE_SERVICE, load_settings, model_tag
from translator.dispatch import install as install_refill_pause
from translator.errors import TranslationError, TranslationFailed, Unavailable, http_response
from translator.health import EngineGate
from translator.middleware import EdgeMiddleware, languages_app
from translator.pipeline import translate_payload
from translator.schemas import EXAMPLE_PAYLOAD, Payload, Piece, PieceResult, TranslationResult
from translator.warmup import warm_dispatcher

with bentoml.importing():
    import aiohttp
    from bentoml.exceptions import BentoMLException

    from translator.engine import Translator

logger = logging.getLogger("translator.service")

SETTINGS = load_settings()
MODEL_TAG = model_tag()
# Tries per engine call when connections drop while the engine itself answers: after an engine
# restart the pool may hold several dead connections, each failing at once.
ENGINE_CALL_ATTEMPTS = 4
# Before BentoML builds the engine's batch dispatcher: full batches under closed-loop load.
install_refill_pause(SETTINGS.engine.refill_pause_fraction, SETTINGS.engine.refill_pause_max_ms)

# BentoML's adaptive_batch_size counts calls (requests) per batch; this counts the pieces
# (sentences) the model actually gets, which is what max_batch_size bounds and what costs time.
BATCH_PIECES = bentoml.metrics.Histogram(
    name="translation_batch_pieces",
    documentation="Pieces (sentences) per batch handed to the translation engine, across requests",
    buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512),
)


@functools.cache
def supported_languages() -> list[str]:
    # Recorded by save_model.py from the checkpoint's tokenizer: the API workers validate codes
    # without loading the tokenizer (or torch) themselves.
    return list(bentoml.models.get(MODEL_TAG).info.metadata["languages"])


@bentoml.service(name=ENGINE_SERVICE, **SETTINGS.engine_service)
class TranslationEngine:
    model = bentoml.models.BentoModel(MODEL_TAG)

    def __init__(self) -> None:
        self.translator = Translator(self.model.path, SETTINGS.engine, SETTINGS.generation)
        self.warm = not SETTINGS.engine.warmup
        self._warmup_task: asyncio.Task[None] | None = None

    @bentoml.on_startup
    async def start_warmup(self) -> None:
        # Readiness stays false until the dispatcher has learned its cost model (translator.warmup):
        # traffic arriving before that would be batched one call at a time and over-shed.
        if not self.warm:
            self._warmup_task = asyncio.get_running_loop().create_task(self._warm_up())

    async def _warm_up(self) -> None:
        # `to_async`, this service's client to itself (through its own HTTP app and dispatcher),
        # is attached just after the startup hooks have run.
        while "to_async" not in vars(self):
            await asyncio.sleep(0.05)
        source, target = self.translator.warmup_pair()

        async def call(pieces: list[Piece]) -> list[PieceResult] | None:
            try:
                return await self.to_async.translate(pieces)
            except BentoMLException as exc:
                if exc.error_code == 503:  # shed by the dispatcher: it is learning, not failing
                    return None
                raise

        try:
            await warm_dispatcher(call, source, target, SETTINGS.batching.max_batch_size)
        except Exception:
            # Never ready: the startup probe's budget runs out and Kubernetes restarts the pod.
            logger.exception("engine warm-up failed; readiness stays false")
            return
        self.warm = True

    def __is_ready__(self) -> bool:
        return self.warm

    @bentoml.api(
        batchable=True,
        batch_dim=0,
        max_batch_size=SETTINGS.batching.max_batch_size,
        max_latency_ms=SETTINGS.batching.max_latency_ms,
    )
    def translate(self, pieces: list[Piece]) -> list[PieceResult]:
        BATCH_PIECES.observe(len(pieces))
        return self.translator.translate(pieces)


@bentoml.asgi_app(languages_app(supported_languages), path="/")
@bentoml.service(name=API_SERVICE, **SETTINGS.api_service)
class Translation:
    engine = bentoml.depends(TranslationEngine)

    def __init__(self) -> None:
        self.languages = frozenset(supported_languages())
        self.gate = EngineGate(lambda timeout: self.engine.is_ready(timeout))

    @bentoml.on_startup
    async def watch_engine(self) -> None:
        self.gate.start()

    @bentoml.on_shutdown
    async def stop_watching(self) -> None:
        await self.gate.close()

    async def __is_ready__(self) -> bool:
        # Answered from the gate (which asks the engine, bounded): BentoML's own dependency probe,
        # which runs only if this says yes, lets a refused connection escape as a 500 and waits
        # on a dead engine's socket.
        ready = self.gate.is_up and await self.gate.probe()
        return ready

    def __is_alive__(self) -> bool:
        # False only when the engine has stayed unreachable past the gate's limit: in a container
        # nothing respawns it, and restarting the pod is the way back.
        return self.gate.is_alive()

    @bentoml.api(route="/translation")
    async def translation(
        self, payload: Annotated[Payload, Field(examples=[EXAMPLE_PAYLOAD.model_dump(by_alias=True)])]
    ) -> TranslationResult:
        """Translate records from `fromLang` to `toLang`.

        Each record's text may hold several sentences and paragraphs; it is split into sentences,
        translated in batches shared with concurrent requests, and rejoined with its original
        whitespace. Every record comes back exactly once, in request order, with its id; or the
        request fails as a whole with a JSON error naming the reason.
        """
        try:
            return await translate_payload(payload, self.languages, self._call_engine)
        except TranslationError as exc:
            return http_response(exc)

    async def _call_engine(self, pieces: list[Piece]) -> list[PieceResult]:
        for attempt in range(1, ENGINE_CALL_ATTEMPTS + 1):
            try:
                return await self.gate.call(lambda: self.engine.to_async.translate(pieces))
            except aiohttp.ClientConnectionError as exc:
                # A dropped connection is either a stale one (the pool recycling it, see
                # bentoml-notes, or kept from before an engine restart: the engine answers its
                # probe, and translation is idempotent, so retry) or a dead engine.
                if attempt < ENGINE_CALL_ATTEMPTS and await self.gate.probe():
                    logger.warning("engine connection failed (%s); retrying", exc)
                    continue
                self.gate.mark_down(f"the translation engine is unreachable ({type(exc).__name__})")
                raise Unavailable(f"the translation engine is unreachable: {exc}") from exc
            except TimeoutError as exc:
                raise Unavailable("the translation engine did not answer in time") from exc
            except BentoMLException as exc:
                if exc.error_code == 503:
                    raise Unavailable("the translation engine is overloaded; retry later") from exc
                raise TranslationFailed(f"the translation engine failed: {exc}") from exc
        raise AssertionError("unreachable")


Translation.add_asgi_middleware(
    EdgeMiddleware, max_in_flight=SETTINGS.admission.per_worker(SETTINGS.api_service.get("workers", 1))
)

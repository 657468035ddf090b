"""M2M100 translation service: BentoML wiring only; the logic lives in the `translator` package.

Two services in one process tree: `Translation` (HTTP, several async workers) validates, splits
and reassembles; `TranslationEngine` (one worker) owns the model, and its batchable `translate`
merges the pieces of concurrent requests into shared `generate` calls.
"""

from __future__ import annotations

import functools
import logging
from typing import Annotated

import bentoml
from pydantic import Field

from translator.config import API_SERVICE, ENGINE_SERVICE, load_settings, model_tag
from translator.edge import EdgeMiddleware, languages_app
from translator.errors import TranslationError, TranslationFailed, Unavailable, http_response
from translator.pipeline import translate_payload
from translator.schemas import EXAMPLE_PAYLOAD, Payload, Piece, PieceResult, TranslationResult

with bentoml.importing():
    import aiohttp
    from bentoml.exceptions import BentoMLException

    from translator.engine import Translator

logger = logging.getLogger("translator.service")

SETTINGS = load_settings()
MODEL_TAG = model_tag()

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
        for attempt in (1, 2):
            try:
                return await self.engine.to_async.translate(pieces)
            except aiohttp.ClientConnectionError as exc:
                # The pool may drop a connection under us (see bentoml-notes); translation is
                # idempotent, so one retry is safe.
                if attempt == 2:
                    raise Unavailable(f"the translation engine is unreachable: {exc}") from exc
                logger.warning("engine connection failed (%s); retrying once", exc)
            except TimeoutError as exc:
                raise Unavailable("the translation engine did not answer in time") from exc
            except BentoMLException as exc:
                if exc.error_code == 503:
                    raise Unavailable("the translation engine is overloaded; retry later") from exc
                raise TranslationFailed(f"the translation engine failed: {exc}") from exc
        raise AssertionError("unreachable")


Translation.add_asgi_middleware(EdgeMiddleware)

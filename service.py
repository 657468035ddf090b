"""M2M100 translation service: BentoML wiring only; the logic lives in the `translator` package.

Two services in one process tree: `Translation` (HTTP, several async workers) validates, splits
and reassembles; `TranslationEngine` (one worker) owns the model and its scheduler, which merges
the pieces of concurrent requests into shared batches (translator/engine/scheduler.py).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import time
from typing import Annotated, Any

import bentoml
from pydantic import Field

from translator.api import client_errors
from translator.api.access import RouteTable
from translator.api.auth import api_keys, keys_problem, keys_required
from translator.api.disconnect import CallerGone
from translator.api.engine_channel import EngineChannel
from translator.api.engine_client import EngineClient
from translator.api.engine_gate import EngineGate
from translator.api.glossary_store import store_for
from translator.api.handler import RequestHandler
from translator.api.middleware import EdgeMiddleware
from translator.api.openapi import Docs
from translator.api.request_options import options_of
from translator.api.route_labels import install as label_metrics_by_route
from translator.api.routes import routes_app
from translator.config import API_SERVICE, ENGINE_SERVICE, load_settings, model_tag
from translator.contract.errors import ClientClosed, TranslationError, http_response
from translator.contract.language_codes import LanguageCodes, codes_of
from translator.contract.protocol import NEVER_READY, EngineRefusal, EngineReply, Piece, Priority
from translator.contract.schemas import EXAMPLE_PAYLOAD, Payload, TranslationResult
from translator.engine.admission import Refused
from translator.engine.cache import LocalCache, SharedCache, TranslationCache, namespace
from translator.engine.channel import ChannelServer
from translator.engine.scheduler import Scheduler, SchedulerSettings
from translator.loop_lag import LoopLagMonitor, prometheus_recorder, settle_heap
from translator.memory.memories import Memories
from translator.memory.store import store_for as memory_store_for
from translator.shm.engine_load import LoadPublisher, LoadReader
from translator.shm.engine_process import EngineProcess, announce_engine, channel_path, withdraw_engine
from translator.shm.in_flight import SharedInFlight, slots_for

with bentoml.importing():
    from translator.engine import batch_limits
    from translator.engine.metrics import (
        PrometheusCacheObserver,
        PrometheusObserver,
        record_batch_limits,
        record_calls_in_flight,
        record_latency_objective,
    )
    from translator.engine.translator import Translator

logger = logging.getLogger("translator.service")

# The engine process's exit after its model runner died (see `TranslationEngine._model_gone`).
MODEL_GONE_EXIT_S = 0.5
MODEL_GONE_EXIT_CODE = 70  # EX_SOFTWARE

# The engine's one clock: the scheduler's timers and predictions, and the batch calibration's timing.
ENGINE_CLOCK = time.monotonic

# Before BentoML builds this worker's app: its request metrics labelled by route template, not by
# raw path, so that unknown paths and document ids add no series (translator/api/route_labels.py).
label_metrics_by_route()

SETTINGS = load_settings()
MODEL_TAG = model_tag()


@functools.cache
def language_codes() -> LanguageCodes:
    # Recorded by save_model.py from the checkpoint's tokenizer: the API workers validate codes
    # without loading the tokenizer (or torch) themselves.
    return codes_of(dict(bentoml.models.get(MODEL_TAG).info.metadata))


def supported_languages() -> list[str]:
    return language_codes().listed


def model_codes() -> dict[str, str]:
    return language_codes().listed_to_model()


def accepted_codes() -> frozenset[str]:
    return language_codes().accepted


@bentoml.service(name=ENGINE_SERVICE, **SETTINGS.engine_service)
class TranslationEngine:
    model = bentoml.models.BentoModel(MODEL_TAG)

    def __init__(self) -> None:
        # First, so that the API workers watch this process from the moment it exists.
        self.announced = announce_engine()
        # The API workers' calls come on this socket, not over BentoML's HTTP (translator/contract/wire.py).
        self.channel = ChannelServer(channel_path(os.getpid()), self.translate, record_calls_in_flight)
        self.load = LoadPublisher()
        self.translator = Translator(self.model.path, SETTINGS.engine, SETTINGS.generation)
        # The file's, or the device's: 32 pieces on the CPU, measured on CUDA.
        self.limits = batch_limits.for_engine(
            self.translator, SETTINGS.batching.max_batch_size, SETTINGS.engine.max_batch_tokens, ENGINE_CLOCK
        )
        record_batch_limits(self.limits.max_batch_size, self.limits.max_batch_tokens)
        record_latency_objective(SETTINGS.batching.max_latency_ms / 1000)
        scheduling = SETTINGS.scheduling
        self.scheduler = Scheduler(
            self.translator.translate,
            self.translator.count_tokens,
            SchedulerSettings(
                max_batch_size=self.limits.max_batch_size,
                max_batch_tokens=self.limits.max_batch_tokens,
                beams=self.translator.num_beams,
                max_latency_s=SETTINGS.batching.max_latency_ms / 1000,
                linger_fraction=scheduling.linger_fraction,
                linger_max_fraction=scheduling.linger_max_fraction,
                linger_max_s=scheduling.linger_max_ms / 1000,
                group_window_batches=scheduling.group_window_batches,
                stall_factor=scheduling.stall_factor,
                stall_min_s=scheduling.stall_min_ms / 1000,
            ),
            PrometheusObserver(),
            clock=ENGINE_CLOCK,
            publish_forecast=self.load.publish,
            backend_failure=self._model_gone,
        )
        self.exiting = False
        self.calibrated = False
        self.loop_lag = LoopLagMonitor(prometheus_recorder("engine"))
        cache = SETTINGS.cache
        shared_url = cache.shared_url()
        self.cache = TranslationCache(
            namespace(str(bentoml.models.get(MODEL_TAG).tag), self.translator.describe_generation()),
            LocalCache(cache.size),
            SharedCache(shared_url, cache.ttl_s, cache.timeout_ms / 1000) if shared_url else None,
            PrometheusCacheObserver(),
            language=self.translator.codes.listed_code,
        )

    @bentoml.on_startup
    async def start_scheduler(self) -> None:
        self.loop_lag.start()
        self.scheduler.start()
        await self.channel.start()
        # Ready = the model loaded and real batches through the scheduler: they prove the path and
        # give the cost model its first measurements, so admission predicts from the start.
        for batch in self.translator.calibration_batches(self.limits.max_batch_size):
            try:
                results = await self.scheduler.submit(batch, expires=False)
            except Refused as exc:
                logger.error("engine warm-up refused (%s); %s", exc.message, NEVER_READY)
                return
            failed = [r.error for r in results if r.error is not None]
            if failed:
                # Never ready: the startup probe's budget runs out and Kubernetes restarts the pod.
                logger.error("engine warm-up batch failed (%s); %s", failed[0], NEVER_READY)
                return
        self.calibrated = True
        settle_heap()

    @bentoml.on_shutdown
    async def stop_scheduler(self) -> None:
        # An API worker's request waits for the engine no longer than its traffic timeout.
        await self.channel.drain(float(SETTINGS.api_service.get("traffic", {}).get("timeout", 60)))
        await self.channel.close()
        await self.scheduler.close()
        await asyncio.to_thread(self.translator.close)  # the model's runner process, where it has one
        await self.cache.close()
        await self.loop_lag.close()
        self.load.close()
        withdraw_engine(self.announced)

    def _model_gone(self) -> str | None:
        """Why the model cannot be asked any more (its runner process died), checked by the scheduler's
        watchdog. Then this process exits, as if it had died with it: outside a container the arbiter
        starts a new engine with a new runner, inside one the server exits and Kubernetes restarts the
        pod (the engine's death, tests/e2e/test_resilience.py). Half a second lets the refusals of the
        callers it was serving reach the API workers first."""
        failure = self.translator.failure
        if failure is not None and not self.exiting:
            self.exiting = True
            logger.error("the model is gone (%s): the engine process exits", failure)
            asyncio.get_running_loop().call_later(MODEL_GONE_EXIT_S, os._exit, MODEL_GONE_EXIT_CODE)
        return failure

    def __is_ready__(self) -> bool:
        # False again if the model loop dies or a batch is stuck (the scheduler's `failure`): the
        # API workers' gates close on it, and their /livez fails after `dead_after_s`.
        return self.calibrated and self.scheduler.failure is None

    async def translate(self, pieces: list[Piece], priority: Priority, timeout_s: float | None) -> EngineReply:
        """One request's pieces, as the channel brings them: cached translations from the cache, the
        rest through the scheduler, which merges them with other requests' pieces into batches.
        Cancelled when the caller goes away (the scheduler then drops its pieces still queued)."""
        try:
            results = await self.cache.translate(
                pieces, lambda misses: self.scheduler.submit(misses, priority, timeout_s)
            )
        except Refused as exc:
            refusal = EngineRefusal(reason=exc.reason, message=exc.message, retry_after_s=exc.retry_after_s)
            return EngineReply.model_construct(results=[], refused=refusal)
        return EngineReply.model_construct(results=results, refused=None)


# The current service is this worker's `Translation` (BentoML makes one per worker process).
ROUTES = routes_app(supported_languages, bentoml.get_current_service, model_codes, accepted_codes)


@bentoml.asgi_app(ROUTES, path="/")
@bentoml.service(name=API_SERVICE, **SETTINGS.api_service)
class Translation:
    engine = bentoml.depends(TranslationEngine)

    def __init__(self) -> None:
        keys_problem()  # logged at start, not only at the first probe
        # A client's mistake is one INFO line without its content, not BentoML's ERROR traceback.
        client_errors.install()
        self.languages = language_codes().accepted
        # The client's own timeout is set past the gate's: BentoML answers some timeouts with a
        # plain False, and the gate must see an engine that stopped answering as silent (its
        # waiting calls are abandoned), not as one that said "not ready" (they are left to finish).
        self.gate = EngineGate(
            lambda timeout: self.engine.is_ready(int(timeout) + 2), engine_exited=EngineProcess().exited
        )
        self.loop_lag = LoopLagMonitor(prometheus_recorder("api"))
        self.channel = EngineChannel()
        self.client = EngineClient(self.gate, self.channel.call)
        # Both APIs (this one and translator/api/libretranslate.py) translate through it.
        self.handler = RequestHandler(
            self.client,
            self.languages,
            SETTINGS.batching.max_latency_ms,
            ENGINE_LOAD,
            glossaries=store_for(SETTINGS.cache.shared_url()),  # #33: shared when the cache is
            memories=Memories(memory_store_for(SETTINGS.cache.shared_url())),  # #51: on the same store
            listed=supported_languages(),
            canonical=language_codes().listed_code,
        )

    @bentoml.on_startup
    async def watch_engine(self) -> None:
        self.gate.start()
        self.loop_lag.start()
        settle_heap()

    @bentoml.on_shutdown
    async def stop_watching(self) -> None:
        await self.gate.close()
        self.channel.close()
        await self.loop_lag.close()

    async def __is_ready__(self) -> bool:
        if keys_problem() is not None:
            return False  # API keys asked for but not given: never ready (translator/api/auth.py)
        # Answered from the gate (which asks the engine, bounded): BentoML's own dependency probe,
        # which runs only if this says yes, lets a refused connection escape as a 500 and waits
        # on a dead engine's socket.
        return await self.gate.ready()

    def __is_alive__(self) -> bool:
        # False only when the engine has stayed unreachable past the gate's limit: in a container
        # nothing respawns it, and restarting the pod is the way back.
        return self.gate.is_alive()

    @bentoml.api(route="/translation")
    async def translation(
        self,
        ctx: bentoml.Context,
        payload: Annotated[Payload, Field(examples=[EXAMPLE_PAYLOAD.model_dump(by_alias=True)])],
    ) -> TranslationResult:
        """Translate records from `fromLang` to `toLang`.

        Each record's text may hold several sentences and paragraphs; it is split into sentences,
        translated in batches shared with concurrent requests, and rejoined with its original
        whitespace. Every record comes back exactly once, in request order, with its id; or the
        request fails as a whole with a JSON error naming the reason.

        Optional headers: `Priority: u=5` or more marks bulk work (RFC 9218 urgency), which yields
        to interactive requests; `X-Deadline-Ms` says how long the caller will wait.
        """
        try:
            return await self.handler.translate(payload, options_of(ctx.request.headers, ctx.request.receive))
        except TranslationError as exc:
            return self._error(ctx, exc)
        except CallerGone:
            # Nobody will read it; the engine has dropped the pieces it had not started.
            return self._error(ctx, ClientClosed("the client closed the connection"))

    @staticmethod
    def _error(ctx: bentoml.Context, exc: TranslationError) -> Any:
        # With a `ctx` parameter BentoML overwrites the returned response's status with the
        # context's (tests/e2e/test_api.py pins this): set both.
        ctx.response.status_code = exc.status
        return http_response(exc)


# The engine's forecast of its queue, as each API worker reads it (translator/shm/engine_load.py):
# the middleware refuses what the engine would refuse before reading the body, sizing a request
# like the recent ones its handler sent.
ENGINE_LOAD = LoadReader()
# One admission slot per API worker the configuration starts (any number of workers).
ADMISSION = SharedInFlight(SETTINGS.admission.max_concurrency, slots=slots_for(SETTINGS.api_service.get("workers", 1)))
# Keys are read in each API worker (translator/api/auth.py), never on import: `bentoml build`
# imports this file where no Secret is mounted.
# The key is asked at every route (ours, and BentoML's `/translation`) not declared public
# (translator/api/access.py); an unknown path is a 404 to anyone.
Translation.add_asgi_middleware(
    EdgeMiddleware,
    admission=ADMISSION,
    keys=api_keys,
    engine_load=ENGINE_LOAD,
    routes=RouteTable(ROUTES.routes, own=["/translation"]),
    docs=Docs(ROUTES.routes, supported_languages, keys_required),
)

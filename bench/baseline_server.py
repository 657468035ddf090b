"""The per-request baseline: the design this service replaces, reduced to its essentials.

FastAPI on uvicorn with several worker processes; each worker loads its own model copy and calls
the model once per request, on that request's records only: no merging across requests. It runs
the same request path as the service (`translate_payload`: validation, sentence splitting,
rejoining) and the same `Translator` with the same settings file, so the only difference measured
is how requests reach the model.

Each worker runs one `translate` at a time (concurrent requests to one worker queue on a lock)
with torch threads = cores // workers, so the workers split the cores instead of fighting over
them. That is the kindest configuration for this design on a CPU; threads racing on one model
would only be slower.

    BENCH_MODEL_DIR=... BENCH_CONFIG=... BASELINE_WORKERS=2 BASELINE_STATS_DIR=... \
        uvicorn bench.baseline_server:app --workers 2 --port 9600

GET /stats sums over all workers (each writes its counters to BASELINE_STATS_DIR/<pid>.json):
ready workers, model calls and pieces given to the model.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool

from translator.api.pipeline import translate_payload
from translator.config import load_settings
from translator.contract.errors import TranslationError, http_response
from translator.contract.protocol import Piece, PieceResult
from translator.contract.schemas import Payload, TranslationResult

MODEL_ENV = "BENCH_MODEL_DIR"
CONFIG_ENV = "BENCH_CONFIG"
WORKERS_ENV = "BASELINE_WORKERS"
STATS_ENV = "BASELINE_STATS_DIR"


def cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


class Worker:
    def __init__(self) -> None:
        from translator.engine.translator import Translator

        settings = load_settings(Path(os.environ[CONFIG_ENV]))
        workers = int(os.environ.get(WORKERS_ENV, "1"))
        engine = dataclasses.replace(settings.engine, threads=max(1, cores() // workers), warmup=True)
        self.translator = Translator(os.environ[MODEL_ENV], engine, settings.generation)
        self.languages = frozenset(self.translator.languages)
        self.lock = asyncio.Lock()
        self.calls = 0
        self.pieces = 0
        stats_dir = os.environ.get(STATS_ENV)
        self.stats_file = Path(stats_dir) / f"{os.getpid()}.json" if stats_dir else None
        self.write_stats()

    async def translate(self, pieces: list[Piece]) -> list[PieceResult]:
        async with self.lock:
            results = await run_in_threadpool(self.translator.translate, pieces)
            self.calls += 1
            self.pieces += len(pieces)
            self.write_stats()
        return results

    def write_stats(self) -> None:
        if self.stats_file is None:
            return
        temporary = self.stats_file.with_suffix(".tmp")
        temporary.write_text(json.dumps({"ready": True, "calls": self.calls, "pieces": self.pieces}))
        temporary.replace(self.stats_file)


WORKER: Worker | None = None


@asynccontextmanager
async def lifespan(_: FastAPI) -> AsyncIterator[None]:
    global WORKER
    WORKER = Worker()
    yield


app = FastAPI(title="per-request baseline", lifespan=lifespan)


class Body(BaseModel):
    payload: Payload


@app.post("/translation", response_model=TranslationResult)
async def translation(body: Body) -> Any:
    assert WORKER is not None
    try:
        return await translate_payload(body.payload, WORKER.languages, WORKER.translate)
    except TranslationError as exc:
        return http_response(exc)


@app.get("/readyz")
async def readyz() -> dict[str, bool]:
    return {"ready": WORKER is not None}


@app.get("/stats")
async def stats() -> dict[str, int]:
    totals = {"ready_workers": 0, "calls": 0, "pieces": 0}
    stats_dir = os.environ.get(STATS_ENV)
    for path in Path(stats_dir).glob("*.json") if stats_dir else ():
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue  # being replaced right now
        totals["ready_workers"] += int(data.get("ready", False))
        totals["calls"] += data["calls"]
        totals["pieces"] += data["pieces"]
    return totals

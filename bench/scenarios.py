"""The service's scenarios beside the closed-loop grid (bench/README.md): mixed priorities,
overload, repeated text, a bulk job, and the LibreTranslate API beside the native one."""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import json
import logging
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator

import psutil

from bench import workload
from bench.points import Point, Setup, load_row
from bench.rows import Row
from bench.tokens import generated_tokens, outputs_path, write_outputs
from harness.load import Job, LoadResult, closed_loop, deepl_job, libretranslate_job, open_loop, run_load
from harness.metrics import samples
from harness.servers import Server

logger = logging.getLogger("bench")

# mixed-priority: 8 interactive one-record clients beside 32 bulk sixteen-record clients.
# overload: one-record requests sent open-loop at --overload-factor times the measured capacity.
# repeated: 32 one-record clients cycling over the corpus's sentences (after one pass, all cached).
# bulk: a corpus of one-sentence records in mixed pairs through `m2m-translate --url`, as a user runs it.
# libretranslate: Weblate-shaped clients on the LibreTranslate API beside the same load on POST /translation.
SCENARIOS = ("mixed-priority", "overload", "repeated", "bulk", "libretranslate", "deepl")
MIXED_INTERACTIVE, MIXED_BULK, MIXED_BULK_RECORDS = 8, 32, 16
TARGET_CLIENTS = 32
# The libretranslate scenario: Weblate sends lists of up to 20 texts, one request at a time per
# project being translated; a few projects at once.
WEBLATE_CLIENTS, WEBLATE_RECORDS = 4, 20
BULK_HEADERS = {"Priority": "u=7"}
# m2m-translate's defaults, which the bulk scenario runs with (m2m_tools/bulk.py).
BULK_CONCURRENCY, BULK_RECORDS_PER_REQUEST = 32, 8
BULK_MIN_RECORDS = 64


def run_mixed_priority(setup: Setup) -> list[dict]:
    """Interactive one-record clients beside bulk clients that alone would saturate the model."""
    url, args = setup.server.url, setup.args
    interactive = (r.job() for r in workload.requests(1, workload.EPOCH_INTERACTIVE))
    bulk = (
        dataclasses.replace(r.job(), headers=BULK_HEADERS)
        for r in workload.requests(MIXED_BULK_RECORDS, workload.EPOCH_BULK)
    )

    async def both(seconds: float) -> tuple[LoadResult, LoadResult]:
        return await asyncio.gather(
            closed_loop(url, interactive, MIXED_INTERACTIVE, seconds),
            closed_loop(url, bulk, MIXED_BULK, seconds),
        )

    if args.warmup > 0:
        asyncio.run(both(args.warmup))
    with Point(setup) as point:
        fast, slow = asyncio.run(both(args.duration))
    both_requests = fast.requests + slow.requests
    return [
        load_row(
            setup,
            point,
            fast,
            MIXED_INTERACTIVE,
            1,
            priority="interactive",
            scenario="mixed-priority",
            point_requests=both_requests,
        ),
        load_row(
            setup,
            point,
            slow,
            MIXED_BULK,
            MIXED_BULK_RECORDS,
            priority="bulk",
            scenario="mixed-priority",
            point_requests=both_requests,
        ),
    ]


def run_overload(setup: Setup, capacity: float) -> dict:
    """One-record requests at `overload_factor` x capacity (sentences/s), open loop."""
    rate = setup.args.overload_factor * capacity
    stream = (r.job() for r in workload.requests(1, workload.EPOCH_OVERLOAD))
    with Point(setup) as point:
        result = asyncio.run(open_loop(setup.server.url, stream, rate, setup.args.duration))
    row = load_row(setup, point, result, 0, 1, scenario="overload")
    row["offered_requests_per_s"] = rate
    return row


def run_repeated(setup: Setup) -> dict:
    server = setup.server
    stream = (r.job() for r in workload.repeated_requests())
    # One whole pass first, not measured: the point then measures repeats in steady state, not a
    # first pass still in progress (how far a timed warm-up got decided the result: 5.6 or 28.8
    # sentences/s in two runs).
    run_load(server.url, itertools.islice(stream, len(workload.corpus())), TARGET_CLIENTS)
    before = _cache_lookups(server)
    with Point(setup) as point:
        result = run_load(server.url, stream, TARGET_CLIENTS, setup.args.duration)
    hits, misses = (after - first for after, first in zip(_cache_lookups(server), before, strict=True))
    row = load_row(setup, point, result, TARGET_CLIENTS, 1, scenario="repeated")
    row["cache_hit_rate"] = hits / (hits + misses) if hits + misses else None
    return row


# A compatible API's scenario: how a native request is sent on it, and its epochs (ten from there).
COMPATIBLE = {
    "libretranslate": (libretranslate_job, workload.EPOCH_LIBRETRANSLATE),
    "deepl": (deepl_job, workload.EPOCH_DEEPL),
}


def run_libretranslate(setup: Setup, compatible: str = "libretranslate") -> list[dict]:
    """Weblate-shaped clients (lists of WEBLATE_RECORDS texts) on a compatible API (LibreTranslate's,
    or DeepL's with `compatible="deepl"`), and the same load on `POST /translation`: what the
    compatible path costs. Each API gets two halves of the time, in turn (native, compatible,
    native, compatible), so that a machine that slows down during the run does not favour one;
    each half draws texts of its own (no cache hits)."""
    url, args = setup.server.url, setup.args
    halves: dict[str, list[LoadResult]] = {"native": [], compatible: []}
    points: dict[str, list[Point]] = {"native": [], compatible: []}
    convert, first_epoch = COMPATIBLE[compatible]
    epochs = iter(range(first_epoch, first_epoch + 10))

    def jobs(api: str) -> Iterator[Job]:
        native = (r.job() for r in workload.requests(WEBLATE_RECORDS, next(epochs)))
        return native if api == "native" else (convert(j) for j in native)

    if args.warmup > 0:
        for api in halves:
            run_load(url, jobs(api), WEBLATE_CLIENTS, args.warmup / 2)
    for _ in range(2):
        for api in halves:
            stream = jobs(api)
            with Point(setup) as point:
                halves[api].append(run_load(url, stream, WEBLATE_CLIENTS, args.duration / 2))
            points[api].append(point)
    rows = []
    for api, results in halves.items():
        merged = LoadResult(results[0].started, [o for r in results for o in r.outcomes])
        # The API's half with the higher peak memory stands for both.
        point = max(points[api], key=lambda p: p.peak.pss_bytes)
        point.pieces, point.calls = sum(p.pieces for p in points[api]), sum(p.calls for p in points[api])
        point.cpu_s = sum(p.cpu_s for p in points[api])
        # Two halves with the other API's in between: the rate is over the time the halves took.
        row = load_row(
            setup,
            point,
            merged,
            WEBLATE_CLIENTS,
            WEBLATE_RECORDS,
            priority=api,
            scenario=compatible,
            seconds=sum(r.seconds for r in results),
        )
        rows.append(row)
    return rows


def _cache_lookups(server: Server) -> tuple[float, float]:
    """(hits, misses) of the engine's local cache so far."""
    lookups = samples(server.metrics(), "translation_cache_lookups_total")
    local = [(labels["result"], value) for labels, value in lookups if labels.get("level") == "local"]
    return sum(v for r, v in local if r == "hit"), sum(v for r, v in local if r == "miss")


def run_bulk(setup: Setup, capacity: float) -> dict:
    """A corpus through `m2m-translate --url`, the command a user runs, as a child process with its
    defaults (32 requests in flight, bulk priority): how close a real job gets to the offline limit.
    Sized to take about `--duration` at `capacity`; a fresh job (no checkpoint) every run."""
    server, log_dir = setup.server, setup.log_dir
    records = max(BULK_MIN_RECORDS, round(capacity * setup.args.duration))
    stream = workload.requests(1, workload.EPOCH_BULK_JOB)
    lines = [next(stream) for _ in range(records)]
    corpus = log_dir / "bulk-input.jsonl"
    with corpus.open("w", encoding="utf-8") as out:
        for n, request in enumerate(lines):
            record = {"id": f"r{n}", "text": request.texts[0], "fromLang": request.source, "toLang": request.target}
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    output = log_dir / "bulk-output.jsonl"
    for stale in (output, log_dir / "bulk-output.jsonl.rejects.jsonl"):
        stale.unlink(missing_ok=True)
    shutil.rmtree(log_dir / "bulk-output.jsonl.m2m-job", ignore_errors=True)
    command = [sys.executable, "-m", "m2m_tools.bulk", str(corpus), "--output", str(output)]
    command += ["--url", server.url, "--no-progress", "--system-name", f"bench-{time.time_ns()}"]
    logger.info("bulk: %d records through %s", records, shlex.join(command[1:]))
    children_before = psutil.Process().cpu_times()
    refused_before = _refused(server)
    with Point(setup) as point:
        started = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        seconds = time.perf_counter() - started
    children = psutil.Process().cpu_times()
    refused = _refused(server) - refused_before
    if done.returncode != 0:
        raise RuntimeError(f"m2m-translate exited with {done.returncode}: {done.stderr[-2000:]}")
    answers = [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()]
    # (With random weights most generated ids are outside the fixture tokenizer's vocabulary and
    # decode to "": the arithmetic is the real model's, the text is not; see bench/README.md.)
    if [a["id"] for a in answers] != [f"r{n}" for n in range(records)] or any(
        not isinstance(a.get("text"), str) for a in answers
    ):
        raise RuntimeError(f"m2m-translate's output in {output} does not account for every record in order")
    texts = [a["text"] for a in answers]
    tokens = generated_tokens(setup.tokenizer, texts, setup.settings.generation)
    write_outputs(
        outputs_path(log_dir, server.name, BULK_CONCURRENCY, BULK_RECORDS_PER_REQUEST, None, "bulk", "bulk"), texts
    )
    summary = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ""
    logger.info("bulk: %d sentences in %.1f s, %.2f sentences/s (%s)", records, seconds, records / seconds, summary)
    client_cpu = sum(children[2:4]) - sum(children_before[2:4]) + point.cpu_s
    return Row(
        system=server.name,
        concurrency=BULK_CONCURRENCY,
        records_per_request=BULK_RECORDS_PER_REQUEST,
        priority="bulk",
        scenario="bulk",
        # Requests the engine refused (503 + Retry-After) and m2m-translate sent again later.
        outcomes={"refused and retried": int(refused)},
        sentences=records,
        seconds=seconds,
        generated_tokens=tokens,
        mean_batch_size=point.pieces / point.calls if point.calls else None,
        model_calls=int(point.calls),
        memory=point.peak.as_row(),
        client_cpu_s=client_cpu,
        extra={"bulk_summary": summary},
    ).as_dict()


def _refused(server: Server) -> float:
    return sum(value for _, value in samples(server.metrics(), "translation_refused_requests_total"))

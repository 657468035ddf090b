"""What a translation memory costs (#51): in-process, the index's build time, resident memory and
lookup times (exact, substituted, fuzzy against 100,000 segments); on a live server, one-record
`POST /translation` on the cache path with a memory of 1,000,000 segments named, against the same
requests without one, in alternating windows of one run.

The segments are sentences of 4 to 20 words drawn from wordfreq's 20,000 most frequent English
words (Zipf-weighted, as text is), one in five with a number; fuzzy queries are stored sources
with one word dropped, replaced or misspelt (they must find their source) and fresh sentences (most
find nothing above the threshold). The server is the fixture model's with the repository's
configuration (cache on); its requests are the frontend benchmark's 64 one-record en->fr requests
(bench/frontend.py), each a sentence-cache hit after one checked pass, and none in the memory: the
memory's cost is its lookup on the way to the cache. The memory is written into the server's own
store (translator/memory/store.py, as another replica would) and loaded by a first request.

    python -m bench.translation_memory                 # ~6 min on 2 cores; bench/results/translation-memory.{json,md}
    python -m bench.translation_memory --segments 200000 --duration 5   # a quick look
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import gc
import itertools
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import psutil
import requests

from bench.environment import machine
from bench.frontend import CLIENTS, CpuMeter, checked_pass, lua_script, measured, requests_of, write_config
from bench.report import cell, write_page
from harness.servers import ROOT, register, start_server
from translator.memory.index import MemoryIndex
from translator.memory.model import MAX_SEGMENTS_PER_IMPORT, Segment, new_memory
from translator.memory.store import FileStore, decode_chunk, encode_chunk

THRESHOLD = 75


@functools.cache
def vocabulary(size: int = 20_000) -> tuple[list[str], list[float]]:
    from wordfreq import top_n_list, word_frequency

    words = [w for w in top_n_list("en", size) if w.isalpha()]
    return words, [word_frequency(w, "en") for w in words]


def sentences(count: int, seed: int) -> list[str]:
    words, weights = vocabulary()
    cumulative = list(itertools.accumulate(weights))  # once: choices() would sum 20,000 weights a call
    rng = random.Random(seed)
    out: dict[str, None] = {}
    while len(out) < count:
        chosen = rng.choices(words, cum_weights=cumulative, k=rng.randint(4, 20))
        if rng.random() < 0.2:
            chosen.insert(rng.randrange(len(chosen)), str(rng.randint(1, 5000)))
        text = " ".join(chosen)
        out[text[0].upper() + text[1:] + "."] = None
    return list(out)


def segments_of(sources: list[str]) -> list[Segment]:
    # A target of the same length and the same numbers (substitutable), in another word order.
    return [Segment(s, "fr", " ".join(reversed(s[:-1].split())) + ".") for s in sources]


def edited(source: str, rng: random.Random, words: list[str]) -> str:
    tokens = source[:-1].split()
    at = rng.randrange(len(tokens))
    kind = rng.choice(["drop", "swap", "typo"])
    if kind == "drop" and len(tokens) > 4:
        tokens.pop(at)
    elif kind == "swap":
        tokens[at] = rng.choice(words)
    else:
        tokens[at] = tokens[at][:-1] + ("x" if tokens[at][-1:] != "x" else "y")
    return " ".join(tokens) + "."


def rss() -> int:
    gc.collect()
    return psutil.Process().memory_info().rss


def in_process(count: int, seed: int = 1) -> dict[str, Any]:
    """One index of `count` segments: build, memory, and lookups of each kind."""
    sources = sentences(count, seed)
    stored = encode_chunk(segments_of(sources))  # as the store holds them: the index owns what it decodes
    before = rss()
    index = MemoryIndex("en")
    started = time.perf_counter()
    index.add(decode_chunk(stored))
    build_s = time.perf_counter() - started
    exact_rss = rss() - before
    rng = random.Random(seed + 1)
    words, _ = vocabulary()
    queries = rng.sample(sources, 2000)

    def timed(calls: Sequence[Any]) -> list[float]:
        out = []
        for call in calls:
            started = time.perf_counter()
            call()
            out.append((time.perf_counter() - started) * 1000)
        return out

    exact = timed([lambda q=q: index.lookup(q, "fr") for q in queries])
    misses = timed([lambda q=q: index.lookup(q + " Again", "fr") for q in queries])
    numbered = [s for s in sources if any(c.isdigit() for c in s)][:2000]
    renumbered = [" ".join("77" if t.isdigit() else t for t in s.split()) for s in numbered]
    substituted = timed([lambda q=q: index.lookup(q, "fr") for q in renumbered])
    found = sum(index.lookup(q, "fr") is not None for q in renumbered)
    started = time.perf_counter()
    index.fuzzy("warm the word index", "fr", THRESHOLD)
    fuzzy_build_s = time.perf_counter() - started
    fuzzy_rss = rss() - before
    near = [edited(q, rng, words) for q in queries[:1000]]
    fresh = sentences(1000, seed + 2)
    fuzzy_near = timed([lambda q=q: index.fuzzy(q, "fr", THRESHOLD) for q in near])
    fuzzy_fresh = timed([lambda q=q: index.fuzzy(q, "fr", THRESHOLD) for q in fresh])
    recalled = sum(
        any(m.source == s for m in index.fuzzy(q, "fr", THRESHOLD)) for q, s in zip(near, queries[:1000], strict=True)
    )
    return {
        "segments": count,
        "build_s": build_s,
        "rss_mib": exact_rss / 2**20,
        "fuzzy_index_build_s": fuzzy_build_s,
        "rss_with_fuzzy_mib": fuzzy_rss / 2**20,
        "exact_us": _stats(exact, 1000),
        "miss_us": _stats(misses, 1000),
        "substituted_us": _stats(substituted, 1000),
        "substituted_found": f"{found}/{len(renumbered)}",
        "fuzzy_near_ms": _stats(fuzzy_near),
        "fuzzy_fresh_ms": _stats(fuzzy_fresh),
        "fuzzy_recall": f"{recalled}/{len(near)}",
    }


def request_overhead(count: int, tmp: Path, requests_timed: int = 20_000) -> dict[str, Any]:
    """What naming a memory adds to one one-record request in an API worker, the memory's match and
    the answer's origin (translator/memory/requests.py), against the same request without one: the
    work the served windows below measure within their noise, here alone."""
    from translator.contract.schemas import Payload, Record, TranslatedRecord, TranslationResult
    from translator.memory.memories import Memories
    from translator.memory.requests import split_payload

    async def go() -> dict[str, Any]:
        memories = Memories(FileStore(tmp / "memories"), refresh_s=3600)
        info = await memories.create("bench", "en")
        await memories.add(info.memory_id, segments_of(sentences(count, 3)))
        await memories.index(info.memory_id)
        record = [Record(id="1", text="Where is the library?")]
        named = Payload(fromLang="en", toLang="fr", records=record, translationMemory=info.memory_id)
        plain = Payload(fromLang="en", toLang="fr", records=record)
        model = TranslationResult(result=[TranslatedRecord(id="1", text="Où est la bibliothèque ?")])
        timings = {}
        for name, payload in (("without", plain), ("with", named)):
            started = time.perf_counter()
            for _ in range(requests_timed):
                split = await split_payload(payload, memories, str)
                (split.merge(model) if split is not None else model).model_dump_json()
            timings[name] = (time.perf_counter() - started) / requests_timed * 1e6
        return {"segments": count, "without_us": timings["without"], "with_us": timings["with"]}

    return asyncio.run(go())


def _stats(values: list[float], scale: float = 1.0) -> dict[str, float]:
    values = sorted(v * scale for v in values)
    return {
        "p50": statistics.median(values),
        "p99": values[int(0.99 * (len(values) - 1))],
        "max": values[-1],
    }


def on_server(home: Path, tag: str, logs: Path, count: int, seconds: float, rounds: int) -> dict[str, Any]:
    config = write_config(logs / "memory.yaml", "cache")
    server = start_server(home, tag, logs / "memory.log", config)
    try:
        meter = CpuMeter(server)
        one = requests_of(1, 64, echo=False)
        checked_pass(server, one)
        shutil.rmtree(home / "memories", ignore_errors=True)  # the bench's own home: last run's memory
        store = FileStore(home / "memories")
        info = new_memory("bench", "en")
        asyncio.run(store.create(info))
        segments = segments_of(sentences(count, 3))
        for start in range(0, len(segments), MAX_SEGMENTS_PER_IMPORT):
            asyncio.run(store.append(info.memory_id, segments[start : start + MAX_SEGMENTS_PER_IMPORT]))
        del segments
        stored_bytes = sum(path.stat().st_size for path in (home / "memories" / info.memory_id).glob("chunk-*"))
        api = [p for p in psutil.Process(server.pid).children() if p not in meter.processes()[0]]
        rss_before = sum(p.memory_info().rss for p in api)
        with_memory = [{"payload": {**j.body["payload"], "translationMemory": info.memory_id}} for j in one]
        started = time.monotonic()
        # Every API worker loads the index on its first request naming the memory (connections spread
        # over the workers): a round of the checked requests, until each answers at once.
        for _ in range(20):
            t0 = time.monotonic()
            for body in with_memory[:8]:
                answered = requests.post(f"{server.url}/translation", json=body, timeout=600)
                answered.raise_for_status()
                assert answered.json()["result"][0]["origin"] == {"kind": "model"}, answered.text
            if time.monotonic() - t0 < 1.0:
                break
        load_s = time.monotonic() - started
        rss_after = sum(p.memory_info().rss for p in api)
        plain = lua_script(logs / "plain.lua", "/translation", [j.body for j in one])
        memory = lua_script(logs / "memory.lua", "/translation", with_memory)
        rows = []
        for round_ in range(rounds):  # alternating windows: the machine's drift falls on both
            for name, script in (("without a memory", plain), ("with a memory named", memory)):
                row = measured(server, meter, CLIENTS, seconds, "/translation", script, 1)
                rows.append({"load": name, "round": round_, **row})
        return {
            "rows": rows,
            "memory_segments": count,
            "index_load_s": load_s,
            "api_workers": len(api),
            "api_rss_growth_mib": (rss_after - rss_before) / 2**20,
            "stored_mib": stored_bytes / 2**20,
        }
    finally:
        server.stop()


def report(
    meta: dict[str, Any], memory: list[dict[str, Any]], overhead: dict[str, Any] | None, served: dict[str, Any] | None
) -> str:
    lines = [
        "# Translation memory: index, lookups, and its cost on the cache path",
        "",
        f"`{meta['command']}` at {meta['git']}, {meta['machine']['cpu']}, {meta['machine']['cores']} cores,"
        f" {meta['date']}.",
        "",
        "## In process (translator/memory/index.py)",
        "",
        "| segments | build s | RSS MiB | exact p50/p99 µs | miss p50 µs | substituted p50/p99 µs (found) |"
        f" fuzzy index build s | RSS with fuzzy MiB | fuzzy ≥{THRESHOLD} near p50/p99/max ms (recall) |"
        " fuzzy fresh p50/p99/max ms |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for m in memory:
        lines.append(
            f"| {m['segments']:,} | {m['build_s']:.1f} | {m['rss_mib']:.0f} |"
            f" {m['exact_us']['p50']:.1f}/{m['exact_us']['p99']:.1f} | {m['miss_us']['p50']:.1f} |"
            f" {m['substituted_us']['p50']:.1f}/{m['substituted_us']['p99']:.1f} ({m['substituted_found']}) |"
            f" {m['fuzzy_index_build_s']:.1f} | {m['rss_with_fuzzy_mib']:.0f} |"
            f" {m['fuzzy_near_ms']['p50']:.2f}/{m['fuzzy_near_ms']['p99']:.2f}/{m['fuzzy_near_ms']['max']:.2f}"
            f" ({m['fuzzy_recall']}) |"
            f" {m['fuzzy_fresh_ms']['p50']:.2f}/{m['fuzzy_fresh_ms']['p99']:.2f}/{m['fuzzy_fresh_ms']['max']:.2f} |"
        )
    if overhead is not None:
        added = overhead["with_us"] - overhead["without_us"]
        lines += [
            "",
            f"## What naming a memory of {overhead['segments']:,} segments adds to a one-record request",
            "",
            "In one process, the memory's match and the answer's origin (translator/memory/requests.py)"
            f" against the same request without a memory: {overhead['with_us']:.1f} µs against"
            f" {overhead['without_us']:.1f} µs, **{added:.1f} µs** more a request.",
        ]
        if served is not None:
            rows = served["rows"]
            api_ms = statistics.median(r["api_cpu_ms_per_request"] for r in rows if r["load"] == "without a memory")
            lines.append(
                f"The served windows' API workers spent {api_ms:.3f} ms of CPU a request without a memory (median):"
                f" the memory adds **{100 * added / 1000 / api_ms:.1f}%** of it."
            )
    if served is not None:
        rows = served["rows"]
        rates = {
            name: [r["requests_per_s"] for r in rows if r["load"] == name]
            for name in ("without a memory", "with a memory named")
        }
        ratio = statistics.median(rates["with a memory named"]) / statistics.median(rates["without a memory"])
        lines += [
            "",
            f"## One-record `POST /translation` on the cache path, a memory of {served['memory_segments']:,} segments",
            "",
            f"wrk -t1 -c{CLIENTS}, {meta['seconds']} s a window, windows alternating. The memory takes"
            f" {served['stored_mib']:.0f} MiB in the store (compressed chunks); its index loaded"
            f" in {served['index_load_s']:.1f} s; the {served['api_workers']} API workers' RSS grew by"
            f" {served['api_rss_growth_mib']:.0f} MiB (each worker holds its own index).",
            "",
            "| round | load | requests/s | API CPU ms/request | p50 ms | p99 ms | non-2xx |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in rows:
            lines.append(
                f"| {r['round']} | {r['load']} | {r['requests_per_s']:.0f} | {cell(r['api_cpu_ms_per_request'], 3)} |"
                f" {cell(r['p50_ms'], 1)} | {cell(r['p99_ms'], 1)} | {r['non_2xx'] + r['socket_errors']} |"
            )
        spread = max(rates["without a memory"]) / min(rates["without a memory"])
        lines += [
            "",
            f"With the memory named: **{ratio:.3f}×** the rate without (medians of the rounds). Windows of the"
            f" same load differ by up to {spread:.2f}× on this machine (wrk and both API workers share its cores),"
            " so this ratio cannot resolve a few percent; the added work itself is measured alone above.",
        ]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.translation_memory", description=__doc__.split("\n\n")[0])
    parser.add_argument("--index-sizes", default="100000,1000000", help="in-process index sizes")
    parser.add_argument("--segments", type=int, default=1_000_000, help="the served memory's segments (0: no server)")
    parser.add_argument("--duration", type=float, default=15.0, help="measured seconds per window")
    parser.add_argument("--rounds", type=int, default=3, help="windows of each load, alternating")
    parser.add_argument("--name", default="translation-memory")
    parser.add_argument("--output", type=Path, default=ROOT / "bench" / "results")
    parser.add_argument("--home", type=Path, default=ROOT / "build" / "bench-home-memory")
    parser.add_argument("--logs", type=Path, default=ROOT / "build" / "bench-logs" / "translation-memory")
    parser.add_argument("--model", type=Path, default=ROOT / "build" / "fixture-model")
    args = parser.parse_args(argv)
    sizes = [int(size) for size in args.index_sizes.split(",") if size]
    memory = [in_process(size) for size in sizes]
    shutil.rmtree(args.logs / "overhead", ignore_errors=True)
    overhead = request_overhead(max(sizes), args.logs / "overhead") if sizes else None
    served = None
    if args.segments:
        args.logs.mkdir(parents=True, exist_ok=True)
        tag = register(args.model, args.home)
        served = on_server(args.home, tag, args.logs, args.segments, args.duration, args.rounds)
    git = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout
    meta = {
        "command": "python -m bench.translation_memory " + " ".join(argv if argv is not None else sys.argv[1:]),
        "git": git.strip(),
        "machine": machine(),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "seconds": args.duration,
        "pid": os.getpid(),
    }
    page = {"meta": meta, "memory": memory, "overhead": overhead, "served": served}
    write_page(args.output, args.name, page, report(meta, memory, overhead, served))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

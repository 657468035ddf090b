"""Soak: a long mixed load on one server, memory sampled throughout; does anything grow or get lost?

    python -m bench.soak                         # `make soak`: 15 min, the first 5 warm-up; every answer checked

The server is started exactly as `make serve` starts it. The load is closed-loop and mixed: one-
and sixteen-record requests, long multi-paragraph texts, every language pair of the fixture
corpus. With the fixture model (the default) every answer is compared with the corpus, so a lost,
duplicated, reordered or wrong record counts as a failure, not only a non-200.

Memory: the PSS of the server's whole process tree every `--sample-s` seconds. The first
`--warmup-minutes` are the warm-up (allocator pools, caches, metric series fill up); after that,
the verdict compares the last tenth of the run with the level at the end of the warm-up, and the
least-squares slope over the post-warm-up samples. Output: bench/results/soak-<name>.json and .md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import random
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import aiohttp
import psutil
import yaml

from bench import memory, servers
from fixture.build import build_fixture, load_corpus

ROOT = Path(__file__).resolve().parent.parent
# Growth allowed beyond the warm-up level before the soak fails: small, since a leak of even a few
# kilobytes per request adds up to this within minutes at these rates.
GROWTH_LIMIT_MB = 64.0


def workload(seed: int) -> list[tuple[dict, dict]]:
    """A deterministic shuffled mix of (request body, exact expected answer)."""
    rng = random.Random(seed)
    docs = []
    for doc in load_corpus():
        docs.append((doc["src_lang"], doc["tgt_lang"], doc["source"], doc["target"]))
        docs.append((doc["tgt_lang"], doc["src_lang"], doc["target"], doc["source"]))
    out: list[tuple[dict, dict]] = []
    for n in range(600):
        src, tgt, sources, targets = rng.choice(docs)
        same = [d for d in docs if d[:2] == (src, tgt)]
        kind = n % 6
        if kind < 3:  # one sentence, one record
            i = rng.randrange(len(sources))
            records = [(sources[i], targets[i])]
        elif kind < 5:  # sixteen records
            records = []
            for _ in range(16):
                _, _, s, t = rng.choice(same)
                i = rng.randrange(len(s))
                records.append((s[i], t[i]))
        else:  # long texts: whole documents as paragraphs
            chosen = [rng.choice(same) for _ in range(3)]
            records = [
                ("\n\n".join(" ".join(d[2]) for d in chosen), "\n\n".join(" ".join(d[3]) for d in chosen)),
                (" ".join(chosen[0][2]), " ".join(chosen[0][3])),
            ]
        body = {
            "payload": {
                "fromLang": src,
                "toLang": tgt,
                "records": [{"id": f"{n}-{k}", "text": s} for k, (s, _) in enumerate(records)],
            }
        }
        expected = {"result": [{"id": f"{n}-{k}", "text": t} for k, (_, t) in enumerate(records)]}
        out.append((body, expected))
    return out


class Tally:
    def __init__(self) -> None:
        self.statuses: Counter[str] = Counter()
        self.latencies: list[float] = []
        self.records = 0
        self.examples: list[str] = []

    def add(self, outcome: str, seconds: float, records: int, detail: str = "") -> None:
        self.statuses[outcome] += 1
        self.latencies.append(seconds)
        if outcome == "ok":
            self.records += records
        elif len(self.examples) < 5:
            self.examples.append(f"{outcome}: {detail[:300]}")


async def load(url: str, items: list[tuple[dict, dict]], concurrency: int, until: float, tally: Tally, check: bool):
    timeout = aiohttp.ClientTimeout(total=600)
    counter = iter(range(10**12))
    async with aiohttp.ClientSession(timeout=timeout, connector=aiohttp.TCPConnector(limit=0)) as session:

        async def user() -> None:
            while time.monotonic() < until:
                body, expected = items[next(counter) % len(items)]
                started = time.monotonic()
                try:
                    async with session.post(f"{url}/translation", json=body) as response:
                        text = await response.text()
                        status = response.status
                except (aiohttp.ClientError, TimeoutError) as exc:
                    tally.add("transport", time.monotonic() - started, 0, repr(exc))
                    continue
                seconds = time.monotonic() - started
                if status != 200:
                    tally.add(f"http_{status}", seconds, 0, text)
                    continue
                data = json.loads(text)
                ids = [r["id"] for r in data.get("result", [])]
                if ids != [r["id"] for r in expected["result"]]:
                    tally.add("ids_wrong", seconds, 0, text)
                elif check and data != expected:
                    tally.add("text_wrong", seconds, 0, text)
                else:
                    tally.add("ok", seconds, len(ids))

        await asyncio.gather(*(user() for _ in range(concurrency)))


def tree_pss_mb(root: int) -> float:
    return sum(memory.pss_bytes(p.pid) or 0 for p in memory.tree(root)) / 2**20


def role(process: psutil.Process) -> str:
    try:
        command = " ".join(process.cmdline())
    except psutil.Error:
        return "gone"
    if "--service-name TranslationEngine" in command:
        return "engine"
    if "--service-name Translation" in command:
        return "api"
    return "arbiter"


def pss_by_role_mb(root: int) -> dict[str, float]:
    """Where the memory is: the engine, the API workers (summed), the arbiter and the rest."""
    out: dict[str, float] = {}
    for process in memory.tree(root):
        name = role(process)
        out[name] = out.get(name, 0.0) + (memory.pss_bytes(process.pid) or 0) / 2**20
    return {k: round(v, 1) for k, v in sorted(out.items())}


def slope_mb_per_min(samples: list[tuple[float, float]]) -> float:
    if len(samples) < 3:
        return 0.0
    xs = [t / 60 for t, _ in samples]
    ys = [m for _, m in samples]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    var = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / var if var else 0.0


def growth_by_role(by_role: list[tuple[float, dict[str, float]]], warm_s: float) -> dict[str, float]:
    after = [(t, parts) for t, parts in by_role if t >= warm_s] or by_role
    if not after:
        return {}
    end = by_role[-1][0]
    tail = [parts for t, parts in by_role if t >= end * 0.9]
    roles = sorted(set(after[0][1]) | {k for parts in tail for k in parts})
    return {
        name: round(statistics.fmean(p.get(name, 0.0) for p in tail) - after[0][1].get(name, 0.0), 1) for name in roles
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    # Measured (bench/results/soak-fixture-10min.json): at 32 clients the API workers' memory climbs
    # for ~5 minutes (pools and caches filling) and is flat after; the engine's after ~1 minute.
    parser.add_argument("--minutes", type=float, default=15.0)
    parser.add_argument("--warmup-minutes", type=float, default=5.0)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--sample-s", type=float, default=5.0)
    parser.add_argument("--model-id", help="checkpoint (hub id or directory); default: the fixture, answers checked")
    parser.add_argument("--name", default="fixture")
    parser.add_argument("--output", type=Path, default=ROOT / "bench" / "results")
    args = parser.parse_args(argv)

    work = ROOT / "build" / "soak"
    home = work / "bentoml-home"
    home.mkdir(parents=True, exist_ok=True)
    check = args.model_id is None
    model = args.model_id or str(build_fixture(ROOT / "build" / "fixture-model"))
    tag = servers.register(model, home)
    config = work / "bentoconfiguration.yaml"
    config.write_text(yaml.safe_dump(yaml.safe_load((ROOT / "bentoconfiguration.yaml").read_text())))
    server = servers.start_service(home, tag, config, work / "logs")
    sys.stdout.write(f"soak: {tag} at {server.url}, {args.minutes} min at concurrency {args.concurrency}\n")
    sys.stdout.flush()

    samples: list[tuple[float, float]] = []
    by_role: list[tuple[float, dict[str, float]]] = []
    tally = Tally()
    started = time.monotonic()
    until = started + args.minutes * 60
    stop = threading.Event()

    def sampler() -> None:
        while not stop.is_set():
            now = time.monotonic() - started
            parts = pss_by_role_mb(server.pid)
            samples.append((now, sum(parts.values())))
            by_role.append((now, parts))
            stop.wait(args.sample_s)

    thread = threading.Thread(target=sampler, daemon=True)
    thread.start()
    try:
        asyncio.run(load(server.url, workload(1), args.concurrency, until, tally, check))
    finally:
        stop.set()
        thread.join(10)
        samples.append((time.monotonic() - started, tree_pss_mb(server.pid)))
        processes = len(memory.tree(server.pid))
        code = server.stop()

    warm_s = args.warmup_minutes * 60
    after = [s for s in samples if s[0] >= warm_s] or samples
    baseline_mb = after[0][1]
    tail = [m for t, m in samples if t >= samples[-1][0] * 0.9]
    growth_mb = statistics.fmean(tail) - baseline_mb
    lost = sum(n for outcome, n in tally.statuses.items() if outcome != "ok")
    result: dict[str, Any] = {
        "name": args.name,
        "model": model,
        "minutes": round((samples[-1][0]) / 60, 2),
        "concurrency": args.concurrency,
        "requests": sum(tally.statuses.values()),
        "records_answered": tally.records,
        "outcomes": dict(tally.statuses),
        "failed_requests": lost,
        "failure_examples": tally.examples,
        "p50_s": round(statistics.median(tally.latencies), 3) if tally.latencies else None,
        "p99_s": round(sorted(tally.latencies)[int(0.99 * (len(tally.latencies) - 1))], 3) if tally.latencies else None,
        "pss_mb_end_of_warmup": round(baseline_mb, 1),
        "pss_mb_peak": round(max(m for _, m in samples), 1),
        "pss_mb_last_tenth": round(statistics.fmean(tail), 1),
        "growth_mb": round(growth_mb, 1),
        "slope_mb_per_min_after_warmup": round(slope_mb_per_min(after), 2),
        "growth_limit_mb": GROWTH_LIMIT_MB,
        "server_processes": processes,
        "server_exit_code": code,
        "samples": [(round(t, 1), round(m, 1)) for t, m in samples],
        # Per process role, so that growth can be traced to the engine or the API workers.
        "samples_by_role": [(round(t, 1), parts) for t, parts in by_role],
        "growth_mb_by_role": growth_by_role(by_role, warm_s),
        "machine": f"{platform.processor() or platform.machine()}, {psutil.cpu_count()} cores, "
        f"{psutil.virtual_memory().total / 2**30:.0f} GiB",
        "commit": subprocess.run(
            ["git", "describe", "--always", "--dirty"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip(),
        "command": " ".join([Path(sys.executable).name, "-m", "bench.soak", *(argv or sys.argv[1:])]),
    }
    passed = lost == 0 and growth_mb <= GROWTH_LIMIT_MB
    result["verdict"] = "pass" if passed else "fail"
    args.output.mkdir(parents=True, exist_ok=True)
    (args.output / f"soak-{args.name}.json").write_text(json.dumps(result, indent=2) + "\n")
    (args.output / f"soak-{args.name}.md").write_text(markdown(result))
    sys.stdout.write(markdown(result))
    return 0 if passed else 1


def markdown(r: dict[str, Any]) -> str:
    return (
        f"# Soak `{r['name']}`: {r['verdict']}\n\n"
        f"`{r['command']}` at commit {r['commit']}, on {r['machine']}.\n\n"
        "| minutes | concurrency | requests | records | failed | p50 s | p99 s "
        "| PSS end of warm-up MB | PSS last tenth MB | growth MB | slope MB/min | peak MB |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|\n"
        f"| {r['minutes']} | {r['concurrency']} | {r['requests']} | {r['records_answered']} | {r['failed_requests']} "
        f"| {r['p50_s']} | {r['p99_s']} | {r['pss_mb_end_of_warmup']} | {r['pss_mb_last_tenth']} "
        f"| {r['growth_mb']} | {r['slope_mb_per_min_after_warmup']} | {r['pss_mb_peak']} |\n\n"
        f"Outcomes: {r['outcomes']}. Growth limit: {r['growth_limit_mb']} MB over the warm-up level.\n"
        f"Growth by process (MB): {r['growth_mb_by_role']}.\n"
    )


if __name__ == "__main__":
    sys.exit(main())

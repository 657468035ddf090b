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
import itertools
import json
import platform
import random
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psutil
import yaml

from bench import memory
from fixture.build import build_fixture
from harness.corpus import corpus_documents
from harness.load import Job, job, run_load
from harness.servers import register, start_server

ROOT = Path(__file__).resolve().parent.parent
# Growth allowed beyond the warm-up level before the soak fails: small, since a leak of even a few
# kilobytes per request adds up to this within minutes at these rates.
GROWTH_LIMIT_MB = 64.0


def workload(seed: int, check: bool) -> list[Job]:
    """A deterministic shuffled mix of requests, each with its exact expected answer when `check`."""
    rng = random.Random(seed)
    docs = corpus_documents()
    out: list[Job] = []
    for n in range(600):
        doc = rng.choice(docs)
        same = [d for d in docs if d.pair == doc.pair]
        kind = n % 6
        if kind < 3:  # one sentence, one record
            i = rng.randrange(len(doc.sources))
            records = [(doc.sources[i], doc.targets[i])]
        elif kind < 5:  # sixteen records
            records = []
            for _ in range(16):
                other = rng.choice(same)
                i = rng.randrange(len(other.sources))
                records.append((other.sources[i], other.targets[i]))
        else:  # long texts: whole documents as paragraphs
            chosen = [rng.choice(same) for _ in range(3)]
            records = [
                ("\n\n".join(" ".join(d.sources) for d in chosen), "\n\n".join(" ".join(d.targets) for d in chosen)),
                (" ".join(chosen[0].sources), " ".join(chosen[0].targets)),
            ]
        sources, targets = zip(*records, strict=True)
        out.append(job(doc.source_lang, doc.target_lang, sources, targets if check else None, prefix=f"{n}-"))
    return out


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
    tag = register(model, home)
    config = work / "bentoconfiguration.yaml"
    config.write_text(yaml.safe_dump(yaml.safe_load((ROOT / "bentoconfiguration.yaml").read_text())))
    server = start_server(home, tag, work / "logs" / "service.log", config)
    sys.stdout.write(f"soak: {tag} at {server.url}, {args.minutes} min at concurrency {args.concurrency}\n")
    sys.stdout.flush()

    samples: list[tuple[float, float]] = []
    by_role: list[tuple[float, dict[str, float]]] = []
    started = time.monotonic()
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
        load = run_load(server.url, itertools.cycle(workload(1, check)), args.concurrency, args.minutes * 60)
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
    lost = load.failed
    latencies = sorted(load.latencies_s)
    result: dict[str, Any] = {
        "name": args.name,
        "model": model,
        "minutes": round((samples[-1][0]) / 60, 2),
        "concurrency": args.concurrency,
        "requests": load.requests,
        "records_answered": load.sentences,
        "outcomes": dict(load.kinds),
        "failed_requests": lost,
        "failure_examples": [o.detail() for o in load.outcomes if not o.ok][:5],
        "p50_s": round(statistics.median(latencies), 3) if latencies else None,
        "p99_s": round(latencies[int(0.99 * (len(latencies) - 1))], 3) if latencies else None,
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

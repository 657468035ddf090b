"""The engines' own rates on the device, side by side (issue #38): eager transformers against the
compiled backend, greedy and beam, at batch sizes 1 to 2,048, one process per engine and decoding.

For each: the start-up (model load, compilation, a warm batch of every size: what a server pays
before it is ready), then per batch size sentences/s, seconds a batch, the GPU's busy fraction
(nvidia-smi, bench/environment.py), torch's peak memory, and where `--profile` names the size, the
CUDA kernels that took the most time (torch.profiler): what explains a batch of 1,024 taking 12
times a batch of 512. Same `Translator` the service runs, its runner in-process (nothing else
shares the interpreter here), one generate call per batch (no token budget split).

    python -m bench.engines                                   # the 418M, random weights (the GPU machine)
    python -m bench.engines --model build/fixture-model --batches 1,8 --seconds 0.5   # a look on a CPU

Writes <output>/<name>.json and .md.
"""

from __future__ import annotations

import argparse
import copy
import json
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from bench import checkpoint, workload
from bench.environment import GpuSampler, git_state, machine
from bench.report import cell, write_page
from harness.servers import ROOT
from translator.config import DEFAULT_CONFIG_PATH, ENGINE_SERVICE, load_settings
from translator.contract.protocol import Piece

ENGINES = ("transformers:bfloat16", "compiled:bfloat16")
BATCHES = (1, 64, 512, 1024, 2048)
PROFILED_KERNELS = 8


def write_config(path: Path, engine: str, beams: int, forced_new_tokens: int) -> Path:
    backend, _, dtype = engine.partition(":")
    config = copy.deepcopy(yaml.safe_load(DEFAULT_CONFIG_PATH.read_text(encoding="utf-8")))
    translation = config["services"][ENGINE_SERVICE].setdefault("translation", {})
    translation["engine"].update(backend=backend, dtype=dtype, runner="thread", max_batch_tokens=1 << 30)
    translation.setdefault("generation", {}).update(num_beams=beams, forced_new_tokens=forced_new_tokens or None)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"# bench/engines.py, {engine} beams {beams}\n" + yaml.safe_dump(config), encoding="utf-8")
    load_settings(path)
    return path


def measure(model_dir: Path, config: Path, batches: Sequence[int], seconds: float, profile: Sequence[int]) -> dict:
    """In this process: one engine, one decoding, every batch size."""
    import torch

    from translator.engine.translator import Translator

    settings = load_settings(config)
    cuda = torch.cuda.is_available()
    stream = workload.sentences()

    def batch(size: int) -> list[Piece]:
        return [Piece(text=text, source=src, target=tgt) for src, tgt, text in (next(stream) for _ in range(size))]

    started = time.perf_counter()
    translator = Translator(model_dir, settings.engine, settings.generation)
    loaded_s = time.perf_counter() - started
    for size in batches:  # what a server's start-up runs through before it is ready: compiles, graphs
        _check(translator.translate(batch(size)))
    startup_s = time.perf_counter() - started
    _count_calls(translator)
    rows = []
    for size in batches:
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        times: list[float] = []
        calls_before = _calls(translator)
        with GpuSampler() as gpu:
            began = time.perf_counter()
            while len(times) < 2 or time.perf_counter() - began < seconds:
                pieces = batch(size)
                t0 = time.perf_counter()
                _check(translator.translate(pieces))
                times.append(time.perf_counter() - t0)
        # More generate calls than batches: the engine split them (out of memory, halved).
        split = _calls(translator) - calls_before > len(times)
        row = {
            "batch": size,
            "sentences_per_s": size * len(times) / sum(times),
            "batch_s": sum(times) / len(times),
            "batches": len(times),
            "split": split,
            "memory_peak_mib": torch.cuda.max_memory_allocated() / 2**20 if cuda else None,
            **(gpu.summary() or {}),
        }
        if size in profile:
            row["top_kernels"] = _profile(translator, batch(size), cuda)
        rows.append(row)
    return {"loaded_s": loaded_s, "startup_s": startup_s, "described": translator.describe(), "rows": rows}


def _count_calls(translator: Any) -> None:
    """Count the backend's generate calls (`_calls`), to see a batch the engine had to split."""
    backend = translator.backend
    generate = backend.generate

    def counted(*args: Any, **kwargs: Any) -> Any:
        backend.generate_calls = getattr(backend, "generate_calls", 0) + 1
        return generate(*args, **kwargs)

    backend.generate = counted


def _calls(translator: Any) -> int:
    return int(getattr(translator.backend, "generate_calls", 0))


def _check(results: Sequence[Any]) -> None:
    failed = [r.error for r in results if r.error is not None]
    if failed:
        raise RuntimeError(f"translation failed: {failed[0]}")


def _profile(translator: Any, pieces: list[Piece], cuda: bool) -> list[dict[str, Any]]:
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=activities) as profiler:
        translator.translate(pieces)
    key = "device_time_total" if cuda else "cpu_time_total"
    events = sorted(profiler.key_averages(), key=lambda e: getattr(e, key, 0), reverse=True)
    return [
        {"name": e.key[:80], "calls": e.count, "ms": round(getattr(e, key, 0) / 1000, 2)}
        for e in events[:PROFILED_KERNELS]
    ]


def report(meta: dict[str, Any], runs: Sequence[dict[str, Any]]) -> str:
    lines = [
        "# The engines on the device: eager against compiled",
        "",
        f"`{meta['command']}` at {meta['git']['commit'][:10]}, {meta['machine']['device']} "
        f"({meta['machine']['cpu']}, {meta['machine']['cores']} cores), {meta['date']}. {meta['model']}, "
        f"{meta['forced_new_tokens']} forced tokens, {meta['seconds']} s a point. Loaded: the engine's start-up"
        " (model load, compilation, warm-up); (split): the engine cut the batch (out of memory).",
        "",
        "| engine | beams | loaded s | batch | sentences/s | s a batch | GPU busy | memory peak MiB |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for run in runs:
        if "error" in run:
            lines.append(f"| {run['engine']} | {run['beams']} | failed: {run['error'][:200]} | | | | | |")
            continue
        for row in run["rows"]:
            lines.append(
                f"| {run['engine']} | {run['beams']} | {run['loaded_s']:.1f} |"
                f" {row['batch']}{' (split)' if row.get('split') else ''} |"
                f" {row['sentences_per_s']:.1f} | {row['batch_s']:.3f} | {cell(row.get('gpu_busy'))} |"
                f" {cell(row.get('memory_peak_mib'), 0)} |"
            )
    profiled = [(run, row) for run in runs for row in run.get("rows", []) if "top_kernels" in row]
    for run, row in profiled:
        lines += ["", f"Top kernels, {run['engine']} beams {run['beams']} at batch {row['batch']}:", ""]
        lines += [f"- {k['ms']} ms, {k['calls']} calls: `{k['name']}`" for k in row["top_kernels"]]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.engines", description=__doc__.split("\n\n")[0])
    parser.add_argument("--engines", default=",".join(ENGINES), help="backend:dtype,...")
    parser.add_argument("--beams", default="1,5")
    parser.add_argument("--batches", default=",".join(map(str, BATCHES)))
    parser.add_argument(
        "--seconds", type=float, default=4.0, help="measured seconds per batch size (2 batches at least)"
    )
    parser.add_argument("--beam-max-batch", type=int, default=1024, help="beam runs stop at this batch size")
    parser.add_argument("--run-timeout", type=float, default=600.0, help="seconds for one engine and decoding")
    parser.add_argument("--profile", default="", help="batch sizes to profile (e.g. 512,1024)")
    parser.add_argument("--forced-new-tokens", type=int, default=16)
    parser.add_argument("--model", type=Path, help="a checkpoint directory (default: the 418M with random weights)")
    parser.add_argument("--name", default="engines")
    parser.add_argument("--output", type=Path, default=ROOT / "bench" / "results")
    parser.add_argument("--logs", type=Path, default=ROOT / "build" / "bench-logs" / "engines")
    parser.add_argument("--measure", nargs=2, metavar=("SPEC", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure:  # the child: one engine, one decoding
        spec = json.loads(Path(args.measure[0]).read_text())
        result = measure(Path(spec["model"]), Path(spec["config"]), spec["batches"], spec["seconds"], spec["profile"])
        Path(args.measure[1]).write_text(json.dumps(result))
        return 0
    model = args.model or checkpoint.ensure_random_418m()[0]
    batches = [int(b) for b in args.batches.split(",") if b]
    profile = [int(b) for b in args.profile.split(",") if b]
    args.logs.mkdir(parents=True, exist_ok=True)
    runs: list[dict[str, Any]] = []
    # Greedy for every engine first: what the service runs, so a run cut short still has it.
    for beams in (int(b) for b in args.beams.split(",") if b):
        for engine in (e for e in args.engines.split(",") if e):
            name = f"{engine.replace(':', '-')}-beams{beams}"
            sizes = batches if beams == 1 else [b for b in batches if b <= args.beam_max_batch]
            config = write_config(args.logs / f"{name}.yaml", engine, beams, args.forced_new_tokens)
            spec, out = args.logs / f"{name}.spec.json", args.logs / f"{name}.json"
            spec.write_text(
                json.dumps(
                    {
                        "model": str(model),
                        "config": str(config),
                        "batches": sizes,
                        "seconds": args.seconds,
                        "profile": profile,
                    }
                )
            )
            out.unlink(missing_ok=True)
            run: dict[str, Any] = {"engine": engine, "beams": beams}
            with (args.logs / f"{name}.log").open("w") as log:
                try:
                    done = subprocess.run(
                        [sys.executable, "-m", "bench.engines", "--measure", str(spec), str(out)],
                        cwd=ROOT,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        check=False,
                        timeout=args.run_timeout,
                    )
                    if done.returncode == 0 and out.exists():
                        run.update(json.loads(out.read_text()))
                    else:
                        run["error"] = (args.logs / f"{name}.log").read_text()[-2000:].replace("\n", " ")
                except subprocess.TimeoutExpired:
                    run["error"] = f"over its {args.run_timeout:.0f} s (start-up and every batch size)"
            runs.append(run)
            print(json.dumps({k: v for k, v in run.items() if k != "rows"}), flush=True)  # noqa: T201
    meta = {
        "command": "python -m bench.engines " + " ".join(argv if argv is not None else sys.argv[1:]),
        "git": git_state(),
        "machine": machine(),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "model": str(model),
        "seconds": args.seconds,
        "forced_new_tokens": args.forced_new_tokens,
    }
    write_page(args.output, args.name, {"meta": meta, "runs": runs}, report(meta, runs))
    return 0 if all("error" not in run for run in runs) else 1


if __name__ == "__main__":
    raise SystemExit(main())

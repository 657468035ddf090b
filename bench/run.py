"""`python -m bench`: measure the offline limit, the service and the per-request baseline in one run.

    python -m bench                      # full run: random-weight m2m100_418M, ~40 min on 2 CPU cores
    python -m bench --smoke              # fixture model, a few seconds per point (the test suite runs it)
    python -m bench --model-id ./m2m100_418M --name real-418m

Writes <output>/<name>.json, .md, -throughput.png and -p99.png; server logs go to
build/bench-logs/<name>/. See bench/README.md.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import hashlib
import logging
import shlex
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from bench import checkpoint, report, servers, workload
from bench.environment import git_state, machine
from bench.memory import MemorySampler
from bench.points import Setup, run_offline, run_point
from bench.scenarios import (
    SCENARIOS,
    run_bulk,
    run_libretranslate,
    run_mixed_priority,
    run_overload,
    run_repeated,
)
from bench.tokens import tokens_exact
from harness.servers import Server, register, start_server
from translator.config import (
    API_SERVICE,
    DEFAULT_CONFIG_PATH,
    ENGINE_SERVICE,
    Engine,
    Settings,
    load_settings,
    with_engine,
)
from translator.engine.backends import choose, is_converted
from translator.engine.backends.ctranslate2_convert import convert, converted_path
from translator.engine.batch_limits import CPU_MAX_BATCH_SIZE
from translator.store import ctranslate2_unavailable

logger = logging.getLogger("bench")

ROOT = Path(__file__).resolve().parent.parent
LOG_ROOT = ROOT / "build" / "bench-logs"
DEFAULT_HOME = ROOT / "build" / "bench-home"


def _ints(text: str) -> list[int]:
    values = [int(part) for part in text.split(",") if part.strip()]
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers separated by commas, got {text!r}")
    return values


def _systems(text: str) -> list[str]:
    names = [part.strip() for part in text.split(",") if part.strip()]
    unknown = sorted(set(names) - set(report.SYSTEMS))
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"systems are {', '.join(report.SYSTEMS)}; got {text!r}")
    return [name for name in report.SYSTEMS if name in names]


def _scenarios(text: str) -> list[str]:
    names = [part.strip() for part in text.split(",") if part.strip()]
    unknown = sorted(set(names) - set(SCENARIOS))
    if unknown:
        raise argparse.ArgumentTypeError(f"scenarios are {', '.join(SCENARIOS)}; got {text!r}")
    return names


def _engines(text: str) -> list[tuple[str, str]]:
    engines = []
    for item in text.split(","):
        try:
            engine = with_engine(Engine(), item)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"--engines {item!r}: {exc}") from exc
        engines.append((engine.backend, engine.dtype))
    return engines


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="fixture model, short points: checks the harness")
    parser.add_argument("--model-id", help="real checkpoint (hub id or local directory) instead of random weights")
    parser.add_argument(
        "--architecture",
        choices=sorted(checkpoint.ARCHITECTURES),
        default=checkpoint.DEFAULT_ARCHITECTURE,
        help="the random-weight model's architecture (default: %(default)s)",
    )
    parser.add_argument("--systems", type=_systems, default=list(report.SYSTEMS), help="offline,service,baseline")
    parser.add_argument("--concurrency", type=_ints, help="closed-loop clients per point (default 1,8,32,64)")
    parser.add_argument("--records", type=_ints, help="records per request (default 1,16)")
    parser.add_argument("--duration", type=float, help="measured seconds per point (default 60; smoke 2)")
    parser.add_argument("--warmup", type=float, help="unmeasured seconds before each point (default 10; smoke 0.5)")
    parser.add_argument("--forced-new-tokens", type=int, default=16, help="tokens per output; 0: the model decides")
    parser.add_argument("--beams", type=int, default=1, help="beam width (default 1: greedy)")
    parser.add_argument(
        "--engines",
        type=_engines,
        help="engines to compare, each measured on every system: backend:dtype,... e.g. "
        "transformers:float32,ctranslate2:int8; the first is the reference of the cross-engine targets "
        "(default: bentoconfiguration.yaml's engine)",
    )
    parser.add_argument("--baseline-workers", type=int, help="uvicorn workers of the baseline (default 2; smoke 1)")
    parser.add_argument("--offline-batch-sizes", type=_ints, help="default: 1 and the service's max_batch_size")
    parser.add_argument(
        "--scenarios",
        type=_scenarios,
        default=[],
        help=f"extra service points: {', '.join(SCENARIOS)} (bench/README.md)",
    )
    parser.add_argument("--scenarios-only", action="store_true", help="skip the closed-loop grid; scenarios only")
    parser.add_argument("--max-latency-ms", type=int, help="the service's batching.max_latency_ms for this run")
    parser.add_argument("--max-concurrency", type=int, help="the API's admission.max_concurrency (clients beyond 256)")
    parser.add_argument(
        "--max-batch-size",
        type=int,
        default=CPU_MAX_BATCH_SIZE,
        help="the service's batching.max_batch_size, and the offline full batch (default: %(default)s, the CPU's)",
    )
    parser.add_argument(
        "--runner",
        choices=("auto", "thread", "process"),
        help="where generate runs (engine.runner; default: the file's)",
    )
    parser.add_argument("--linger-max-ms", type=float, help="the service's scheduling.linger_max_ms for this run")
    parser.add_argument("--overload-factor", type=float, default=4.0, help="overload: offered load / capacity")
    parser.add_argument("--name", help="result file name (default: cpu, cuda or smoke)")
    parser.add_argument("--output", type=Path, default=ROOT / "bench" / "results", help="directory for results")
    parser.add_argument("--home", type=Path, default=DEFAULT_HOME, help="private BENTOML_HOME for the service")
    parser.add_argument("--logs", type=Path, help="server logs and the written config (default build/bench-logs/NAME)")
    args = parser.parse_args(argv)
    smoke = args.smoke
    args.concurrency = args.concurrency or ([1, 4] if smoke else [1, 8, 32, 64])
    args.records = args.records or [1, 16]
    args.duration = args.duration if args.duration is not None else (2.0 if smoke else 60.0)
    args.warmup = args.warmup if args.warmup is not None else (0.5 if smoke else 10.0)
    args.baseline_workers = args.baseline_workers or (1 if smoke else 2)
    if args.forced_new_tokens < 0 or args.beams < 1 or args.baseline_workers < 1:
        parser.error("--forced-new-tokens must be >= 0, --beams and --baseline-workers >= 1")
    return args


# --------------------------------------------------------------------------- set-up


def bench_config(
    path: Path,
    beams: int,
    forced_new_tokens: int | None,
    max_latency_ms: int | None = None,
    linger_max_ms: float | None = None,
    backend: str | None = None,
    dtype: str | None = None,
    max_batch_size: int = CPU_MAX_BATCH_SIZE,
    max_concurrency: int | None = None,
    runner: str | None = None,
) -> Settings:
    """The repository's configuration with the benchmark's generation settings; BentoML validates
    the file against its v1 schema, so only `services:` is at the top level."""
    raw = yaml.safe_load(DEFAULT_CONFIG_PATH.read_text(encoding="utf-8"))
    config = copy.deepcopy(raw)
    generation = config["services"][ENGINE_SERVICE].setdefault("translation", {}).setdefault("generation", {})
    generation["num_beams"] = beams
    generation["forced_new_tokens"] = forced_new_tokens
    # Explicit, so the offline rows and the service's batches are the same size on any device (the
    # service would otherwise measure its own on CUDA).
    config["services"][ENGINE_SERVICE]["batching"]["max_batch_size"] = max_batch_size
    if max_latency_ms is not None:
        config["services"][ENGINE_SERVICE]["batching"]["max_latency_ms"] = max_latency_ms
    if max_concurrency is not None:
        config["services"][API_SERVICE]["translation"]["admission"]["max_concurrency"] = max_concurrency
    if linger_max_ms is not None:
        config["services"][ENGINE_SERVICE]["translation"]["scheduling"]["linger_max_ms"] = linger_max_ms
    engine = config["services"][ENGINE_SERVICE]["translation"].setdefault("engine", {})
    if backend is not None:
        engine["backend"] = backend
    if dtype is not None:
        engine["dtype"] = dtype
    if runner is not None:
        engine["runner"] = runner
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "# Written by `python -m bench` from bentoconfiguration.yaml: only generation settings "
        "(and max_batch_size, max_concurrency, max_latency_ms, linger_max_ms, backend, dtype, runner, if given) "
        "differ.\n" + yaml.safe_dump(config, sort_keys=False),
        encoding="utf-8",
    )
    settings = load_settings(path)
    if set(config) != {"services"} or API_SERVICE not in config["services"]:
        raise RuntimeError(f"{path}: unexpected configuration layout")
    return settings


def resolve_model(args: argparse.Namespace) -> tuple[Path, str, dict[str, Any]]:
    """(directory, model id for save_model.py, description for the report)."""
    info: dict[str, Any]
    if args.model_id:
        from translator.store import resolve

        source = resolve(args.model_id)
        # save_model.py gets the hub id (its store name comes from it) or the absolute directory.
        model_id = args.model_id if source.kind == "hub" else str(source.directory)
        info = {"description": f"{args.model_id} (real weights)", "directory": str(source.directory)}
        return source.directory, model_id, info
    if args.smoke:
        directory = checkpoint.fixture_model()
        info = {"description": "fixture model (tiny; smoke mode)", "directory": str(directory)}
        return directory, str(directory), info
    started = time.perf_counter()
    architecture = checkpoint.ARCHITECTURES[args.architecture]
    directory, build_s = checkpoint.ensure_random_418m(architecture=architecture.name)
    info = {
        "description": f"{architecture.name} architecture, random weights (seed {checkpoint.SEED}), fixture tokenizer",
        "directory": str(directory),
        "config": architecture.config,
        "checkpoint_build_s": round(build_s, 1) if build_s is not None else None,
        "checkpoint_reused": build_s is None,
        "checkpoint_check_s": round(time.perf_counter() - started, 1),
    }
    return directory, str(directory), info


def engine_label(settings: Settings) -> str:
    """`ctranslate2 int8`: the backend and precision this run's settings resolve to here."""
    backend, _, dtype = choose(settings.engine)
    return f"{backend} {dtype}"


# --------------------------------------------------------------------------- systems


def run_server_points(
    server: Server, args: argparse.Namespace, settings: Settings, tokenizer: Any, meta: dict, rows: list[dict]
) -> None:
    with MemorySampler(server.pid) as sampler:
        setup = Setup(server, sampler, args, settings, tokenizer, Path(meta["log_dir"]))
        idle = sampler.peak()
        meta.setdefault("idle_memory", {})[server.name] = idle.as_row()
        for records in [] if args.scenarios_only else args.records:
            for concurrency in args.concurrency:
                rows.append(run_point(setup, concurrency, records))
        if server.name != "service":
            return
        if "mixed-priority" in args.scenarios:
            rows.extend(run_mixed_priority(setup))
        if "repeated" in args.scenarios:
            rows.append(run_repeated(setup))
        if "libretranslate" in args.scenarios:
            rows.extend(run_libretranslate(setup))
        if "deepl" in args.scenarios:
            rows.extend(run_libretranslate(setup, "deepl"))
        if "bulk" in args.scenarios:
            rows.append(run_bulk(setup, _capacity(rows, settings)))
        if "overload" in args.scenarios:
            capacity = _capacity(rows, settings)
            meta["overload_capacity_sentences_per_s"] = capacity
            rows.append(run_overload(setup, capacity))


def _capacity(rows: Sequence[dict], settings: Settings) -> float:
    """Sentences/s the model can do: the offline limit at a full batch if it was measured, else the
    best closed loop of this run."""
    full = report.offline_full_batch(rows, settings.batching.max_batch_size)
    served = [r["sentences_per_s"] for r in rows if r["system"] == "service" and r["scenario"] is None]
    return float(full["sentences_per_s"]) if full else max(served, default=1.0)


# --------------------------------------------------------------------------- main


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    started = time.perf_counter()

    model_dir, model_id, model_info = resolve_model(args)
    mach = machine()
    name = args.name or ("smoke" if args.smoke else ("cuda" if mach.get("device") not in (None, "cpu") else "cpu"))
    log_dir = args.logs or LOG_ROOT / name
    log_dir.mkdir(parents=True, exist_ok=True)
    forced = args.forced_new_tokens or None
    # One settings file per engine; everything but the engine is the same for all of them.
    engines = args.engines or [(None, None)]
    configs: list[tuple[str, Path, Settings]] = []
    for backend, dtype in engines:
        where = log_dir if len(engines) == 1 else log_dir / f"{backend}-{dtype}"
        config_path = where / "bentoconfiguration.yaml"
        settings = bench_config(
            config_path,
            args.beams,
            forced,
            args.max_latency_ms,
            args.linger_max_ms,
            backend,
            dtype,
            args.max_batch_size,
            args.max_concurrency,
            args.runner,
        )
        configs.append((engine_label(settings), config_path, settings))
    labels = [label for label, _, _ in configs]
    if len(set(labels)) != len(labels):
        raise SystemExit(f"--engines resolves to the same engine twice here: {', '.join(labels)}")
    settings = configs[0][2]
    workload.check_one_piece_per_record()
    offline_batches = args.offline_batch_sizes or sorted({1, settings.batching.max_batch_size})
    tokenizer = None
    if not tokens_exact(settings.generation):
        from translator.engine.tokenization import ModelTokenizer

        tokenizer = ModelTokenizer(model_dir).tokenizer

    meta: dict[str, Any] = {
        "name": name,
        "command": "python -m bench " + shlex.join(argv),
        "smoke": args.smoke,
        "systems": args.systems,
        "concurrency": args.concurrency,
        "records": args.records,
        "scenarios": args.scenarios,
        "duration_s": args.duration,
        "warmup_s": args.warmup,
        "baseline_workers": args.baseline_workers,
        "offline_batch_sizes": offline_batches,
        "model": model_info,
        "machine": mach,
        "git": git_state(),
        "settings": {
            "batching": dataclasses.asdict(settings.batching),
            "generation": dataclasses.asdict(settings.generation),
            "scheduling": dataclasses.asdict(settings.scheduling),
        },
        # The engines in the order measured; the first is the reference of the cross-engine targets.
        "engine": labels,
        # Per engine: its settings file and what its systems reported (report.engine_meta).
        "engines": {},
        "tokens_exact": tokens_exact(settings.generation),
        "memory": "peak over each point of the sum over the process tree: PSS sampled every 1 s "
        "(report's ratio), RSS every 0.25 s (upper bound: shared pages counted per process)",
        "log_dir": str(log_dir),
    }
    rows: list[dict] = []
    try:
        for label, config_path, engine_settings in configs:
            logger.info("engine %s", label)
            engine_meta: dict[str, Any] = {
                "config_yaml": config_path.read_text(encoding="utf-8"),
                "settings": dataclasses.asdict(engine_settings.engine),
                "log_dir": str(config_path.parent),
                "offline_batch_sizes": offline_batches,
            }
            meta["engines"][label] = engine_meta
            engine_rows: list[dict] = []
            try:
                run_systems(
                    args, model_dir, model_id, config_path, engine_settings, tokenizer, engine_meta, engine_rows
                )
            finally:
                for row in engine_rows:
                    row["engine"] = label
                rows.extend(engine_rows)
    except BaseException as exc:
        # A long run that fails late still leaves its finished points on disk, marked incomplete.
        meta["incomplete"] = f"{type(exc).__name__}: {exc}"
        raise
    finally:
        meta["wall_s"] = round(time.perf_counter() - started, 1)
        if rows:
            write_results(args.output / name, meta, rows)
    return 0


def run_systems(
    args: argparse.Namespace,
    model_dir: Path,
    model_id: str,
    config_path: Path,
    settings: Settings,
    tokenizer: Any,
    meta: dict,
    rows: list[dict],
) -> None:
    """One engine's systems. Appends each point's row to `rows` as soon as it is measured."""
    log_dir = Path(meta["log_dir"])
    if choose(settings.engine)[0] == "ctranslate2" and ctranslate2_unavailable() is None:
        # The offline limit and the baseline read a checkpoint directory, not the store (where
        # save_model.py converts it for the service).
        model_dir = converted_twin(model_dir)
    if "offline" in args.systems:
        offline_batches = meta["offline_batch_sizes"]
        for batch_size in offline_batches:
            logger.info("offline limit, batch %d: %.0f s", batch_size, args.duration)
            row = run_offline(model_dir, config_path, batch_size, args.duration, log_dir)
            meta["offline_engine"] = row.pop("_engine")
            rows.append(row)
            logger.info(
                "offline batch %d: %.2f sentences/s, one batch %.3f s, peak PSS %s MiB",
                batch_size,
                row["sentences_per_s"],
                row["latency_p50_s"],
                row["peak_pss_mb"],
            )
        if settings.batching.max_batch_size in offline_batches:
            # Beside the limit: full batches cut from the stream unsorted, all that 32 one-record
            # clients leave the service to batch (the 0.9 target is against the sorted limit).
            batch_size = settings.batching.max_batch_size
            logger.info("offline, batch %d in arrival order: %.0f s", batch_size, args.duration)
            row = run_offline(model_dir, config_path, batch_size, args.duration, log_dir, order="arrival")
            row.pop("_engine")
            rows.append(row)
            logger.info("offline batch %d in arrival order: %.2f sentences/s", batch_size, row["sentences_per_s"])
        full = report.offline_full_batch(rows, settings.batching.max_batch_size)
        if full is not None:
            meta["one_model_process_pss_mb"] = full["peak_pss_mb"]
            meta["one_model_process_rss_mb"] = full["peak_rss_mb"]

    if "service" in args.systems:
        tag = register(model_id, args.home)
        meta["service_model_tag"] = tag
        logger.info("starting the service (%s)", tag)
        server = start_server(args.home, tag, log_dir / "service.log", config_path)
        try:
            run_server_points(server, args, settings, tokenizer, meta, rows)
        finally:
            meta["service_exit"] = server.stop()

    if "baseline" in args.systems:
        logger.info("starting the baseline (%d workers)", args.baseline_workers)
        server = servers.start_baseline(model_dir, config_path, args.baseline_workers, log_dir)
        try:
            run_server_points(server, args, settings, tokenizer, meta, rows)
        finally:
            meta["baseline_exit"] = server.stop()


def converted_twin(model_dir: Path) -> Path:
    """The checkpoint with its CTranslate2 conversion beside it, as the store keeps it: links to its
    files in a directory of the bench's own, converted once per checkpoint version, so the source
    directory (the shared test fixture, in smoke runs) is never written to."""
    if is_converted(model_dir):
        return model_dir
    files = sorted(path for path in model_dir.iterdir() if path.is_file())
    version = hashlib.sha256(
        "".join(f"{path.name}:{path.stat().st_size}:{path.stat().st_mtime_ns};" for path in files).encode()
    ).hexdigest()[:16]
    twin = ROOT / "build" / "bench-converted" / f"{model_dir.name}-{version}"
    if not is_converted(twin):
        logger.info("converting %s for CTranslate2 into %s", model_dir, twin)
        twin.mkdir(parents=True, exist_ok=True)
        for path in files:
            link = twin / path.name
            link.unlink(missing_ok=True)
            link.symlink_to(path.resolve())
        convert(model_dir, converted_path(twin))
    return twin


def write_results(prefix: Path, meta: dict, rows: list[dict]) -> None:
    checks = report.summary(rows, meta)
    prefix.parent.mkdir(parents=True, exist_ok=True)
    report.write_json(prefix.with_suffix(".json"), meta, rows, checks)
    report.write_markdown(prefix.with_suffix(".md"), meta, rows, checks)
    report.write_plots(prefix, rows, meta)
    logger.info("wrote %s.json, .md and plots (%.0f s in all)", prefix, meta["wall_s"])

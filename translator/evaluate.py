"""Score a translation system on a parallel test set, per direction, resumably; gate rollouts on it.

    python -m translator.evaluate --data translator/data/eval/flores --model build/fixture-model --output build/eval
    python -m translator.evaluate --data tests.jsonl --url http://localhost:9527 --output build/eval-new \\
        --concurrency 16 --records-per-request 8 --directions en-fr,fr-en
    python -m translator.evaluate compare build/eval-old/report.json build/eval-new/report.json --max-drop 1.0

A run translates every direction chunk by chunk (through the HTTP API with many requests in flight,
or in-process through the service's own pipeline), checkpoints each finished chunk under
``OUTPUT/checkpoints/``, scores each finished direction with sacreBLEU (BLEU and chrF, corpus
level) and writes ``report.json``, ``report.md`` and ``heatmap.png`` to OUTPUT. Killed, it resumes
where it stopped when run again with the same arguments; run again once finished, it only prints
the report. ``compare`` exits 1 when a direction dropped by more than ``--max-drop`` or is missing.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import logging
import sys
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from translator.evalbackend import Backend, BackendError, HttpBackend, LocalBackend, plan_requests
from translator.evalcheckpoint import CheckpointError, DirectionCheckpoint, Progress, digest, exclusive, lines_digest
from translator.evalcompare import compare_reports, render_comparison
from translator.evaldata import DataError, Direction, DirectionData, EvalData, load_eval_data
from translator.evalreport import (
    ReportError,
    build_report,
    direction_entry,
    load_report,
    render_markdown,
    write_outputs,
)
from translator.evalscore import AUTO, Scoring, score, tokenizers

# Named explicitly: run with `python -m`, __name__ is "__main__", outside the "translator" logger tree.
logger = logging.getLogger("translator.evaluate")

CHECKPOINT_DIR = "checkpoints"
T = TypeVar("T")

# Exit codes of the CLI.
EXIT_OK = 0
EXIT_REGRESSION = 1
EXIT_BAD_INPUT = 2
EXIT_SYSTEM_FAILED = 3
EXIT_INTERRUPTED = 130


@dataclass(frozen=True)
class RunOptions:
    chunk_size: int = 256
    records_per_request: int = 8
    scoring: Scoring = field(default_factory=Scoring)
    # None: progress bars only when stderr is a terminal (tqdm's rule).
    progress: bool | None = None
    extra_settings: dict[str, Any] = field(default_factory=dict)


@dataclass
class _DirectionJob:
    data: DirectionData
    checkpoint: DirectionCheckpoint
    score_key: str
    progress: Progress = field(default_factory=lambda: Progress({}, 0.0))
    result: dict[str, Any] | None = None

    @property
    def name(self) -> str:
        return self.data.direction.name

    def missing(self) -> list[int]:
        return self.progress.missing(len(self.data))


# --------------------------------------------------------------------------- the run


def evaluate(data: EvalData, backend: Backend, output: Path, options: RunOptions | None = None) -> dict[str, Any]:
    """Translate what the checkpoints lack, score, write the outputs; returns the report."""
    return asyncio.run(evaluate_async(data, backend, output, options or RunOptions()))


async def evaluate_async(data: EvalData, backend: Backend, output: Path, options: RunOptions) -> dict[str, Any]:
    if options.chunk_size < 1 or options.records_per_request < 1:
        raise DataError("--chunk-size and --records-per-request must be at least 1")
    with exclusive(output):
        return await _evaluate_locked(data, backend, output, options)


async def _evaluate_locked(data: EvalData, backend: Backend, output: Path, options: RunOptions) -> dict[str, Any]:
    jobs = [_job(direction, backend, output / CHECKPOINT_DIR, options) for direction in data.directions.values()]
    todo = [job for job in jobs if job.result is None]
    for job in todo:
        job.progress = job.checkpoint.load()
        _check_requests(job, options)
    to_translate = [job for job in todo if job.missing()]
    if not todo:
        logger.info("all %d directions already scored in %s; nothing to translate", len(jobs), output)
    if to_translate:
        await _translate_all(to_translate, jobs, backend, options)
    for job in todo:
        _finish(job, options)
    report = build_report(
        [job.result for job in jobs if job.result is not None],
        system={"label": backend.label, **backend.identity},
        data={"path": str(data.path), "format": data.format},
        settings={
            "chunk_size": options.chunk_size,
            "records_per_request": options.records_per_request,
            "tokenize": options.scoring.tokenize,
            **options.extra_settings,
        },
    )
    write_outputs(report, output)
    return report


def _job(direction: DirectionData, backend: Backend, directory: Path, options: RunOptions) -> _DirectionJob:
    name = direction.direction.name
    # Everything that decides the translations: another data set, model or server means another key.
    key = digest({"direction": name, "sources": lines_digest(direction.sources), "system": backend.identity})
    score_key = digest(
        {
            "key": key,
            "references": lines_digest(direction.references),
            "scoring": options.scoring.settings(direction.direction.target),
        }
    )
    checkpoint = DirectionCheckpoint(directory, name, key, len(direction), header={"system": backend.identity})
    job = _DirectionJob(direction, checkpoint, score_key)
    job.result = checkpoint.load_score(score_key)
    if job.result is not None:
        logger.debug("%s: already scored, skipping", name)
    return job


def _check_requests(job: _DirectionJob, options: RunOptions) -> None:
    # Fail before translating anything, rather than hours in, on a segment the service refuses.
    try:
        plan_requests(job.data.sources, options.records_per_request)
    except DataError as exc:
        raise DataError(f"{job.name}: {exc}") from exc


async def _translate_all(
    todo: list[_DirectionJob], jobs: list[_DirectionJob], backend: Backend, options: RunOptions
) -> None:
    await backend.start()
    try:
        await _check_languages(todo, backend)
        total = sum(len(job.data) for job in jobs)
        done = total - sum(len(job.missing()) for job in todo)
        with _bars(options) as bars:
            overall = bars("overall", total, done, 0)
            for job in todo:
                direction_bar = bars(job.name, len(job.data), len(job.progress.hyps), 1)
                advance = functools.partial(_tick, bars=(overall, direction_bar))
                await _translate_direction(job, backend, options, advance)
                direction_bar.close()
                # Scored as soon as finished: a later kill must not cost this direction anything.
                _finish(job, options)
    finally:
        await backend.close()


async def _check_languages(todo: list[_DirectionJob], backend: Backend) -> None:
    languages = await backend.languages()
    if languages is None:
        return
    unsupported = []
    for job in todo:
        unknown = [code for code in (job.data.direction.source, job.data.direction.target) if code not in languages]
        if unknown:
            unsupported.append(f"{job.name} (unknown: {', '.join(unknown)})")
    if unsupported:
        raise BackendError(
            f"{backend.label} does not support direction(s) {'; '.join(unsupported)}; "
            f"it knows {len(languages)} languages (GET /languages lists them)"
        )


async def _translate_direction(
    job: _DirectionJob, backend: Backend, options: RunOptions, advance: Callable[[int], None]
) -> None:
    direction = job.data.direction
    chunks = chunk_indices(job.missing(), options.chunk_size)
    if job.progress.hyps:
        logger.info("%s: resuming, %d of %d segments already done", job.name, len(job.progress.hyps), len(job.data))
    for chunk in chunks:
        texts = [job.data.sources[i] for i in chunk]
        started = time.perf_counter()
        hyps = await _translate_chunk(backend, direction, texts, options.records_per_request, advance)
        elapsed = time.perf_counter() - started
        job.checkpoint.append(chunk[0], hyps, elapsed)
        job.progress.hyps.update(zip(chunk, hyps, strict=True))
        job.progress.seconds += elapsed


def chunk_indices(missing: Sequence[int], chunk_size: int) -> list[list[int]]:
    """Contiguous runs of the missing indices, cut into chunks of at most ``chunk_size``."""
    chunks: list[list[int]] = []
    for index in missing:
        if chunks and chunks[-1][-1] == index - 1 and len(chunks[-1]) < chunk_size:
            chunks[-1].append(index)
        else:
            chunks.append([index])
    return chunks


async def _translate_chunk(
    backend: Backend, direction: Direction, texts: list[str], records_per_request: int, advance: Callable[[int], None]
) -> list[str]:
    async def one(span: range) -> list[str]:
        out = await backend.translate(direction, texts[span.start : span.stop])
        advance(len(span))
        return out

    # Every request of the chunk at once: the HTTP backend caps what is really in flight with
    # --concurrency, the in-process one merges them into one engine call.
    parts = await _gather_fail_fast([one(span) for span in plan_requests(texts, records_per_request)])
    return [text for part in parts for text in part]


async def _gather_fail_fast(coroutines: Sequence[Awaitable[T]]) -> list[T]:
    """Like gather, but the first failure cancels the rest: the chunk is lost either way."""
    tasks = [asyncio.ensure_future(c) for c in coroutines]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        for task in tasks:
            if task.done() and task.exception() is not None:
                raise task.exception()  # type: ignore[misc]
        return [task.result() for task in tasks]
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def _finish(job: _DirectionJob, options: RunOptions) -> None:
    if job.result is not None:
        return
    hyps = [job.progress.hyps[i] for i in range(len(job.data))]
    scores = score(hyps, job.data.references, job.data.direction.target, options.scoring)
    direction = job.data.direction
    job.result = direction_entry(
        job.name, direction.source, direction.target, len(job.data), scores, job.progress.seconds
    )
    job.checkpoint.save_score(job.score_key, job.result)
    logger.info("%s: BLEU %.2f, chrF %.2f on %d segments", job.name, scores["bleu"], scores["chrf"], len(job.data))


# --------------------------------------------------------------------------- progress bars


@contextmanager
def _bars(options: RunOptions) -> Iterator[Callable[[str, int, int, int], Any]]:
    """Yields a factory of tqdm bars on stderr (position 0: overall, 1: the current direction)."""
    from tqdm import tqdm

    made: list[Any] = []
    disable = None if options.progress is None else not options.progress

    def make(desc: str, total: int, initial: int, position: int) -> Any:
        bar = tqdm(
            total=total,
            initial=initial,
            desc=desc,
            unit="seg",
            position=position,
            leave=position == 0,
            file=sys.stderr,
            disable=disable,
            dynamic_ncols=True,
        )
        made.append(bar)
        return bar

    try:
        yield make
    finally:
        for bar in reversed(made):
            bar.close()


def _tick(n: int, bars: tuple[Any, ...]) -> None:
    for bar in bars:
        bar.update(n)


# --------------------------------------------------------------------------- CLI


def _run_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m translator.evaluate",
        description=__doc__.split("\n\n")[0],
        epilog="Compare two reports: python -m translator.evaluate compare OLD.json NEW.json [--max-drop 1.0]",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--data", type=Path, required=True, help="FLORES-style folder or JSONL test set")
    system = parser.add_mutually_exclusive_group(required=True)
    system.add_argument("--url", help="base URL of a running service, e.g. http://localhost:9527")
    system.add_argument("--model", type=Path, help="model directory, translated in-process")
    parser.add_argument("--output", type=Path, required=True, help="folder for the report and checkpoints")
    parser.add_argument("--directions", help="comma-separated subset, e.g. en-fr,fr-en (default: all)")
    parser.add_argument("--concurrency", type=int, default=8, help="HTTP requests in flight (default: %(default)s)")
    parser.add_argument(
        "--records-per-request", type=int, default=8, help="segments per request (default: %(default)s)"
    )
    parser.add_argument(
        "--chunk-size", type=int, default=256, help="segments per checkpointed chunk (default: %(default)s)"
    )
    parser.add_argument(
        "--tokenize",
        default=AUTO,
        choices=tokenizers(),
        help="sacreBLEU tokenizer for BLEU; 'auto' (default) picks one per target language",
    )
    parser.add_argument(
        "--system-name", help="name of what is served at --url (e.g. the model tag); part of the checkpoint key"
    )
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per HTTP request (default: %(default)s)")
    parser.add_argument("--max-retries", type=int, default=8, help="retries per HTTP request (default: %(default)s)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    return parser


def _compare_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m translator.evaluate compare",
        description="Per-direction deltas between two reports; exit 1 on a regression or a missing direction.",
    )
    parser.add_argument("old", type=Path, help="baseline report.json (or its folder)")
    parser.add_argument("new", type=Path, help="candidate report.json (or its folder)")
    parser.add_argument("--max-drop", type=float, default=1.0, help="largest allowed drop in points (default: 1.0)")
    parser.add_argument("--metric", choices=("bleu", "chrf"), default="bleu", help="metric to gate on (default: bleu)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "compare":
        return _compare_main(args[1:])
    return _run_main(args)


def _compare_main(argv: list[str]) -> int:
    args = _compare_parser().parse_args(argv)
    try:
        rows = compare_reports(load_report(args.old), load_report(args.new), metric=args.metric, max_drop=args.max_drop)
    except ReportError as exc:
        print(f"error: {exc}", file=sys.stderr)  # noqa: T201 - CLI output
        return EXIT_BAD_INPUT
    print(render_comparison(rows, metric=args.metric, max_drop=args.max_drop))  # noqa: T201 - CLI output
    return EXIT_REGRESSION if any(row.failed for row in rows) else EXIT_OK


def _run_main(argv: list[str]) -> int:
    args = _run_parser().parse_args(argv)
    _configure_logging(args.verbose)
    started = time.perf_counter()
    try:
        directions = [d for d in (args.directions or "").split(",") if d.strip()]
        data = load_eval_data(args.data, directions)
        backend = _backend(args)
        options = RunOptions(
            chunk_size=args.chunk_size,
            records_per_request=args.records_per_request,
            scoring=Scoring(tokenize=args.tokenize),
            progress=False if args.no_progress else None,
            extra_settings={"concurrency": args.concurrency} if args.url else {},
        )
        report = _with_tqdm_logging(lambda: evaluate(data, backend, args.output, options))
    except (DataError, CheckpointError, ReportError) as exc:
        print(f"error: {exc}", file=sys.stderr)  # noqa: T201 - CLI output
        return EXIT_BAD_INPUT
    except BackendError as exc:
        print(f"error: {exc}", file=sys.stderr)  # noqa: T201 - CLI output
        return EXIT_SYSTEM_FAILED
    except KeyboardInterrupt:
        print("interrupted: finished chunks are saved; run the same command again to resume", file=sys.stderr)  # noqa: T201
        return EXIT_INTERRUPTED
    print(render_markdown(report))  # noqa: T201 - CLI output: the report
    logger.info("done in %.1f s; outputs in %s", time.perf_counter() - started, args.output)
    return EXIT_OK


def _backend(args: argparse.Namespace) -> Backend:
    if args.url:
        return HttpBackend(
            args.url,
            concurrency=args.concurrency,
            timeout_s=args.timeout,
            max_retries=args.max_retries,
            system_name=args.system_name,
        )
    if not args.model.is_dir():
        raise DataError(f"--model {args.model}: no such directory")
    try:
        return LocalBackend(args.model)
    except BackendError as exc:
        raise DataError(f"--model {args.model}: {exc}") from exc


def _configure_logging(verbose: bool) -> None:
    logging.basicConfig(
        level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr
    )
    logging.getLogger("translator").setLevel(logging.DEBUG if verbose else logging.INFO)


def _with_tqdm_logging(call: Callable[[], T]) -> T:
    from tqdm.contrib.logging import logging_redirect_tqdm

    # Log lines go through tqdm.write, so they do not tear the progress bars.
    with logging_redirect_tqdm():
        return call()


if __name__ == "__main__":
    raise SystemExit(main())

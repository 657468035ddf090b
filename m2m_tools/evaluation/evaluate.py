"""Score a translation system on a parallel test set, per direction, resumably; gate rollouts on it.

    m2m-eval --data fixture/eval/flores --model build/fixture-model --output build/eval
    m2m-eval --data tests.jsonl --url http://localhost:9527 --output build/eval-new \\
        --concurrency 16 --records-per-request 8 --directions en-fr,fr-en
    m2m-eval compare build/eval-old/report.json build/eval-new/report.json --max-drop 1.0

A run translates every direction on the offline tools' job runner (`m2m_tools.jobs`, the same one
`m2m-translate` uses): chunk by chunk, through the HTTP API with many requests in flight at bulk
priority, or in-process through the service's own pipeline, each finished chunk checkpointed under
``OUTPUT/checkpoints/``. Each direction is scored with sacreBLEU (BLEU and chrF, corpus level) as
soon as its last chunk is in, and ``report.json``, ``report.md`` and ``heatmap.png`` are written to
OUTPUT. Killed, it resumes where it stopped when run again with the same arguments; run again once
finished, it only prints the report. ``compare`` exits 1 when a direction dropped by more than
``--max-drop`` or is missing. ``python -m m2m_tools.evaluation`` is the same command.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from m2m_tools.cli import configure_logging, with_tqdm_logging
from m2m_tools.evaluation.compare import compare_reports, render_comparison
from m2m_tools.evaluation.data import DataError, DirectionData, EvalData, load_eval_data
from m2m_tools.evaluation.report import (
    ReportError,
    build_report,
    direction_entry,
    load_report,
    render_markdown,
    write_outputs,
)
from m2m_tools.evaluation.score import AUTO, Scoring, score, tokenizers
from m2m_tools.jobs.checkpoint import CheckpointError, atomic_write_text, digest, exclusive, lines_digest
from m2m_tools.jobs.job import Entry, Item, JobError, Options, UnitState, run_job
from m2m_tools.jobs.options import add_system_arguments, runner_from_args
from m2m_tools.jobs.runner import Runner, RunnerError
from translator.contract import limits
from translator.contract.language_codes import base_language

logger = logging.getLogger("m2m_tools.evaluation")

CHECKPOINT_DIR = "checkpoints"

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
    # None: enough chunks in flight to keep the runner's concurrency busy.
    chunks_in_flight: int | None = None
    scoring: Scoring = field(default_factory=Scoring)
    # None: a progress bar only when stderr is a terminal (tqdm's rule).
    progress: bool | None = None
    extra_settings: dict[str, Any] = field(default_factory=dict)


@dataclass
class DirectionUnit:
    """One direction of the test set as a unit of the job: its sources, in order."""

    data: DirectionData
    # The data's codes as the system names them (`eng_Latn` -> `en` for M2M100), set once the
    # system's languages are known; the report keeps the data's codes.
    system_codes: dict[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.data.direction.name

    @property
    def key(self) -> str:
        # Everything that decides the translations besides the system (which the job adds).
        return digest({"direction": self.name, "sources": lines_digest(self.data.sources)})

    @property
    def size(self) -> int:
        return len(self.data)

    def entries(self) -> Iterator[Entry]:
        direction = self.data.direction
        source = self.system_codes.get(direction.source, direction.source)
        target = self.system_codes.get(direction.target, direction.target)
        for text in self.data.sources:
            yield Item(text, source, target)


# --------------------------------------------------------------------------- the run


def evaluate(data: EvalData, runner: Runner, output: Path, options: RunOptions | None = None) -> dict[str, Any]:
    """Translate what the checkpoints lack, score, write the outputs; returns the report."""
    options = options or RunOptions()
    with exclusive(output):
        return _evaluate_locked(data, runner, output, options)


def _evaluate_locked(data: EvalData, runner: Runner, output: Path, options: RunOptions) -> dict[str, Any]:
    directory = output / CHECKPOINT_DIR
    units = [DirectionUnit(d) for d in data.directions.values()]
    results: dict[str, dict[str, Any]] = {}
    todo = []
    for unit in units:
        saved = _load_score(directory, unit, runner, options)
        if saved is not None:
            results[unit.name] = saved
        else:
            _check_lengths(unit)
            todo.append(unit)
    if not todo:
        logger.info("all %d directions already scored in %s; nothing to translate", len(units), output)

    def scored(state: UnitState) -> None:
        assert isinstance(state.unit, DirectionUnit)
        results[state.unit.name] = _score_direction(state, directory, runner, options)

    summary = run_job(
        todo,
        runner,
        directory,
        Options(options.chunk_size, options.records_per_request, options.chunks_in_flight, options.progress),
        log_path=lambda unit: directory / f"{unit.name}.hyp.jsonl",
        on_unit_done=scored,
        check_languages=lambda languages: _check_languages(todo, runner, languages),
    )
    report = build_report(
        [results[unit.name] for unit in units],
        system={"label": runner.label, **runner.identity},
        data={"path": str(data.path), "format": data.format},
        settings={
            "chunk_size": options.chunk_size,
            "records_per_request": options.records_per_request,
            "tokenize": options.scoring.tokenize,
            **options.extra_settings,
        },
    )
    write_outputs(report, output)
    if summary.translated:
        logger.info("translated: %s", summary.line())
    return report


def _check_lengths(unit: DirectionUnit) -> None:
    # Fail before translating anything, rather than hours in: a score needs every segment.
    for index, text in enumerate(unit.data.sources):
        if len(text) > limits.MAX_CHARS_PER_RECORD:
            raise DataError(
                f"{unit.name}: segment {index} has {len(text)} characters; the service accepts at most "
                f"{limits.MAX_CHARS_PER_RECORD} per record"
            )


def system_code(code: str, languages: frozenset[str]) -> str | None:
    """The system's code for a code of the data: itself, or its bare language (Flores-200's
    `eng_Latn` is M2M100's `en`; an NLLB system takes both)."""
    if code in languages:
        return code
    base = base_language(code)
    return base if base in languages else None


def _check_languages(todo: list[DirectionUnit], runner: Runner, languages: frozenset[str]) -> None:
    unsupported = []
    for unit in todo:
        direction = unit.data.direction
        unknown = []
        for code in (direction.source, direction.target):
            mapped = system_code(code, languages)
            if mapped is None:
                unknown.append(code)
            else:
                unit.system_codes[code] = mapped
        if unknown:
            unsupported.append(f"{unit.name} (unknown: {', '.join(unknown)})")
    if unsupported:
        raise RunnerError(
            f"{runner.label} does not support direction(s) {'; '.join(unsupported)}; "
            f"it accepts {len(languages)} language codes (GET /languages lists them)"
        )


# --------------------------------------------------------------------------- scores


def _score_path(directory: Path, unit: DirectionUnit) -> Path:
    return directory / f"{unit.name}.score.json"


def _score_key(unit: DirectionUnit, runner: Runner, options: RunOptions) -> str:
    # Scores carry their own key, which adds the references and the metric settings to what decides
    # the translations: changing only those rescores without translating again.
    return digest(
        {
            "unit": unit.key,
            "system": runner.identity,
            "references": lines_digest(unit.data.references),
            "scoring": options.scoring.settings(unit.data.direction.target),
        }
    )


def _load_score(directory: Path, unit: DirectionUnit, runner: Runner, options: RunOptions) -> dict[str, Any] | None:
    path = _score_path(directory, unit)
    if not path.exists():
        return None
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        logger.warning("%s is unreadable; scoring %s again", path, unit.name)
        return None
    if not isinstance(saved, dict) or saved.get("score_key") != _score_key(unit, runner, options):
        return None
    result = saved.get("result")
    if isinstance(result, dict):
        logger.debug("%s: already scored, skipping", unit.name)
        return result
    return None


def _score_direction(state: UnitState, directory: Path, runner: Runner, options: RunOptions) -> dict[str, Any]:
    unit = state.unit
    assert isinstance(unit, DirectionUnit)
    hyps: list[str] = []
    for chunk in state.log.read(state.done):
        if chunk.rejects:
            offset, reason = next(iter(chunk.rejects.items()))
            raise RunnerError(f"{unit.name}: segment {chunk.start + offset} was refused: {reason}")
        hyps += [text or "" for text in chunk.texts]
    direction = unit.data.direction
    scores = score(hyps, unit.data.references, direction.target, options.scoring)
    result = direction_entry(unit.name, direction.source, direction.target, len(hyps), scores, state.done.seconds)
    saved = {"score_key": _score_key(unit, runner, options), "result": result}
    # Saved as soon as scored: a later kill must not cost this direction anything.
    atomic_write_text(_score_path(directory, unit), json.dumps(saved, ensure_ascii=False, indent=2) + "\n")
    logger.info("%s: BLEU %.2f, chrF %.2f on %d segments", unit.name, scores["bleu"], scores["chrf"], len(hyps))
    return result


# --------------------------------------------------------------------------- CLI


def _run_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="m2m-eval",
        description=__doc__.split("\n\n")[0],
        epilog="Compare two reports: m2m-eval compare OLD.json NEW.json [--max-drop 1.0]",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--data",
        type=Path,
        required=True,
        help="FLORES-style folder, folder of parallel documents (one subfolder per language) or JSONL test set",
    )
    parser.add_argument("--output", type=Path, required=True, help="folder for the report and checkpoints")
    add_system_arguments(parser, 8, "HTTP requests in flight")
    parser.add_argument("--directions", help="comma-separated subset, e.g. en-fr,fr-en (default: all)")
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
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    return parser


def _compare_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="m2m-eval compare",
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
    configure_logging(args.verbose)
    started = time.perf_counter()
    try:
        directions = [d for d in (args.directions or "").split(",") if d.strip()]
        data = load_eval_data(args.data, directions)
        runner = runner_from_args(args, DataError)
        options = RunOptions(
            chunk_size=args.chunk_size,
            records_per_request=args.records_per_request,
            scoring=Scoring(tokenize=args.tokenize),
            progress=False if args.no_progress else None,
            extra_settings={"concurrency": args.concurrency} if args.url else {},
        )
        report = with_tqdm_logging(lambda: evaluate(data, runner, args.output, options))
    except (DataError, CheckpointError, ReportError, JobError) as exc:
        print(f"error: {exc}", file=sys.stderr)  # noqa: T201 - CLI output
        return EXIT_BAD_INPUT
    except RunnerError as exc:
        print(f"error: {exc}", file=sys.stderr)  # noqa: T201 - CLI output
        return EXIT_SYSTEM_FAILED
    except KeyboardInterrupt:
        print("interrupted: finished chunks are saved; run the same command again to resume", file=sys.stderr)  # noqa: T201
        return EXIT_INTERRUPTED
    print(render_markdown(report))  # noqa: T201 - CLI output: the report
    logger.info("done in %.1f s; outputs in %s", time.perf_counter() - started, args.output)
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())

"""Translate a corpus, resumably: `m2m-translate INPUT --output OUTPUT (--url URL | --model DIR)`.

    m2m-translate corpus.jsonl --output corpus.fr.jsonl --url http://translator:9527 --from en --to fr
    m2m-translate lines.txt --output lines.ja.txt --model ./m2m100_418M --from en --to ja
    m2m-translate docs/ --output docs-de/ --url http://127.0.0.1:9527 --to de   # fromLang per JSONL line
    m2m-translate manuals/ --output manuals-fr/ --url http://127.0.0.1:9527 --from en --to fr  # .docx, .md...
    m2m-translate corpus.jsonl --output corpus.fr.jsonl --url http://translator:9527 --from en --to fr --memory ID

INPUT is a JSONL file (``id``, ``text``, optional per-line ``fromLang``/``toLang``), a plain text
file (one segment a line; ids are line numbers), a document (.docx, .srt, .html, .po... as the
service's ``POST /documents`` takes: its text units are the records) or a folder of such files;
OUTPUT gets the same form, the same order, one line per input record (a document: the same file
with its text translated). Through a running service (``--url``, many
requests in flight at bulk priority) or in-process (``--model``, the service's own pipeline): the
same translations. Work is cut into chunks checkpointed under ``OUTPUT.m2m-job/``; killed, the
same command resumes where it stopped, and run again once finished it translates nothing. Each
output file is written atomically once all its records are in, with its input's permissions,
line endings and UTF-8 byte order mark (if it had one). Records that cannot be translated go to
``OUTPUT.rejects.jsonl`` with their reason, and the command exits with 1.

Before any work, every input file is read (a document parsed) and --from/--to are checked against
the languages of the server (its /languages) or of the model: every problem found is listed at
once, nothing is written, and the command exits with 2. With --skip-unreadable, the files that
cannot be read are listed (and go to the rejects file) and the others are translated.

With --memory ID, every request names that translation memory (the service's or, with --model,
the one in the store the service's configuration names): a record it holds comes back as people
translated it, and the summary counts them ("N from the translation memory", earlier runs of the
job included). The memory's id is part of the checkpoint key; segments added to it later do not
redo finished chunks. With --memory-learn too, the .po and XLIFF documents' own translations
(translated, not fuzzy; approved) are added to the memory before they are translated, once per
file and memory.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from m2m_tools.cli import configure_logging, with_tqdm_logging
from m2m_tools.corpus import JSONL, TEXT, CorpusError, FileUnit, Unreadable, plan_units, write_rejects
from m2m_tools.documents import DOCUMENT, DocumentError, DocumentUnit
from m2m_tools.jobs.checkpoint import CheckpointError, atomic_write_text, exclusive
from m2m_tools.jobs.job import JobError, Options, UnitState, run_job
from m2m_tools.jobs.options import add_system_arguments, runner_from_args
from m2m_tools.jobs.runner import RequestRejected, Runner, RunnerError

logger = logging.getLogger("m2m_tools.bulk")

EXIT_OK = 0
EXIT_REJECTS = 1
EXIT_BAD_INPUT = 2
EXIT_SYSTEM_FAILED = 3
EXIT_INTERRUPTED = 130

STATE_SUFFIX = ".m2m-job"
REJECTS_SUFFIX = ".rejects.jsonl"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="m2m-translate",
        description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("input", type=Path, help="JSONL, text file or document, or a folder of them")
    parser.add_argument("--output", type=Path, required=True, help="file (or folder, for a folder input) to write")
    add_system_arguments(parser, 32, "HTTP requests in flight")
    parser.add_argument("--from", dest="source", help="source language of every record (JSONL: unless fromLang)")
    parser.add_argument("--to", dest="target", help="target language of every record (JSONL: unless toLang)")
    parser.add_argument(
        "--format",
        choices=(JSONL, TEXT, DOCUMENT),
        help="input format (default: by extension: .jsonl, .ndjson; a document's; text otherwise, .txt too)",
    )
    parser.add_argument(
        "--memory",
        metavar="ID",
        help="translation memory every request names (translationMemory): records it holds come back as "
        "people translated them, counted in the summary",
    )
    parser.add_argument(
        "--memory-learn",
        action="store_true",
        help="with --memory: add the .po/.pot/.xlf/.xliff documents' translations people made to the "
        "memory before translating them (once per file and memory)",
    )
    parser.add_argument("--records-per-request", type=int, default=8, help="records per request (default: %(default)s)")
    parser.add_argument(
        "--chunk-size", type=int, default=256, help="records per checkpointed chunk (default: %(default)s)"
    )
    parser.add_argument(
        "--chunks-in-flight", type=int, help="chunks translated at once (default: enough for the concurrency)"
    )
    parser.add_argument("--state", type=Path, help=f"checkpoint folder (default: OUTPUT{STATE_SUFFIX})")
    parser.add_argument("--rejects", type=Path, help=f"rejected records with reasons (default: OUTPUT{REJECTS_SUFFIX})")
    parser.add_argument(
        "--skip-unreadable",
        action="store_true",
        help="translate the files that can be read, listing the others (default: list them and stop)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    configure_logging(args.verbose)
    output: Path = args.output
    state = args.state or output.with_name(output.name + STATE_SUFFIX)
    rejects_path = args.rejects or output.with_name(output.name + REJECTS_SUFFIX)
    try:
        plan = plan_units(args.input, output, source=args.source, target=args.target, forced_format=args.format)
        problems = list(plan.problems)
        try:
            runner: Runner | None = runner_from_args(args, CorpusError)
        except CorpusError as exc:
            runner = None
            problems.append(str(exc))
        learn_from = _learn_from(args, plan.units, problems)
        if runner is not None:
            problems += _system_problems(runner, {"--from": args.source, "--to": args.target})
        skipped = plan.unreadable
        if problems or (skipped and not args.skip_unreadable):
            _print_problems(problems, skipped)
            return EXIT_BAD_INPUT
        assert runner is not None
        for file in skipped:
            stale = f" ({file.stale_output}, an earlier run's, is left as it was)" if file.stale_output else ""
            print(f"skipped, unreadable: {file.reason}{stale}", file=sys.stderr)  # noqa: T201 - CLI output
        units = plan.units
        options = Options(
            chunk_size=args.chunk_size,
            records_per_request=args.records_per_request,
            chunks_in_flight=args.chunks_in_flight,
            progress=False if args.no_progress else None,
        )
        with exclusive(state):
            learned = _learn(runner, learn_from, state) if args.memory_learn else None
            summary = with_tqdm_logging(
                lambda: run_job(
                    units,
                    runner,
                    state,
                    options,
                    on_unit_done=_write_output,
                )
            )
            rejected = write_rejects(rejects_path, plan.files)
    except (CorpusError, DocumentError, CheckpointError, JobError) as exc:
        print(f"error: {exc}", file=sys.stderr)  # noqa: T201 - CLI output
        return EXIT_BAD_INPUT
    except RunnerError as exc:
        print(f"error: {exc}", file=sys.stderr)  # noqa: T201 - CLI output
        print("finished chunks are saved; run the same command again to resume", file=sys.stderr)  # noqa: T201
        return EXIT_SYSTEM_FAILED
    except KeyboardInterrupt:
        print("interrupted: finished chunks are saved; run the same command again to resume", file=sys.stderr)  # noqa: T201
        return EXIT_INTERRUPTED
    files_skipped = f"; {len(skipped)} unreadable file(s) skipped" if skipped else ""
    print(f"done: {summary.line()}{files_skipped}; output in {output}", file=sys.stderr)  # noqa: T201 - the summary
    if learned is not None:
        segments, files, now = learned
        print(  # noqa: T201 - the summary
            f"learned {segments} segment(s) from {files} file(s) into the translation memory {args.memory} "
            f"({now} file(s) this run)",
            file=sys.stderr,
        )
    if rejected:
        what = f"{rejected - len(skipped)} record(s) rejected"
        if skipped:
            what += f" and {len(skipped)} file(s) skipped"
        print(f"{what}, with reasons, in {rejects_path}", file=sys.stderr)  # noqa: T201
        return EXIT_REJECTS
    return EXIT_OK


def _system_problems(runner: Runner, flags: dict[str, str | None]) -> list[str]:
    """--from and --to that the system does not translate, and a --memory it does not have (or of
    another source language than --from), asked before any work: the job would otherwise reject
    every record one by one, and write a folder of untranslated copies."""
    given = {flag: code for flag, code in flags.items() if code}
    if not given and runner.memory is None:
        return []
    languages, memory = asyncio.run(_ask(runner, bool(given)))
    problems = []
    if languages is not None:  # None: the server cannot list them (logged): its answers name what it refuses
        problems += [
            f"{flag} {code!r}: {runner.label} does not translate this language ({_hint(code, languages)})"
            for flag, code in given.items()
            if code not in languages
        ]
    if runner.memory is not None:
        problems += _memory_problems(runner, memory, flags.get("--from"))
    return problems


async def _ask(runner: Runner, languages: bool) -> tuple[frozenset[str] | None, dict[str, Any] | None]:
    # The runner's own list, the one the job checks each record against. A LocalRunner keeps the
    # model it loads here for the job's own start.
    await runner.start()
    try:
        codes = await runner.languages() if languages else None
        memory = await runner.memory_info() if runner.memory is not None else None
        return codes, memory
    finally:
        await runner.close()


# What translator/memory and translator/api/job_memory.py say, copied: the Job's image
# (requirements-tools.txt: no rapidfuzz) cannot import them over --url; a test keeps them equal.
LEARNS_FROM = (".po", ".pot", ".xlf", ".xliff")


def base_language(code: str) -> str:
    """`de-DE`, `DE`, `de_AT` -> `de`, as translator.memory.index.base_language compares a memory's."""
    return re.split(r"[-_@.]", code.strip(), maxsplit=1)[0].lower()


def _memory_problems(runner: Runner, memory: dict[str, Any] | None, source: str | None) -> list[str]:
    if memory is None:
        return [f"--memory {runner.memory!r}: {runner.label} has no such translation memory (GET /memories lists them)"]
    memory_source = str(memory.get("sourceLang", ""))
    # A model's own code (NLLB's `eng_Latn`) is left to the service, which knows it names `en`.
    if source and "_" not in source and base_language(source) != base_language(memory_source):
        name = memory.get("name")
        return [f"--memory {runner.memory!r}: the memory {name!r} is from {memory_source!r}, --from is {source!r}"]
    return []


LEARNED_FILE = "memory-learned.json"


def _learn_from(args: argparse.Namespace, units: Sequence[Any], problems: list[str]) -> list[DocumentUnit]:
    """The documents --memory-learn adds to the memory: the PO and XLIFF files among the inputs."""
    if not args.memory_learn:
        return []
    if not args.memory:
        problems.append("--memory-learn: needs --memory, the translation memory to learn into")
        return []
    found = [u for u in units if isinstance(u, DocumentUnit) and u.path.name.lower().endswith(LEARNS_FROM)]
    if not found:
        kinds = ", ".join(LEARNS_FROM)
        problems.append(f"--memory-learn: no input is a document people's translations are learnt from ({kinds})")
    return found


def _learn(runner: Runner, units: list[DocumentUnit], state: Path) -> tuple[int, int, int]:
    """Each document's translations people made added to the memory, once: the files learnt and
    their counts are kept in the job's folder, so that a resumed or repeated job adds nothing twice.
    Returns (segments, files) learnt by this job, its earlier runs included, and the files this run."""
    assert runner.memory is not None
    path = state / LEARNED_FILE
    try:
        record: dict[str, dict[str, int]] = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        record = {}
    except ValueError as exc:
        raise CheckpointError(f"{path}: damaged ({exc}); delete it to learn every file again") from exc
    learned = record.setdefault(runner.memory, {})
    todo = [unit for unit in units if unit.key not in learned]

    async def each() -> None:
        await runner.start()
        try:
            for unit in todo:
                assert unit.target is not None  # a document job has --to
                try:
                    learned[unit.key] = await runner.learn(unit.path.name, unit.path.read_bytes(), unit.target)
                except RequestRejected as exc:
                    raise DocumentError(f"--memory-learn: {unit.name}: {exc.message}") from exc
                atomic_write_text(path, json.dumps(record, indent=1, sort_keys=True) + "\n")
                logger.info("learned %d segment(s) from %s", learned[unit.key], unit.name)
        finally:
            await runner.close()

    if todo:
        asyncio.run(each())
    keys = {unit.key for unit in units}
    return sum(n for key, n in learned.items() if key in keys), len(units), len(todo)


def _hint(code: str, languages: frozenset[str], shown: int = 20) -> str:
    from translator.contract.language_codes import resolve

    # The code the service's lenient APIs would read it as (`de-DE`, `EN`): the native API the
    # job calls takes codes exactly, so it is refused, with the code to give instead.
    try:
        meant = resolve(code, languages)
    except ImportError:  # a region or script needs langcodes, which the Job's image has not: no hint
        meant = None
    if meant is not None:
        return f"did you mean {meant!r}?"
    ordered = sorted(languages)
    more = f", and {len(ordered) - shown} more" if len(ordered) > shown else ""
    return f"it takes {', '.join(ordered[:shown])}{more}"


def _print_problems(problems: list[str], unreadable: list[Unreadable]) -> None:
    lines = [file.reason for file in unreadable] + problems
    print(f"error: {len(lines)} problem(s); nothing was translated or written:", file=sys.stderr)  # noqa: T201
    for line in lines:
        print(f"  {line}", file=sys.stderr)  # noqa: T201 - CLI output
    if unreadable and not problems:
        print("--skip-unreadable translates the other files and lists these", file=sys.stderr)  # noqa: T201


def _write_output(state: UnitState) -> None:
    unit = state.unit
    assert isinstance(unit, FileUnit | DocumentUnit)
    unit.write_output(state.log, state.done)
    logger.debug("wrote %s", unit.output)


if __name__ == "__main__":
    raise SystemExit(main())

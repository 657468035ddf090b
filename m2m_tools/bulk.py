"""Translate a corpus, resumably: `m2m-translate INPUT --output OUTPUT (--url URL | --model DIR)`.

    m2m-translate corpus.jsonl --output corpus.fr.jsonl --url http://translator:9527 --from en --to fr
    m2m-translate lines.txt --output lines.ja.txt --model ./m2m100_418M --from en --to ja
    m2m-translate docs/ --output docs-de/ --url http://127.0.0.1:9527 --to de   # fromLang per JSONL line
    m2m-translate manuals/ --output manuals-fr/ --url http://127.0.0.1:9527 --from en --to fr  # .docx, .md...

INPUT is a JSONL file (``id``, ``text``, optional per-line ``fromLang``/``toLang``), a plain text
file (one segment a line; ids are line numbers), a document (.docx, .srt, .html, .po... as the
service's ``POST /documents`` takes: its text units are the records) or a folder of such files;
OUTPUT gets the same form, the same order, one line per input record (a document: the same file
with its text translated). Through a running service (``--url``, many
requests in flight at bulk priority) or in-process (``--model``, the service's own pipeline): the
same translations. Work is cut into chunks checkpointed under ``OUTPUT.m2m-job/``; killed, the
same command resumes where it stopped, and run again once finished it translates nothing. Each
output file is written atomically once all its records are in. Records that cannot be translated
go to ``OUTPUT.rejects.jsonl`` with their reason, and the command exits with 1.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from m2m_tools.cli import configure_logging, with_tqdm_logging
from m2m_tools.corpus import JSONL, TEXT, CorpusError, FileUnit, plan_units, write_rejects
from m2m_tools.documents import DOCUMENT, DocumentError, DocumentUnit
from m2m_tools.jobs.checkpoint import CheckpointError, exclusive
from m2m_tools.jobs.job import JobError, Options, UnitState, run_job
from m2m_tools.jobs.options import add_system_arguments, runner_from_args
from m2m_tools.jobs.runner import RunnerError

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
    parser.add_argument("--records-per-request", type=int, default=8, help="records per request (default: %(default)s)")
    parser.add_argument(
        "--chunk-size", type=int, default=256, help="records per checkpointed chunk (default: %(default)s)"
    )
    parser.add_argument(
        "--chunks-in-flight", type=int, help="chunks translated at once (default: enough for the concurrency)"
    )
    parser.add_argument("--state", type=Path, help=f"checkpoint folder (default: OUTPUT{STATE_SUFFIX})")
    parser.add_argument("--rejects", type=Path, help=f"rejected records with reasons (default: OUTPUT{REJECTS_SUFFIX})")
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
        units = plan_units(args.input, output, source=args.source, target=args.target, forced_format=args.format)
        runner = runner_from_args(args, CorpusError)
        options = Options(
            chunk_size=args.chunk_size,
            records_per_request=args.records_per_request,
            chunks_in_flight=args.chunks_in_flight,
            progress=False if args.no_progress else None,
        )
        with exclusive(state):
            summary = with_tqdm_logging(
                lambda: run_job(
                    units,
                    runner,
                    state,
                    options,
                    on_unit_done=_write_output,
                )
            )
            rejected = write_rejects(rejects_path, units)
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
    print(f"done: {summary.line()}; output in {output}", file=sys.stderr)  # noqa: T201 - CLI output: the summary
    if rejected:
        print(f"{rejected} record(s) rejected, with reasons, in {rejects_path}", file=sys.stderr)  # noqa: T201
        return EXIT_REJECTS
    return EXIT_OK


def _write_output(state: UnitState) -> None:
    unit = state.unit
    assert isinstance(unit, FileUnit | DocumentUnit)
    unit.write_output(state.log, state.done)
    logger.debug("wrote %s", unit.output)


if __name__ == "__main__":
    raise SystemExit(main())

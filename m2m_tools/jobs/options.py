"""The command-line options the tools share for choosing what translates (`--url` or `--model`,
`--engine`, concurrency), and the runner they make.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from m2m_tools.jobs.http_runner import HttpRunner
from m2m_tools.jobs.local_runner import LocalRunner
from m2m_tools.jobs.runner import Runner, RunnerError

if TYPE_CHECKING:
    from translator.config import Settings


logger = logging.getLogger(__name__)


def add_system_arguments(parser: argparse.ArgumentParser, concurrency: int, concurrency_help: str) -> None:
    """The flags that say what translates, shared by m2m-translate and m2m-eval."""
    system = parser.add_mutually_exclusive_group(required=True)
    system.add_argument("--url", help="base URL of a running service, e.g. http://translator:9527")
    system.add_argument("--model", type=Path, help="model directory, translated in-process")
    parser.add_argument(
        "--engine",
        metavar="BACKEND:DTYPE",
        help="with --model: the engine, e.g. ctranslate2:int8, transformers:float32 (default: "
        "bentoconfiguration.yaml's; a service's engine is set in its own configuration)",
    )
    parser.add_argument(
        "--concurrency", type=int, default=concurrency, help=f"{concurrency_help} (default: %(default)s)"
    )
    parser.add_argument(
        "--system-name", help="name of what is served at --url (e.g. the model tag); part of the checkpoint key"
    )
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per HTTP request (default: %(default)s)")
    parser.add_argument("--max-retries", type=int, default=8, help="retries per HTTP request (default: %(default)s)")


def runner_from_args(args: Any, invalid: Callable[[str], Exception]) -> Runner:
    """The runner the tools' shared flags (`add_system_arguments`) ask for: ``--url`` or ``--model``
    (with ``--engine``); bad input raises ``invalid(message)``, the calling tool's own error.
    ``args.memory``, where the tool has the flag: the translation memory every request names."""
    memory = getattr(args, "memory", None)
    if args.url:
        if args.engine:
            raise invalid("--engine applies to --model; a service runs the engine its configuration sets")
        return HttpRunner(
            args.url,
            concurrency=args.concurrency,
            timeout_s=args.timeout,
            max_retries=args.max_retries,
            system_name=args.system_name,
            memory=memory,
        )
    if not args.model.is_dir():
        raise invalid(f"--model {args.model}: no such directory")
    settings = _settings_with_engine(args.engine, invalid)
    from translator.engine.backends import ConversionMissing, choose, is_converted, missing_conversion

    # The engine resolved before anything loads, so what cannot run is a bad-input error, not a
    # traceback from inside the job.
    try:
        backend, _, _ = choose(settings.engine, model_dir=args.model)
    except (ConversionMissing, ValueError) as exc:
        raise invalid(f"--model {args.model}: {exc}") from exc
    if backend == "ctranslate2" and not is_converted(args.model):
        raise invalid(f"--model {args.model}: {missing_conversion(args.model)}")
    try:
        return LocalRunner(args.model, settings=settings, memory=memory)
    except RunnerError as exc:
        raise invalid(f"--model {args.model}: {exc}") from exc


def _settings_with_engine(engine: str | None, invalid: Callable[[str], Exception]) -> Settings:
    from translator.config import load_settings, with_engine

    settings = load_settings()
    if not engine:
        return settings
    try:
        chosen = with_engine(settings.engine, engine)
    except ValueError as exc:  # pydantic's ValidationError is a ValueError
        raise invalid(f"--engine {engine}: {exc}") from exc
    return dataclasses.replace(settings, engine=chosen)

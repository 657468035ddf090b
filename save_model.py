"""Register an M2M100 checkpoint in the BentoML model store and print its tag.

    python save_model.py                              # facebook/m2m100_418M from the hub (or its cache)
    python save_model.py --model-id ./m2m100_1.2B     # a local Hugging Face directory

Every checkpoint goes under one name, `m2m100`, with a hash of its files as the version; the one
registered last is `m2m100:latest`, which plain `bentoml serve` and `bentoml build` use. Set
TRANSLATOR_MODEL to a printed tag to pin a version instead. Registering the latest checkpoint again
is a no-op; registering an older one again makes it the latest (a rollback).
"""

from __future__ import annotations

import argparse
import logging
import sys

from translator.store import DEFAULT_MODEL_ID, RegistrationError, register


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model-id", default=DEFAULT_MODEL_ID, help="hub id or local directory (default: %(default)s)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar, print only the tag")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING if args.quiet else logging.INFO, format="%(message)s")
    try:
        tag = register(args.model_id, progress=not args.quiet)
    except RegistrationError as exc:
        print(f"error: {exc}", file=sys.stderr)  # noqa: T201 - CLI output
        return 2
    print(tag)  # noqa: T201 - CLI output: the tag, for scripts and the Makefile
    return 0


if __name__ == "__main__":
    sys.exit(main())

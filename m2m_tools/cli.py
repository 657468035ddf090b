"""What the offline tools' command lines share: logging on stderr that does not tear the progress bar."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def configure_logging(verbose: bool) -> None:
    logging.basicConfig(
        level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr
    )
    level = logging.DEBUG if verbose else logging.INFO
    for name in ("m2m_tools", "translator"):
        logging.getLogger(name).setLevel(level)


def with_tqdm_logging(call: Callable[[], T]) -> T:
    from tqdm.contrib.logging import logging_redirect_tqdm

    # Log lines go through tqdm.write, so they do not tear the progress bar.
    with logging_redirect_tqdm():
        return call()

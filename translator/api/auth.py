"""API keys: who may use the translation endpoints, when the operator asks for keys.

Off unless `translation.auth.keys_env` names an environment variable with the keys (config.Auth).
Which routes need one, where each API takes it and how it refuses: translator/api/access.py, the
one check, applied by the edge to every route not declared public there.

Keys are compared in constant time against every accepted key (the time a refusal takes says
nothing about how close a guess was), and never written anywhere: not in an answer, a log line or
a metric.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import logging
from collections.abc import Iterable

from translator.config import ConfigError, load_settings
from translator.contract.protocol import NEVER_READY

logger = logging.getLogger(__name__)


class ApiKeys:
    def __init__(self, keys: Iterable[str]) -> None:
        self._digests = [hashlib.sha256(key.encode("utf-8")).digest() for key in keys]
        if not self._digests:
            raise ValueError("at least one key")

    def accepts(self, offered: bytes) -> bool:
        # Digests of equal length, so that not even the key's length shows in the time taken;
        # every key compared, whatever matched: no early exit to time either.
        digest = hashlib.sha256(offered).digest()
        accepted = False
        for key in self._digests:
            accepted |= hmac.compare_digest(digest, key)
        return accepted


@functools.cache
def api_keys() -> ApiKeys | None:
    """This process's keys, from the configuration and the environment; None when keys are off.
    Raises `ConfigError` when the configuration asks for keys the environment does not hold.

    Called in the API worker, never on import: `bentoml build` imports the service where no Secret
    is mounted."""
    keys = load_settings().auth.keys()
    return ApiKeys(keys) if keys else None


@functools.cache
def keys_problem() -> str | None:
    """Why the keys asked for cannot be used (logged once), None when they can or are off. A worker
    with a problem refuses every request but the public ones and reports not ready: it fails
    closed, and visibly, rather than serve unguarded or stop in a way BentoML would not show (an
    exception in the service's start is swallowed by uvicorn's lifespan "auto" mode)."""
    try:
        api_keys()
    except ConfigError as exc:
        logger.error("API keys: %s; every translation request is refused and %s", exc, NEVER_READY)
        return str(exc)
    return None


def keys_required() -> bool:
    """Whether translation requests need a key: keys are on, or asked for and misconfigured (then
    every request is refused, but a client should still be told that a key is expected)."""
    return keys_problem() is not None or api_keys() is not None

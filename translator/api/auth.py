"""API keys: who may use the translation endpoints, when the operator asks for keys.

Off unless `translation.auth.keys_env` names an environment variable with the keys (config.Auth).
Every POST needs one: those are the translation endpoints. Reads (`/languages`, the docs) and the
probes and metrics (`/livez`, `/readyz`, `/metrics`) stay open, so that Kubernetes and Prometheus
need no key. A key is sent as `Authorization: Bearer KEY`: none is a 401, one not accepted a 403.

Keys are compared in constant time against every accepted key (the time a refusal takes says
nothing about how close a guess was), and never written anywhere: not in an answer, a log line or
a metric.
"""

from __future__ import annotations

import functools
import hmac
from collections.abc import Iterable

from translator.config import load_settings
from translator.contract.errors import Forbidden, TranslationError, Unauthorized


class ApiKeys:
    def __init__(self, keys: Iterable[str]) -> None:
        self._keys = [key.encode("utf-8") for key in keys]
        if not self._keys:
            raise ValueError("at least one key")

    def refusal(self, headers: Iterable[tuple[bytes, bytes]]) -> TranslationError | None:
        """None if the request's headers carry an accepted key, else the error to answer."""
        offered = bearer_token(headers)
        if offered is None:
            return Unauthorized("an API key is required: send the header 'Authorization: Bearer <key>'")
        if not self.accepts(offered):
            return Forbidden("the API key is not accepted")
        return None

    def accepts(self, offered: bytes) -> bool:
        accepted = False
        for key in self._keys:  # every key, whatever matched: no early exit to time
            accepted |= hmac.compare_digest(offered, key)
        return accepted


def bearer_token(headers: Iterable[tuple[bytes, bytes]]) -> bytes | None:
    """The token of an `Authorization: Bearer <token>` header (scheme case-insensitive), if any."""
    for name, value in headers:
        if name.lower() == b"authorization":
            scheme, _, token = value.strip().partition(b" ")
            if scheme.lower() == b"bearer" and token.strip():
                return token.strip()
    return None


@functools.cache
def api_keys() -> ApiKeys | None:
    """This process's keys, from the configuration and the environment; None when keys are off.
    Raises `ConfigError` when the configuration asks for keys the environment does not hold."""
    keys = load_settings().auth.keys()
    return ApiKeys(keys) if keys else None

"""The suite's tiers: what a test needs, as a marker every test carries (#52).

- `pure`: this process only: no fixture model, no child process, no network, nothing from build/.
  `make test-fast` runs this tier, in seconds.
- `processes`: child processes or shared OS state (/dev/shm, sockets, signals), but no model.
- `model`: the fixture model (or its training) in this process, no server.
- `server`: a real server the test talks to over HTTP (`bentoml serve`, Valkey, a peer's server).
- `image`: the OCI image, built and run by a container engine (`make test-image`).

Every test carries exactly one: its module's `pytestmark` as a default, or its own mark, which
overrides the module's. The session refuses to run otherwise. A `pure` test is held to its tier
while it runs: an audit hook refuses what the tier rules out (starting a process, connecting to a
network address, opening anything under build/), so a test that needs more fails, naming what it
did, instead of slowing the tier down.
A test that asks for a fixture of a heavier tier must carry that tier or a heavier one.
"""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Protocol

TIERS = ("pure", "processes", "model", "server", "image")

# The session fixtures (tests/conftest.py) and the least tier a test that uses one needs.
FIXTURE_TIERS = {
    "fixture_model": "model",
    "converted_fixture_model": "model",
    "nllb_fixture_model": "model",
    "model_tag": "model",
    "bentoml_home": "processes",
    "server": "server",
    "nllb_server": "server",
}

# Audit events (https://docs.python.org/3/library/audit_events.html) a pure test may not raise.
_PROCESS_EVENTS = frozenset(
    {"subprocess.Popen", "os.fork", "os.forkpty", "os.posix_spawn", "os.spawn", "os.exec", "os.system", "pty.spawn"}
)


class Node(Protocol):
    own_markers: list[Any]


class Item(Node, Protocol):
    nodeid: str
    fixturenames: Iterable[str]

    def listchain(self) -> list[Any]: ...


def tier_of(item: Item) -> list[str]:
    """The tier markers of the nearest level that has any (one, when all is well): a module's
    `pytestmark` is the default of its tests, and a test's own mark overrides it."""
    for node in item.listchain()[::-1]:
        found = sorted({mark.name for mark in node.own_markers if mark.name in TIERS})
        if found:
            return found
    return []


def problems(items: Iterable[Item]) -> list[str]:
    """Why each item that breaks the rules does: no tier, two tiers, or a fixture of a heavier tier."""
    found = []
    for item in items:
        tiers = tier_of(item)
        if len(tiers) != 1:
            found.append(f"{item.nodeid}: {'no tier marker' if not tiers else 'tiers ' + ', '.join(tiers)}")
            continue
        tier = TIERS.index(tiers[0])
        for name in item.fixturenames:
            needed = FIXTURE_TIERS.get(name)
            if needed is not None and TIERS.index(needed) > tier:
                found.append(f"{item.nodeid}: marked {tiers[0]} but uses the fixture {name!r} ({needed})")
    return found


def settle(items: list[Any]) -> None:
    """Each item's tier put on the item itself, and taken off its module and class: `-m pure` reads
    every marker up the chain, and would take a module's default for a test that overrides it."""
    chosen = [tier_of(item) for item in items]
    for item in items:
        for node in item.listchain()[:-1]:
            node.own_markers[:] = [mark for mark in node.own_markers if mark.name not in TIERS]
    for item, tiers in zip(items, chosen, strict=True):
        if len(tiers) == 1 and item.get_closest_marker(tiers[0]) is None:
            item.add_marker(tiers[0])


class PureGuard:
    """An audit hook (installed once: hooks cannot be removed) that refuses, while `test` names a
    pure test, what the pure tier rules out."""

    def __init__(self, build: Path) -> None:
        self.build = str(build.resolve())
        self.test: str | None = None
        sys.addaudithook(self._hook)

    def _refuse(self, what: str) -> None:
        test, self.test = self.test, None  # the raise below must not be refused again on its way out
        raise PermissionError(f"{test} is marked pure but {what}: mark it with the tier it needs (tests/tiers.py)")

    def _hook(self, event: str, args: tuple[Any, ...]) -> None:
        if self.test is None:
            return
        if event in _PROCESS_EVENTS:
            self._refuse(f"starts a process ({event})")
        elif event == "socket.connect" and args[0].family in (socket.AF_INET, socket.AF_INET6):
            self._refuse(f"connects to {args[1]!r}")
        elif event == "open" and isinstance(args[0], str | bytes | Path):
            path = os.path.join(os.getcwd(), os.fsdecode(args[0]))
            if path == self.build or path.startswith(self.build + os.sep):
                self._refuse(f"opens {path}")

"""The suite's own rules (#52): every test in one tier, a pure test held to it, and no test module
imported by another (what several share lives in a helpers module)."""

from __future__ import annotations

import ast
import socket
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests import tiers

pytestmark = pytest.mark.pure

TESTS = Path(__file__).resolve().parents[1]


@dataclass
class Node:
    own_markers: list[Any] = field(default_factory=list)


@dataclass
class FakeItem:
    """What tiers.problems reads of a collected test: its chain of nodes and its fixtures."""

    nodeid: str
    module: list[str]
    own: list[str]
    fixturenames: list[str] = field(default_factory=list)

    def listchain(self) -> list[Node]:
        return [
            Node(),
            Node([pytest.mark.parametrize.mark] + [getattr(pytest.mark, m).mark for m in self.module]),
            Node([getattr(pytest.mark, m).mark for m in self.own]),
        ]


@pytest.mark.parametrize(
    ("module", "own", "fixtures", "problem"),
    [
        ([], [], [], "no tier marker"),
        (["slow"], ["slow"], [], "no tier marker"),
        ([], ["pure", "model"], [], "tiers model, pure"),
        (["pure"], [], ["server"], "marked pure but uses the fixture 'server' (server)"),
        (["server"], ["model"], ["nllb_server"], "marked model but uses the fixture 'nllb_server' (server)"),
        (["processes"], [], ["fixture_model"], "marked processes but uses the fixture 'fixture_model' (model)"),
    ],
)
def test_a_test_outside_the_tiers_rules_is_named_with_why(module, own, fixtures, problem):
    item = FakeItem("tests/unit/test_x.py::test_y", module, own, fixtures)
    assert tiers.problems([item]) == [f"tests/unit/test_x.py::test_y: {problem}"]


@pytest.mark.parametrize(
    ("module", "own", "fixtures"),
    [(["pure"], [], ["tmp_path"]), (["pure"], ["model"], ["fixture_model"]), (["server"], [], ["fixture_model"])],
)
def test_one_tier_at_the_nearest_level_that_covers_the_fixtures_is_fine(module, own, fixtures):
    assert tiers.problems([FakeItem("t::t", module, own, fixtures)]) == []


def test_this_session_collected_every_test_in_one_tier(request):
    # The hook in tests/conftest.py refused the session otherwise; settled, each item carries its
    # own tier, so `-m pure` selects by it.
    assert tiers.tier_of(request.node) == ["pure"] and request.node.get_closest_marker("pure") is not None


# The guard refuses once per test (then lets the failure out), so one refusal a test.
def test_a_pure_test_cannot_start_a_process():
    with pytest.raises(PermissionError, match=r"marked pure but starts a process \(subprocess.Popen\)"):
        subprocess.run([sys.executable, "-c", "pass"], check=False)


def test_a_pure_test_cannot_connect_to_a_network_address():
    with socket.socket() as sock, pytest.raises(PermissionError, match="marked pure but connects to"):
        sock.connect(("127.0.0.1", 9))


def test_a_pure_test_cannot_open_what_build_holds():
    with pytest.raises(PermissionError, match="marked pure but opens .*build"):
        (TESTS.parent / "build" / "fixture-model" / "config.json").read_bytes()


def test_a_pure_test_may_use_a_unix_socket_pair_and_its_own_temporary_files(tmp_path):
    # asyncio's event loops wake themselves through a socket pair; tmp_path is the test's own.
    left, right = socket.socketpair()
    with left, right:
        left.sendall(b"x")
        assert right.recv(1) == b"x"
    (tmp_path / "f").write_text("y")
    assert (tmp_path / "f").read_text() == "y"


def imported_test_modules(path: Path) -> list[str]:
    """The test modules (test_*.py under tests/) that the module at `path` imports."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        found += [n for n in names if n.startswith("tests.") and n.rsplit(".", 1)[-1].startswith("test_")]
    return sorted(set(found))


def test_no_test_module_imports_another():
    # A test module imported as a library runs its module-level code twice and ties two files'
    # tests together; what they share goes in a helpers module (tests/unit/helpers/).
    offenders = {
        str(path.relative_to(TESTS.parent)): imported
        for path in sorted(TESTS.rglob("*.py"))
        if (imported := imported_test_modules(path))
    }
    assert offenders == {}


def test_the_import_rule_sees_each_way_of_importing(tmp_path):
    module = tmp_path / "test_m.py"
    module.write_text(
        "from tests.unit.test_scheduler import piece\nimport tests.e2e.test_api\n"
        "from tests.unit import test_documents\nfrom tests.unit.helpers.fake_engine import run\n"
    )
    assert imported_test_modules(module) == [
        "tests.e2e.test_api",
        "tests.unit.test_documents",
        "tests.unit.test_scheduler",
    ]

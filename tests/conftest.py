"""Session fixtures: the fixture model (built once), a private BentoML home, and real servers.

A server is an actual `bentoml serve` subprocess, the same command `make serve` runs, on a free
port; the end-to-end tests share one per session.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from filelock import FileLock
from hypothesis import settings

from harness.servers import ROOT, Server, register, start_server
from tests import tiers

# Hypothesis: in CI (CI set, as on most CI systems, or HYPOTHESIS_PROFILE=ci) the examples are
# derived from each test's name, so a run is reproducible and a failure shows up on every rerun;
# elsewhere they are random, which explores more over time. Tests set their own max_examples.
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("dev", deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))

FIXTURE_DIR = ROOT / "build" / "fixture-model"
NLLB_FIXTURE_DIR = ROOT / "build" / "fixture-nllb-model"
START_TIMEOUT_S = 180
# The fixture builds are shared by every pytest-xdist worker (and by a second `make test` beside
# this one): one builds, the others wait and find it current. Outside build/, whose listing the
# fixture's tests check for leftovers; one lock per checkout.
BUILD_LOCK = Path(tempfile.gettempdir()) / f"m2m-fixture-{hashlib.sha256(str(ROOT).encode()).hexdigest()[:12]}.lock"


@pytest.fixture(scope="session")
def fixture_model() -> Path:
    from fixture.build import build_fixture

    with FileLock(BUILD_LOCK):
        return build_fixture(FIXTURE_DIR)


@pytest.fixture(scope="session")
def converted_fixture_model(fixture_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture model with its CTranslate2 conversion beside it, as save_model.py stores it;
    skipped, saying so, where ctranslate2 is not installed (the lent GPU machines)."""
    pytest.importorskip("ctranslate2", reason="ctranslate2 is not installed here: nothing to convert for")
    from translator.engine.backends.ctranslate2_convert import convert, converted_path

    directory = tmp_path_factory.mktemp("fixture-ctranslate2")
    for path in fixture_model.iterdir():
        if path.is_file():
            shutil.copy2(path, directory / path.name)
    convert(fixture_model, converted_path(directory))
    return directory


@pytest.fixture(scope="session")
def bentoml_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("bentoml-home")


@pytest.fixture(scope="session")
def model_tag(fixture_model: Path, bentoml_home: Path) -> str:
    return register(fixture_model, bentoml_home)


@pytest.fixture(scope="session")
def server(bentoml_home: Path, model_tag: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    log_path = tmp_path_factory.mktemp("logs") / "server.log"
    srv = start_server(bentoml_home, model_tag, log_path, timeout=START_TIMEOUT_S)
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def nllb_fixture_model(fixture_model: Path) -> Path:
    """The NLLB-200-style fixture (fixture/nllb.py): the same translations under NLLB codes."""
    from fixture.nllb import build_nllb_fixture

    with FileLock(BUILD_LOCK):
        return build_nllb_fixture(NLLB_FIXTURE_DIR, fixture_model)


@pytest.fixture(scope="session")
def nllb_server(nllb_fixture_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A real server on the NLLB fixture, registered in a store of its own (so the session store's
    `latest` stays the M2M100 fixture), on the shipped configuration."""
    home = tmp_path_factory.mktemp("bentoml-home-nllb")
    tag = register(nllb_fixture_model, home)
    srv = start_server(home, tag, tmp_path_factory.mktemp("logs-nllb") / "server.log", timeout=START_TIMEOUT_S)
    yield srv
    srv.stop()


def pytest_sessionstart(session: pytest.Session) -> None:
    # Servers a test process started and could not stop (a pytest-xdist worker that crashed: its
    # replacement starts here) hold memory and cores for every test after them; only processes
    # marked by a test process that has died are stopped (harness/processes.py).
    from harness.processes import reap_orphans

    reaped = reap_orphans()
    if reaped:
        print(f"stopped {len(reaped)} processes that a dead test process had started: {reaped}", file=sys.stderr)


def pytest_report_header(config: pytest.Config) -> str:
    # The real-world tier's size, in the run's header (pytest-xdist shows its workers' prints nowhere).
    from harness.realworld import selected, summary

    return f"real-world tier (REALWORLD=all for every file): {summary(selected())}"


@pytest.hookimpl(tryfirst=True)  # before `-m` selects by the tiers settled here
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Every test in exactly one tier, and no lighter one than its fixtures need (tests/tiers.py):
    # refused before anything runs, so a new test cannot land in the wrong tier.
    problems = tiers.problems(items)
    if problems:
        shown = "\n  ".join(problems[:30]) + (f"\n  ... and {len(problems) - 30} more" if len(problems) > 30 else "")
        raise pytest.UsageError(f"tests outside the tiers' rules (tests/tiers.py):\n  {shown}")
    tiers.settle(items)
    # Tests marked `gpu` run where CUDA is, and are skipped (saying so) everywhere else.
    gpu_tests = [item for item in items if item.get_closest_marker("gpu")]
    if not gpu_tests:
        return
    import torch

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs CUDA (marked gpu); torch sees no CUDA device here")
    for item in gpu_tests:
        item.add_marker(skip)


# A pure test is held to its tier while it sets up and runs (not at teardown, where the session's
# servers of the tests before it may be stopped).
_PURE_GUARD = tiers.PureGuard(ROOT / "build")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    with _guarded(item):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    with _guarded(item):
        return (yield)


@contextlib.contextmanager
def _guarded(item: pytest.Item) -> Iterator[None]:
    _PURE_GUARD.test = item.nodeid if tiers.tier_of(item) == ["pure"] else None
    try:
        yield
    finally:
        _PURE_GUARD.test = None

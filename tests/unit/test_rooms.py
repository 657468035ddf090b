"""The product package shows its two processes (docs/architecture.md): the API workers' room never
imports the engine's, the engine's never the API's, and the contract between them imports neither,
nor does the shared memory both of them use (translator/shm).
Read from the source, so a forbidden import fails here before it fails in a process."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.pure

PACKAGE = Path(__file__).resolve().parents[2] / "translator"

# room -> the rooms it must not import
FORBIDDEN = {
    "api": ("translator.engine",),
    "engine": ("translator.api",),
    "contract": ("translator.api", "translator.engine", "translator.text", "translator.shm"),
    "text": ("translator.api", "translator.engine"),
    # Shared memory between the processes: both rooms build on it, so it builds on neither.
    "shm": ("translator.api", "translator.engine", "translator.text"),
    # Files read into records and written back (#34): run by the API workers' jobs, so never the
    # engine's; the API's routes call them, not the other way round.
    "documents": ("translator.api", "translator.engine"),
    # The page for people (#34): served by the API workers beside the API it calls.
    "ui": ("translator.engine",),
}


def imported_modules(path: Path, package: str) -> set[str]:
    """Every module `path` imports, relative imports resolved against `package`."""
    modules = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            modules.add(base)
            modules.update(f"{base}.{alias.name}" for alias in node.names)
    return modules


def violations(room: str) -> list[str]:
    found = []
    for path in sorted((PACKAGE / room).rglob("*.py")):
        package = ".".join(("translator", *path.relative_to(PACKAGE).parent.parts))
        for module in sorted(imported_modules(path, package)):
            if any(module == banned or module.startswith(banned + ".") for banned in FORBIDDEN[room]):
                found.append(f"{path.relative_to(PACKAGE.parent)} imports {module}")
    return found


@pytest.mark.parametrize("room", sorted(FORBIDDEN))
def test_room_imports_only_what_its_process_may(room: str) -> None:
    assert (PACKAGE / room / "__init__.py").is_file()
    assert violations(room) == []


def test_the_rule_sees_every_form_of_import(tmp_path: Path) -> None:
    source = tmp_path / "example.py"
    source.write_text(
        "import translator.engine.scheduler\n"
        "from translator.engine import cache\n"
        "from ..engine.translator import Translator\n"
        "def lazy():\n    from translator.api.pipeline import translate_payload\n",
        encoding="utf-8",
    )
    modules = imported_modules(source, "translator.text")
    assert {"translator.engine.scheduler", "translator.engine.cache", "translator.engine.translator"} <= modules
    assert "translator.api.pipeline" in modules  # imports inside functions count too


def test_every_module_of_the_package_is_in_a_room_or_shared() -> None:
    # Top level: the settings and the model registry, which both processes read, and the event-loop
    # lag monitor, which both run; nothing else (docs/architecture.md names each).
    top = {path.name for path in PACKAGE.glob("*.py")}
    assert top == {"__init__.py", "config.py", "store.py", "loop_lag.py"}
    assert {path.name for path in PACKAGE.iterdir() if path.is_dir() and path.name != "__pycache__"} == set(FORBIDDEN)


# A module read in one sitting (#30: the scheduler was 738 lines of six concerns); past it, split
# by concern rather than trim.
MAX_MODULE_LINES = 400


def test_no_module_of_the_package_is_longer_than_one_sitting() -> None:
    lengths = {
        path.relative_to(PACKAGE).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
        for path in PACKAGE.rglob("*.py")
    }
    assert {name: n for name, n in lengths.items() if n > MAX_MODULE_LINES} == {}

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
    # Translation memories (#51): matched in the API workers before the engine, imported by the API's
    # routes and the document jobs; they call neither.
    "memory": ("translator.api", "translator.engine"),
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


def _runtime_imports(path: Path) -> list[ast.ImportFrom | ast.Import]:
    """The imports of a module that run (inside functions too), not those under `if TYPE_CHECKING:`."""
    found: list[ast.ImportFrom | ast.Import] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            return
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8"), str(path)))
    return found


def _module_names() -> dict[str, Path]:
    names = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return names


def test_no_import_cycle_and_no_other_modules_private_name() -> None:
    # #50: deepl.py and its glossaries and documents imported each other (hidden by a function-local
    # import), and modules called each other's private helpers: a cycle makes the import order a
    # bug, and a private name used elsewhere is a contract nobody declared.
    modules = _module_names()
    edges: dict[str, set[str]] = {name: set() for name in modules}
    private = []
    for name, path in modules.items():
        for node in _runtime_imports(path):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("translator"):
                for alias in node.names:
                    full = f"{node.module}.{alias.name}"
                    target = full if full in modules else node.module
                    if target in modules and target != name:
                        edges[name].add(target)
                    if alias.name.startswith("_") and not alias.name.startswith("__"):
                        private.append(f"{name} imports {full}")
            elif isinstance(node, ast.Import):
                edges[name] |= {a.name for a in node.names if a.name in modules and a.name != name}
        # `documents._form(...)`: a private name reached through a module imported by name.
        aliases = {
            alias.asname or alias.name
            for node in _runtime_imports(path)
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("translator")
            for alias in node.names
            if f"{node.module}.{alias.name}" in modules
        }
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
                if node.attr.startswith("_") and not node.attr.startswith("__"):
                    private.append(f"{name} uses {node.value.id}.{node.attr}")
    assert private == []

    def reaches(start: str, goal: str) -> bool:
        seen, todo = set(), [start]
        while todo:
            current = todo.pop()
            if current == goal:
                return True
            if current not in seen:
                seen.add(current)
                todo.extend(edges.get(current, ()))
        return False

    # A module importing its own package's __init__ which imports it back is a cycle too.
    cycles = sorted(f"{a} <-> {b}" for a in edges for b in edges[a] if a < b and reaches(b, a))
    assert cycles == []


# The names an upload's parts have in the APIs' forms: translator/api/documents.py puts them on a
# reader's refusal, in one place for every route (#49: 47 messages in documents/ began `file: `).
FORM_FIELDS = ("file: ", "encoding: ")


def form_field_names(path: Path) -> list[str]:
    """The places in `path` that name an upload's form field: a message (plain or f-string) that
    starts with one, or a `field=` argument."""
    found, seen = [], set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        first = node.values[0] if isinstance(node, ast.JoinedStr) and node.values else node
        if id(first) in seen:  # an f-string's first part, found with the f-string
            continue
        if isinstance(first, ast.Constant) and isinstance(first.value, str) and first.value.startswith(FORM_FIELDS):
            seen.add(id(first))
            found.append(f"{path.name}:{node.lineno} {first.value[:30]!r}")
        elif isinstance(node, ast.keyword) and node.arg == "field":
            found.append(f"{path.name}:{node.lineno} field=")
    return found


def test_the_documents_room_names_no_form_field() -> None:
    found = [place for path in sorted((PACKAGE / "documents").rglob("*.py")) for place in form_field_names(path)]
    assert found == []


def test_the_form_field_rule_sees_messages_and_fields(tmp_path: Path) -> None:
    source = tmp_path / "example.py"
    source.write_text(
        'raise BadDocument("file: not a zip")\n'
        'raise BadDocument(f"encoding: {name!r} is unknown")\n'
        'raise InvalidRequest("bad", field="file")\n'
        'message = "a file: fine"\n',
        encoding="utf-8",
    )
    assert [place.split(" ")[1] for place in form_field_names(source)] == ["'file:", "'encoding:", "field="]

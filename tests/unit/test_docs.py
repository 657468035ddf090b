"""The README and docs/ point at files that exist: code moves (translator/ into rooms) and sections
moved from the README into docs/ must not leave links to nowhere."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.pure

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = sorted(
    [ROOT / "README.md", *(ROOT / "docs").glob("*.md"), ROOT / "deploy" / "README.md", ROOT / "bench" / "README.md"]
)
LINK = re.compile(r"\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6} (.+)$", re.M)


def anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    return {anchor(h) for h in HEADING.findall(text)}


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(document: Path) -> None:
    broken = []
    for target in LINK.findall(document.read_text(encoding="utf-8")):
        if re.match(r"^[a-z]+:", target):
            continue  # http(s), mailto
        path, _, fragment = target.partition("#")
        resolved = (document.parent / path) if path else document
        if not resolved.exists():
            broken.append(f"{target}: no such file")
        elif fragment and resolved.suffix == ".md" and fragment not in anchors(resolved):
            broken.append(f"{target}: no such heading")
    assert broken == []


def test_the_readme_is_a_front_door() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 250
    first_screen = "\n".join(readme.splitlines()[:60])
    assert "make serve" in first_screen and "make test" in first_screen and "curl" in first_screen

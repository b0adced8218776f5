"""Every reference in README.md and docs/ resolves to a file inside the repository.

Checked: Markdown links (``[text](path#anchor)``) and file names written as code
(`` `docs/deploy.md` ``, `` `training-recipe.md` ``). A web address is not followed (these
machines have no internet); a path that leaves the repository fails even if it exists.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO_DIR = Path(__file__).resolve().parents[2]
DOCS = [REPO_DIR / "README.md", *sorted((REPO_DIR / "docs").rglob("*.md"))]
_FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
_CODE_PATH = re.compile(r"`([\w./-]+\.md)`")


def references(text: str) -> list[tuple[str, str]]:
    """(kind, target) of every link and code-span file name outside fenced code blocks."""
    text = _FENCE.sub("", text)
    return ([("link", m) for m in _LINK.findall(text)]
            + [("code", m) for m in _CODE_PATH.findall(text)])


def unresolved(text: str, directory: Path) -> list[str]:
    """The targets in ``text``, a document in ``directory``, that are not files of the repo."""
    problems = []
    for kind, target in references(text):
        if kind == "link" and re.match(r"^(https?:|mailto:|#)", target):
            continue
        path = target.split("#", 1)[0]
        candidates = [(directory / path).resolve()]
        if kind == "code":  # a name in code may be written from the repository's root
            candidates.append((REPO_DIR / path).resolve())
        if not any(c.is_relative_to(REPO_DIR) and c.exists() for c in candidates):
            problems.append(target)
    return problems


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(REPO_DIR)))
def test_every_reference_resolves_inside_the_repository(doc: Path) -> None:
    assert unresolved(doc.read_text(), doc.parent) == []


def test_the_check_finds_broken_and_outside_references() -> None:
    text = ("[ok](deploy.md) [gone](missing.md#x) [out](../../../outside/DESIGN.md) "
            "[web](https://example.org/x.md) [top](#layout) `docs/contracts.md` `nowhere.md`\n"
            "```\n[in a code block](missing-too.md)\n```\n")
    assert [t for _, t in references(text)] == [
        "deploy.md", "missing.md#x", "../../../outside/DESIGN.md", "https://example.org/x.md",
        "#layout", "docs/contracts.md", "nowhere.md"]
    assert unresolved(text, REPO_DIR / "docs") == [
        "missing.md#x", "../../../outside/DESIGN.md", "nowhere.md"]

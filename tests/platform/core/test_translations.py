"""The API's messages in Simplified Chinese (issue 12: every error message the console shows is
translated). The console sends its language as Accept-Language; Django's LocaleMiddleware
activates it and each message is looked up in the app's catalogue (locale/zh_Hans, `make
messages`), Django's and DRF's own catalogues covering their messages.

These tests keep the catalogues honest: every message raised to a user is marked for translation
(not an f-string), every marked message has a translation with the same placeholders, and the
committed .mo files are what their .po files compile to.
"""

from __future__ import annotations

import ast
import gettext
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

PLATFORM = Path(__file__).resolve().parents[3] / "platform" / "sampan"
APPS = sorted(path.parent.name for path in PLATFORM.glob("*/apps.py"))
MARKERS = {"_", "gettext", "gettext_lazy", "gettext_noop", "ngettext", "ngettext_lazy"}
# the platform's errors (sampan.core.errors) and the validation errors of DRF and Django:
# their first argument is the message a person reads
ERROR_CLASSES = {"ApplicationError", "ValidationError", "InvalidName"}
PLACEHOLDER = re.compile(r"%\((\w+)\)[#0 +-]*\d*(?:\.\d+)?[a-zA-Z]")


def _sources(app: str | None = None) -> list[Path]:
    root = PLATFORM / app if app else PLATFORM
    return [path for path in sorted(root.rglob("*.py"))
            if "migrations" not in path.parts and "management" not in path.parts]


def _error_classes() -> set[str]:
    """ERROR_CLASSES and every class of the platform that derives from one of them."""
    names = set(ERROR_CLASSES)
    bases: dict[str, set[str]] = {}
    for path in _sources():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ClassDef):
                bases[node.name] = {getattr(base, "id", getattr(base, "attr", ""))
                                    for base in node.bases}
    grew = True
    while grew:
        grew = False
        for name, parents in bases.items():
            if name not in names and parents & names:
                names.add(name)
                grew = True
    return names


def _callee(node: ast.Call) -> str:
    return getattr(node.func, "id", getattr(node.func, "attr", ""))


def _is_literal_text(node: ast.expr) -> bool:
    """A message written in place, untranslated: "...", f"...", "..." % x, "..." + y."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str) and node.value.strip() != ""
    if isinstance(node, ast.JoinedStr):
        return True
    if isinstance(node, ast.BinOp):
        return _is_literal_text(node.left) or (isinstance(node.op, ast.Add)
                                               and _is_literal_text(node.right))
    return False


def _message_argument(node: ast.Call) -> ast.expr | None:
    if node.args:
        return node.args[0]
    for keyword in node.keywords:
        if keyword.arg in ("message", "detail"):
            return keyword.value
    return None


def test_every_message_raised_to_a_user_is_marked_for_translation() -> None:
    classes = _error_classes()
    untranslated = []
    for path in _sources():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.Call):
                continue
            name = _callee(node)
            if name in classes:
                message = _message_argument(node)
            elif name == "error_payload" and len(node.args) >= 2:
                message = node.args[1]
            else:
                continue
            if message is not None and _is_literal_text(message):
                untranslated.append(f"{path.relative_to(PLATFORM.parent)}:{node.lineno} "
                                    f"{ast.unparse(message)[:70]}")
    assert not untranslated, (
        "messages shown to users must be marked for translation (gettext as _, %-placeholders, "
        "then `make messages` and translate the new entries):\n" + "\n".join(untranslated))


def _marked_messages(app: str) -> dict[str, str]:
    """msgid -> where, for each literal passed to a gettext function in ``app``'s code."""
    found: dict[str, str] = {}
    for path in _sources(app):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (isinstance(node, ast.Call) and _callee(node) in MARKERS and node.args
                    and isinstance(node.args[0], ast.Constant)
                    and isinstance(node.args[0].value, str)):
                found.setdefault(node.args[0].value,
                                 f"{path.relative_to(PLATFORM.parent)}:{node.lineno}")
    return found


def _catalogue(mo: Path) -> dict[Any, str]:
    with mo.open("rb") as handle:
        catalogue = dict(gettext.GNUTranslations(handle)._catalog)  # type: ignore[attr-defined]
    catalogue.pop("", None)  # the header (its dates change at each `make messages`)
    return catalogue


def _po_and_mo(app: str) -> tuple[Path, Path]:
    folder = PLATFORM / app / "locale" / "zh_Hans" / "LC_MESSAGES"
    return folder / "django.po", folder / "django.mo"


@pytest.mark.parametrize("app", APPS)
def test_every_marked_message_has_a_chinese_translation_with_its_placeholders(app: str) -> None:
    marked = _marked_messages(app)
    po, mo = _po_and_mo(app)
    if not marked:
        assert not po.exists(), f"{po}: no message of {app} is marked any more"
        return
    assert mo.is_file(), f"{mo} is missing: run `make messages` and translate {po}"
    catalogue = _catalogue(mo)
    # a plural message (ngettext) is in the catalogue as (msgid, form)
    missing = [f"{where} {msgid!r}" for msgid, where in marked.items()
               if not (catalogue.get(msgid) or catalogue.get((msgid, 0)))]
    assert not missing, (f"untranslated in {po} (translate them, then `make messages`):\n"
                         + "\n".join(missing))
    for msgid, msgstr in catalogue.items():
        if isinstance(msgid, str):
            assert sorted(PLACEHOLDER.findall(msgstr)) == sorted(PLACEHOLDER.findall(msgid)), (
                f"{po}: the translation of {msgid!r} has other placeholders: {msgstr!r}")


@pytest.mark.parametrize("app", APPS)
def test_the_committed_mo_files_are_their_po_files_compiled(app: str, tmp_path: Path) -> None:
    po, mo = _po_and_mo(app)
    if not po.exists():
        return
    assert shutil.which("msgfmt"), "GNU gettext's msgfmt is needed: apt-get install -y gettext"
    compiled = tmp_path / "django.mo"
    # --check: placeholders of python-format entries agree, headers are complete
    subprocess.run(["msgfmt", "--check", "-o", str(compiled), str(po)], check=True)
    assert _catalogue(compiled) == _catalogue(mo), f"{mo} is older than {po}: run `make messages`"


@pytest.mark.django_db
def test_the_answer_is_in_the_language_the_client_asks_for(
        project_with_roles: dict[str, Any], api: Any) -> None:
    owner, project = project_with_roles["owner"], project_with_roles["project"]
    members = f"/api/v1/projects/{project.pk}/members/"
    body = {"username": "nobody-here", "role": "viewer"}

    english = api(owner).post(members, body, format="json")
    assert english.status_code == 400
    assert english.json()["error"]["message"].startswith("no user named 'nobody-here'")

    chinese = api(owner).post(members, body, format="json", HTTP_ACCEPT_LANGUAGE="zh-CN")
    assert chinese.status_code == 400
    error = chinese.json()["error"]
    assert error["code"] == "invalid" and error["field"] == "username"
    assert "'nobody-here'" in error["message"] and "用户" in error["message"], error
    assert chinese["Content-Language"] == "zh-hans"

    # DRF's own messages come from DRF's catalogue
    choice = api(owner).post(members, {"username": "nobody-here", "role": "emperor"},
                             format="json", HTTP_ACCEPT_LANGUAGE="zh-CN,zh;q=0.9,en;q=0.8")
    assert choice.status_code == 400
    assert choice.json()["error"]["field"] == "role"
    assert "emperor" in choice.json()["error"]["message"]
    assert re.search("[\u4e00-\u9fff]", choice.json()["error"]["message"]), choice.json()


def test_no_function_that_translates_binds_the_name_underscore() -> None:
    """``key, _, value = ...`` in a function that also calls ``_()`` makes ``_`` a local there:
    the call raises UnboundLocalError (a 500) where a message is raised."""
    scopes = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ListComp, ast.SetComp,
              ast.DictComp, ast.GeneratorExp)
    shadowed = []
    for path in _sources():
        tree = ast.parse(path.read_text(), str(path))
        for scope in ast.walk(tree):
            if not isinstance(scope, scopes):
                continue
            nodes = list(ast.walk(scope))
            binds = any((isinstance(n, ast.Name) and n.id == "_"
                         and isinstance(n.ctx, (ast.Store, ast.Del)))
                        or (isinstance(n, ast.arg) and n.arg == "_") for n in nodes)
            calls = any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                        and n.func.id == "_" for n in nodes)
            if binds and calls:
                shadowed.append(f"{path.relative_to(PLATFORM.parent)}:{scope.lineno}")
    assert not shadowed, "rename the variable `_` (e.g. `_unused`) in:\n" + "\n".join(shadowed)

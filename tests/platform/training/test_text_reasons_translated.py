"""The text training engine's sentences (why a candidate family or fit was skipped, how its plan
was made, why a text was left out, the encoder's weights note), stored in English with the job,
are shown in the request's language by the API (sampan.training.stored_texts,
sampan.training.notes); keys, names and figures unchanged, English as stored. The sentences are
the worker's own constants (workers.ml.text.reasons) formatted with sample values, and the
reasons of a real small run; no sentence is written in workers/ml/text outside those constants.
"""

from __future__ import annotations

import ast
import random
import re
from pathlib import Path
from typing import Any

import pytest
from django.utils import translation
from django.utils.translation import gettext
from rest_framework.test import APIClient

from sampan.core.jobs import JobStatus
from sampan.training import services
from sampan.training.models import EvaluationReport, TrainingJob
from sampan.training.notes import WEIGHTS_NOTES
from sampan.training.stored_texts import (
    PLAN_REASONS,
    SAMPLE_REASONS,
    SKIPPED,
    SKIPPED_REASONS,
    report_text,
    text_recipe_text,
)
from tests.platform.training.test_text_training import text_version
from workers.ml.text import reasons
from workers.ml.text.train import TextSample, TextTrainRequest, train_text_classifier

CHINESE = {"HTTP_ACCEPT_LANGUAGE": "zh-hans"}
TEXT_ENGINE = Path(reasons.__file__).parent
PLACEHOLDER = re.compile(r"%\((\w+)\)[#0 +-]*\d*(?:\.\d+)?[a-zA-Z]")
HAN = re.compile(r"[\u4e00-\u9fff]")
#: sample values, one per parameter name the engine's sentences use
VALUES: dict[str, Any] = {"left": 5.14, "minimum": 7.31, "first": "linear",
                          "encoder": "all-MiniLM-L6-v2", "variable": "SAMPAN_TEXT_ENCODER_DIR",
                          "share": 12.4, "needed": 41.6, "validation": 80, "train": 200}


def made(template: str) -> str:
    """``template`` as the engine writes it, with the sample values."""
    return template % VALUES


def figures(template: str) -> list[str]:
    """Each parameter of ``template`` as the engine formats it ("5.1", "linear", "80")."""
    return [found.group(0) % VALUES for found in PLACEHOLDER.finditer(template)]


def chinese(template: str) -> str:
    """What the API should answer in Chinese: the template's translation, same values."""
    with translation.override("zh-hans"):
        return gettext(template) % VALUES


def _fitted(fit: str) -> dict[str, Any]:
    return {"fit": fit, "family": "linear", "solver": "adam", "val_accuracy": 0.9,
            "val_balanced_accuracy": 0.9, "val_loss": 0.3, "steps_done": 40, "kept_epoch": 3}


def stored_recipe(skipped: str, fit_skipped: str, plan_reason: str) -> dict[str, Any]:
    """A text job's recipe shaped as workers/tasks/training.py stores it (the engine's recipe
    with ``family`` and ``candidates``): a family skipped with two fits' reasons, a fit of the
    winning family and the encoder's fine-tuning skipped, a plan entry's reason."""
    return {
        "schema": "sampan.text-recipe/1", "seed": 0, "winner": "linear", "family": "linear",
        "plan": {"linear": {"reason": plan_reason, "planned_steps": 40, "threads": 1},
                 "linear_lbfgs": {"skipped": fit_skipped},
                 "fasttext": {"skipped": skipped},
                 "charcnn": {"skipped": skipped},
                 "encoder": {"finetune_epochs": 0, "train_rows": 200}},
        "candidates": {
            "linear": {**_fitted("linear"), "fits": {
                "linear": _fitted("linear"),
                "linear_lbfgs": {"fit": "linear_lbfgs", "solver": "lbfgs",
                                 "skipped": fit_skipped}}},
            "fasttext": {"family": "fasttext", "skipped": skipped},
            "charcnn": {"family": "charcnn",
                        "skipped": reasons.SKIPPED_SEPARATOR.join([skipped, fit_skipped])},
            "encoder": {"family": "encoder", "fit": "frozen", "fits": {
                "frozen": {"val_accuracy": 0.8, "c": 1.0},
                "finetune": {"skipped": fit_skipped}}},
        },
    }


@pytest.fixture
def text_job(project_with_roles: dict[str, Any]) -> dict[str, Any]:
    project = project_with_roles["project"]
    version = text_version(project, n=10)
    job = services.training_job_create(project=project, dataset_version=version, budget_s=60)
    client = APIClient()
    client.force_authenticate(project_with_roles["viewer"])
    base = f"/api/v1/projects/{project.pk}/training-jobs/{job.pk}/"
    return {"job": job, "client": client, "url": base, "report": f"{base}report/"}


def store(job: TrainingJob, recipe: dict[str, Any], note: str, sample_reason: str) -> None:
    """What services.training_job_complete stores of a text engine's result."""
    EvaluationReport.objects.update_or_create(training_job=job, defaults={
        "labels": ["正面", "负面"], "split": "test", "parity": {"passed": True},
        "report": {"split": "test", "accuracy": 1.0, "skipped_samples": [
            {"sample_id": "tr3", "split": "train", "reason": sample_reason},
            {"sample_id": "va1", "split": "val", "reason": "a reason of another engine"}]}})
    TrainingJob.objects.filter(pk=job.pk).update(
        status=JobStatus.SUCCEEDED, pretrained=True, weights_note=note, recipe=recipe,
        history=[], metrics={"evaluated_on": "test", "winner": "linear", "family": "linear"})


@pytest.mark.django_db
@pytest.mark.parametrize("template", reasons.SKIPPED)
def test_each_skipped_reason_reads_in_chinese_through_the_api(
        text_job: dict[str, Any], template: str) -> None:
    other = reasons.FINETUNE_NO_EPOCH if template != reasons.FINETUNE_NO_EPOCH \
        else reasons.NOT_PLANNED
    recipe = stored_recipe(made(template), made(other), made(reasons.PLAN_ALL_FIT))
    store(text_job["job"], recipe, made(reasons.ENCODER_WEIGHTS_NOTE), made(reasons.EMPTY_TEXT))
    english = text_job["client"].get(text_job["url"]).json()
    assert english["recipe"] == recipe  # as stored
    answer = text_job["client"].get(text_job["url"], **CHINESE).json()["recipe"]
    expected = chinese(template)
    assert expected != made(template) and HAN.search(expected), expected
    for figure in figures(template):
        assert figure in expected
    assert answer["candidates"]["fasttext"] == {"family": "fasttext", "skipped": expected}
    assert answer["plan"]["fasttext"]["skipped"] == expected
    # a family's reasons, one per fit, joined: each read, joined in Chinese
    assert answer["candidates"]["charcnn"]["skipped"] == f"{expected}；{chinese(other)}"
    assert answer["candidates"]["linear"]["fits"]["linear_lbfgs"]["skipped"] == chinese(other)
    assert answer["candidates"]["encoder"]["fits"]["finetune"]["skipped"] == chinese(other)
    # keys, names and figures unchanged
    assert answer["candidates"]["linear"]["fits"]["linear"] == recipe["candidates"]["linear"][
        "fits"]["linear"]
    assert answer["candidates"]["encoder"]["fits"]["frozen"] == {"val_accuracy": 0.8, "c": 1.0}
    assert answer["plan"]["encoder"] == recipe["plan"]["encoder"]
    assert {k: v for k, v in answer.items() if k not in ("candidates", "plan")} == {
        k: v for k, v in recipe.items() if k not in ("candidates", "plan")}


@pytest.mark.django_db
@pytest.mark.parametrize("template", reasons.PLAN)
def test_each_plan_reason_reads_in_chinese_through_the_api(
        text_job: dict[str, Any], template: str) -> None:
    recipe = stored_recipe(made(reasons.NOT_PLANNED), made(reasons.NOT_PLANNED), made(template))
    store(text_job["job"], recipe, "", made(reasons.EMPTY_TEXT))
    english = text_job["client"].get(text_job["url"]).json()["recipe"]
    assert english["plan"]["linear"]["reason"] == made(template)
    answer = text_job["client"].get(text_job["url"], **CHINESE).json()["recipe"]
    expected = chinese(template)
    assert expected != made(template) and HAN.search(expected), expected
    assert answer["plan"]["linear"] == {**recipe["plan"]["linear"], "reason": expected}
    for figure in figures(template):
        assert figure in answer["plan"]["linear"]["reason"]


@pytest.mark.django_db
def test_the_encoders_note_and_a_left_out_texts_reason_read_in_chinese(
        text_job: dict[str, Any]) -> None:
    recipe = stored_recipe(made(reasons.NOT_PLANNED), made(reasons.NOT_PLANNED),
                           made(reasons.PLAN_ALL_FIT))
    store(text_job["job"], recipe, made(reasons.ENCODER_WEIGHTS_NOTE), made(reasons.EMPTY_TEXT))
    client = text_job["client"]
    assert client.get(text_job["url"]).json()["weights_note"] == \
        "all-MiniLM-L6-v2 (sentence-transformers, Apache-2.0)"
    note = client.get(text_job["url"], **CHINESE).json()["weights_note"]
    assert note == chinese(reasons.ENCODER_WEIGHTS_NOTE) and note.startswith("all-MiniLM-L6-v2 ")
    assert HAN.search(note)
    english = client.get(text_job["report"]).json()
    assert english["report"]["skipped_samples"][0]["reason"] == reasons.EMPTY_TEXT
    answer = client.get(text_job["report"], **CHINESE).json()
    assert answer["weights_note"] == note
    assert answer["report"]["skipped_samples"] == [
        {"sample_id": "tr3", "split": "train", "reason": chinese(reasons.EMPTY_TEXT)},
        # a sentence of another form: as stored
        {"sample_id": "va1", "split": "val", "reason": "a reason of another engine"}]
    assert answer["report"]["accuracy"] == 1.0


def test_a_text_of_another_form_and_an_image_recipe_are_shown_as_stored() -> None:
    image = {"resolution": 96, "stop_reason": "deadline",
             "resolution_reason": "a reason in English", "plan": ["not", "a", "dict"]}
    odd = {"candidates": {"linear": {"skipped": "budget: a newer engine's reason"},
                          "fasttext": "not a dict", "charcnn": {"skipped": 3}},
           "plan": {"linear": {"reason": "an older engine's reason"}}}
    with translation.override("zh-hans"):
        assert text_recipe_text(image) == image
        assert text_recipe_text(odd) == odd
        assert text_recipe_text(None) is None
        assert report_text({"accuracy": 1.0}) == {"accuracy": 1.0}
        # one known reason joined with an unknown one: the whole text as stored
        mixed = f"{reasons.NOT_PLANNED}; something new"
        assert SKIPPED.read(mixed) == mixed


# -- every sentence of the engine has its template ---------------------------------------------


def _platform_msgids() -> set[str]:
    return {*SKIPPED_REASONS.templates, *PLAN_REASONS.templates, *SAMPLE_REASONS.templates,
            *WEIGHTS_NOTES.templates}


def test_the_platforms_msgids_are_the_workers_own_sentences() -> None:
    constants = {name: value for name, value in vars(reasons).items()
                 if name.isupper() and isinstance(value, str)}
    # every sentence constant is listed (a new one not listed would escape the checks below)
    assert set(constants.values()) - {reasons.SKIPPED_SEPARATOR} == set(reasons.SENTENCES)
    assert set(reasons.SENTENCES) <= _platform_msgids(), \
        set(reasons.SENTENCES) - _platform_msgids()
    assert set(SKIPPED_REASONS.templates) == set(reasons.SKIPPED)
    assert set(PLAN_REASONS.templates) == set(reasons.PLAN)
    assert set(SAMPLE_REASONS.templates) == set(reasons.SAMPLES)
    assert SKIPPED.separator == reasons.SKIPPED_SEPARATOR
    with translation.override("zh-hans"):
        for template in reasons.SENTENCES:
            assert gettext(template) != template, f"no Chinese for {template!r}"


#: strings with words outside reasons.py that never reach a stored result: the parity gate's
#: reasons go into the exception it raises (the job's error: "training failed: ...")
_NOT_STORED = ("no texts to compare", "output shapes differ: torch ")
_WORDS = re.compile(r"[A-Za-z]{2,} [A-Za-z]|[A-Za-z] [A-Za-z]{2,}")


def _sentences_written_in(path: Path) -> list[tuple[int, str]]:
    """Each string of ``path`` with words in it (f-strings included) outside a docstring and a
    ``raise`` (an exception's own message is shown as written)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            skip.add(id(node.value))  # a docstring
        if isinstance(node, ast.Raise):
            skip.update(id(inner) for inner in ast.walk(node))
    found = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.JoinedStr):
            text = "".join(part.value for part in node.values
                           if isinstance(part, ast.Constant) and isinstance(part.value, str))
            skip.update(id(part) for part in node.values)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
        else:
            continue
        if _WORDS.search(text) and not text.startswith(_NOT_STORED):
            found.append((node.lineno, text))
    return found


def test_no_sentence_is_written_in_the_text_engine_outside_its_constants() -> None:
    modules = sorted(p for p in TEXT_ENGINE.glob("*.py") if p.name != "reasons.py")
    assert {p.name for p in modules} >= {"train.py", "encoder.py"}
    written = {f"{p.name}:{line}": text for p in modules
               for line, text in _sentences_written_in(p)}
    assert written == {}, ("write these sentences in workers/ml/text/reasons.py, with a template "
                           "in sampan.training.stored_texts and a Chinese translation")


def test_the_scan_finds_a_skipped_f_string(tmp_path: Path) -> None:
    source = tmp_path / "new.py"
    source.write_text('"""A module."""\n\n\ndef plan(left):\n'
                      '    """Docstring words are fine."""\n'
                      '    if left < 0:\n        raise ValueError(f"bad value {left}")\n'
                      '    return {"skipped": f"budget: {left:.1f} s are not enough"}\n')
    assert _sentences_written_in(source) == [(8, "budget:  s are not enough")]


# -- a real small run: every reason it stores parses ----------------------------------------

WORDS = [["很好", "喜欢", "满意", "推荐"], ["很差", "讨厌", "失望", "退货"]]
FILLER = ["这个", "东西", "我们", "今天", "买了", "手机", "这本书", "酒店", "房间", "快递"]


def _samples(n: int, seed: int, prefix: str) -> list[TextSample]:
    generator = random.Random(seed)
    return [TextSample("".join(generator.choice(FILLER) for _ in range(3))
                       + generator.choice(WORDS[i % 2]), i % 2, f"{prefix}{i}")
            for i in range(n)]


def _texts(value: Any, key: str | None = None) -> list[tuple[str, str]]:
    """Every (key, text) under a ``skipped`` or ``reason`` key of ``value``."""
    if isinstance(value, dict):
        return [found for k, v in value.items() for found in _texts(v, k)]
    if isinstance(value, list):
        return [found for v in value for found in _texts(v, key)]
    return [(key, value)] if key in ("skipped", "reason") and isinstance(value, str) else []


def test_every_reason_of_a_real_small_run_reads_in_chinese(tmp_path: Path) -> None:
    # a budget too small for every candidate: the others are skipped or shortened, saying why
    train = _samples(120, 0, "tr") + [TextSample(" \u3000 ", 0, "blank")]
    result = train_text_classifier(TextTrainRequest(
        train=train, val=_samples(40, 1, "va"), test=_samples(40, 2, "te"),
        labels=["正面", "负面"], out_dir=tmp_path, budget_s=2.0))
    recipe = {**result.recipe, "family": result.family, "candidates": result.candidates}
    stored = _texts(recipe)
    assert ("skipped", reasons.EMPTY_TEXT) not in stored
    assert any(key == "skipped" for key, _ in stored), recipe  # the encoder, at least
    assert any(key == "reason" for key, _ in stored), recipe
    with translation.override("zh-hans"):
        shown = _texts(text_recipe_text(recipe))
        samples = report_text(result.report)["skipped_samples"]
    assert len(shown) == len(stored)
    for (key, english), (_, translated) in zip(stored, shown, strict=True):
        assert translated != english and HAN.search(translated), (key, english)
    assert samples == [{"sample_id": "blank", "split": "train",
                        "reason": chinese(reasons.EMPTY_TEXT)}]

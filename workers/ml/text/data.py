"""Texts featurised once (:func:`edge_agent.text.featurize`), held as flat arrays, and the
batches training and evaluation draw from them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from edge_agent.text import TextFeatures, TextFeaturesError, featurize, idf, pad_batch

__all__ = ["FeaturizedTexts", "featurize_texts"]


@dataclass
class FeaturizedTexts:
    """``n`` texts' features one after the other: text i is ``indices[starts[i]:starts[i+1]]``
    with ``weights`` alike (a bag of n-grams, or a character sequence in order: the featurising
    settings' ``kind``); ``labels`` (n,) int64; ``truncated``: texts longer than
    ``max_chars``."""

    indices: np.ndarray
    weights: np.ndarray
    starts: np.ndarray
    labels: np.ndarray
    truncated: int
    #: positions (in the texts given) of the texts left out: empty after normalisation
    skipped: list[int]

    def __len__(self) -> int:
        return len(self.labels)

    def flat(self, rows: np.ndarray) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor,
                                              torch.Tensor]:
        """(indices (T,), weights (T,), offsets (B,), segments (T,)) of ``rows``, for
        :meth:`workers.ml.text.model.TextClassifier.flat_logits`."""
        begins = self.starts[rows]
        lengths = self.starts[rows + 1] - begins
        offsets = np.cumsum(lengths) - lengths
        total = int(lengths.sum())
        position = np.arange(total, dtype=np.int64) + np.repeat(begins - offsets, lengths)
        segments = np.repeat(np.arange(len(rows), dtype=np.int64), lengths)
        return (torch.from_numpy(self.indices[position]),
                torch.from_numpy(self.weights[position]),
                torch.from_numpy(offsets.astype(np.int64)), torch.from_numpy(segments))

    def padded(self, rows: Sequence[int] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(indices (B, Lmax) int64, weights (B, Lmax) float32) of ``rows``, as
        :func:`edge_agent.text.pad_batch` pads them: what the exported graph is given."""
        return pad_batch([(self.indices[self.starts[i] : self.starts[i + 1]],
                           self.weights[self.starts[i] : self.starts[i + 1]])
                          for i in map(int, rows)])

    def document_frequency(self, buckets: int) -> np.ndarray:
        """Texts per bucket (each text's indices are unique: ``ngrams`` settings; a ``chars``
        sequence repeats its characters, and its model needs no IDF), (buckets,) int64."""
        return np.bincount(self.indices, minlength=buckets).astype(np.int64)

    def idf(self, buckets: int) -> np.ndarray:
        """The smoothed IDF of the buckets over these texts (:func:`edge_agent.text.idf`)."""
        return idf(self.document_frequency(buckets), len(self))


def featurize_texts(texts: Sequence[str], labels: Sequence[int], settings: TextFeatures,
                    tick: Callable[[], object] = lambda: None,
                    skip_empty: bool = False) -> FeaturizedTexts:
    """Featurise every text (``tick`` is called every 256 texts: progress, cancellation).
    With ``skip_empty`` a text with nothing left after normalisation is left out (its position
    goes to ``skipped``) instead of raising.

    Raises:
        edge_agent.text.TextFeaturesError: a text cannot be featurised (``params`` gains
            ``index``, its position in ``texts``).
    """
    indices: list[np.ndarray] = []
    weights: list[np.ndarray] = []
    lengths = np.zeros(len(texts) + 1, dtype=np.int64)
    kept_labels: list[int] = []
    skipped: list[int] = []
    truncated = 0
    for i, text in enumerate(texts):
        if i % 256 == 0:
            tick()
        try:
            out = featurize(text, settings)
        except TextFeaturesError as error:
            if skip_empty and error.kind == "empty":
                skipped.append(i)
                continue
            error.params["index"] = i
            raise
        indices.append(out.indices)
        weights.append(out.weights)
        lengths[len(kept_labels) + 1] = len(out.indices)
        kept_labels.append(int(labels[i]))
        truncated += int(out.truncated)
    return FeaturizedTexts(
        indices=np.concatenate(indices) if indices else np.zeros(0, np.int64),
        weights=np.concatenate(weights) if weights else np.zeros(0, np.float32),
        starts=np.cumsum(lengths[: len(kept_labels) + 1]),
        labels=np.asarray(kept_labels, dtype=np.int64),
        truncated=truncated,
        skipped=skipped,
    )

"""The text classifier's graph: hashed n-gram features in, class probabilities out.

Both families take what :func:`edge_agent.text.featurize` gives, padded (:func:`edge_agent.text.
pad_batch`): ``indices`` (B, L) int64 and ``weights`` (B, L) float32 (term frequencies; 0 on
padding), and compute

    w = weights * scale[indices]            (Gather, Mul: the learned IDF of each bucket)
    w = w / max(||w||_2, 1e-12)             (per text: TF-IDF, L2-normalised)
    h = sum_l w_l * table[indices_l]        (Gather, Mul, ReduceSum over L)
    probabilities = softmax(head(h))

- ``linear``: ``table`` (buckets, C) and a bias: logistic regression over the TF-IDF features.
- ``fasttext``: ``table`` (buckets, dim) of n-gram embeddings, averaged with the TF-IDF weights,
  then ``Linear(dim, C)`` (Joulin et al. 2016, "Bag of Tricks for Efficient Text
  Classification"; weighted by TF-IDF instead of uniformly: measured the same, see
  docs/decisions/text-classification.md).

The exported graph is plain Gather/Mul/ReduceSum (no sparse operator, no EmbeddingBag); training
runs the same arithmetic on flat, unpadded batches with ``embedding_bag`` (sparse gradients:
only the rows of the n-grams in a batch are touched), see :meth:`TextClassifier.flat_logits`.
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["FAMILIES", "TextClassifier"]

FAMILIES = ("linear", "fasttext")
_EPS = 1e-12


class TextClassifier(nn.Module):
    """(indices (B, L) int64, weights (B, L) float32) -> probabilities (B, C) (module
    docstring). ``scale`` (buckets,): the per-bucket IDF, learned from the training texts and
    stored in the graph (ones until :meth:`set_scale`).

    The table starts at zeros: a bucket no training text reached stays exactly 0 and adds
    nothing at serving time. The fastText head starts at PyTorch's default initialisation, so
    the table's gradients are not zero at the start.
    """

    def __init__(self, family: str, buckets: int, n_classes: int, dim: int = 64) -> None:
        super().__init__()
        if family not in FAMILIES:
            raise ValueError(f"unknown text model family {family!r}: one of {FAMILIES}")
        if n_classes < 2:
            raise ValueError("a classifier needs at least 2 classes")
        self.family = family
        self.buckets = buckets
        self.n_classes = n_classes
        self.dim = n_classes if family == "linear" else dim
        self.scale: torch.Tensor
        self.register_buffer("scale", torch.ones(buckets))
        self.table = nn.Parameter(torch.zeros(buckets, self.dim))
        self.bias = nn.Parameter(torch.zeros(n_classes)) if family == "linear" else None
        self.head = nn.Linear(dim, n_classes) if family == "fasttext" else None

    def set_scale(self, scale: torch.Tensor) -> None:
        self.scale.copy_(scale.to(torch.float32))

    def _out(self, hidden: torch.Tensor) -> torch.Tensor:
        if self.head is not None:
            out: torch.Tensor = self.head(hidden)
            return out
        assert self.bias is not None
        return hidden + self.bias

    def logits(self, indices: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        """The exported path: padded (B, L) inputs -> logits (B, C)."""
        scaled = weights * self.scale[indices]
        norm = torch.sqrt(torch.sum(scaled * scaled, dim=1, keepdim=True))
        normalized = scaled / torch.clamp(norm, min=_EPS)
        hidden = torch.sum(self.table[indices] * normalized.unsqueeze(-1), dim=1)
        return self._out(hidden)

    def forward(self, indices: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        return torch.softmax(self.logits(indices, weights), dim=-1)

    def flat_logits(self, indices: torch.Tensor, weights: torch.Tensor, offsets: torch.Tensor,
                    segments: torch.Tensor) -> torch.Tensor:
        """The training path, same arithmetic as :meth:`logits` on unpadded texts: ``indices``
        and ``weights`` (T,) of all texts one after the other, ``offsets`` (B,) where each text
        starts, ``segments`` (T,) the text of each entry. Sparse gradients for ``table``."""
        scaled = weights * self.scale[indices]
        squares = torch.zeros(len(offsets), dtype=scaled.dtype).index_add_(0, segments,
                                                                           scaled * scaled)
        normalized = scaled / torch.clamp(torch.sqrt(squares), min=_EPS)[segments]
        hidden = nn.functional.embedding_bag(indices, self.table, offsets, mode="sum",
                                             per_sample_weights=normalized, sparse=True)
        return self._out(hidden)

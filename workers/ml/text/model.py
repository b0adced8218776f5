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

- ``charcnn`` (:class:`CharCNN`): the same two inputs, from ``TextFeatures(kind="chars")``: the
  text's characters in order (hashed) and weight 1.0 per character, 0 on padding (the mask).
  Embedding of each character (zero on padding), parallel ``Conv1d`` of several widths, ReLU,
  max over the text's positions, dropout, ``Linear`` (Kim 2014, "Convolutional Neural Networks
  for Sentence Classification"; Zhang et al. 2015, character-level). Trained on the padded
  batches the graph takes (Adam; sparse rows for the embedding table, as the other families).
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["BAG_FAMILIES", "FAMILIES", "CharCNN", "TextClassifier", "TextModel",
           "new_text_model"]

#: Families over a bag of n-grams (``TextFeatures(kind="ngrams")``): :class:`TextClassifier`.
BAG_FAMILIES = ("linear", "fasttext")
#: Every family; ``charcnn`` takes ``TextFeatures(kind="chars")``: :class:`CharCNN`.
FAMILIES = (*BAG_FAMILIES, "charcnn")
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
        if family not in BAG_FAMILIES:
            raise ValueError(f"unknown text model family {family!r}: one of {BAG_FAMILIES}")
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


class CharCNN(nn.Module):
    """(indices (B, L) int64, weights (B, L) float32) -> probabilities (B, C): a character CNN
    over ``TextFeatures(kind="chars")`` (module docstring). A position is a character when its
    weight is > 0; padding (weight 0) is masked twice: its embedding is zero, and its windows
    are left out of the max.

    Each convolution of width ``k`` sees the sequence padded inside the graph with ``k - 1``
    zero vectors at the end, so it has one output per position (the window starting there),
    any ``L`` >= 1 works (shorter than the widest kernel included), and a text gives the same
    answer alone or padded in a batch of longer texts (the extra positions are zeros either way
    and masked). ReLU outputs are >= 0, so multiplying the padded windows by 0 before the max is
    the masked max (every text has at least one character).
    """

    family = "charcnn"

    def __init__(self, buckets: int, n_classes: int, dim: int = 64, filters: int = 128,
                 widths: tuple[int, ...] = (2, 3, 4), dropout: float = 0.5) -> None:
        super().__init__()
        if n_classes < 2:
            raise ValueError("a classifier needs at least 2 classes")
        if not widths or any(k < 1 for k in widths) or filters < 1 or dim < 1:
            raise ValueError("charcnn: widths, filters and dim must be >= 1")
        self.buckets = buckets
        self.n_classes = n_classes
        self.dim = dim
        self.filters = filters
        self.widths = tuple(int(k) for k in widths)
        self.embedding = nn.Parameter(torch.randn(buckets, dim) * 0.1)
        self.convs = nn.ModuleList(nn.Conv1d(dim, filters, k) for k in self.widths)
        self.dropout = nn.Dropout(dropout)
        self.head = nn.Linear(filters * len(self.widths), n_classes)

    def logits(self, indices: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        """Padded (B, L) inputs -> logits (B, C): the exported path and the training path."""
        mask = (weights > 0).to(self.embedding.dtype)
        # sparse gradient: a step touches the rows of its batch's characters only (the export
        # is a plain Gather)
        rows = nn.functional.embedding(indices, self.embedding, sparse=True)
        x = (rows * mask.unsqueeze(-1)).transpose(1, 2)  # (B, dim, L)
        window_mask = mask.unsqueeze(1)  # (B, 1, L)
        pooled = [torch.amax(torch.relu(conv(nn.functional.pad(x, (0, k - 1)))) * window_mask,
                             dim=2)
                  for k, conv in zip(self.widths, self.convs, strict=True)]
        out: torch.Tensor = self.head(self.dropout(torch.cat(pooled, dim=1)))
        return out

    def forward(self, indices: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        return torch.softmax(self.logits(indices, weights), dim=-1)


#: A text model's graph, of any family.
TextModel = TextClassifier | CharCNN


def new_text_model(family: str, buckets: int, n_classes: int, dim: int = 64,
                   filters: int = 128, widths: tuple[int, ...] = (2, 3, 4),
                   dropout: float = 0.5) -> TextModel:
    """The graph of ``family`` (``filters``, ``widths``, ``dropout``: ``charcnn`` only)."""
    if family == "charcnn":
        return CharCNN(buckets, n_classes, dim, filters, widths, dropout)
    return TextClassifier(family, buckets, n_classes, dim)

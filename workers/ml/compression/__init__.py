"""Compression of trained classifiers (no Django): :func:`compress_classifier` makes candidates
(fp32 reference, INT8 QDQ, distilled students at a lower resolution or pruned, FP16 on GPUs) and
measures their accuracy; picking one by its latency on the device is the caller's
(:func:`pick`)."""

from .engine import compress_classifier
from .pick import pick
from .specs import Candidate, CompressionCancelled, CompressRequest, CompressResult, Teacher

__all__ = ["Candidate", "CompressRequest", "CompressResult", "CompressionCancelled", "Teacher",
           "compress_classifier", "pick"]

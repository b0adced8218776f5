"""Compression of trained classifiers (no Django): :func:`compress_classifier` makes candidates
(fp32 reference, INT8 QDQ, distilled students at a lower resolution or pruned, FP16 on GPUs) and
measures their accuracy; :func:`compress_text_classifier` does the same for text classifiers
(fp32, INT8 dynamic quantization); picking one by its latency on the device is the caller's
(:func:`pick`)."""

from .engine import compress_classifier
from .pick import pick
from .specs import (Candidate, CompressionCancelled, CompressRequest, CompressResult, Teacher,
                    TextCompressRequest)
from .text import compress_text_classifier

__all__ = ["Candidate", "CompressRequest", "CompressResult", "CompressionCancelled", "Teacher",
           "TextCompressRequest", "compress_classifier", "compress_text_classifier", "pick"]

"""Graph-level candidates, made with onnxruntime's own tools: the fp32 reference (offline graph
optimisation), INT8 post-training static quantization in QDQ form, and FP16.

No training here: these take an ONNX classifier (input ``input`` (N, 3, H, W) float32, output
``probabilities`` (N, C)) and write another one with the same signature.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime
from onnxruntime.quantization import (CalibrationDataReader, CalibrationMethod, QuantFormat,
                                      QuantType, quant_pre_process, quantize_dynamic,
                                      quantize_static)

from ..export import onnx_info

__all__ = ["CALIBRATION_METHODS", "DYNAMIC_OP_TYPES", "GPU_PROVIDERS", "METADATA_PREFIX",
           "MIN_CALIBRATION_IMAGES", "convert_fp16", "copy_metadata", "onnx_info",
           "optimise_fp32", "quantize_dynamic_int8", "quantize_int8"]


log = logging.getLogger(__name__)

#: Fewer calibration images than this give activation ranges from too few samples: INT8 is then
#: not attempted (the job says so). 10 is the floor the issue sets; onnxruntime's examples
#: calibrate on 100-500 images.
MIN_CALIBRATION_IMAGES = 10
#: onnxruntime's calibration methods tried, by name (``CalibrationMethod``). MinMax is the
#: default of ``quantize_static``; Percentile (99.999th) clips rare outliers that stretch a
#: MinMax range.
CALIBRATION_METHODS = {"minmax": CalibrationMethod.MinMax,
                       "percentile": CalibrationMethod.Percentile,
                       "entropy": CalibrationMethod.Entropy}
#: Execution providers that run FP16 kernels natively (a CPU provider emulates FP16 with casts).
GPU_PROVIDERS = frozenset({"CUDAExecutionProvider", "TensorrtExecutionProvider",
                           "DmlExecutionProvider", "ROCMExecutionProvider",
                           "CoreMLExecutionProvider"})


def tidy_graph(path: Path) -> None:
    """Rewrite ``path`` without what a runtime does not need: opset imports no node uses
    (onnxruntime's optimiser imports every domain it knows, ``com.microsoft.nchwc``,
    ``ai.onnx.training``, ``org.pytorch.aten``, ... and a device would read requirements the model
    does not have), long node names (``n<i>`` instead), intermediate shape annotations, doc strings,
    and long tensor names (``/model/features/features.3/conv/conv.0/conv.0.0/Conv_output_0_
    QuantizeLinear``: QDQ doubles the tensors; ~100 KB of a 2.6 MB INT8 MobileNetV2), which become
    ``t<n>``. The graph's input and output keep their names; the computation is unchanged."""
    model = onnx.load(str(path))
    graph = model.graph
    keep = {value.name for value in graph.input} | {value.name for value in graph.output}
    names: dict[str, str] = {}

    def short(name: str) -> str:
        if not name or name in keep:
            return name
        return names.setdefault(name, f"t{len(names)}")

    for tensor in graph.initializer:
        tensor.name = short(tensor.name)
    for index, node in enumerate(graph.node):
        # short but unique: the quantizer tells nodes apart by name (with every name empty,
        # excluding the softmax by name excluded every node)
        node.name = f"n{index}"
        node.doc_string = ""
        node.input[:] = [short(name) for name in node.input]
        node.output[:] = [short(name) for name in node.output]
    del graph.value_info[:]
    used = {node.domain or "" for node in graph.node} | {""}
    kept = [o for o in model.opset_import if (o.domain or "") in used]
    del model.opset_import[:]
    model.opset_import.extend(kept)
    model.doc_string = ""
    graph.doc_string = ""
    onnx.save(model, str(path))


def optimise_fp32(source: Path, target: Path) -> Path:
    """onnxruntime's offline graph optimisation at the BASIC level (constant folding, redundant
    node elimination, Conv+BatchNorm style fusions that stay standard ONNX), saved to ``target``.

    BASIC, not EXTENDED/ALL: those write onnxruntime-internal fused operators (com.microsoft
    FusedConv, NCHWc layouts) that only the same build and provider can load (onnxruntime docs,
    "Graph optimizations: online/offline mode"); a device with another onnxruntime must load this
    file too."""
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_BASIC
    options.optimized_model_filepath = str(target)
    onnxruntime.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])
    tidy_graph(target)
    return target


_BATCH = 16


class _Batches(CalibrationDataReader):  # type: ignore[misc]  # onnxruntime is untyped (Any)
    """Feeds preprocessed (n, 3, H, W) float32 batches to the calibrator, one image at a time
    (the quantizer's augmented graph is run once per item); a remainder smaller than a batch is left
    out."""

    def __init__(self, images: np.ndarray) -> None:
        self._images = images
        self._iterator: Iterator[dict[str, np.ndarray]] = self._items()

    def _items(self) -> Iterator[dict[str, np.ndarray]]:
        # equal batches only: the histogram calibrators stack every batch's outputs into one
        # array (a shorter last batch made Percentile fail with "inhomogeneous shape")
        size = _BATCH if len(self._images) >= _BATCH else len(self._images)
        for start in range(0, len(self._images) - size + 1, size):
            yield {"input": np.ascontiguousarray(self._images[start:start + size])}

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self._iterator, None)

    def rewind(self) -> None:
        self._iterator = self._items()


def quantize_int8(source: Path, target: Path, calibration: np.ndarray, *,
                  method: str = "minmax", per_channel: bool = True) -> dict[str, Any]:
    """INT8 post-training static quantization of ``source`` in QDQ form (QuantizeLinear /
    DequantizeLinear pairs around standard operators: any onnxruntime >= 1.11 loads it; no
    ConvInteger, which many builds cannot run), weights QInt8 (per output channel unless
    ``per_channel=False``), activations QUInt8, biases float32, calibrated on ``calibration``
    (n, 3, H, W) float32 preprocessed training images with ``method`` (a key of
    :data:`CALIBRATION_METHODS`). The model is first shape-inferred and optimised with
    ``quant_pre_process`` as onnxruntime's quantization guide recommends.

    Per-channel matters for depthwise convolutions: one scale for a tensor whose channels'
    ranges differ 100x rounds the small channels to zero (Krishnamoorthi 2018, "Quantizing deep
    convolutional networks for efficient inference", section 2.2).

    Returns ``{"calibration_method", "calibration_images", "per_channel", "weight_type",
    "activation_type", "format": "QDQ"}``. Raises ValueError for an unknown method or fewer than
    :data:`MIN_CALIBRATION_IMAGES` images.
    """
    if method not in CALIBRATION_METHODS:
        raise ValueError(f"method must be one of {', '.join(CALIBRATION_METHODS)}")
    if len(calibration) < MIN_CALIBRATION_IMAGES:
        raise ValueError(f"calibration: {len(calibration)} images; at least "
                         f"{MIN_CALIBRATION_IMAGES} are needed")
    with tempfile.TemporaryDirectory(prefix="quant-", dir=target.parent) as scratch:
        prepared = Path(scratch) / "prepared.onnx"
        quant_pre_process(str(source), str(prepared), skip_symbolic_shape=True)
        # biases stay float32: int32 biases cost the same bytes plus a float scale and an int32
        # zero point per channel (150 KB of a MobileNetV2), at the same speed here (measured)
        extra: dict[str, Any] = {"CalibMovingAverage": False, "QuantizeBias": False}
        # the output softmax stays float: quantized to 8 bits its probabilities no longer sum
        # to 1 (0.992 measured) and the agent's self-test refuses the model
        softmax = [node.name for node in onnx.load(str(prepared)).graph.node
                   if node.op_type == "Softmax" and node.name]
        if method == "percentile":
            extra["CalibPercentile"] = 99.999
        quantize_static(str(prepared), str(target), _Batches(calibration),
                        quant_format=QuantFormat.QDQ, per_channel=per_channel,
                        weight_type=QuantType.QInt8, activation_type=QuantType.QUInt8,
                        calibrate_method=CALIBRATION_METHODS[method],
                        nodes_to_exclude=softmax, extra_options=extra)
    tidy_graph(target)
    return {"calibration_method": method, "calibration_images": int(len(calibration)),
            "per_channel": per_channel, "weight_type": "int8", "activation_type": "uint8",
            "bias_type": "float32", "format": "QDQ"}


def convert_fp16(source: Path, target: Path) -> dict[str, Any]:
    """Weights and activations in float16 with float32 input and output kept
    (``onnxruntime.transformers.float16.convert_float_to_float16(keep_io_types=True)``), for a
    target whose execution provider computes in FP16 (:data:`GPU_PROVIDERS`)."""
    from onnxruntime.transformers.float16 import convert_float_to_float16

    model = onnx.load(str(source))
    onnx.save(convert_float_to_float16(model, keep_io_types=True), str(target))
    tidy_graph(target)
    return {"precision": "fp16", "keep_io_types": True}


#: The operators :func:`quantize_dynamic_int8` quantizes by default: onnxruntime's dynamic
#: (IntegerOps) registry less ``Conv`` (its ``ConvInteger`` is 7-14x slower than a float Conv
#: here, docs/decisions/compression.md) and ``LSTM``. A ``Gather`` from a constant table (an
#: n-gram or token embedding) gets an int8 table, one scale per tensor, and a DequantizeLinear
#: of the gathered rows; a ``MatMul`` (and a ``Gemm``, which the quantizer rewrites as one) with
#: constant weights becomes DynamicQuantizeLinear + MatMulInteger, weights per output channel.
DYNAMIC_OP_TYPES = ("MatMul", "Gather", "Attention", "EmbedLayerNormalization")
#: Model metadata keys of ours (``sampan.wordpiece_vocab``: a text encoder's vocabulary, which
#: the device refuses a graph without) that every derived graph keeps.
METADATA_PREFIX = "sampan."


def copy_metadata(source: Path, target: Path, prefix: str = METADATA_PREFIX) -> list[str]:
    """Give ``target`` the ``prefix`` metadata entries (``metadata_props``) of ``source``, the
    same values (those it already has are replaced); returns their keys. Raises ValueError when
    ``target`` does not hold them afterwards."""
    wanted = {entry.key: entry.value for entry in
              onnx.load(str(source), load_external_data=False).metadata_props
              if entry.key.startswith(prefix)}
    if not wanted:
        return []
    model = onnx.load(str(target))
    kept = [entry for entry in model.metadata_props if entry.key not in wanted]
    del model.metadata_props[:]
    model.metadata_props.extend(kept)
    for key, value in wanted.items():
        model.metadata_props.add(key=key, value=value)
    onnx.save(model, str(target))
    stored = {entry.key: entry.value for entry in
              onnx.load(str(target), load_external_data=False).metadata_props}
    lost = [key for key, value in wanted.items() if stored.get(key) != value]
    if lost:
        raise ValueError(f"the graph lost its metadata {', '.join(lost)}")
    return sorted(wanted)


def quantize_dynamic_int8(source: Path, target: Path, *,
                          op_types: tuple[str, ...] = DYNAMIC_OP_TYPES,
                          per_channel: bool = True) -> dict[str, Any]:
    """INT8 dynamic quantization of ``source`` (``onnxruntime.quantization.quantize_dynamic``:
    weights int8 ahead of time, activations quantized at run time, no calibration data), only
    the ``op_types`` operators, weights per output channel where the operator allows
    (``MatMul``; a ``Gather`` table has one scale); the ``sampan.*`` metadata kept
    (:func:`copy_metadata`). Returns the candidate's ``params``."""
    quantize_dynamic(str(source), str(target), op_types_to_quantize=list(op_types),
                     per_channel=per_channel, weight_type=QuantType.QInt8)
    tidy_graph(target)
    copy_metadata(source, target)
    quantized = sorted({node.op_type for node in onnx.load(str(target)).graph.node
                        if node.op_type in ("MatMulInteger", "DequantizeLinear",
                                            "DynamicQuantizeLinear")})
    return {"quantization": "dynamic", "op_types": list(op_types), "per_channel": per_channel,
            "weight_type": "int8", "activation_type": "uint8 (at run time)",
            "quantized_ops": quantized}

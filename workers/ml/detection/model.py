"""The detector: FCOS (Tian et al. 2019, "FCOS: Fully Convolutional One-Stage Object Detection")
on an ImageNet MobileNetV2 with a feature pyramid, built from torchvision's parts.

Why this shape (docs/decisions/detection.md): no detector weights can be had offline, only the
MobileNetV2 ImageNet backbone, so the head is trained from scratch on little data. FCOS is
anchor-free (no anchor boxes to fit to the data), predicts one box per feature-map position and
level, and handles the small, dense objects of aerial and inspection images from the stride-8
level. The pyramid and head are narrow (``FPN_CHANNELS`` 64, ``HEAD_CONVS`` 2) so that one
training step at 384 px fits a CPU budget; torchvision's FCOS defaults (256 channels, 4 convs)
cost ~10x more FLOPs on the stride-8 level alone.

Feature levels: MobileNetV2 ``features[6]`` (stride 8, 32 channels), ``features[13]`` (16, 96),
``features[18]`` (32, 1280) -> FPN P3-P5, and P6 by max-pooling P5 (stride 64). FCOS assigns an
object to the level whose range holds its largest side (torchvision: [0, 4s_next] ... with the
anchor size = the stride), so objects of 8-512 px at the input size are covered.

:class:`ExportedDetector` is the graph that goes to ONNX and to the device: it takes a
letterboxed, normalised batch and returns every position's decoded box and class scores; score
thresholding, top-k and non-maximum suppression run in :mod:`edge_agent.detection` (numpy), the
same code on the worker (parity, evaluation) and on the device.
"""

from __future__ import annotations

import itertools

import torch
from torch import nn
from torchvision.models import mobilenet_v2
from torchvision.models.detection.anchor_utils import AnchorGenerator
from torchvision.models.detection.backbone_utils import BackboneWithFPN
from torchvision.models.detection.fcos import FCOS, FCOSHead
from torchvision.ops.feature_pyramid_network import LastLevelMaxPool
from torchvision.ops.misc import FrozenBatchNorm2d

from edge_agent.imaging import Preprocessing

__all__ = ["FPN_CHANNELS", "FROZEN_STAGES", "HEAD_CONVS", "REGRESSION_BIAS", "STRIDES",
           "ConvFrozenNorm", "ExportedDetector", "build_detector", "fold_frozen_norms"]

FPN_CHANNELS = 64
HEAD_CONVS = 2
#: MobileNetV2 blocks ``features[0:4]`` (up to stride 4) frozen with pretrained weights
FROZEN_STAGES = 4
#: feature strides of P3, P4, P5, P6 (px of the input image per feature-map cell)
STRIDES = (8, 16, 32, 64)
#: initial bias of the box regression's output convolution: every position starts predicting
#: (l, t, r, b) = 1 stride, a box 2 strides wide (Sampan's choice, not FCOS's). torchvision's
#: head (FCOS's ``norm_reg_targets`` variant: ReLU, distances in strides) starts at bias 0,
#: every predicted box a point, where the GIoU loss has almost no gradient for the sides; there
#: the optimiser's noise drove one side's output channel negative everywhere in 2 of 16 seeds
#: (its ReLU dead for good, that side always 0: val mAP@0.5 ~0.06 instead of ~0.65; 80-step
#: runs in docs/decisions/detection.md)
REGRESSION_BIAS = 1.0
_RETURN_LAYERS = {"6": "p3", "13": "p4", "18": "p5"}
_IN_CHANNELS = [32, 96, 1280]
_DEFAULT = Preprocessing(size=(64, 64))  # ImageNet mean and std


class ConvFrozenNorm(nn.Conv2d):
    """A convolution and the frozen BatchNorm after it, run as one convolution.

    y = BN(conv(x, W)) = conv(x, W * s) + (beta - mu * s) with s = gamma / sqrt(var + eps) per
    output channel (Ioffe and Szegedy 2015's transform at inference statistics), so that the
    feature maps are written once instead of three times (convolution, multiply, add). ``weight``
    stays the convolution's own parameter (W, trained or frozen as before: the same gradients and
    optimiser steps as the two modules); ``norm_scale`` (C, 1, 1, 1) and ``norm_shift`` (C,) are
    buffers. torchvision's ``FrozenBatchNorm2d`` multiplies and adds over whole feature maps, and
    those two ops were 40 % of a training step (profiled; timings in
    docs/decisions/detection.md).
    """

    norm_scale: torch.Tensor
    norm_shift: torch.Tensor

    @classmethod
    def from_pair(cls, conv: nn.Conv2d, norm: FrozenBatchNorm2d) -> ConvFrozenNorm:
        """``conv`` (without bias) then ``norm``; the result shares ``conv.weight``.
        Raises ValueError when ``conv`` has a bias or ``norm`` another channel count."""
        if conv.bias is not None or norm.weight.shape[0] != conv.out_channels:
            raise ValueError("only a bias-free convolution and a norm over its output fold")
        # skip_init: no random weights drawn (the generator's state, hence the pyramid's and
        # head's initialisation, stays that of the unfolded model)
        folded: ConvFrozenNorm = torch.nn.utils.skip_init(  # type: ignore[no-untyped-call]
            cls, conv.in_channels, conv.out_channels, conv.kernel_size, stride=conv.stride,
            padding=conv.padding, dilation=conv.dilation, groups=conv.groups, bias=False,
            padding_mode=conv.padding_mode)
        folded.weight = conv.weight
        scale = norm.weight * (norm.running_var + norm.eps).rsqrt()
        folded.register_buffer("norm_scale", scale.reshape(-1, 1, 1, 1).clone())
        folded.register_buffer("norm_shift", (norm.bias - norm.running_mean * scale).clone())
        return folded

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self._conv_forward(x, self.weight * self.norm_scale,
                                               self.norm_shift)
        return out


def fold_frozen_norms(module: nn.Module) -> int:
    """Replace every (bias-free ``nn.Conv2d``, ``FrozenBatchNorm2d``) pair that follows each
    other in an ``nn.Sequential`` of ``module`` by a :class:`ConvFrozenNorm` and an
    ``nn.Identity``, in place; the outputs are unchanged (float rounding aside). Returns the
    number of pairs folded (52 in MobileNetV2's features)."""
    folded = 0
    for sequence in [m for m in module.modules() if isinstance(m, nn.Sequential)]:
        names = list(sequence._modules)
        for first, second in itertools.pairwise(names):
            conv, norm = sequence._modules[first], sequence._modules[second]
            if (type(conv) is nn.Conv2d and conv.bias is None
                    and type(norm) is FrozenBatchNorm2d):
                sequence._modules[first] = ConvFrozenNorm.from_pair(conv, norm)
                sequence._modules[second] = nn.Identity()
                folded += 1
    return folded


def build_detector(num_classes: int, input_size: int,
                   backbone_state: dict[str, torch.Tensor] | None = None) -> FCOS:
    """An FCOS detector for ``num_classes`` foreground classes at a square ``input_size`` (px, a
    multiple of 64 so that every level's grid is whole).

    ``backbone_state``: a torchvision MobileNetV2 state dict (ImageNet weights; only
    ``features.*`` is used) or None for random initialisation. The model normalises its input
    itself (ImageNet mean/std, 0-1 images) and does not resize it (``min_size == max_size ==
    input_size``: letterboxed images pass through unchanged). With pretrained weights the
    backbone's frozen BatchNorms are folded into their convolutions (:class:`ConvFrozenNorm`).
    Raises ValueError when ``input_size`` is not a positive multiple of 64.
    """
    if input_size <= 0 or input_size % 64:
        raise ValueError(f"input_size must be a positive multiple of 64, got {input_size}")
    # BatchNorm frozen at ImageNet statistics, as torchvision's detection models do with a
    # pretrained backbone: batches of 4-8 images give noisy statistics
    trunk = mobilenet_v2(norm_layer=FrozenBatchNorm2d if backbone_state is not None else None)
    if backbone_state is not None:
        trunk.load_state_dict(backbone_state)
        fold_frozen_norms(trunk.features)
        # the stem and the first two stages (strides 2 and 4) keep their ImageNet weights:
        # generic edges and textures, and the costliest backward passes (full and half
        # resolution). One training step at 384 px: 1.6 s instead of 2.7 s on 1 thread
        # (measured); torchvision's detection backbones freeze early stages the same way.
        for index in range(FROZEN_STAGES):
            trunk.features[index].requires_grad_(False)
    backbone = BackboneWithFPN(trunk.features, return_layers=_RETURN_LAYERS,
                               in_channels_list=_IN_CHANNELS, out_channels=FPN_CHANNELS,
                               extra_blocks=LastLevelMaxPool())
    anchors = AnchorGenerator(sizes=tuple((s,) for s in STRIDES),
                              aspect_ratios=((1.0,),) * len(STRIDES))
    head = FCOSHead(FPN_CHANNELS, 1, num_classes, num_convs=HEAD_CONVS)
    nn.init.constant_(head.regression_head.bbox_reg.bias, REGRESSION_BIAS)
    return FCOS(backbone, num_classes=num_classes, min_size=input_size, max_size=input_size,
                image_mean=list(_DEFAULT.mean), image_std=list(_DEFAULT.std),
                anchor_generator=anchors, head=head, score_thresh=0.05, nms_thresh=0.6,
                detections_per_img=300, topk_candidates=1000)


class ExportedDetector(nn.Module):
    """The inference graph of a trained :func:`build_detector` model at one input size.

    Input ``images``: float32 (N, 3, S, S), ImageNet-normalised RGB, letterboxed
    (:func:`edge_agent.detection.letterbox`). Outputs ``boxes`` (N, A, 4) xyxy in input pixels
    and ``scores`` (N, A, C) in [0, 1], one row per feature position of P3-P6
    (A = sum((S / s)^2 for s in STRIDES)); the score of a class is
    sqrt(sigmoid(class logit) * sigmoid(centerness)), FCOS's ranking score (torchvision's
    ``FCOS.postprocess_detections``). Box decoding follows torchvision's ``BoxLinearCoder`` with
    ``normalize_by_size=True``: (l, t, r, b) distances times the level's stride from the cell
    centre, clipped to the input. The anchors of the fixed size are constants of the graph.
    """

    # buffers registered in __init__ (nn.Module.__getattr__ is typed ``Tensor | Module``)
    centres: torch.Tensor
    sizes: torch.Tensor

    def __init__(self, detector: FCOS, input_size: int) -> None:
        super().__init__()
        self.input_size = input_size
        self.backbone = detector.backbone
        self.head = detector.head
        centres, sizes = [], []
        for stride in STRIDES:
            cells = input_size // stride
            shifts = torch.arange(cells, dtype=torch.float32) * stride
            ys, xs = torch.meshgrid(shifts, shifts, indexing="ij")
            # torchvision's AnchorGenerator centres a stride-sized anchor on (i * s, j * s),
            # rows (y) outer, and the head flattens its maps in the same order
            centres.append(torch.stack([xs.reshape(-1), ys.reshape(-1)], dim=1))
            sizes.append(torch.full((cells * cells, 1), float(stride)))
        self.register_buffer("centres", torch.cat(centres), persistent=False)
        self.register_buffer("sizes", torch.cat(sizes), persistent=False)

    def forward(self, images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        features = list(self.backbone(images).values())
        out = self.head(features)
        logits, deltas, centerness = out["cls_logits"], out["bbox_regression"], \
            out["bbox_ctrness"]
        scores = torch.sqrt(torch.sigmoid(logits) * torch.sigmoid(centerness))
        distances = deltas * self.sizes
        x, y = self.centres[:, 0:1], self.centres[:, 1:2]
        boxes = torch.cat([x - distances[..., 0:1], y - distances[..., 1:2],
                           x + distances[..., 2:3], y + distances[..., 3:4]], dim=-1)
        # clipped to the input, as torchvision's postprocess_detections does before its NMS
        return boxes.clamp(0.0, float(self.input_size)), scores

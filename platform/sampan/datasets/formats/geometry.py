"""Boxes from annotation files onto the stored upright image: scale, clip, EXIF-rotate, round.

Conventions (docs/contracts.md, "Detection dataset formats"): a stored box is xyxy in float
pixels of the upright image, the continuous coordinates of the pixel grid (the image spans
[0, width] x [0, height]; a box around pixel (0, 0) alone is (0, 0, 1, 1)). COCO's xywh is
(x, y, x + w, y + h); VOC's xmin/ymin/xmax/ymax are taken as they are (no -1 offset); YOLO's
fractions are multiplied by the width and height. Coordinates in a file refer to the pixels as
stored in the image file; when the file has an EXIF orientation, they are turned with the image
(``decode_image`` turns the pixels the same way), unless the file states the upright size
(a COCO or VOC width/height that is the stored size turned by 90 degrees): then the writer
already used upright coordinates.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

from django.utils.translation import gettext_noop
from PIL import Image

from sampan.datasets.formats.common import ImageAnnotations

ORIENTATION_TAG = 0x0112  # EXIF Orientation (TIFF/EP, JEITA CP-3451)
DECIMALS = 3  # stored coordinates are rounded to 1/1000 px: xywh and xyxy then give equal boxes
_CLIP_EPSILON = 1e-6  # px; a box this little outside the image is not counted as clipped
_PILLOW_FORMATS = ["JPEG", "PNG", "GIF", "BMP", "WEBP", "TIFF"]

# Why a box is skipped, and the note on an image whose stated size is neither of its own (the
# import report's, stored in English: sampan.datasets.report_texts reads them back)
ZERO_SIZE_BOX = gettext_noop("zero width or height: box (%(x1)s, %(y1)s, %(x2)s, %(y2)s) px, "
                             "xyxy")
BOX_OUTSIDE = gettext_noop("outside the %(width)sx%(height)s px image (no area left after "
                           "clipping): box (%(x1)s, %(y1)s, %(x2)s, %(y2)s) px, xyxy")
BOX_TOO_NARROW = gettext_noop("narrower than %(least)s px inside the %(width)sx%(height)s px "
                              "image: box (%(x1)s, %(y1)s, %(x2)s, %(y2)s) px, xyxy")
SIZE_DIFFERS = gettext_noop("%(image)s: the annotations say %(stated_width)sx%(stated_height)s "
                            "px, the image is %(width)sx%(height)s; boxes were read as pixels "
                            "of the image")


@dataclass(frozen=True)
class Frame:
    """How an image file is stored: ``width`` x ``height`` px as stored, and the EXIF
    ``orientation`` (1-8) that decoding applied to make it upright."""

    width: int
    height: int
    orientation: int = 1

    @property
    def upright_size(self) -> tuple[int, int]:
        """(width, height) in px after the orientation (5-8 turn the image by 90 degrees)."""
        return (self.height, self.width) if self.orientation >= 5 else (self.width, self.height)


def image_frame(data: bytes, upright_size: tuple[int, int]) -> Frame:
    """The stored size and applied EXIF orientation of the image ``data`` that
    ``edge_agent.imaging.decode_image`` decoded to ``upright_size`` (w, h) px. Reads the header
    only. An orientation that decoding did not apply (malformed EXIF: it keeps the stored
    pixels, and the sizes then disagree) counts as 1."""
    with Image.open(io.BytesIO(data), formats=_PILLOW_FORMATS) as image:
        width, height = image.size
        try:
            orientation = int(image.getexif().get(ORIENTATION_TAG, 1))
        except (SyntaxError, ValueError, OSError, KeyError, TypeError):
            orientation = 1
    if orientation not in range(1, 9):
        orientation = 1
    frame = Frame(width, height, orientation)
    return frame if frame.upright_size == tuple(upright_size) else Frame(width, height, 1)


def turn_point(x: float, y: float, frame: Frame) -> tuple[float, float]:
    """A point (px, stored frame) in the upright image, as Pillow's ``ImageOps.exif_transpose``
    moves pixels: 2 mirror, 3 rotate 180, 4 flip, 5 transpose, 6 rotate 90 clockwise,
    7 transverse, 8 rotate 90 counter-clockwise."""
    w, h, o = frame.width, frame.height, frame.orientation
    return {1: (x, y), 2: (w - x, y), 3: (w - x, h - y), 4: (x, h - y), 5: (y, x),
            6: (h - y, x), 7: (h - y, w - x), 8: (y, w - x)}[o]


@dataclass
class Placement:
    """The boxes of one image as they are stored: ``boxes`` (class name, x1, y1, x2, y2) in px
    of the upright image; ``skipped`` (ref, reason); ``clipped``: how many were cut to the image;
    ``warning``: a note about the image, or None."""

    boxes: list[tuple[str, float, float, float, float]]
    skipped: list[tuple[str, str]]
    clipped: int = 0
    warning: str | None = None


def place_boxes(annotations: ImageAnnotations, frame: Frame, shown: str) -> Placement:
    """Scale, clip, turn and round the boxes of one image (module docstring).

    A box partly outside the image is clipped to it; one with no area left (zero width or
    height, or wholly outside) is skipped with the reason. ``shown`` names the image in the
    warning about a stated size that is neither the stored nor the upright one.
    """
    width, height = frame.width, frame.height
    turned = frame
    warning = None
    declared = annotations.declared_size
    if declared is not None and declared != (width, height):
        if frame.orientation >= 5 and declared == frame.upright_size:
            # the writer used the upright image: its coordinates need no turn
            width, height = frame.upright_size
            turned = Frame(width, height, 1)
        elif declared != frame.upright_size:
            warning = SIZE_DIFFERS % {"image": shown, "stated_width": declared[0],
                                      "stated_height": declared[1], "width": width,
                                      "height": height}
    placement = Placement([], [], warning=warning)
    for box in annotations.boxes:
        x1, y1, x2, y2 = box.x1, box.y1, box.x2, box.y2
        if annotations.normalised:
            x1, x2, y1, y2 = x1 * width, x2 * width, y1 * height, y2 * height
        cx1, cy1 = min(max(x1, 0.0), width), min(max(y1, 0.0), height)
        cx2, cy2 = min(max(x2, 0.0), width), min(max(y2, 0.0), height)
        if round(cx2 - cx1, DECIMALS) <= 0 or round(cy2 - cy1, DECIMALS) <= 0:
            values = {"x1": _px(x1), "y1": _px(y1), "x2": _px(x2), "y2": _px(y2),
                      "width": width, "height": height, "least": f"{10 ** -DECIMALS:g}"}
            if x2 - x1 <= 0 or y2 - y1 <= 0:
                why = ZERO_SIZE_BOX
            elif cx2 - cx1 <= 0 or cy2 - cy1 <= 0:
                why = BOX_OUTSIDE
            else:
                why = BOX_TOO_NARROW
            placement.skipped.append((box.ref, why % values))
            continue
        if max(abs(cx1 - x1), abs(cy1 - y1), abs(cx2 - x2), abs(cy2 - y2)) > _CLIP_EPSILON:
            placement.clipped += 1
        (ax, ay), (bx, by) = turn_point(cx1, cy1, turned), turn_point(cx2, cy2, turned)
        placement.boxes.append((box.label, round(min(ax, bx), DECIMALS),
                                round(min(ay, by), DECIMALS), round(max(ax, bx), DECIMALS),
                                round(max(ay, by), DECIMALS)))
    return placement


def _px(value: float) -> str:
    return f"{value:.{DECIMALS}f}".rstrip("0").rstrip(".")

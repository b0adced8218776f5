"""Build seeds/trees/ from the deepforest 2.1.0 wheel (MIT): aerial RGB tiles with human-drawn
tree crowns as Pascal VOC, for the object detection demo and benchmark.

    pip download --no-deps deepforest==2.1.0 -d /tmp          # deepforest-2.1.0-py3-none-any.whl
    python seeds/build_trees_seed.py /tmp/deepforest-2.1.0-py3-none-any.whl

Sources (files of the wheel's ``deepforest/data/``): OSBS_029 and SOAP_061 (400 x 400 px),
2019_YELL_2_541000_4977000_image_crop (1249 x 1035) and 2019_YELL_2_528000_4978000_image_crop2
(2299 x 2472), each with its VOC XML. The two large images are cut into 400 x 400 tiles on a
grid (the last row and column of a grid keep a tile only when at least half of it is image);
a box is kept in a tile when at least half of its area lies inside, clipped to the tile.
SOAP_061's classes Dead and Alive become Tree (one class for the demo). Tiles are written as
JPEG quality 90 with their VOC XML; every 6th tile in sha256 order of its name goes to
``heldout/`` (never imported: the deployed model is checked on it). Deterministic: a rebuild
gives the same files with the same Pillow version.
"""

from __future__ import annotations

import hashlib
import io
import shutil
import sys
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

from PIL import Image

TILE = 400
SOURCES = [
    ("OSBS_029.xml", "OSBS_029.png", "osbs029"),
    ("SOAP_061.xml", "SOAP_061.png", "soap061"),
    ("2019_YELL_2_541000_4977000_image_crop.xml", "2019_YELL_2_541000_4977000_image_crop.png",
     "yell541"),
    ("2019_YELL_2_528000_4978000_image_crop2.xml", "2019_YELL_2_528000_4978000_image_crop2.png",
     "yell528"),
]
HERE = Path(__file__).resolve().parent / "trees"


def _boxes(xml: bytes) -> list[tuple[float, float, float, float]]:
    root = ET.fromstring(xml)
    return [tuple(float(o.find(f"bndbox/{k}").text) for k in ("xmin", "ymin", "xmax", "ymax"))
            for o in root.findall("object")]


def _voc(name: str, width: int, height: int, boxes: list[tuple[float, ...]]) -> bytes:
    root = ET.Element("annotation")
    ET.SubElement(root, "folder").text = "JPEGImages"
    ET.SubElement(root, "filename").text = name
    size = ET.SubElement(root, "size")
    for key, value in (("width", width), ("height", height), ("depth", 3)):
        ET.SubElement(size, key).text = str(value)
    for box in boxes:
        obj = ET.SubElement(root, "object")
        ET.SubElement(obj, "name").text = "Tree"
        ET.SubElement(obj, "difficult").text = "0"
        bnd = ET.SubElement(obj, "bndbox")
        for key, value in zip(("xmin", "ymin", "xmax", "ymax"), box, strict=True):
            ET.SubElement(bnd, key).text = f"{value:g}"
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n"


def main(wheel: Path) -> None:
    Image.MAX_IMAGE_PIXELS = None
    for part in ("train", "heldout"):
        shutil.rmtree(HERE / part, ignore_errors=True)
        (HERE / part / "Annotations").mkdir(parents=True)
        (HERE / part / "JPEGImages").mkdir(parents=True)
    tiles = []
    with zipfile.ZipFile(wheel) as archive:
        for xml_name, image_name, short in SOURCES:
            boxes = _boxes(archive.read(f"deepforest/data/{xml_name}"))
            image = Image.open(io.BytesIO(archive.read(f"deepforest/data/{image_name}")))
            image = image.convert("RGB")
            width, height = image.size
            for y in range(0, height - TILE // 2, TILE):
                for x in range(0, width - TILE // 2, TILE):
                    x1, y1 = min(width, x + TILE), min(height, y + TILE)
                    kept = []
                    for bx1, by1, bx2, by2 in boxes:
                        cx1, cy1 = max(bx1, x) - x, max(by1, y) - y
                        cx2, cy2 = min(bx2, x1) - x, min(by2, y1) - y
                        inside = max(0.0, cx2 - cx1) * max(0.0, cy2 - cy1)
                        if inside > 0 and inside >= 0.5 * (bx2 - bx1) * (by2 - by1):
                            kept.append((cx1, cy1, cx2, cy2))
                    tiles.append((f"{short}_{x:04d}_{y:04d}", image.crop((x, y, x1, y1)), kept))
    order = sorted(tiles, key=lambda t: hashlib.sha256(t[0].encode()).hexdigest())
    heldout = {t[0] for t in order[::6]}
    for name, tile, kept in tiles:
        part = HERE / ("heldout" if name in heldout else "train")
        tile.save(part / "JPEGImages" / f"{name}.jpg", quality=90)
        (part / "Annotations" / f"{name}.xml").write_bytes(
            _voc(f"{name}.jpg", tile.width, tile.height, kept))
    for part in ("train", "heldout"):
        n = len(list((HERE / part / "JPEGImages").iterdir()))
        boxes = sum(len(_boxes((f).read_bytes())) for f in (HERE / part / "Annotations").iterdir())
        print(f"{part}: {n} tiles, {boxes} boxes")


if __name__ == "__main__":
    main(Path(sys.argv[1]))

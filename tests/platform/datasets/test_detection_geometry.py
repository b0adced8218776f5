"""Boxes onto the upright image for every EXIF orientation, checked against the pixels that
``decode_image`` turns; and the small pure pieces of ``sampan.datasets.formats``'s readers."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from edge_agent.imaging import decode_image
from sampan.datasets.formats.common import (ImageAnnotations, ImageIndex, RefusedXml, SourceBox,
                                            parse_xml, split_of_file)
from sampan.datasets.formats.geometry import Frame, image_frame, place_boxes


def photo(orientation: int) -> bytes:
    """A 60 x 30 px stored image, black, with the pixels of the box (5, 3, 20, 10) white, and
    the EXIF orientation given (PNG: lossless, so the pixels are exact)."""
    image = Image.new("L", (60, 30), 0)
    image.paste(255, (5, 3, 20, 10))
    exif = Image.Exif()
    exif[0x0112] = orientation
    buffer = io.BytesIO()
    image.save(buffer, "PNG", exif=exif.tobytes())
    return buffer.getvalue()


@pytest.mark.parametrize("orientation", range(1, 9))
def test_a_box_lands_on_the_same_pixels_as_decode_image_turns_them(orientation: int) -> None:
    data = photo(orientation)
    upright = decode_image(data)
    frame = image_frame(data, upright.size)
    assert frame == Frame(60, 30, orientation)
    placed = place_boxes(ImageAnnotations([SourceBox("r", "x", 5, 3, 20, 10)]), frame, "p.png")
    white = upright.convert("L").point(lambda v: 255 if v > 127 else 0).getbbox()
    assert placed.boxes == [("x", *(float(v) for v in white))]
    assert placed.skipped == [] and placed.clipped == 0


def test_normalised_boxes_scale_by_the_stored_size_before_they_turn() -> None:
    data = photo(8)
    frame = image_frame(data, decode_image(data).size)
    placed = place_boxes(ImageAnnotations([SourceBox("r", "x", 5 / 60, 0.1, 20 / 60, 1 / 3)],
                                          normalised=True), frame, "p.png")
    assert placed.boxes == [("x", 3.0, 40.0, 10.0, 55.0)]


def test_a_stated_size_that_is_neither_stored_nor_upright_is_warned_about() -> None:
    placed = place_boxes(ImageAnnotations([SourceBox("r", "x", 1, 1, 5, 5)],
                                          declared_size=(640, 480)), Frame(60, 30), "p.png")
    assert placed.boxes == [("x", 1.0, 1.0, 5.0, 5.0)]
    assert placed.warning == ("p.png: the annotations say 640x480 px, the image is 60x30; boxes "
                              "were read as pixels of the image")


def test_references_to_images_find_the_nearest_and_name_ambiguity() -> None:
    index = ImageIndex(["train/a.jpg", "valid/a.jpg", "x/JPEGImages/b.png", "c.PNG"])
    assert index.find("a.jpg", near=("valid",)) == ("valid/a.jpg", None)
    assert index.find("/home/me/data/train/a.jpg") == ("train/a.jpg", None)
    assert index.find("C:\\data\\JPEGImages\\b.png") == ("x/JPEGImages/b.png", None)
    assert index.find("c.png") == ("c.PNG", None)
    assert index.find("a.jpg") == (None, "matches 2 images in the zip (train/a.jpg, "
                                         "valid/a.jpg)")
    assert index.find("zzz.jpg") == (None, "not in the zip")
    assert index.find_stem("b", near=("x/JPEGImages",)) == ("x/JPEGImages/b.png", None)


@pytest.mark.parametrize("path, split", [
    ("annotations/instances_val2017.json", "val"), ("train/_annotations.coco.json", "train"),
    ("Valid/x.json", "val"), ("testing-set.json", "test"), ("labels.json", None),
    ("contest/x.json", None)])
def test_the_split_of_an_annotation_file(path: str, split: str | None) -> None:
    assert split_of_file(path) == split


def test_xml_entities_are_refused_before_they_expand() -> None:
    with pytest.raises(RefusedXml):
        parse_xml(b'<!DOCTYPE a [<!ENTITY b "c">]><a>&b;</a>')
    with pytest.raises(RefusedXml):
        parse_xml(b'<?xml version="1.0"?><!DOCTYPE a SYSTEM "http://example.com/a.dtd"><a/>')
    assert parse_xml(b"<annotation><name>cat</name></annotation>").findtext("name") == "cat"

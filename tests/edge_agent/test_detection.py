"""The detection post-processing shared by worker and agent: NMS, thresholds, letterbox
geometry, tiling and the merge of tiles."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from edge_agent.detection import (DetectionSettings, TileSettings, batched_nms, box_iou, detect,
                                  merge_tiles, nms, postprocess, tile_windows, to_image_pixels)
from edge_agent.imaging import Preprocessing, letterbox_size, preprocess, resized_pixels


def _random_boxes(rng: np.random.Generator, n: int) -> np.ndarray:
    xy = rng.uniform(0, 200, size=(n, 2))
    wh = rng.uniform(5, 60, size=(n, 2))
    return np.concatenate([xy, xy + wh], axis=1).astype(np.float32)


def test_nms_matches_torchvision() -> None:
    torch = pytest.importorskip("torch")
    from torchvision.ops import batched_nms as tv_batched_nms
    from torchvision.ops import nms as tv_nms

    rng = np.random.default_rng(0)
    # 300 and 1,000 candidates cross the blocks in which the IoUs are computed; rounded
    # scores make ties (lower index first)
    for n in [80] * 18 + [300, 1000]:
        boxes = _random_boxes(rng, n)
        scores = rng.uniform(0, 1, size=n).round(2).astype(np.float32)
        classes = rng.integers(0, 3, size=n)
        for iou in (0.3, 0.5, 0.7):
            ours = nms(boxes, scores, iou)
            theirs = tv_nms(torch.from_numpy(boxes), torch.from_numpy(scores), iou).numpy()
            assert ours.tolist() == theirs.tolist()
            ours = batched_nms(boxes, scores, classes, iou)
            theirs = tv_batched_nms(torch.from_numpy(boxes), torch.from_numpy(scores),
                                    torch.from_numpy(classes), iou).numpy()
            assert ours.tolist() == theirs.tolist()


def test_box_iou_values() -> None:
    a = np.array([[0, 0, 10, 10]], dtype=np.float32)
    b = np.array([[0, 0, 10, 10], [5, 0, 15, 10], [20, 20, 30, 30], [0, 0, 0, 0]])
    assert box_iou(a, b)[0].tolist() == pytest.approx([1.0, 50 / 150, 0.0, 0.0])


def test_postprocess_threshold_topk_and_classes() -> None:
    boxes = np.array([[0, 0, 10, 10], [1, 1, 11, 11], [50, 50, 60, 60]], dtype=np.float32)
    scores = np.array([[0.9, 0.1], [0.8, 0.85], [0.2, 0.05]], dtype=np.float32)
    settings = DetectionSettings(score_threshold=0.3, nms_iou=0.5)
    out_boxes, out_scores, out_classes = postprocess(boxes, scores, settings)
    # box 1 is suppressed for class 0 by box 0, but is the only class-1 detection
    assert out_classes.tolist() == [0, 1]
    assert out_scores.tolist() == pytest.approx([0.9, 0.85])
    assert out_boxes.tolist() == [[0, 0, 10, 10], [1, 1, 11, 11]]
    # a lower threshold brings the third box in; max_detections caps the answer
    assert len(postprocess(boxes, scores, settings, score_threshold=0.15)[0]) == 3
    capped = DetectionSettings(score_threshold=0.0, max_detections=2)
    assert len(postprocess(boxes, scores, capped)[0]) == 2


@pytest.mark.parametrize("width,height", [(400, 400), (640, 360), (200, 900), (33, 17)])
def test_letterbox_maps_boxes_back_to_the_image(width: int, height: int) -> None:
    """A rectangle drawn on an image of any size is found where it is after the letterbox and
    the mapping back (what the agent returns is in original-image pixels)."""
    image = Image.new("RGB", (width, height), (0, 0, 0))
    box = (width * 0.25, height * 0.5, width * 0.75, height * 0.9)
    image.paste((255, 255, 255), tuple(int(round(v)) for v in box))
    p = Preprocessing(size=(320, 320), resize="letterbox")
    pixels = resized_pixels(image, p)
    assert pixels.shape == (320, 320, 3)
    fitted = letterbox_size(width, height, p.size)
    assert max(fitted) == 320
    # padding (right and bottom) is the mean colour: 0 after normalisation
    x = preprocess(image, p)
    if fitted[0] < 320:
        assert np.abs(x[:, :, fitted[0]:]).max() < 0.02
    if fitted[1] < 320:
        assert np.abs(x[:, fitted[1]:, :]).max() < 0.02
    # the white rectangle in input pixels, mapped back
    ys, xs = np.nonzero(pixels[..., 0] > 128)
    found = np.array([[xs.min(), ys.min(), xs.max() + 1, ys.max() + 1]], dtype=np.float64)
    back = to_image_pixels(found, width, height, fitted)[0]
    tolerance = max(width, height) / 320 * 1.5 + 0.5
    assert back == pytest.approx(box, abs=tolerance)


def test_letterbox_preprocessing_round_trips_through_the_manifest() -> None:
    p = Preprocessing(size=(384, 384), resize="letterbox")
    assert Preprocessing.from_dict(p.to_dict()) == p
    with pytest.raises(ValueError, match="resize"):
        Preprocessing(size=(8, 8), resize="crop")


def test_tile_windows_cover_the_image_with_overlap() -> None:
    tile = TileSettings(size=400, overlap=0.2)
    assert tile_windows(500, 590, tile) == [(0, 0, 500, 590)]  # <= 1.5 tiles: whole image
    windows = tile_windows(2299, 2472, tile)
    covered = np.zeros((2472, 2299), dtype=bool)
    for x0, y0, x1, y1 in windows:
        assert x1 - x0 == 400 and y1 - y0 == 400
        covered[y0:y1, x0:x1] = True
    assert covered.all()
    xs = sorted({w[0] for w in windows})
    assert all(b - a <= 320 for a, b in zip(xs, xs[1:], strict=False))  # overlap >= 20 %
    assert xs[-1] == 2299 - 400  # the last tile ends at the border, no sliver


def test_merge_keeps_an_object_seen_by_two_tiles_once() -> None:
    windows = [(0, 0, 400, 400), (320, 0, 720, 400)]
    settings = DetectionSettings(score_threshold=0.3, nms_iou=0.5)
    # an object at x 300..360: cut by the first tile's right border (seen as 300..400 there
    # would be whole; here it is seen cut at 320 by the second tile and whole by the first)
    first = (np.array([[300.0, 10, 360, 50]]), np.array([0.9], np.float32), np.array([0]))
    second = (np.array([[320.0, 10, 360, 50]]), np.array([0.8], np.float32), np.array([0]))
    boxes, scores, classes = merge_tiles([first, second], windows, 720, 400, settings)
    assert boxes.tolist() == [[300.0, 10, 360, 50]]
    # two distinct objects in the overlap both stay
    other = (np.array([[330.0, 200, 380, 250]]), np.array([0.7], np.float32), np.array([0]))
    boxes, _, _ = merge_tiles([first, other], windows, 720, 400, settings)
    assert len(boxes) == 2


def test_merge_equals_one_nms_over_every_tile() -> None:
    """The merge runs NMS only over boxes that reach into another tile's window: the same
    boxes, scores and order as one class-wise NMS over the union of every tile's boxes (each
    tile's own boxes passed its NMS already), on 1,000 random boxes over 12 tiles."""
    rng = np.random.default_rng(3)
    width, height = 1000, 700
    windows = tile_windows(width, height, TileSettings(size=300, overlap=0.2))
    settings = DetectionSettings(score_threshold=0.0, nms_iou=0.5)
    parts = []
    for x0, y0, x1, y1 in windows:
        xy = rng.uniform([x0, y0], [x1 - 8, y1 - 8], size=(90, 2))
        boxes = np.concatenate([xy, np.minimum(xy + rng.uniform(6, 50, size=(90, 2)),
                                               [x1, y1])], axis=1)
        scores = rng.uniform(0, 1, 90).round(3).astype(np.float32)
        classes = rng.integers(0, 2, 90)
        own = batched_nms(boxes, scores, classes, settings.nms_iou)
        parts.append((boxes[own], scores[own], classes[own]))
    union = [np.concatenate([p[i] for p in parts]) for i in range(3)]
    everything = batched_nms(*union, settings.nms_iou)
    origin = np.concatenate([np.full(len(p[1]), i) for i, p in enumerate(parts)])
    once = [tuple(union[k][everything][origin[everything] == i] for k in range(3))
            for i in range(len(parts))]  # already merged: the merge's NMS changes nothing
    expected = merge_tiles(once, windows, width, height, settings)
    got = merge_tiles(parts, windows, width, height, settings)
    assert len(windows) == 12 and len(got[0]) < len(union[0])
    for a, b in zip(got, expected, strict=True):
        assert a.tolist() == b.tolist()


def test_detect_tiles_and_returns_image_pixels() -> None:
    """``detect`` with a fake graph that finds one box in the middle of every input: the
    answer comes back in image pixels, shifted per tile, and tiles are merged."""
    image = Image.new("RGB", (1000, 300))
    p = Preprocessing(size=(320, 320), resize="letterbox")

    def run(batch: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        assert batch.shape == (1, 3, 320, 320)
        return (np.array([[[100.0, 100, 140, 140]]], np.float32),
                np.array([[[0.9]]], np.float32))

    whole = detect(image, run, p, DetectionSettings())
    assert whole.tiles == 1
    # 1000 x 300 fits 320 x 96: the box (y 100..140) lies in the padding below the image
    assert len(whole.boxes) == 0

    def run_inside(batch: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return (np.array([[[100.0, 40, 140, 120]]], np.float32),
                np.array([[[0.9]]], np.float32))

    # x scales by 1000 / 320, y by 300 / 96; a box reaching into the padding is clipped
    found = detect(image, run_inside, p, DetectionSettings())
    assert found.boxes[0].tolist() == pytest.approx([312.5, 125.0, 437.5, 300.0])
    tiled = detect(image, run, p, DetectionSettings(tile=TileSettings(size=320, overlap=0.2)))
    assert tiled.tiles == len(tile_windows(1000, 300, TileSettings(size=320, overlap=0.2)))
    lefts = sorted(float(b[0]) for b in tiled.boxes)
    assert lefts[0] == pytest.approx(100.0)  # first tile at x 0, native scale
    assert all(0 <= v <= 1000 for b in tiled.boxes for v in b[0::2])


def test_settings_round_trip_and_refuse_bad_values() -> None:
    settings = DetectionSettings(score_threshold=0.4, tile=TileSettings(size=512, overlap=0.25))
    assert DetectionSettings.from_dict(settings.to_dict()) == settings
    with pytest.raises(ValueError, match="score_threshold"):
        DetectionSettings(score_threshold=1.5)
    with pytest.raises(ValueError, match="unknown detection keys"):
        DetectionSettings.from_dict({"score_treshold": 0.3})
    with pytest.raises(ValueError, match="tile.size"):
        TileSettings(size=4)


def test_merge_of_a_padded_window_runs_its_clipped_boxes_through_nms() -> None:
    """A strip image (1000 x 250, tiles of 300): each window is 300 x 250, letterboxed with
    padding. Two boxes that passed the window's NMS (IoU 0.4 in the model's input) overlap by
    IoU 0.8 once clipped to the image, and one NMS over every box drops one: so must the merge
    (review: it kept both)."""
    windows = tile_windows(1000, 250, TileSettings(size=300, overlap=0.2))
    assert all(y1 - y0 == 250 for _, y0, _, y1 in windows)
    settings = DetectionSettings(score_threshold=0.0, nms_iou=0.6)
    clipped = (np.array([[100.0, 200, 160, 250], [100.0, 210, 160, 250]]),
               np.array([0.9, 0.8], np.float32), np.array([0, 0]))
    empty = (np.zeros((0, 4)), np.zeros(0, np.float32), np.zeros(0, np.int64))
    boxes, scores, _ = merge_tiles([clipped] + [empty] * (len(windows) - 1), windows, 1000, 250,
                                   settings)
    assert boxes.tolist() == [[100.0, 200, 160, 250]] and scores.tolist() == [
        pytest.approx(0.9)]

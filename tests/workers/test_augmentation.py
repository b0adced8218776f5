"""Augmentation presets: what ``auto`` chooses for the data, and per-sample random draws."""

import numpy as np
import pytest
import torch
from PIL import Image

from workers.ml.augmentation import (AugmentationChoice, augment_batch, build_transform,
                                     choose_augmentation)


def _gray(size):
    image = Image.new("L", (size, size), 0)
    image.paste(255, (size // 4, size // 4, size // 2, size // 2))
    return image.convert("RGB")


def _colour(size):
    image = Image.new("RGB", (size, size), (200, 30, 40))
    image.paste((20, 180, 60), (0, 0, size // 2, size))
    return image


def test_auto_never_flips_digits():
    choice = choose_augmentation("auto", [_gray(28)] * 8)
    assert choice == AugmentationChoice("light", False, choice.reason, choice.why)
    assert "grayscale" in choice.reason
    assert choice.why == {"code": "grayscale", "shorter_side": 28}  # for the console's languages


def test_auto_flips_colour_photos():
    choice = choose_augmentation("auto", [_colour(300)] * 8)
    assert (choice.preset, choice.flip) == ("light", True)
    assert choice.why == {"code": "photos", "shorter_side": 300}


def test_colour_photos_are_not_flipped_when_the_user_says_left_and_right_matter():
    # colour photos of signs or number plates: the data alone cannot tell them from objects
    for preset in ("auto", "light", "strong"):
        choice = choose_augmentation(preset, [_colour(300)] * 8, allow_flips=False)
        assert choice.flip is False and choice.preset == ("light" if preset == "auto" else preset)
        assert choice.why == {"code": "flips_off", "shorter_side": 300}


def test_small_colour_icons_are_not_flipped():
    choice = choose_augmentation("auto", [_colour(32)] * 8)
    assert (choice.preset, choice.flip) == ("light", False)
    assert "32 px" in choice.reason and choice.why == {"code": "small", "shorter_side": 32}


def test_strong_keeps_the_data_s_flip_rule_and_none_is_identity():
    assert choose_augmentation("strong", [_gray(28)]).flip is False
    assert choose_augmentation("strong", [_colour(300)]).flip is True
    none = choose_augmentation("none", [_colour(300)])
    assert none.preset == "none" and build_transform(none) is None
    assert none.why == {"code": "none_requested"}
    images = torch.randint(0, 255, (4, 3, 16, 16), dtype=torch.uint8)
    assert augment_batch(images, None) is images


def test_unknown_preset_is_refused_by_name():
    with pytest.raises(ValueError, match="augmentation"):
        choose_augmentation("extreme", [_gray(28)])


def test_each_sample_gets_its_own_draw_and_keeps_dtype_and_shape():
    torch.manual_seed(0)
    one = torch.from_numpy(np.array(_gray(32))).permute(2, 0, 1)
    batch = one.unsqueeze(0).repeat(6, 1, 1, 1)
    out = augment_batch(batch, build_transform(AugmentationChoice("strong", False, "")))
    assert out.dtype == torch.uint8 and out.shape == batch.shape
    distinct = {bytes(image.numpy().tobytes()) for image in out}
    assert len(distinct) == 6  # a per-batch transform would give 1

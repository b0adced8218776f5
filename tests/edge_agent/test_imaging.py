from __future__ import annotations

import io
import struct
import zlib

import numpy as np
import pytest
from PIL import Image, ImageFile

from edge_agent.imaging import (
    ImageDecodeError,
    Preprocessing,
    decode_image,
    preprocess,
    preprocess_batch,
    sniff_format,
)


def encode(image: Image.Image, fmt: str, **options: object) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, fmt, **options)
    return buffer.getvalue()


def png_chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def png_header_only(width: int, height: int) -> bytes:
    """A PNG whose header claims width x height px, with no pixel data at all."""
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", header) + png_chunk(b"IEND", b"")


@pytest.mark.parametrize(
    ("fmt", "expected"),
    [
        ("JPEG", "jpeg"),
        ("PNG", "png"),
        ("GIF", "gif"),
        ("BMP", "bmp"),
        ("WEBP", "webp"),
        ("TIFF", "tiff"),
    ],
)
def test_sniff_format_reads_magic_bytes(fmt: str, expected: str) -> None:
    data = encode(Image.new("RGB", (4, 4), (10, 20, 30)), fmt)
    assert sniff_format(data) == expected
    assert decode_image(data).size == (4, 4)


def test_non_image_bytes_are_an_unsupported_format() -> None:
    with pytest.raises(ImageDecodeError, match=r"^unsupported format 'unknown'$"):
        decode_image(b"name,label\nimg1.png,cat\n")
    with pytest.raises(ImageDecodeError, match=r"^unsupported format 'pdf'$"):
        decode_image(b"%PDF-1.7\n...")
    with pytest.raises(ImageDecodeError, match="empty file"):
        decode_image(b"")


def test_exif_orientation_6_is_applied() -> None:
    # Stored 40 wide x 20 high, left half red, right half blue; orientation 6 means the camera
    # was rotated: the upright image is 20 x 40 with red on top.
    stored = Image.new("RGB", (40, 20), (0, 0, 255))
    stored.paste((255, 0, 0), (0, 0, 20, 20))
    exif = Image.Exif()
    exif[0x0112] = 6
    image = decode_image(encode(stored, "JPEG", quality=95, exif=exif.tobytes()))
    assert image.mode == "RGB"
    assert image.size == (20, 40)
    top = image.getpixel((10, 5))
    bottom = image.getpixel((10, 35))
    assert top[0] > 240 and top[2] < 15
    assert bottom[2] > 240 and bottom[0] < 15


def test_cmyk_jpeg_becomes_rgb() -> None:
    data = encode(Image.new("CMYK", (8, 8), (0, 255, 255, 0)), "JPEG", quality=95)
    image = decode_image(data)
    assert image.mode == "RGB"
    assert image.getpixel((4, 4)) == pytest.approx((255, 0, 0), abs=3)


def test_rgba_png_is_composited_on_white() -> None:
    rgba = Image.new("RGBA", (2, 1))
    rgba.putpixel((0, 0), (10, 20, 30, 0))  # fully transparent
    rgba.putpixel((1, 0), (0, 0, 0, 128))  # half-transparent black
    image = decode_image(encode(rgba, "PNG"))
    assert image.mode == "RGB"
    assert image.getpixel((0, 0)) == (255, 255, 255)
    assert image.getpixel((1, 0)) == pytest.approx((127, 127, 127), abs=1)


def test_palette_png_with_transparency_is_composited_on_white() -> None:
    palette = Image.new("P", (2, 1))
    palette.putpalette([255, 0, 0, 0, 0, 255] + [0] * 762)
    palette.putpixel((0, 0), 0)
    palette.putpixel((1, 0), 1)
    image = decode_image(encode(palette, "PNG", transparency=1))
    assert image.mode == "RGB"
    assert [image.getpixel((x, 0)) for x in range(2)] == [(255, 0, 0), (255, 255, 255)]


def test_grayscale_png_is_replicated() -> None:
    image = decode_image(encode(Image.new("L", (3, 3), 77), "PNG"))
    assert image.mode == "RGB"
    assert image.getpixel((1, 1)) == (77, 77, 77)


def test_16_bit_grayscale_png_is_scaled_by_1_over_257() -> None:
    values = np.array([[0, 257 * 100, 65535, 1000]], dtype=np.uint16)
    source = Image.fromarray(values)
    assert source.mode.startswith("I;16")
    image = decode_image(encode(source, "PNG"))
    assert image.mode == "RGB"
    # 1000 / 257 = 3.89 -> 4; a clipping conversion would give 255 for every value > 255.
    assert [image.getpixel((x, 0)) for x in range(4)] == [
        (0, 0, 0),
        (100, 100, 100),
        (255, 255, 255),
        (4, 4, 4),
    ]


def test_truncated_jpeg_is_rejected_although_verify_passes() -> None:
    noise = np.random.default_rng(0).integers(0, 256, (64, 64, 3), dtype=np.uint8)
    data = encode(Image.fromarray(noise), "JPEG", quality=90)
    truncated = data[: len(data) // 2]
    Image.open(io.BytesIO(truncated)).verify()  # Pillow's verify() does not notice
    assert ImageFile.LOAD_TRUNCATED_IMAGES is False
    with pytest.raises(ImageDecodeError, match="^truncated image$"):
        decode_image(truncated)


def test_padding_switch_refuses_to_decode(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ImageFile, "LOAD_TRUNCATED_IMAGES", True)
    with pytest.raises(RuntimeError, match="LOAD_TRUNCATED_IMAGES"):
        decode_image(encode(Image.new("RGB", (2, 2)), "PNG"))


def test_huge_dimensions_are_rejected_from_the_header() -> None:
    # The file has no pixel data: it can only be rejected from its header, before decoding.
    # past Pillow's own bomb limit the answer still says how large and what the limit is
    with pytest.raises(ImageDecodeError,
                       match=r"image too large \(10000000000 pixels; at most 40000000 pixels\)"):
        decode_image(png_header_only(100_000, 100_000))
    with pytest.raises(ImageDecodeError, match=r"image too large \(3000x2000 px"):
        decode_image(png_header_only(3000, 2000), max_pixels=1_000_000)


def test_format_lies_are_caught_by_sniffing() -> None:
    # A JPEG's magic followed by PNG data must not be decoded as a PNG.
    png = encode(Image.new("RGB", (2, 2)), "PNG")
    with pytest.raises(ImageDecodeError, match="corrupt jpeg image"):
        decode_image(b"\xff\xd8\xff" + png)


def test_preprocessing_round_trips_the_manifest_form() -> None:
    data = {
        "size": [96, 64],
        "resize": "stretch",
        "mean": [0.485, 0.456, 0.406],
        "std": [0.229, 0.224, 0.225],
        "colour_order": "RGB",
        "layout": "NCHW",
        "dtype": "float32",
    }
    p = Preprocessing.from_dict(data)
    assert p.size == (96, 64)
    assert p.to_dict() == data
    with pytest.raises(ValueError, match="resize 'crop' is not supported"):
        Preprocessing.from_dict({**data, "resize": "crop"})
    assert Preprocessing.from_dict({**data, "resize": "letterbox"}).resize == "letterbox"
    with pytest.raises(ValueError, match="unknown preprocessing keys"):
        Preprocessing.from_dict({**data, "crop": 0.875})


def test_preprocess_gives_normalised_chw_float32() -> None:
    image = Image.new("RGB", (10, 4), (255, 0, 51))
    p = Preprocessing(size=(6, 8), mean=(0.5, 0.5, 0.5), std=(0.25, 0.5, 0.2))
    x = preprocess(image, p)
    assert x.shape == (3, 6, 8)
    assert x.dtype == np.float32
    # (1.0 - 0.5) / 0.25 = 2; (0 - 0.5) / 0.5 = -1; (0.2 - 0.5) / 0.2 = -1.5
    np.testing.assert_allclose(x[:, 3, 4], [2.0, -1.0, -1.5], atol=1e-6)
    batch = preprocess_batch([image, image], p)
    assert batch.shape == (2, 3, 6, 8)
    with pytest.raises(ValueError, match="RGB"):
        preprocess(image.convert("L"), p)


def test_preprocess_stretches_bilinearly() -> None:
    # A 2 x 1 image, black then white, stretched to 4 wide: bilinear gives a ramp, not steps.
    image = Image.new("RGB", (2, 1))
    image.putpixel((1, 0), (255, 255, 255))
    x = preprocess(image, Preprocessing(size=(1, 4), mean=(0, 0, 0), std=(1, 1, 1)))
    np.testing.assert_allclose(x[0, 0], [0.0, 0.25, 0.75, 1.0], atol=0.01)

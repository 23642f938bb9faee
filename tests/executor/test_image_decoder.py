"""ImageDecoder on PNG, BMP, PNM and TIFF files written here from known pixels, on onnx's frozen
example images, and against onnx's ReferenceEvaluator where Pillow (which it needs) is
installed. JPEG, JPEG 2000 and WebP are refused by name."""

from __future__ import annotations

import struct
import zlib
from typing import Any

import numpy as np
import pytest
from onnx.backend.test.case.node import _image_decoder_data as frozen

from tests.executor.ort_reference import ours, reference_run

RNG = np.random.default_rng(3)


def decode(data: bytes, pixel_format: str = "RGB") -> np.ndarray:
    stream = np.frombuffer(data, np.uint8)
    (out,) = ours("ImageDecoder", [stream], {"pixel_format": pixel_format}, opset=20)
    return out


def luma(rgb: np.ndarray) -> np.ndarray:
    """Pillow's convert("L"), written out per pixel in plain integers."""
    out = np.zeros((*rgb.shape[:2], 1), np.uint8)
    for (i, j), _ in np.ndenumerate(rgb[..., 0]):
        r, g, b = (int(v) for v in rgb[i, j, :3])
        out[i, j, 0] = (r * 19595 + g * 38470 + b * 7471 + 0x8000) >> 16
    return out


def colors(h: int, w: int, c: int = 3) -> np.ndarray:
    return RNG.integers(0, 256, (h, w, c)).astype(np.uint8)


# --- PNG writer -----------------------------------------------------------------------------------


def chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else (b if pb <= pc else c)


def filter_row(kind: int, row: bytes, prior: bytes, bpp: int) -> bytes:
    """PNG's filter ``kind`` applied to one row, byte by byte as the spec writes it."""
    out = bytearray()
    for i, x in enumerate(row):
        a = row[i - bpp] if i >= bpp else 0
        b = prior[i]
        c = prior[i - bpp] if i >= bpp else 0
        pred = [0, a, b, (a + b) // 2, paeth(a, b, c)][kind]
        out.append((x - pred) % 256)
    return bytes([kind]) + bytes(out)


def pack_rows(samples: np.ndarray, depth: int) -> list[bytes]:
    """(h, w*channels) samples of ``depth`` bits -> byte rows, most significant bits first."""
    if depth == 16:
        return [row.astype(">u2").tobytes() for row in samples]
    if depth == 8:
        return [row.astype(np.uint8).tobytes() for row in samples]
    bits = ((samples[..., None] >> np.arange(depth - 1, -1, -1)) & 1).reshape(len(samples), -1)
    return [np.packbits(row).tobytes() for row in bits.astype(np.uint8)]


def png_image(rows: list[bytes], bpp: int, filters: list[int]) -> bytes:
    prior = bytes(len(rows[0]))
    out = b""
    for row, kind in zip(rows, filters, strict=True):
        out += filter_row(kind, row, prior, bpp)
        prior = row
    return out


def png(
    samples: np.ndarray,
    color: int,
    depth: int = 8,
    palette: np.ndarray | None = None,
    interlace: bool = False,
    filters: str = "cycle",
) -> bytes:
    """A PNG of (h, w, channels) samples; row filters cycle through 0-4 or are random."""
    h, w, c = samples.shape
    bpp = max(1, c * depth // 8)
    passes = [(0, 0, 1, 1)] if not interlace else [
        (0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2),
        (0, 1, 1, 2),
    ]  # fmt: skip
    raw = b""
    for x0, y0, dx, dy in passes:
        part = samples[y0::dy, x0::dx]
        if part.size == 0:
            continue
        rows = pack_rows(part.reshape(part.shape[0], -1), depth)
        kinds = [k % 5 for k in range(len(rows))] if filters == "cycle" else None
        kinds = kinds or list(RNG.integers(0, 5, len(rows)))
        raw += png_image(rows, bpp, kinds)
    head = struct.pack(">IIBBBBB", w, h, depth, color, 0, 0, int(interlace))
    body = chunk(b"IHDR", head)
    if palette is not None:
        body += chunk(b"PLTE", palette.astype(np.uint8).tobytes())
    body += chunk(b"IDAT", zlib.compress(raw))
    return b"\x89PNG\r\n\x1a\n" + body + chunk(b"IEND", b"")


@pytest.mark.parametrize("interlace", [False, True])
@pytest.mark.parametrize("shape", [(1, 1), (5, 7), (9, 13), (16, 3)])
def test_png_rgb_every_filter(interlace: bool, shape: tuple[int, int]) -> None:
    image = colors(*shape)
    got = decode(png(image, 2, interlace=interlace, filters="random"))
    np.testing.assert_array_equal(got, image)


def test_png_rgba_drops_alpha_and_bgr_grayscale() -> None:
    image = colors(6, 9, 4)
    data = png(image, 6)
    np.testing.assert_array_equal(decode(data), image[..., :3])
    np.testing.assert_array_equal(decode(data, "BGR"), image[..., 2::-1])
    np.testing.assert_array_equal(decode(data, "Grayscale"), luma(image))


@pytest.mark.parametrize("depth", [1, 2, 4, 8, 16])
@pytest.mark.parametrize("interlace", [False, True])
def test_png_gray_depths(depth: int, interlace: bool) -> None:
    levels = RNG.integers(0, 1 << depth, (7, 11, 1))
    data = png(levels, 0, depth, interlace=interlace)
    want = (levels >> 8 if depth == 16 else levels * (255 // ((1 << depth) - 1))).astype(np.uint8)
    np.testing.assert_array_equal(decode(data, "Grayscale"), want)
    np.testing.assert_array_equal(decode(data), np.repeat(want, 3, axis=2))


@pytest.mark.parametrize("depth", [1, 2, 4, 8])
def test_png_palette(depth: int) -> None:
    table = colors(1 << depth, 1)[:, 0]
    index = RNG.integers(0, 1 << depth, (5, 10, 1))
    got = decode(png(index, 3, depth, palette=table))
    np.testing.assert_array_equal(got, table[index[..., 0]])


def test_png_16_bit_rgb_and_gray_alpha() -> None:
    image = RNG.integers(0, 65536, (4, 5, 3))
    np.testing.assert_array_equal(decode(png(image, 2, 16)), (image >> 8).astype(np.uint8))
    gray_alpha = colors(4, 5, 2)
    np.testing.assert_array_equal(decode(png(gray_alpha, 4), "Grayscale"), gray_alpha[..., :1])


def test_png_split_idat_and_a_large_image() -> None:
    image = colors(120, 90)
    data = png(image, 2, filters="random")
    start = data.index(b"IDAT") - 4
    (length,) = struct.unpack(">I", data[start : start + 4])
    body = data[start + 8 : start + 8 + length]
    split = data[:start] + chunk(b"IDAT", body[:100]) + chunk(b"IDAT", body[100:])
    np.testing.assert_array_equal(decode(split + data[start + 12 + length :]), image)


# --- BMP writer -----------------------------------------------------------------------------------


def bmp(
    pixels: bytes,
    w: int,
    h: int,
    bits: int,
    palette: bytes = b"",
    compression: int = 0,
    masks: bytes = b"",
) -> bytes:
    """A BMP with a 40-byte info header; ``h`` < 0 stores the rows top-down."""
    offset = 14 + 40 + len(masks) + len(palette)
    colors_used = len(palette) // 4
    info = struct.pack("<IiiHHIIiiII", 40, w, h, 1, bits, compression, len(pixels), 2835, 2835,
                       colors_used, 0)  # fmt: skip
    head = b"BM" + struct.pack("<IHHI", offset + len(pixels), 0, 0, offset)
    return head + info + masks + palette + pixels


def bmp_rows(rows: list[bytes]) -> bytes:
    return b"".join(r + bytes(-len(r) % 4) for r in rows)


@pytest.mark.parametrize("top_down", [False, True])
def test_bmp_24_bit(top_down: bool) -> None:
    image = colors(5, 7)
    rows = [row[:, ::-1].tobytes() for row in image]
    data = bmp(bmp_rows(rows if top_down else rows[::-1]), 7, -5 if top_down else 5, 24)
    np.testing.assert_array_equal(decode(data), image)
    np.testing.assert_array_equal(decode(data, "Grayscale"), luma(image))


def test_bmp_32_bit_and_bitfields() -> None:
    image = colors(3, 4)
    bgrx = np.concatenate([image[..., ::-1], np.full((3, 4, 1), 9, np.uint8)], axis=2)
    rows = [row.tobytes() for row in bgrx[::-1]]
    np.testing.assert_array_equal(decode(bmp(bmp_rows(rows), 4, 3, 32)), image)
    masks = struct.pack("<III", 0xFF0000, 0xFF00, 0xFF)
    data = bmp(bmp_rows(rows), 4, 3, 32, compression=3, masks=masks)
    np.testing.assert_array_equal(decode(data), image)


def test_bmp_16_bit_555_and_565() -> None:
    r, g, b = RNG.integers(0, 32, (3, 4, 6))
    g6 = RNG.integers(0, 64, (4, 6))
    p555 = (r << 10 | g << 5 | b).astype("<u2")
    want = np.stack([r * 255 // 31, g * 255 // 31, b * 255 // 31], axis=-1).astype(np.uint8)
    data = bmp(bmp_rows([row.tobytes() for row in p555[::-1]]), 6, 4, 16)
    np.testing.assert_array_equal(decode(data), want)
    p565 = (r << 11 | g6 << 5 | b).astype("<u2")
    masks = struct.pack("<III", 0xF800, 0x07E0, 0x001F)
    data = bmp(
        bmp_rows([row.tobytes() for row in p565[::-1]]), 6, 4, 16, compression=3, masks=masks
    )
    want = np.stack([r * 255 // 31, g6 * 255 // 63, b * 255 // 31], axis=-1).astype(np.uint8)
    np.testing.assert_array_equal(decode(data), want)


@pytest.mark.parametrize("bits", [1, 4, 8])
def test_bmp_palette(bits: int) -> None:
    table = colors(1 << bits, 1)[:, 0]
    index = RNG.integers(0, 1 << bits, (6, 11))
    rows = pack_rows(index, bits)
    palette = np.concatenate([table[:, ::-1], np.zeros((len(table), 1), np.uint8)], 1).tobytes()
    data = bmp(bmp_rows(rows[::-1]), 11, 6, bits, palette=palette)
    np.testing.assert_array_equal(decode(data), table[index])


def test_bmp_rle_is_refused() -> None:
    with pytest.raises(ValueError, match=r"BMP compression 1 .* not supported"):
        decode(bmp(b"\x00\x01", 2, 2, 8, palette=bytes(8), compression=1))


# --- PNM ------------------------------------------------------------------------------------------


def test_pnm_binary_and_plain() -> None:
    image = colors(4, 6)
    header = b"P6\n# made here\n6 4\n255\n"
    np.testing.assert_array_equal(decode(header + image.tobytes()), image)
    plain = b"P3 6 4 255\n" + " ".join(str(v) for v in image.ravel()).encode()
    np.testing.assert_array_equal(decode(plain, "BGR"), image[..., ::-1])
    gray = colors(3, 5, 1)
    np.testing.assert_array_equal(decode(b"P5 5 3 255 " + gray.tobytes(), "Grayscale"), gray)
    plain_gray = b"P2\n5 3\n255\n" + "\n".join(str(v) for v in gray.ravel()).encode()
    np.testing.assert_array_equal(decode(plain_gray, "Grayscale"), gray)


def test_pnm_bitmaps() -> None:
    bits = RNG.integers(0, 2, (3, 10))
    want = ((1 - bits) * 255).astype(np.uint8)[..., None]  # 1 is black
    packed = b"".join(np.packbits(row.astype(np.uint8)).tobytes() for row in bits)
    np.testing.assert_array_equal(decode(b"P4\n10 3\n" + packed, "Grayscale"), want)
    text = "\n".join("".join(str(v) for v in row) for row in bits).encode()
    np.testing.assert_array_equal(decode(b"P1\n# c\n10 3\n" + text, "Grayscale"), want)


@pytest.mark.parametrize("maxval", [1, 15, 100, 1000, 65535])
def test_pnm_other_maxvals(maxval: int) -> None:
    """Pillow scales with round(v / maxval * 255), ties to even; 2-byte samples above 255."""
    values = RNG.integers(0, maxval + 1, (3, 4, 3))
    dtype = np.uint8 if maxval < 256 else np.dtype(">u2")
    data = f"P6 4 3 {maxval}\n".encode() + values.astype(dtype).tobytes()
    want = np.array([round(v / maxval * 255) for v in values.ravel()], np.uint8)
    np.testing.assert_array_equal(decode(data), want.reshape(3, 4, 3))


# --- TIFF writer ----------------------------------------------------------------------------------


def tiff(
    samples: np.ndarray,
    photometric: int,
    *,
    order: str = "<",
    compression: int = 1,
    predictor: int = 1,
    colormap: list[int] | None = None,
    depth: int = 8,
    rows_per_strip: int = 2,
) -> bytes:
    """A one-IFD TIFF of (h, w, spp) samples in strips of ``rows_per_strip`` rows."""
    h, w, spp = samples.shape
    stored = samples.astype(np.int64)
    if predictor == 2:
        stored = np.diff(stored, axis=1, prepend=0) % (1 << depth)
    if depth == 16:
        rows = [row.astype(order + "u2").tobytes() for row in stored.reshape(h, -1)]
    else:
        rows = pack_rows(stored.reshape(h, -1), depth)
    strips = [b"".join(rows[i : i + rows_per_strip]) for i in range(0, h, rows_per_strip)]
    if compression == 8:
        strips = [zlib.compress(s) for s in strips]
    data = bytearray(b"II*\x00" if order == "<" else b"MM\x00*") + bytes(4)
    offsets = []
    for s in strips:
        offsets.append(len(data))
        data += s
    extra = bytearray()
    tags: list[tuple[int, int, list[int]]] = [
        (256, 4, [w]), (257, 4, [h]), (258, 3, [depth] * spp), (259, 3, [compression]),
        (262, 3, [photometric]), (273, 4, offsets), (277, 3, [spp]),
        (278, 4, [rows_per_strip]), (279, 4, [len(s) for s in strips]), (317, 3, [predictor]),
    ]  # fmt: skip
    if colormap is not None:
        tags.append((320, 3, colormap))
    ifd_at = len(data)
    entries_end = ifd_at + 2 + 12 * len(tags) + 4
    entries = b""
    for tag, kind, values in tags:
        code = "H" if kind == 3 else "I"
        packed = struct.pack(f"{order}{len(values)}{code}", *values)
        if len(packed) <= 4:
            entries += struct.pack(order + "HHI", tag, kind, len(values)) + packed.ljust(4, b"\0")
        else:
            where = entries_end + len(extra)
            entries += struct.pack(order + "HHII", tag, kind, len(values), where)
            extra += packed
    data[4:8] = struct.pack(order + "I", ifd_at)
    data += struct.pack(order + "H", len(tags)) + entries + bytes(4) + extra
    return bytes(data)


@pytest.mark.parametrize("order", ["<", ">"])
@pytest.mark.parametrize(("compression", "predictor"), [(1, 1), (8, 1), (8, 2)])
def test_tiff_rgb(order: str, compression: int, predictor: int) -> None:
    image = colors(5, 6)
    data = tiff(image, 2, order=order, compression=compression, predictor=predictor)
    np.testing.assert_array_equal(decode(data), image)
    rgba = colors(5, 6, 4)
    np.testing.assert_array_equal(decode(tiff(rgba, 2, order=order)), rgba[..., :3])


def test_tiff_gray_palette_and_16_bit() -> None:
    gray = colors(3, 9, 1)
    np.testing.assert_array_equal(decode(tiff(gray, 1), "Grayscale"), gray)
    np.testing.assert_array_equal(decode(tiff(gray, 0), "Grayscale"), 255 - gray)  # WhiteIsZero
    bits = RNG.integers(0, 2, (3, 9, 1))
    np.testing.assert_array_equal(decode(tiff(bits, 1, depth=1), "Grayscale"), bits * 255)
    wide = RNG.integers(0, 65536, (3, 4, 3))
    got = decode(tiff(wide, 2, depth=16, order=">", compression=8, predictor=2))
    np.testing.assert_array_equal(got, (wide >> 8).astype(np.uint8))
    table = RNG.integers(0, 65536, (3, 16))
    index = RNG.integers(0, 16, (4, 5, 1))
    data = tiff(index, 3, depth=4, colormap=table.ravel().tolist())
    np.testing.assert_array_equal(decode(data), (table.T >> 8).astype(np.uint8)[index[..., 0]])


def test_tiff_lzw_is_refused() -> None:
    data = bytearray(tiff(colors(2, 2), 2))
    at = data.index(struct.pack("<HHI", 259, 3, 1))  # the Compression entry: none -> LZW
    data[at + 8 : at + 10] = struct.pack("<H", 5)
    with pytest.raises(ValueError, match=r"TIFF compression 5 .* not supported"):
        decode(bytes(data))


# --- formats, pixel formats, damage ---------------------------------------------------------------


@pytest.mark.parametrize("name", ["png_rgb", "bmp_rgb", "pnm_rgb", "tiff_rgb"])
def test_onnx_frozen_examples(name: str) -> None:
    case = getattr(frozen, f"image_decoder_decode_{name}")
    np.testing.assert_array_equal(decode(case.data.tobytes()), case.output)


def test_grayscale_is_pillows_luma() -> None:
    """onnx's frozen JPEG example gives the RGB and Grayscale decodings of one image: the
    second is Pillow's convert("L") of the first, which our Grayscale reproduces."""
    rgb = frozen.image_decoder_decode_jpeg_rgb.output
    gray = frozen.image_decoder_decode_jpeg_grayscale.output
    image = png(rgb, 2)
    np.testing.assert_array_equal(decode(image, "Grayscale"), gray)
    np.testing.assert_array_equal(decode(image, "Grayscale"), luma(rgb))


@pytest.mark.parametrize(
    ("name", "words"),
    [("jpeg_rgb", "JPEG"), ("jpeg2k_rgb", "JPEG 2000"), ("webp_rgb", "WebP")],
)
def test_unsupported_formats_are_refused(name: str, words: str) -> None:
    case = getattr(frozen, f"image_decoder_decode_{name}")
    with pytest.raises(ValueError, match=f"{words} is not supported"):
        decode(case.data.tobytes())
    with pytest.raises(ValueError, match="GIF is not supported"):
        decode(b"GIF89a" + bytes(20))


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="pixel_format 'CMYK' is not supported"):
        decode(png(colors(2, 2), 2), "CMYK")
    with pytest.raises(ValueError, match="not supported; a 1-D uint8 tensor is"):
        ours("ImageDecoder", [np.zeros((2, 2), np.uint8)], opset=20)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"not an image at all",
        png(colors(4, 4), 2)[:-30],  # truncated
        png(colors(4, 4), 2).replace(b"IHDR", b"IHDX"),  # no header chunk
        b"BM" + bytes(10),
        b"P6 4 4 255\n" + bytes(10),
        b"II*\x00" + bytes(4),
        b"\x89PNG\r\n\x1a\n"  # a huge interlaced header over a few bytes: nothing allocated
        + chunk(b"IHDR", struct.pack(">IIBBBBB", 10**5, 10**5, 8, 2, 0, 0, 1))
        + chunk(b"IDAT", zlib.compress(bytes(10)))
        + chunk(b"IEND", b""),
    ],
)
def test_damaged_streams_give_an_empty_image(data: bytes) -> None:
    """The spec: "If it can't decode for any reason ... it will return an empty matrix"."""
    assert decode(data).shape == (0, 0, 3)
    assert decode(data, "Grayscale").shape == (0, 0, 1)


def reference_or_skip(data: bytes, pixel_format: str) -> np.ndarray:
    pytest.importorskip("PIL", reason="onnx's reference ImageDecoder needs Pillow")
    stream = np.frombuffer(data, np.uint8)
    attrs: dict[str, Any] = {"pixel_format": pixel_format}
    (want,) = reference_run("ImageDecoder", [stream], attrs, opset=20)
    return want


@pytest.mark.parametrize("pixel_format", ["RGB", "BGR", "Grayscale"])
def test_against_the_reference(pixel_format: str) -> None:
    image = colors(7, 5)
    rows = [row[:, ::-1].tobytes() for row in image[::-1]]
    for data in (png(image, 2, interlace=True), bmp(bmp_rows(rows), 5, 7, 24), tiff(image, 2)):
        np.testing.assert_array_equal(
            decode(data, pixel_format), reference_or_skip(data, pixel_format)
        )

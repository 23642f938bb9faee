"""ImageDecoder: PNG, BMP, PNM and TIFF bytes to a (height, width, channels) uint8 image.

Only formats that decode exactly with zlib and numpy are read: PNG (every colour type, bit
depth, filter and Adam7 interlacing), BMP (1 to 32 bits per pixel, uncompressed or
bit-fields), PNM (P1 to P6) and TIFF (strips, uncompressed or Deflate, horizontal predictor).
JPEG, JPEG 2000, WebP and GIF are refused by name: a bit-exact JPEG decoder is a project of
its own. A stream that is no image, or a damaged one, gives an empty image, as the spec asks.

The pixel values follow onnx's reference (Pillow): 16-bit samples keep their high byte, PNM
samples of another maximum are scaled with round-half-even, and Grayscale is Pillow's
``convert("L")``, ITU-R 601-2 luma in 16-bit fixed point. Gray and palette images are
expanded to three channels for RGB and BGR, and alpha is dropped (the reference hands
Pillow's array on as it comes: two dimensions, or four channels). One knowing departure:
16-bit gray keeps its high byte, as 16-bit colour does, where Pillow clips it at 255.
"""

from __future__ import annotations

import re
import struct
import zlib
from collections.abc import Callable

import numpy as np

from xocview.executor.registry import kernel

__all__ = ["image_decoder"]

_FORMATS = ("RGB", "BGR", "Grayscale")


class _Unsupported(ValueError):
    """A format or variant this decoder does not read (the message says "not supported")."""


class _Corrupt(Exception):
    """The stream is not a well-formed image: the op then gives an empty image."""


def _need(condition: bool, what: str) -> None:
    if not condition:
        raise _Corrupt(what)


def _refuse(what: str) -> _Unsupported:
    return _Unsupported(f"ImageDecoder: {what} is not supported; PNG, BMP, PNM and TIFF are")


# --- shared helpers -------------------------------------------------------------------------------


def _unpack_bits(rows: np.ndarray, width: int, depth: int) -> np.ndarray:
    """Samples of ``depth`` bits (1, 2, 4), most significant first, from byte-padded rows:
    (rows, bytes) -> (rows, width)."""
    if depth == 8:
        return rows[:, :width]
    bits = np.unpackbits(rows, axis=1)[:, : width * depth]
    bits = bits.reshape(rows.shape[0], width, depth)
    weights = (1 << np.arange(depth - 1, -1, -1)).astype(np.uint8)
    return (bits * weights).sum(axis=2, dtype=np.uint8)


def _scale_to_byte(samples: np.ndarray, depth: int) -> np.ndarray:
    """Samples of 1, 2 or 4 bits stretched to 0..255 (exact: 255 is a multiple of 2^d - 1)."""
    return (samples * (255 // ((1 << depth) - 1))).astype(np.uint8)


def _take_palette(indices: np.ndarray, palette: np.ndarray) -> np.ndarray:
    """Palette lookup; indices past the palette's end read black, as Pillow pads it."""
    full = np.zeros((256, 3), np.uint8)
    full[: min(len(palette), 256)] = palette[:256]
    return full[indices]


def _luma(rgb: np.ndarray) -> np.ndarray:
    """Pillow's RGB -> L: (19595 R + 38470 G + 7471 B + 32768) >> 16."""
    wide = rgb.astype(np.uint32)
    value = wide[..., 0] * 19595 + wide[..., 1] * 38470 + wide[..., 2] * 7471 + 0x8000
    return (value >> 16).astype(np.uint8)[..., None]


# --- PNG ------------------------------------------------------------------------------------------

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_PNG_CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}
_PNG_DEPTHS = {0: (1, 2, 4, 8, 16), 2: (8, 16), 3: (1, 2, 4, 8), 4: (8, 16), 6: (8, 16)}
# Adam7's passes: first column and row, column and row steps
_ADAM7: tuple[tuple[int, int, int, int], ...] = (
    (0, 0, 8, 8),
    (4, 0, 8, 8),
    (0, 4, 4, 8),
    (2, 0, 4, 4),
    (0, 2, 2, 4),
    (1, 0, 2, 2),
    (0, 1, 1, 2),
)


def _png_chunks(data: bytes) -> dict[bytes, list[bytes]]:
    """Chunk type -> the payloads of that type, in order, up to IEND; CRCs checked."""
    chunks: dict[bytes, list[bytes]] = {}
    pos = len(_PNG_SIGNATURE)
    while pos + 12 <= len(data):
        length, kind = struct.unpack_from(">I4s", data, pos)
        body = data[pos + 8 : pos + 8 + length]
        _need(len(body) == length, "PNG chunk runs past the end")
        (crc,) = struct.unpack_from(">I", data, pos + 8 + length)
        _need(zlib.crc32(kind + body) == crc, f"PNG chunk {kind!r} fails its CRC")
        chunks.setdefault(kind, []).append(body)
        pos += 12 + length
        if kind == b"IEND":
            break
    _need(b"IHDR" in chunks and b"IDAT" in chunks, "PNG without IHDR or IDAT")
    return chunks


def _paeth(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    p = a + b - c
    pa, pb, pc = np.abs(p - a), np.abs(p - b), np.abs(p - c)
    return np.where((pa <= pb) & (pa <= pc), a, np.where(pb <= pc, b, c))


def _png_unfilter(filtered: np.ndarray, kinds: np.ndarray) -> np.ndarray:
    """Undo PNG's per-row filters on (rows, pixels, bytes per pixel) data.

    A byte depends on its left, upper and upper-left neighbours only, so the bytes of one
    anti-diagonal (row + pixel constant) are independent: one vectorised step per diagonal,
    every filter type computed and the row's own chosen.
    """
    _need(bool(np.all(kinds <= 4)), "PNG filter type above 4")
    if not kinds.any():
        return filtered
    h, n, bpp = filtered.shape
    out = np.zeros((h + 1, n + 1, bpp), np.int16)
    source = filtered.astype(np.int16)
    for k in range(h + n - 1):
        r = np.arange(max(0, k - n + 1), min(h - 1, k) + 1)
        j = k - r
        a, b, c = out[r + 1, j], out[r, j + 1], out[r, j]
        kind = kinds[r][:, None]
        predicted = np.select(
            [kind == 1, kind == 2, kind == 3, kind == 4], [a, b, (a + b) >> 1, _paeth(a, b, c)], 0
        )
        out[r + 1, j + 1] = (source[r, j] + predicted) & 255
    return out[1:, 1:].astype(np.uint8)


def _png_pass(raw: memoryview, width: int, height: int, depth: int, channels: int) -> np.ndarray:
    """One (sub-)image: filtered rows -> (height, width, channels) samples, 16-bit as uint16."""
    bits = depth * channels
    row_bytes = (width * bits + 7) // 8
    _need(len(raw) >= height * (row_bytes + 1), "PNG image data is too short")
    rows = np.frombuffer(raw, np.uint8, height * (row_bytes + 1)).reshape(height, -1)
    bpp = max(1, bits // 8)
    plain = _png_unfilter(rows[:, 1:].reshape(height, -1, bpp), rows[:, 0]).reshape(height, -1)
    if depth == 16:
        return plain.view(">u2").reshape(height, width, channels).astype(np.uint16)
    return _unpack_bits(plain, width * channels, depth).reshape(height, width, channels)


def _png_samples(data: memoryview, width: int, height: int, header: tuple[int, ...]) -> np.ndarray:
    """All samples of the image, de-interlaced when Adam7 is used."""
    depth, color, interlace = header
    channels = _PNG_CHANNELS[color]
    if not interlace:
        return _png_pass(data, width, height, depth, channels)
    sizes = [(-(-(width - x0) // dx), -(-(height - y0) // dy)) for x0, y0, dx, dy in _ADAM7]
    passes = [(w, h, h * ((w * depth * channels + 7) // 8 + 1)) for w, h in sizes]
    _need(sum(n for w, h, n in passes if w > 0 and h > 0) <= len(data), "PNG data too short")
    out = np.zeros((height, width, channels), np.uint16 if depth == 16 else np.uint8)
    pos = 0
    for (x0, y0, dx, dy), (w, h, n) in zip(_ADAM7, passes, strict=True):
        if w > 0 and h > 0:
            out[y0::dy, x0::dx] = _png_pass(data[pos:], w, h, depth, channels)
            pos += n
    return out


def _png(data: bytes) -> np.ndarray:
    chunks = _png_chunks(data)
    width, height, depth, color, method, filt, interlace = struct.unpack(
        ">IIBBBBB", chunks[b"IHDR"][0][:13]
    )
    _need(color in _PNG_DEPTHS and depth in _PNG_DEPTHS[color], "PNG colour type or depth")
    _need(method == 0 and filt == 0 and interlace in (0, 1), "PNG compression or filter method")
    raw = memoryview(zlib.decompress(b"".join(chunks[b"IDAT"])))
    samples = _png_samples(raw, width, height, (depth, color, interlace))
    if depth == 16:
        samples = (samples >> 8).astype(np.uint8)
    if color == 3:
        _need(b"PLTE" in chunks, "palette PNG without PLTE")
        plte = np.frombuffer(chunks[b"PLTE"][0], np.uint8)
        return _take_palette(samples[..., 0], plte[: len(plte) // 3 * 3].reshape(-1, 3))
    if depth < 8:
        samples = _scale_to_byte(samples, depth)
    return samples[..., :3] if color in (2, 6) else samples[..., :1]


# --- BMP ------------------------------------------------------------------------------------------


def _mask_channel(pixels: np.ndarray, mask: int) -> np.ndarray:
    """One colour of bit-field pixels, scaled to 0..255 as Pillow does (v * 255 // max)."""
    if mask == 0:
        return np.zeros(pixels.shape, np.uint8)
    shift = (mask & -mask).bit_length() - 1
    top = mask >> shift
    value = (pixels & np.uint32(mask)) >> np.uint32(shift)
    return (value.astype(np.uint64) * 255 // top).astype(np.uint8)


def _bmp_header(data: bytes) -> dict[str, int]:
    """The fields of the file and DIB headers the decoder needs."""
    (offset,) = struct.unpack_from("<I", data, 10)
    (size,) = struct.unpack_from("<I", data, 14)
    if size == 12:  # OS/2 BITMAPCOREHEADER
        width, height, _, bits = struct.unpack_from("<HHHH", data, 18)
        return {"offset": offset, "size": size, "width": width, "height": height, "bits": bits,
                "compression": 0, "colors": 0, "entry": 3}  # fmt: skip
    if size not in (40, 52, 56, 108, 124):
        raise _refuse(f"BMP header of {size} bytes")
    width, height, _, bits, compression = struct.unpack_from("<iiHHI", data, 18)
    (colors,) = struct.unpack_from("<I", data, 46)
    return {"offset": offset, "size": size, "width": width, "height": height, "bits": bits,
            "compression": compression, "colors": colors, "entry": 4}  # fmt: skip


def _bmp_masks(data: bytes, head: dict[str, int]) -> tuple[int, int, int]:
    """Red, green and blue masks: the header's bit-fields, or the defaults of 16 and 32 bits."""
    if head["compression"] in (3, 6):
        return struct.unpack_from("<III", data, 54)
    if head["bits"] == 16:
        return 0x7C00, 0x03E0, 0x001F
    return 0xFF0000, 0x00FF00, 0x0000FF


def _bmp(data: bytes) -> np.ndarray:
    head = _bmp_header(data)
    width, height, bits = head["width"], head["height"], head["bits"]
    if head["compression"] not in (0, 3, 6):
        raise _refuse(f"BMP compression {head['compression']} (RLE, JPEG or PNG inside)")
    if bits not in (1, 2, 4, 8, 16, 24, 32):
        raise _refuse(f"BMP of {bits} bits per pixel")
    rows_n = abs(height)
    _need(width > 0 and rows_n > 0, "BMP size")
    stride = (width * bits + 31) // 32 * 4
    start = head["offset"]
    _need(start + stride * rows_n <= len(data), "BMP pixel data is too short")
    rows = np.frombuffer(data, np.uint8, stride * rows_n, start).reshape(rows_n, stride)
    if height > 0:  # stored bottom-up
        rows = rows[::-1]
    if bits <= 8:
        count = head["colors"] or 1 << bits
        first = 14 + head["size"] + (12 if head["compression"] == 3 and head["size"] == 40 else 0)
        entry = head["entry"]
        _need(first + count * entry <= len(data), "BMP palette runs past the end")
        table = np.frombuffer(data, np.uint8, count * entry, first).reshape(count, entry)
        return _take_palette(_unpack_bits(rows, width, bits), table[:, 2::-1])
    if bits == 24:
        return rows[:, : width * 3].reshape(rows_n, width, 3)[..., ::-1]
    dtype = "<u2" if bits == 16 else "<u4"
    pixels = rows.view(dtype)[:, :width].astype(np.uint32)
    masks = _bmp_masks(data, head)
    return np.stack([_mask_channel(pixels, m) for m in masks], axis=-1)


# --- PNM ------------------------------------------------------------------------------------------

_PNM_HEADER = re.compile(rb"P([1-6])((?:\s+|#[^\n]*\n)+)")
_PNM_TOKEN = re.compile(rb"(?:\s|#[^\n\r]*[\n\r])*(\d+)")


def _pnm_header(data: bytes) -> tuple[int, list[int], int]:
    """Kind (1-6), [width, height(, maxval)], and where the raster starts (after the single
    whitespace byte that ends the header)."""
    kind = int(data[1:2])
    wanted = 2 if kind in (1, 4) else 3
    values, pos = [], 2
    for _ in range(wanted):
        match = _PNM_TOKEN.match(data, pos)
        _need(match is not None, "PNM header")
        assert match is not None
        values.append(int(match.group(1)))
        pos = match.end()
    _need(pos < len(data) and data[pos : pos + 1].isspace(), "PNM header end")
    return kind, values, pos + 1


def _pnm_plain(body: bytes, count: int, bitmap: bool) -> np.ndarray:
    """The values of a plain (ASCII) raster; comments skipped, P1's digits may touch."""
    text = re.sub(rb"#[^\n\r]*", b" ", body)
    if bitmap:
        digits = np.frombuffer(re.sub(rb"[^01]", b"", text), np.uint8) - ord("0")
        _need(digits.size >= count, "PBM raster is too short")
        return digits[:count].astype(np.int64)
    values = np.array(text.split()[:count], dtype=np.int64)
    _need(values.size == count, "PNM raster is too short")
    return values


def _pnm(data: bytes) -> np.ndarray:
    kind, values, start = _pnm_header(data)
    width, height = values[0], values[1]
    maxval = values[2] if len(values) > 2 else 1
    _need(0 < maxval < 65536, "PNM maxval")
    channels = 3 if kind in (3, 6) else 1
    count = width * height * channels
    if kind == 4:
        row_bytes = (width + 7) // 8
        _need(start + row_bytes * height <= len(data), "PBM raster is too short")
        rows = np.frombuffer(data, np.uint8, row_bytes * height, start).reshape(height, -1)
        bits = _unpack_bits(rows, width, 1)
        return ((1 - bits) * 255).astype(np.uint8)[..., None]
    if kind in (1, 2, 3):
        samples = _pnm_plain(data[start:], count, kind == 1)
        if kind == 1:
            return ((1 - samples) * 255).astype(np.uint8).reshape(height, width, 1)
    else:
        dtype = np.dtype(np.uint8) if maxval < 256 else np.dtype(">u2")
        _need(start + count * dtype.itemsize <= len(data), "PNM raster is too short")
        samples = np.frombuffer(data, dtype, count, start).astype(np.int64)
    _need(bool(np.all(samples <= maxval)), "PNM sample above maxval")
    if maxval != 255:  # Pillow: min(255, round(v / maxval * 255)), ties to even
        samples = np.minimum(255, np.rint(samples / maxval * 255))
    return samples.astype(np.uint8).reshape(height, width, channels)


# --- TIFF -----------------------------------------------------------------------------------------

_TIFF_TYPES = {1: "B", 3: "H", 4: "I", 6: "b", 8: "h", 9: "i"}


def _tiff_tags(data: bytes) -> tuple[str, dict[int, list[int]]]:
    """Byte order and the first IFD's integer tags (tag -> values)."""
    order = "<" if data[:2] == b"II" else ">"
    (offset,) = struct.unpack_from(order + "I", data, 4)
    (count,) = struct.unpack_from(order + "H", data, offset)
    tags: dict[int, list[int]] = {}
    for i in range(count):
        tag, kind, n = struct.unpack_from(order + "HHI", data, offset + 2 + 12 * i)
        code = _TIFF_TYPES.get(kind)
        if code is None:
            continue  # rationals, ASCII: nothing the pixels need
        where = offset + 10 + 12 * i
        if n * struct.calcsize(code) > 4:
            (where,) = struct.unpack_from(order + "I", data, where)
        tags[tag] = list(struct.unpack_from(f"{order}{n}{code}", data, where))
    return order, tags


def _tiff_strips(data: bytes, tags: dict[int, list[int]]) -> bytes:
    """The image's strips, decompressed and joined."""
    compression = tags.get(259, [1])[0]
    if compression not in (1, 8, 32946):
        raise _refuse(f"TIFF compression {compression} (only none and Deflate are read)")
    if 322 in tags:
        raise _refuse("tiled TIFF")
    _need(273 in tags and 279 in tags, "TIFF without strips")
    parts = []
    for start, size in zip(tags[273], tags[279], strict=True):
        _need(start + size <= len(data), "TIFF strip runs past the end")
        part = data[start : start + size]
        parts.append(zlib.decompress(part) if compression != 1 else part)
    return b"".join(parts)


def _tiff(data: bytes) -> np.ndarray:
    order, tags = _tiff_tags(data)
    width, height = tags[256][0], tags[257][0]
    depths, spp = tags.get(258, [1]), tags.get(277, [1])[0]
    photometric, depth = tags.get(262, [1])[0], depths[0]
    if any(d != depth for d in depths) or depth not in (1, 2, 4, 8, 16):
        raise _refuse(f"TIFF of {depths} bits per sample")
    if tags.get(284, [1])[0] != 1 or tags.get(339, [1])[0] != 1:
        raise _refuse("TIFF with separate planes or non-integer samples")
    if photometric not in (0, 1, 2, 3) or (photometric == 2) != (spp >= 3):
        raise _refuse(f"TIFF photometric interpretation {photometric}")
    row_bytes = (width * spp * depth + 7) // 8
    raw = _tiff_strips(data, tags)
    _need(len(raw) >= row_bytes * height, "TIFF strips are too short")
    rows = np.frombuffer(raw, np.uint8, row_bytes * height).reshape(height, row_bytes)
    if depth == 16:
        samples = rows.view(order + "u2").reshape(height, width, spp)
    else:
        samples = _unpack_bits(rows, width * spp, depth).reshape(height, width, spp)
    if tags.get(317, [1])[0] == 2:  # horizontal differencing, modulo the sample width
        samples = np.cumsum(samples, axis=1, dtype=samples.dtype)
    if photometric == 3:
        colormap = np.asarray(tags[320], np.uint16).reshape(3, -1).T >> 8
        return _take_palette(samples[..., 0], colormap.astype(np.uint8))
    if depth == 16:
        samples = samples >> 8
    elif depth < 8:
        samples = _scale_to_byte(samples, depth)
    samples = samples.astype(np.uint8)
    if photometric == 0:
        samples = 255 - samples
    return samples[..., :3] if photometric == 2 else samples[..., :1]


# --- the op ---------------------------------------------------------------------------------------

_UNSUPPORTED = (
    (b"\xff\xd8\xff", "JPEG"),
    (b"\x00\x00\x00\x0cjP  \r\n\x87\n", "JPEG 2000"),
    (b"\xff\x4f\xff\x51", "JPEG 2000"),
    (b"GIF8", "GIF"),
    (b"II+\x00", "BigTIFF"),
    (b"MM\x00+", "BigTIFF"),
    (b"P7", "PAM"),
)


def _sniff(data: bytes) -> Callable[[bytes], np.ndarray] | None:
    """The decoder for the stream's signature; None when it is no image format known here.

    Raises ValueError ("not supported") for the formats recognised but not decoded.
    """
    for magic, name in _UNSUPPORTED:
        if data.startswith(magic):
            raise _refuse(name)
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        raise _refuse("WebP")
    if data.startswith(_PNG_SIGNATURE):
        return _png
    if data.startswith(b"BM"):
        return _bmp
    if data.startswith((b"II*\x00", b"MM\x00*")):
        return _tiff
    if _PNM_HEADER.match(data):
        return _pnm
    return None


def _as_format(image: np.ndarray, pixel_format: str) -> np.ndarray:
    """A decoded gray (1 channel) or RGB (3 channels) image in the requested layout."""
    gray = image.shape[2] == 1
    if pixel_format == "Grayscale":
        return image if gray else _luma(image)
    rgb = np.repeat(image, 3, axis=2) if gray else image
    return np.ascontiguousarray(rgb[..., ::-1] if pixel_format == "BGR" else rgb)


@kernel("ImageDecoder", since=20)
def image_decoder(encoded_stream: np.ndarray, *, pixel_format: str = "RGB") -> np.ndarray:
    """The encoded bytes (a 1-D uint8 tensor) as a (height, width, channels) uint8 image:
    3 channels for RGB and BGR, 1 for Grayscale. Streams that are no image, or are damaged,
    give an empty (0, 0, channels) image, as the spec asks.
    """
    if pixel_format not in _FORMATS:
        raise ValueError(
            f"ImageDecoder: pixel_format {pixel_format!r} is not supported; "
            "RGB, BGR or Grayscale are"
        )
    if encoded_stream.dtype != np.uint8 or encoded_stream.ndim != 1:
        raise ValueError(
            f"ImageDecoder: input {encoded_stream.dtype} of shape {encoded_stream.shape} is not "
            "supported; a 1-D uint8 tensor is"
        )
    data = encoded_stream.tobytes()
    empty = np.zeros((0, 0, 1 if pixel_format == "Grayscale" else 3), np.uint8)
    try:
        decode = _sniff(data)
        if decode is None:
            return empty
        image = decode(data)
    except _Unsupported as e:  # said as a plain ValueError: the class is this module's business
        raise ValueError(str(e)) from None
    except (_Corrupt, struct.error, zlib.error, ValueError, IndexError, KeyError):
        return empty
    return _as_format(np.ascontiguousarray(image, dtype=np.uint8), pixel_format)

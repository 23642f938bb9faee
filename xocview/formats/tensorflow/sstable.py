"""A LevelDB-format table (SSTable) read whole: the format of a TensorBundle's ``.index``.

TensorFlow writes the variables index of a checkpoint or SavedModel with its own copy of
LevelDB's table writer: data blocks of prefix-compressed keys with restart points, an index
block of handles to them, a metaindex block and a 48-byte footer ending in a magic number.
Each block is followed by a one-byte compression type and a four-byte masked crc32c.
TensorFlow writes every block uncompressed; a compressed block is refused by name rather than
read as garbage. The crc32c is not checked (the standard library has no crc32c); every offset
and length is checked against the file so that a damaged index is a FormatError, never an
exception escaping from here.
"""

from __future__ import annotations

import struct

from xocview.errors import FormatError

__all__ = ["FOOTER_SIZE", "MAGIC", "read_table", "varint"]

MAGIC = 0xDB4775248B80FB57
FOOTER_SIZE = 48
_TRAILER = 5  # compression type byte + masked crc32c
_COMPRESSION = {1: "snappy", 2: "zlib", 3: "bz2", 4: "lz4", 6: "zstd"}
# A varint64 has at most ten bytes.
_VARINT_MAX = 10


def varint(buf: bytes | memoryview, pos: int, end: int, file: str, place: str) -> tuple[int, int]:
    """The unsigned varint at ``pos`` (not past ``end``) and the position after it."""
    value = shift = 0
    for i in range(pos, min(end, pos + _VARINT_MAX)):
        byte = buf[i]
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, i + 1
        shift += 7
    raise FormatError(file, place, f"a varint at byte {pos:,} is cut or too long")


def _handle(buf: bytes, pos: int, end: int, file: str, place: str) -> tuple[int, int, int]:
    """A block handle (offset, size) at ``pos`` and the position after it."""
    offset, pos = varint(buf, pos, end, file, place)
    size, pos = varint(buf, pos, end, file, place)
    return offset, size, pos


def _block(buf: bytes, offset: int, size: int, file: str, place: str) -> bytes:
    """A block's contents, checked to lie inside the file before the footer, uncompressed."""
    limit = len(buf) - FOOTER_SIZE
    if offset + size + _TRAILER > limit:
        raise FormatError(
            file,
            place,
            f"block of {size:,} bytes at byte {offset:,} runs past the table's end",
            f"a block inside the first {limit:,} bytes",
        )
    kind = buf[offset + size]
    if kind != 0:
        name = _COMPRESSION.get(kind, f"unknown type {kind}")
        raise FormatError(
            file,
            place,
            f"block at byte {offset:,} is {name}-compressed",
            "uncompressed blocks, as TensorFlow writes them",
        )
    return buf[offset : offset + size]


def _entries(block: bytes, file: str, place: str) -> list[tuple[bytes, bytes]]:
    """The (key, value) pairs of one block, prefix compression undone."""
    if len(block) < 4:
        raise FormatError(file, place, f"block of {len(block)} bytes has no restart count")
    (restarts,) = struct.unpack_from("<I", block, len(block) - 4)
    if restarts < 1 or restarts * 4 + 4 > len(block):
        raise FormatError(
            file, place, f"block of {len(block):,} bytes claims {restarts:,} restart points"
        )
    end = len(block) - 4 - restarts * 4
    out: list[tuple[bytes, bytes]] = []
    key = b""
    pos = 0
    while pos < end:
        shared, pos = varint(block, pos, end, file, place)
        own, pos = varint(block, pos, end, file, place)
        size, pos = varint(block, pos, end, file, place)
        if shared > len(key) or pos + own + size > end:
            raise FormatError(
                file, place, f"entry {len(out)} of a block does not fit its block or key"
            )
        key = key[:shared] + block[pos : pos + own]
        pos += own
        out.append((key, block[pos : pos + size]))
        pos += size
    return out


def read_table(buf: bytes, file: str) -> list[tuple[bytes, bytes]]:
    """Every (key, value) of the table in ``buf``, in the table's order."""
    if len(buf) < FOOTER_SIZE:
        raise FormatError(
            file,
            "footer",
            f"file of {len(buf):,} bytes is too short for a table",
            f"at least {FOOTER_SIZE} bytes ending in a LevelDB table footer",
        )
    (magic,) = struct.unpack_from("<Q", buf, len(buf) - 8)
    if magic != MAGIC:
        raise FormatError(
            file,
            "footer",
            f"magic number is {magic:#018x}",
            f"{MAGIC:#018x} (a LevelDB table, as TensorFlow writes variables.index)",
        )
    start = len(buf) - FOOTER_SIZE
    _, _, pos = _handle(buf, start, start + 40, file, "footer")  # metaindex: nothing we need
    offset, size, _ = _handle(buf, pos, start + 40, file, "footer")
    index = _block(buf, offset, size, file, "index block")
    out: list[tuple[bytes, bytes]] = []
    for n, (_, value) in enumerate(_entries(index, file, "index block")):
        place = f"data block {n}"
        b_offset, b_size, _ = _handle(value, 0, len(value), file, place)
        out += _entries(_block(buf, b_offset, b_size, file, place), file, place)
    return out

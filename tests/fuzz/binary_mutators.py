"""Mutations of binary weight formats: safetensors headers and PyTorch's zip archives.

A byte flip in a safetensors file mostly lands in tensor data, which no reader checks, and a
flip in a zip mostly breaks its CRC, which the zip reader catches first; neither reaches the
parts a reader interprets. So, besides the byte mutators: a safetensors header is damaged with
the JSON mutators and packed again with its true length, or its length or a tensor's offsets
are made wrong; an archive has one member damaged (a JSON member with the JSON mutators, any
other by bytes) and is written again whole, or loses a member, so the reader meets the damage
inside a well-formed zip.
"""

from __future__ import annotations

import io
import json
import random
import struct
import zipfile
from collections.abc import Callable

from tests.fuzz.mutators import BYTE_MUTATORS, JSON_MUTATORS, Mutant

__all__ = ["BINARY_MUTATORS", "SAFETENSORS_MUTATORS", "ZIP_MUTATORS"]

Mutator = Callable[[random.Random, bytes], Mutant]


def _header(data: bytes) -> tuple[dict, bytes]:
    """The parsed header and the data section of a safetensors file (ValueError if none)."""
    if len(data) < 8:
        raise ValueError("shorter than a header length")
    (n,) = struct.unpack_from("<Q", data)
    header = json.loads(data[8 : 8 + n])
    if not isinstance(header, dict):
        raise ValueError("header is not an object")
    return header, data[8 + n :]


def _pack(raw: bytes, rest: bytes) -> bytes:
    return struct.pack("<Q", len(raw)) + raw + rest


def st_header(rng: random.Random, data: bytes) -> Mutant:
    header, rest = _header(data)
    name = rng.choice(sorted(JSON_MUTATORS))
    m = JSON_MUTATORS[name](rng, header)
    return Mutant(f"safetensors header: {m.description}", _pack(m.data, rest))


def st_length(rng: random.Random, data: bytes) -> Mutant:
    (n,) = struct.unpack_from("<Q", data) if len(data) >= 8 else (0,)
    wrong = rng.choice((0, 1, n - 1, n + 1, n + 4096, len(data), 2**63 - 1, 2**64 - 1))
    wrong = max(0, min(wrong, 2**64 - 1))
    return Mutant(f"safetensors header length {n} -> {wrong}", struct.pack("<Q", wrong) + data[8:])


def st_offsets(rng: random.Random, data: bytes) -> Mutant:
    header, rest = _header(data)
    names = [k for k, v in header.items() if isinstance(v, dict) and "data_offsets" in v]
    if not names:
        raise ValueError("no tensor with data_offsets")
    name = rng.choice(names)
    begin, end = header[name]["data_offsets"]
    new = rng.choice(
        ([end, begin], [begin, begin], [begin, end + 1], [-1, end], [begin, 2**62], [0, len(rest)])
    )
    header[name]["data_offsets"] = new
    raw = json.dumps(header).encode()
    return Mutant(f"safetensors {name!r} data_offsets {[begin, end]} -> {new}", _pack(raw, rest))


def _members(data: bytes) -> list[tuple[zipfile.ZipInfo, bytes]]:
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        return [(i, z.read(i)) for i in z.infolist()]


def _zipped(members: list[tuple[zipfile.ZipInfo, bytes]]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for info, content in members:
            z.writestr(info, content, compress_type=info.compress_type)
    return out.getvalue()


def zip_member(rng: random.Random, data: bytes) -> Mutant:
    members = _members(data)
    k = rng.randrange(len(members))
    info, content = members[k]
    try:
        root = json.loads(content)
    except ValueError:
        root = None
    if root is not None:
        name = rng.choice(sorted(JSON_MUTATORS))
        m = JSON_MUTATORS[name](rng, root)
    else:
        name = rng.choice(sorted(BYTE_MUTATORS))
        m = BYTE_MUTATORS[name](rng, content)
    members[k] = (info, m.data)
    return Mutant(f"member {info.filename}: {m.description}", _zipped(members))


def zip_drop(rng: random.Random, data: bytes) -> Mutant:
    members = _members(data)
    k = rng.randrange(len(members))
    name = members[k][0].filename
    return Mutant(f"member {name} dropped", _zipped(members[:k] + members[k + 1 :]))


SAFETENSORS_MUTATORS: dict[str, Mutator] = {
    "st.header": st_header,
    "st.length": st_length,
    "st.offsets": st_offsets,
}
ZIP_MUTATORS: dict[str, Mutator] = {"zip.member": zip_member, "zip.drop": zip_drop}
BINARY_MUTATORS: dict[str, Mutator] = {**SAFETENSORS_MUTATORS, **ZIP_MUTATORS}

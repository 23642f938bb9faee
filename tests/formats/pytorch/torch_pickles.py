"""Hand-made torch.save files for tests that need what torch would never write (hostile
strides, missing storages, a 3 GB sparse storage), written without torch: pickle opcodes
for the tensors, zipfile or raw bytes for the layouts."""

from __future__ import annotations

import pickle
import struct
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

LEGACY_MAGIC = 0x1950A86A20F9469CFC6C


@dataclass
class T:
    """One tensor entry: its name, storage class (``FloatStorage``), key, storage element
    count, and the view (offset, shape, stride)."""

    name: str
    storage: str
    key: str
    numel: int
    offset: int
    shape: tuple[int, ...]
    stride: tuple[int, ...]


def _value(x: object) -> bytes:
    """The opcodes that push ``x`` (a str, int, bool or tuple of them), without PROTO/STOP."""
    return pickle.dumps(x, 2)[2:-1]


def state_pickle(tensors: list[T], legacy: bool = False) -> bytes:
    """A protocol 2 pickle of a dict of tensors, as torch.save writes it."""
    out = [b"\x80\x02}("]
    for t in tensors:
        pid = [b"(", _value("storage"), b"ctorch\n" + t.storage.encode() + b"\n"]
        pid += [_value(t.key), _value("cpu"), _value(t.numel)]
        pid += [b"N" if legacy else b"", b"tQ"]
        out += [_value(t.name), b"ctorch._utils\n_rebuild_tensor_v2\n(", *pid]
        out += [_value(t.offset), _value(t.shape), _value(t.stride), b"\x89}tR"]
    out.append(b"u.")
    return b"".join(out)


def write_zip(
    path: Path, data_pkl: bytes, storages: dict[str, bytes], root: str = "archive"
) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        z.writestr(f"{root}/data.pkl", data_pkl)
        z.writestr(f"{root}/byteorder", "little")
        for key, raw in storages.items():
            z.writestr(f"{root}/data/{key}", raw)
        z.writestr(f"{root}/version", "3\n")
    return path


def write_legacy(
    path: Path, obj_pickle: bytes, storages: list[tuple[str, int, bytes | int]]
) -> Path:
    """Legacy layout; each storage is (key, element count, bytes or a size to leave sparse)."""
    with open(path, "wb") as f:
        f.write(pickle.dumps(LEGACY_MAGIC, 2))
        f.write(pickle.dumps(1001, 2))
        sys_info = {"protocol_version": 1001, "little_endian": True, "type_sizes": {"int": 4}}
        f.write(pickle.dumps(sys_info, 2))
        f.write(obj_pickle)
        f.write(pickle.dumps([k for k, _, _ in storages], 2))
        for _, count, raw in storages:
            f.write(struct.pack("<q", count))
            if isinstance(raw, int):
                f.seek(raw, 1)
            else:
                f.write(raw)
        f.truncate()
    return path


def write_sparse_zip(path: Path, data_pkl: bytes, key: str, size: int, root: str = "big") -> Path:
    """A zip (no zip64, so under 4 GiB) whose one storage member is ``size`` bytes left sparse:
    written by hand, since zipfile writes every byte."""
    members = [(f"{root}/data.pkl", data_pkl, len(data_pkl)), (f"{root}/data/{key}", b"", size)]
    central = []
    with open(path, "wb") as f:
        for name, raw, length in members:
            crc = zlib.crc32(raw) if raw else 0
            at = f.tell()
            f.write(
                struct.pack(
                    "<4sHHHHHIIIHH",
                    b"PK\x03\x04",
                    20,
                    0,
                    0,
                    0,
                    33,
                    crc,
                    length,
                    length,
                    len(name),
                    0,
                )
            )
            f.write(name.encode())
            if raw:
                f.write(raw)
            else:
                f.seek(length, 1)
            central.append(
                struct.pack(
                    "<4sHHHHHHIIIHHHHHII",
                    b"PK\x01\x02",
                    20,
                    20,
                    0,
                    0,
                    0,
                    33,
                    crc,
                    length,
                    length,
                    len(name),
                    0,
                    0,
                    0,
                    0,
                    0,
                    at,
                )
                + name.encode()
            )
        start = f.tell()
        f.write(b"".join(central))
        size_cd = f.tell() - start
        f.write(
            struct.pack(
                "<4sHHHHIIH", b"PK\x05\x06", 0, 0, len(central), len(central), size_cd, start, 0
            )
        )
    return path

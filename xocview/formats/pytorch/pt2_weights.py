"""The payloads of a .pt2 archive (parameters, buffers, tensor constants) as lazy readers.

``data/weights/<model>_weights_config.json`` and ``data/constants/<model>_constants_config.json``
map each FQN to a member (``weight_3``, ``tensor_0``) and its tensor meta; several FQNs may
share one member (tied weights, views) at their own sizes, strides and storage offset. A
reader hands out a memory-mapped view of the member when it is stored and C-ordered, so
opening a model reads none of its weights. Pickled payloads (tensor subclasses, and the
legacy layout's ``torch.save`` files) are refused by name when their values are asked for.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from xocview.errors import FormatError
from xocview.formats.pytorch.pt2_schema import Json, TensorInfo, tensor_info
from xocview.formats.zip_members import ZipMembers
from xocview.model.dtypes import numpy_type

__all__ = ["Payload", "Reader", "payloads", "read_json", "refused", "strided_values"]

Reader = Callable[[], np.ndarray]


@dataclass
class Payload:
    """One FQN's tensor: its meta, its member, and a zero-argument reader of its values."""

    fqn: str
    info: TensorInfo
    member: str
    is_param: bool
    pickled: bool
    read: Reader


def read_json(members: ZipMembers, name: str, limit: int = 1 << 30) -> Any:
    """A JSON member parsed; FormatError naming the member and line for bad JSON."""
    raw = members.read(name, limit)
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise FormatError(members.file, name, f"not UTF-8 text (byte {e.start})", "JSON") from e
    except json.JSONDecodeError as e:
        raise FormatError(
            members.file, f"{name} line {e.lineno} column {e.colno}", f"invalid JSON: {e.msg}"
        ) from e
    except RecursionError as e:
        raise FormatError(members.file, name, "nested too deep", "a torch.export JSON") from e


def payloads(members: ZipMembers, config: str, folder: str, big_endian: bool) -> list[Payload]:
    """The payloads a config member lists (none when the archive has no such member)."""
    if not members.has(config):
        return []
    j = Json(members.file, config)
    doc = j.obj(read_json(members, config), "")
    table = j.obj(j.key(doc, "config", "", dict), "config")
    out: list[Payload] = []
    for fqn, entry in table.items():
        place = f"config.{fqn}"
        e = j.obj(entry, place)
        path = j.key(e, "path_name", place, str)
        member = folder + path
        pickled = bool(e.get("use_pickle", False))
        meta = e.get("tensor_meta")
        if meta is None:  # a custom object: no tensor to show
            continue
        info = tensor_info(j, meta, f"{place}.tensor_meta")
        if not members.has(member):
            raise j.error(f"{place}.path_name", f"names {path!r}, which the archive lacks")
        read = (
            refused(members.file, member, "a pickled tensor (torch.save of a tensor subclass)")
            if pickled
            else _reader(members, member, info, big_endian)
        )
        out.append(Payload(fqn, info, member, bool(e.get("is_param", False)), pickled, read))
    return out


def refused(file: str, member: str, what: str) -> Reader:
    """A reader that refuses, naming the member and how its values are stored."""

    def read() -> np.ndarray:
        raise FormatError(
            file,
            member,
            f"the values are stored as {what}, which xocview does not unpickle yet",
            "a .pt2 written by torch.export.save of torch 2.7 or later (raw tensor payloads)",
        )

    return read


def _reader(members: ZipMembers, member: str, info: TensorInfo, big_endian: bool) -> Reader:
    def read() -> np.ndarray:
        return strided_values(members, member, info, big_endian)

    return read


def strided_values(
    members: ZipMembers, member: str, info: TensorInfo, big_endian: bool
) -> np.ndarray:
    """The tensor ``info`` describes inside the member's bytes (its storage)."""
    dt = numpy_type(info.dtype)
    if dt is None:
        raise FormatError(members.file, member, f"dtype {info.dtype} has no numpy type")
    shape = tuple(info.shape)
    if any(n < 0 for n in shape):
        raise FormatError(members.file, member, "a stored tensor with a symbolic size")
    raw = members.array(member)
    count = int(np.prod(shape, dtype=np.int64))
    if raw.size == 0 or count == 0:  # torch writes an empty record for an empty tensor
        return np.zeros(shape, dt)
    size = dt.itemsize
    if raw.size % size:
        raise FormatError(
            members.file,
            member,
            f"holds {raw.size:,} bytes, not a whole number of {info.dtype} values",
            f"a multiple of {size} bytes",
        )
    flat = raw.view(dt.newbyteorder(">") if big_endian and size > 1 else dt)
    strides = info.strides if info.strides is not None else _c_strides(shape)
    last = info.offset + sum((n - 1) * s for n, s in zip(shape, strides, strict=True))
    if min(strides, default=0) < 0 or last >= flat.size:
        raise FormatError(
            members.file,
            member,
            f"holds {flat.size:,} values, fewer than the {last + 1:,} its tensor spans",
            "a storage as long as the tensors that view it",
        )
    view = np.lib.stride_tricks.as_strided(
        flat[info.offset :], shape, tuple(s * size for s in strides), writeable=False
    )
    if big_endian and size > 1:
        return view.astype(dt)
    return view if view.flags.c_contiguous and view.flags.aligned else np.ascontiguousarray(view)


def _c_strides(shape: tuple[int, ...]) -> list[int]:
    out = [1] * len(shape)
    for k in range(len(shape) - 2, -1, -1):
        out[k] = out[k + 1] * max(shape[k + 1], 1)
    return out

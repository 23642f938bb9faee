"""ONNX initializer values, read lazily: inline data on first use, external data memory-mapped.

External-data locations are checked when the model opens (relative, inside the model's folder
after resolving symlinks) so that a hostile model cannot make xocview read other files.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path, PurePosixPath, PureWindowsPath

import numpy as np
import onnx
from onnx import numpy_helper

from xocview.errors import FormatError

__all__ = ["external_info", "inline_values", "lazy_values", "sparse_values"]

# ONNX element types whose external bytes are plain little-endian numpy arrays.
_RAW_NUMPY: dict[int, str] = {
    onnx.TensorProto.FLOAT: "<f4",
    onnx.TensorProto.DOUBLE: "<f8",
    onnx.TensorProto.FLOAT16: "<f2",
    onnx.TensorProto.INT8: "i1",
    onnx.TensorProto.UINT8: "u1",
    onnx.TensorProto.INT16: "<i2",
    onnx.TensorProto.UINT16: "<u2",
    onnx.TensorProto.INT32: "<i4",
    onnx.TensorProto.UINT32: "<u4",
    onnx.TensorProto.INT64: "<i8",
    onnx.TensorProto.UINT64: "<u8",
    onnx.TensorProto.BOOL: "?",
    onnx.TensorProto.COMPLEX64: "<c8",
    onnx.TensorProto.COMPLEX128: "<c16",
}


def external_info(init: onnx.TensorProto) -> dict[str, str] | None:
    """The external_data entries of an initializer, or None when its data is inline."""
    if init.data_location != onnx.TensorProto.EXTERNAL:
        return None
    return {entry.key: entry.value for entry in init.external_data}


def inline_values(init: onnx.TensorProto) -> Callable[[], np.ndarray]:
    """A zero-argument reader of an initializer whose values are in the model itself."""
    return partial(numpy_helper.to_array, init)


def lazy_values(
    init: onnx.TensorProto, model_dir: Path, file: str, info: dict[str, str] | None
) -> Callable[[], np.ndarray]:
    """A zero-argument reader of the initializer's values; ``info`` is its external_info().

    Raises FormatError now (not on first use) when an external location is absolute or leaves
    the model's folder; a missing or short data file raises FormatError on first use.
    """
    if info is None:
        return inline_values(init)
    place = f"initializer '{init.name}'"
    location = info.get("location", "")
    path = _safe_location(location, model_dir, file, place)
    offset = int(info.get("offset", 0) or 0)
    length = int(info["length"]) if info.get("length") else None
    dims = tuple(init.dims)
    data_type = init.data_type
    header = onnx.TensorProto()
    header.CopyFrom(init)
    del header.external_data[:]
    header.data_location = onnx.TensorProto.DEFAULT

    def read() -> np.ndarray:
        if not path.is_file():
            raise FormatError(file, place, f"external data file '{location}' is missing")
        size = path.stat().st_size
        if offset > size or (length is not None and offset + length > size):
            raise FormatError(
                file,
                place,
                f"external data file '{location}' is too short "
                f"({size} bytes) for offset {offset} and length {length}",
            )
        dtype = _RAW_NUMPY.get(data_type)
        if dtype is not None:
            count = int(np.prod(dims, dtype=np.int64))
            arr = np.memmap(path, dtype=dtype, mode="r", offset=offset, shape=(count,))
            return arr.reshape(dims)
        with open(path, "rb") as f:
            f.seek(offset)
            header.raw_data = f.read(-1 if length is None else length)
        return numpy_helper.to_array(header)

    return read


def _safe_location(location: str, model_dir: Path, file: str, place: str) -> Path:
    if not location:
        raise FormatError(file, place, "external data has no location")
    if (
        PurePosixPath(location).is_absolute()
        or PureWindowsPath(location).is_absolute()
        or PureWindowsPath(location).drive
    ):
        raise FormatError(
            file,
            place,
            f"external data location '{location}' is absolute",
            "a path relative to the model's folder",
        )
    root = model_dir.resolve()
    path = (root / location).resolve()
    if path != root and root not in path.parents:
        raise FormatError(
            file,
            place,
            f"external data location '{location}' leaves the model's folder",
            "a path inside the model's folder",
        )
    return path


def sparse_values(sparse: onnx.SparseTensorProto) -> Callable[[], np.ndarray]:
    """A reader that densifies a sparse initializer on first use."""

    def read() -> np.ndarray:
        values = numpy_helper.to_array(sparse.values)
        indices = numpy_helper.to_array(sparse.indices).astype(np.int64)
        dims = tuple(int(d) for d in sparse.dims)
        dense = np.zeros(dims, dtype=values.dtype)
        if indices.ndim == 1:
            dense.reshape(-1)[indices] = values
        else:
            dense[tuple(indices.T)] = values
        return dense

    return read

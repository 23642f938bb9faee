"""ONNX initializer values, read lazily: inline data on first use, external data memory-mapped.

External-data locations are checked when the model opens (``safe_paths.path_inside``: relative,
an entry of the model's folder, which may be the user's own link, as in a Hugging Face cache)
and read against that folder, never the current directory, so that a hostile model cannot make
xocview read other files. That holds for the values and indices of sparse initializers, and for
tensors in attributes (``attrs``), too.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

from xocview.errors import FormatError, shorten
from xocview.formats.onnx.data import data_problem, header_problem, needed_bytes
from xocview.formats.safe_paths import path_inside

__all__ = [
    "external_info",
    "external_numbers",
    "external_problem",
    "in_use",
    "inline_values",
    "lazy_values",
    "sparse_values",
    "weight_place",
]

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


def weight_place(name: str) -> str:
    """The place of an initializer in messages: ``initializer 'W'``."""
    return f"initializer '{name}'"


def inline_values(init: onnx.TensorProto, file: str) -> Callable[[], np.ndarray]:
    """A zero-argument reader of an initializer whose values are in the model itself.

    The reader raises FormatError when the data does not match the dims and element type.
    """
    return partial(_inline, init, file, weight_place(init.name))


def _inline(init: onnx.TensorProto, file: str, place: str) -> np.ndarray:
    found = data_problem(init)
    if found is not None:
        raise FormatError(file, place, *found)
    if init.data_location == onnx.TensorProto.EXTERNAL:  # onnx would read it from the cwd
        raise FormatError(file, place, "external data read without the model's folder")
    try:
        return numpy_helper.to_array(init)
    except (ValueError, TypeError, UnicodeDecodeError) as e:  # e.g. STRING values not UTF-8
        raise FormatError(file, place, f"values cannot be read ({e})") from e


def external_numbers(info: dict[str, str], file: str, place: str) -> tuple[int, int | None]:
    """The ``offset`` and ``length`` of external data as integers (length None when absent).

    Raises FormatError naming the key when one is not a non-negative decimal integer.
    """
    numbers: list[int | None] = []
    for key in ("offset", "length"):
        raw = info.get(key, "")
        if not raw:
            numbers.append(None)
            continue
        if not (raw.isascii() and raw.isdigit()) or len(raw) > 20:
            raise FormatError(
                file,
                _at(place, key),
                f"'{shorten(raw)}' is not a byte count",
                "a non-negative decimal integer",
            )
        numbers.append(int(raw))
    return numbers[0] or 0, numbers[1]


def lazy_values(
    init: onnx.TensorProto, model_dir: Path, file: str, info: dict[str, str] | None
) -> Callable[[], np.ndarray]:
    """A zero-argument reader of the initializer's values; ``info`` is its external_info().

    Raises FormatError now (not on first use) when an external location is absolute, leaves
    the model's folder or is not a path, or when offset or length is not a byte count; a
    missing or short data file, or data that does not match the dims, raises FormatError on
    first use.
    """
    if info is None:
        return inline_values(init, file)
    return _external_reader(init, model_dir, file, weight_place(init.name), info)


def _external_reader(
    init: onnx.TensorProto, model_dir: Path, file: str, place: str, info: dict[str, str]
) -> Callable[[], np.ndarray]:
    """``lazy_values`` of an external tensor at ``place`` (checks now, reads on first use)."""
    location = info.get("location", "")
    path = path_inside(location, model_dir, file, _at(place, "location"))
    offset, length = external_numbers(info, file, place)
    dims = tuple(init.dims)
    data_type = init.data_type
    header = onnx.TensorProto()
    header.CopyFrom(init)
    del header.external_data[:]
    header.data_location = onnx.TensorProto.DEFAULT
    handle = _handle(path)

    def read() -> np.ndarray:
        at = handle.path  # the handle lives as long as this reader: in_use() sees it
        need = external_problem(data_type, dims, at, location, offset, length, file, place)
        dtype = _RAW_NUMPY.get(data_type)
        if dtype is not None:
            arr = np.memmap(at, dtype=dtype, mode="r", offset=offset, shape=(math.prod(dims),))
            return arr.reshape(dims)
        with open(at, "rb") as f:
            f.seek(offset)
            header.raw_data = f.read(need)
        return _inline(header, file, place)

    return read


class _DataFile:
    """A data file that lazy readers still mean to read (``in_use``)."""

    __slots__ = ("__weakref__", "path")

    def __init__(self, path: Path) -> None:
        self.path = path


# One handle per data file, alive while any reader that holds it is.
_HANDLES: weakref.WeakValueDictionary[Path, _DataFile] = weakref.WeakValueDictionary()


def _handle(path: Path) -> _DataFile:
    found = _HANDLES.get(path)
    if found is None:
        found = _HANDLES[path] = _DataFile(path)
    return found


def in_use(path: Path) -> bool:
    """Whether a weight of a model read in this process may still read ``path`` (resolved):
    a save must not delete an old data file that an unread weight (an undo step's) points at."""
    try:
        return path.resolve() in _HANDLES
    except (OSError, RuntimeError):
        return True


def external_problem(
    data_type: int,
    dims: tuple[int, ...],
    path: Path,
    location: str,
    offset: int,
    length: int | None,
    file: str,
    place: str,
) -> int:
    """The byte count of the external data; FormatError when the file cannot hold it.

    STRING tensors cannot be external (their raw form is not defined by ONNX).
    """
    found = header_problem(data_type, dims)
    if found is None and data_type == onnx.TensorProto.STRING:
        found = ("STRING values in external data", "string_data inside the model")
    if found is not None:
        raise FormatError(file, place, *found)
    need = needed_bytes(data_type, math.prod(dims))
    if length is not None and length != need:
        raise FormatError(
            file,
            _at(place, "length"),
            f"{length:,} bytes",
            f"{need:,} bytes for dims {list(dims)} of type {data_type}",
        )
    try:
        if not path.is_file():
            what = "is not a regular file" if path.exists() else "is missing"
            raise FormatError(
                file, _at(place, "location"), f"external data file '{location}' {what}"
            )
        size = path.stat().st_size
    except OSError as e:
        raise FormatError(
            file, _at(place, "location"), f"'{location}' cannot be read ({e.strerror})"
        ) from e
    if offset + need > size:
        key = "offset" if offset > size else "length"
        raise FormatError(
            file,
            _at(place, key),
            f"external data file '{location}' is too short ({size:,} bytes) for "
            f"{need:,} bytes at offset {offset:,}",
        )
    return need


def _at(place: str, key: str) -> str:
    """The place of one external_data entry: ``initializer 'W' external_data 'offset'``."""
    return f"{place} external_data '{key}'"


def sparse_values(
    sparse: onnx.SparseTensorProto, model_dir: Path, file: str
) -> Callable[[], np.ndarray]:
    """A reader that densifies a sparse initializer on first use.

    Raises FormatError now for an unsafe external location of values or indices; the reader
    raises FormatError (before allocating the dense array) when values, indices and dims do
    not fit together.
    """
    place = weight_place(sparse.values.name)
    values_of = part_reader(sparse.values, model_dir, file, f"{place} values")
    indices_of = part_reader(sparse.indices, model_dir, file, f"{place} indices")

    def read() -> np.ndarray:
        values, indices = _checked_parts(sparse, values_of, indices_of, file, place)
        dims = tuple(int(d) for d in sparse.dims)
        try:
            dense = np.zeros(dims, dtype=values.dtype)
        except (MemoryError, ValueError) as e:
            raise FormatError(
                file, place, f"the dense form of dims {list(dims)} cannot be allocated ({e})"
            ) from e
        if indices.ndim == 1:
            dense.reshape(-1)[indices] = values
        else:
            dense[tuple(indices.T)] = values
        return dense

    return read


def part_reader(
    tensor: onnx.TensorProto, model_dir: Path, file: str, place: str
) -> Callable[[], np.ndarray]:
    """A reader of one part (values or indices) of a sparse tensor, inline or external, read
    against ``model_dir``; FormatError now for an unsafe external location."""
    info = external_info(tensor)
    if info is None:
        return partial(_inline, tensor, file, place)
    return _external_reader(tensor, model_dir, file, place, info)


def sparse_parts(
    sparse: onnx.SparseTensorProto, model_dir: Path, file: str, place: str
) -> tuple[np.ndarray, np.ndarray]:
    """The values and int64 indices of a sparse tensor, checked against its dims.

    Raises FormatError for an unsafe or missing external part, values or indices that do not
    match their own dims, counts that differ, or an index outside the dense shape.
    """
    values_of = part_reader(sparse.values, model_dir, file, f"{place} values")
    indices_of = part_reader(sparse.indices, model_dir, file, f"{place} indices")
    return _checked_parts(sparse, values_of, indices_of, file, place)


def _checked_parts(
    sparse: onnx.SparseTensorProto,
    values_of: Callable[[], np.ndarray],
    indices_of: Callable[[], np.ndarray],
    file: str,
    place: str,
) -> tuple[np.ndarray, np.ndarray]:
    dims = [int(d) for d in sparse.dims]
    found = sparse_problem(sparse, dims)
    if found is not None:
        raise FormatError(file, place, *found)
    values = values_of()
    indices = np.asarray(indices_of()).astype(np.int64)
    bounds = [math.prod(dims)] if indices.ndim == 1 else dims
    if indices.size:
        lows = np.atleast_1d(indices.min(axis=0)).tolist()
        highs = np.atleast_1d(indices.max(axis=0)).tolist()
        for k, (low, high, bound) in enumerate(zip(lows, highs, bounds, strict=True)):
            if low < 0 or high >= bound:
                raise FormatError(
                    file,
                    f"{place} indices",
                    f"an index out of range (column {k} spans {low}..{high})",
                    f"indices in 0..{bound - 1}",
                )
    return values, indices


def sparse_problem(sparse: onnx.SparseTensorProto, dims: list[int]) -> tuple[str, str] | None:
    """What is wrong with the shapes of a sparse tensor's parts, or None (no data is read)."""
    values, indices = sparse.values, sparse.indices
    found = header_problem(values.data_type, dims)
    if found is not None:
        return found
    if len(values.dims) != 1:
        return f"values have dims {list(values.dims)}", "1-D values [NNZ]"
    nnz = int(values.dims[0])
    if indices.data_type not in _INDEX_TYPES:
        return f"indices of element type {indices.data_type}", "INT64 indices"
    idims = [int(d) for d in indices.dims]
    if idims not in ([nnz], [nnz, len(dims)]):
        return (
            f"indices have dims {idims} for {nnz} values",
            f"[{nnz}] or [{nnz}, {len(dims)}]",
        )
    return None


_INDEX_TYPES = {
    onnx.TensorProto.INT64,
    onnx.TensorProto.INT32,
    onnx.TensorProto.INT16,
    onnx.TensorProto.INT8,
    onnx.TensorProto.UINT8,
    onnx.TensorProto.UINT16,
    onnx.TensorProto.UINT32,
}

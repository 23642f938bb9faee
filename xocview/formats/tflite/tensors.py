"""A subgraph's tensors: shape, shape signature, dtype, quantization parameters, and weights
as lazy read-only views of the memory-mapped file.

A buffer's bytes are either the flatbuffer vector ``data`` or, for models past 2 GB, the
``offset``/``size`` pair that points past the flatbuffer itself; both are checked against the
file's size when the model opens, and nothing is read until a value is asked for.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from xocview.formats.tflite.flat import Flat, tensor_type
from xocview.model import Tensor
from xocview.model.dtypes import numpy_type

__all__ = ["buffer_span", "read_tensors"]

_NO_VALUES = frozenset({"string", "resource", "variant", "int4", "int2"})


def buffer_span(flat: Flat, model: Any, b: int, nbuffers: int, place: str) -> tuple[int, int]:
    """(start, bytes) of buffer ``b`` in the file; (0, 0) for the empty buffer 0."""
    if b < 0 or b >= nbuffers:
        raise flat.error(place, f"buffer {b} does not exist", f"an index below {nbuffers}")
    bplace = f"buffers[{b}]"
    buf = flat.get(bplace, lambda: model.Buffers(b))
    if buf is None:
        return 0, 0
    start, n, offset, size = flat.buffer_fields(bplace, buf)
    if offset > 1:
        if offset + size > flat.size:
            raise flat.error(
                f"{bplace}.offset",
                f"{size} bytes at offset {offset} run past the end of the file ({flat.size})",
            )
        return offset, size
    return start, n


def read_tensors(
    flat: Flat, model: Any, sg: Any, place: str, nbuffers: int
) -> tuple[list[Tensor], list[int]]:
    """The subgraph's tensors in file order (ids made unique) and their buffer indices."""
    n = flat.count(f"{place}.tensors", sg.TensorsLength)
    out: list[Tensor] = []
    seen: set[str] = set()
    buffers: list[int] = []
    for i in range(n):
        tplace = f"{place}.tensors[{i}]"
        t = flat.item(tplace, sg.Tensors, i)
        if t is None:
            raise flat.error(tplace, "the tensor table is missing")
        tensor, b = _tensor(flat, model, t, tplace, nbuffers)
        tensor.id = _unique(tensor.id or f"tensor_{i}", seen)
        tensor.metadata["tflite_index"] = i
        out.append(tensor)
        buffers.append(b)
    return out, buffers


def _tensor(flat: Flat, model: Any, t: Any, place: str, nbuffers: int) -> tuple[Tensor, int]:
    name = flat.text(f"{place}.name", t.Name)
    code = flat.get(f"{place}.type", t.Type)
    dtype = tensor_type(code)
    if dtype is None:
        raise flat.error(f"{place}.type", f"unknown tensor type {code}", "a TensorType 0-19")
    shape = flat.ints(f"{place}.shape", t.ShapeAsNumpy, t.ShapeLength)
    signature = flat.ints(
        f"{place}.shape_signature", t.ShapeSignatureAsNumpy, t.ShapeSignatureLength
    )
    if any(d < 0 for d in shape):
        raise flat.error(f"{place}.shape", f"negative size in {shape}", "sizes >= 0")
    metadata: dict[str, Any] = {}
    if signature and signature != shape:
        if len(signature) != len(shape):
            raise flat.error(
                f"{place}.shape_signature", f"{signature} is not of the rank of {shape}"
            )
        metadata["shape_signature"] = signature
    if flat.get(f"{place}.is_variable", t.IsVariable):
        metadata["is_variable"] = True
    if flat.get(f"{place}.sparsity", t.Sparsity) is not None:
        metadata["sparsity"] = "sparse (values not expanded)"
    quant = _quantization(flat, t, f"{place}.quantization")
    if quant:
        metadata["quantization"] = quant
    b = flat.get(f"{place}.buffer", t.Buffer)
    start, size = buffer_span(flat, model, b, nbuffers, f"{place}.buffer")
    data = None
    if size:
        metadata["buffer"] = b
        data = _lazy(flat, place, dtype, shape, start, size, "sparsity" in metadata)
        if data is None:
            metadata["values"] = f"{size} bytes not read ({dtype})"
    dims = signature if "shape_signature" in metadata else shape
    return Tensor(name, "weight" if size else "activation", dims, dtype, metadata, data), b


def _lazy(
    flat: Flat, place: str, dtype: str, shape: list[int], start: int, size: int, sparse: bool
) -> Any:
    """A callable that views the buffer as the tensor's array; None when it cannot."""
    np_type = numpy_type(dtype)
    if np_type is None or dtype in _NO_VALUES or sparse:
        return None
    count = int(np.prod(shape, dtype=np.int64)) if shape else 1
    if count * np_type.itemsize != size:
        raise flat.error(
            f"{place}.buffer",
            f"the buffer holds {size} bytes",
            f"{count * np_type.itemsize} bytes for {dtype} {shape}",
        )
    buf = flat.buf

    def read() -> np.ndarray:
        return np.frombuffer(buf, np_type, count, start).reshape(shape)

    return read


def _quantization(flat: Flat, t: Any, place: str) -> dict[str, Any]:
    q = flat.get(place, t.Quantization)
    if q is None:
        return {}
    out: dict[str, Any] = {}
    scale = flat.floats(f"{place}.scale", q.ScaleAsNumpy, q.ScaleLength)
    zero = flat.ints(f"{place}.zero_point", q.ZeroPointAsNumpy, q.ZeroPointLength)
    if scale:
        out["scale"] = scale
        out["zero_point"] = zero or [0] * len(scale)
        if zero and len(zero) != len(scale):
            raise flat.error(
                f"{place}.zero_point", f"{len(zero)} zero points for {len(scale)} scales"
            )
        if len(scale) > 1:
            out["quantized_dimension"] = flat.get(
                f"{place}.quantized_dimension", q.QuantizedDimension
            )
    low = flat.floats(f"{place}.min", q.MinAsNumpy, q.MinLength)
    high = flat.floats(f"{place}.max", q.MaxAsNumpy, q.MaxLength)
    if low:
        out["min"], out["max"] = low, high
    if flat.get(place, q.DetailsType):
        out["details"] = "custom quantization"
    return out


def _unique(wanted: str, seen: set[str]) -> str:
    got, k = wanted, 1
    while got in seen:
        k += 1
        got = f"{wanted}_{k}"
    seen.add(got)
    return got

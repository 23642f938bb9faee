"""Tensors of the shared model as ONNX protos: element types, TypeProtos, initializers.

The inverse of ``types`` and ``weights``: a tensor's dtype, shape, dim symbols
(``shape_symbols``), unknown rank and sparse note become a TypeProto; a weight's values
(an array, or the lazy handle the reader left) become a TensorProto.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper

from xocview.errors import FormatError
from xocview.model import Tensor
from xocview.model.dtypes import DTYPES, numpy_type

__all__ = ["dtype_code", "type_proto", "value_info", "weight_proto"]


def dtype_code(name: str) -> int:
    """The ONNX element type number of a dtype name; 0 (UNDEFINED) for an unknown one."""
    info = DTYPES.get(name)
    return info.onnx_code if info is not None else 0


def type_proto(tensor: Tensor) -> onnx.TypeProto | None:
    """The ONNX type of a tensor, or None when the model does not know it (no dtype, or a
    sequence, map or optional whose element type the reader did not keep). Shared between
    tensors of one type: copy it, never change it."""
    meta = tensor.metadata
    symbols = meta.get("shape_symbols")
    names = symbols if isinstance(symbols, list) and len(symbols) == len(tensor.shape) else None
    key = (
        tensor.dtype,
        tuple(tensor.shape),
        tuple(n if isinstance(n, str) else "" for n in names) if names else None,
        meta.get("type") if isinstance(meta.get("type"), str) else None,
        bool(meta.get("sparse")),
        bool(meta.get("rank_unknown")),
    )
    try:
        return _type_proto(*key)
    except TypeError:  # a dimension that is no number (a damaged file): unhashable
        return None


@lru_cache(maxsize=4096)
def _type_proto(
    dtype: str,
    shape: tuple[int, ...],
    names: tuple[str, ...] | None,
    kind: str | None,
    sparse: bool,
    rank_unknown: bool,
) -> onnx.TypeProto | None:
    code = dtype_code(dtype)
    if code == 0 or kind not in (None, "tensor", "sparse_tensor"):
        return None
    tp = onnx.TypeProto()
    tt: Any = tp.sparse_tensor_type if sparse or kind == "sparse_tensor" else tp.tensor_type
    tt.elem_type = code
    if rank_unknown:
        return tp
    dims = tt.shape
    dims.SetInParent()  # a scalar keeps an empty shape, not an unknown rank
    for k, d in enumerate(shape):
        dim = dims.dim.add()
        if isinstance(d, int) and d >= 0:
            dim.dim_value = d
        elif names is not None and names[k]:
            dim.dim_param = names[k]
    return tp


def value_info(
    name: str,
    tensor: Tensor,
    tp: onnx.TypeProto | None = None,
    vi: onnx.ValueInfoProto | None = None,
) -> onnx.ValueInfoProto:
    """A ValueInfoProto named ``name`` with the tensor's type (``tp`` when the caller has it;
    none when it is unknown). ``vi``: the (empty) one to fill where it is to be, such as
    ``graph.output.add()``, sparing a copy of a proto made apart."""
    if vi is None:
        vi = onnx.ValueInfoProto()
    vi.name = name
    tp = type_proto(tensor) if tp is None else tp
    if tp is not None:
        vi.type.CopyFrom(tp)
    doc = tensor.metadata.get("doc_string") if tensor.kind != "weight" else None
    if isinstance(doc, str):
        vi.doc_string = doc
    return vi


def weight_proto(tensor: Tensor, name: str, file: str) -> onnx.TensorProto:
    """The initializer of a weight that has values, named ``name``.

    Values are converted to the tensor's dtype when they were read as another one. Raises
    FormatError naming the tensor when its values cannot be read or do not fit its shape.
    """
    place = f"tensor '{tensor.id}'"
    try:
        values = tensor.data
    except (OSError, ValueError, MemoryError) as e:
        raise FormatError(file, place, f"its values cannot be read ({e})") from e
    if values is None:
        raise FormatError(file, place, "the weight has no values")
    arr = np.asarray(values)
    want = numpy_type(tensor.dtype)
    if want is not None and arr.dtype != want:
        try:
            arr = arr.astype(want)
        except (TypeError, ValueError) as e:
            raise FormatError(
                file, place, f"values of {arr.dtype} cannot be written as {tensor.dtype} ({e})"
            ) from e
    if list(arr.shape) != [int(d) for d in tensor.shape]:
        raise FormatError(
            file,
            place,
            f"its values have shape {list(arr.shape)} but the tensor says {list(tensor.shape)}",
            "values of the tensor's shape (set the shape back, or the values were replaced)",
        )
    try:
        proto = numpy_helper.from_array(arr, name)
    except (TypeError, ValueError) as e:
        raise FormatError(file, place, f"values of {arr.dtype} have no ONNX form ({e})") from e
    doc = tensor.metadata.get("doc_string")
    if isinstance(doc, str):
        proto.doc_string = doc
    return proto
